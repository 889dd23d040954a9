#!/usr/bin/env python3
"""The API as a contract: every exchange "qsup serve --record" wrote,
checked against docs/openapi.json, and the server's route table against
the document's paths.

  check.py SPEC QSUP RECORD...
  check.py --self-test SPEC QSUP   (planted exchanges: the check can fail)

SPEC is docs/openapi.json, QSUP the binary (its "serve --routes" lists
the route table), each RECORD a file of JSON lines (core/httpd/
httpd_record.c says what a line holds), named after the suite that made
it. An exchange passes when its status is listed for its method and path
(a 405 with the Allow the route table gives), its Content-Type is one
the response describes (none for a response without content), its body
is valid against the schema, and each event of a stream is one of the
response's x-sse-events with data valid against that event's schema (the
document's info.description says how data is read). Prints each failure,
then "contract: N passed, N failed"; exit 0 only with no failure.
"""
import base64
import binascii
import json
import os
import re
import subprocess
import sys

import jsonschema

# What the HTTP layer may answer for any request, routed or not, before
# or instead of its handler: a head refused, a token missing, a limit.
ANY_STATUS = {400, 401, 404, 408, 413, 414, 431, 503}


def resolve(node, doc, seen=()):
    """node with every local $ref replaced by what it points at."""
    if isinstance(node, dict):
        if "$ref" in node and len(node) == 1:
            r = node["$ref"]
            if not r.startswith("#/") or r in seen:
                raise ValueError("unsupported or cyclic $ref " + r)
            t = doc
            for part in r[2:].split("/"):
                t = t[part.replace("~1", "/").replace("~0", "~")]
            return resolve(t, doc, seen + (r,))
        return {k: resolve(v, doc, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [resolve(v, doc, seen) for v in node]
    return node


def template_re(path):
    """A path template as a regular expression ({id} digits)."""
    out = ""
    for seg in path.split("/")[1:]:
        if seg == "{id}":
            out += "/[0-9]+"
        elif seg.startswith("{") and seg.endswith("}"):
            out += "/[^/]*"
        else:
            out += "/" + re.escape(seg)
    return re.compile("^" + out + "$")


def schema_error(schema, value):
    """The first reason value fails schema, or None."""
    v = jsonschema.Draft202012Validator(schema)
    errs = sorted(v.iter_errors(value), key=lambda e: list(e.path))
    if not errs:
        return None
    e = errs[0]
    where = "/".join(str(p) for p in e.absolute_path)
    return "%s%s" % (where + ": " if where else "", e.message[:300])


class Contract:
    def __init__(self, spec_path):
        with open(spec_path, "rb") as f:
            self.raw = f.read()
        self.doc = json.loads(self.raw)
        self.paths = self.doc["paths"]
        self.res = [(template_re(p), p) for p in self.paths]
        self.error = resolve(self.doc["components"]["schemas"]["Error"],
                             self.doc)
        self.allow = {}

    def routes(self, qsup):
        """Failures for routes without a spec, or a spec without route."""
        out = subprocess.run([qsup, "serve", "--routes"], check=True,
                             capture_output=True, text=True).stdout
        table, fails = [], []
        for line in out.splitlines():
            method, path = line.split(" ", 1)
            table.append((method, path))
            self.allow.setdefault(path, []).append(method)
            if method.lower() not in self.paths.get(path, {}):
                fails.append("route %s %s (core/serve/serve_route.c) has "
                             "no operation in the spec" % (method, path))
        for path, item in self.paths.items():
            for m in item:
                if m in ("parameters", "summary", "description"):
                    continue
                if (m.upper(), path) not in table:
                    fails.append("spec operation %s %s is not in the "
                                 "server's route table" % (m.upper(), path))
        return fails

    def template(self, x):
        if x.get("route"):
            return x["route"]
        for r, p in self.res:
            if x.get("path") is not None and r.match(x["path"]):
                return p
        return None

    def check(self, x):
        """The reason exchange x breaks the contract, or None."""
        status, method = x["status"], (x.get("method") or "").lower()
        path = self.template(x)
        item = self.paths.get(path, {}) if path else {}
        if status == 405 and path in self.allow:
            want = ", ".join(self.allow[path])
            if x.get("allow") != want:
                return "405's Allow %r, the route table says %r" % (
                    x.get("allow"), want)
            resp = resolve(self.doc["components"]["responses"]
                           ["MethodNotAllowed"], self.doc)
            return self.response(x, resp)
        op = item.get(method) if path else None
        if op is None:
            if status not in ANY_STATUS:
                return "status %d for a request no operation describes" % (
                    status)
            return self.body(x, "application/json", self.error)
        resp = op["responses"].get(str(status))
        if resp is None:
            return "status %d is not listed for %s %s" % (
                status, method.upper(), path)
        err = self.response(x, resolve(resp, self.doc))
        if err is None and path == "/v1/openapi.json" and status == 200 \
                and not x.get("body_cut"):
            if x["body"].encode() != self.raw:
                return "the served document is not docs/openapi.json"
        return err

    def response(self, x, resp):
        content = resp.get("content")
        if not content:
            if x.get("type") is not None or x.get("body_bytes", 0) > 0:
                return "a response without content sent %r, %d bytes" % (
                    x.get("type"), x.get("body_bytes", 0))
            return None
        media = content.get(x.get("type"))
        if media is None:
            return "Content-Type %r, the spec has %s" % (
                x.get("type"), ", ".join(content))
        if "x-sse-events" in media:
            return self.events(x, media["x-sse-events"])
        return self.body(x, x["type"], media.get("schema"))

    def body(self, x, mtype, schema):
        if x.get("type") != mtype:
            return "Content-Type %r, not %r" % (x.get("type"), mtype)
        if not mtype.startswith("application/json"):
            return None
        if x.get("body_cut") or schema is None:
            return None
        try:
            value = json.loads(x["body"])
        except (TypeError, ValueError) as e:
            return "the body is not JSON: %s" % e
        err = schema_error(schema, value)
        return "body: " + err if err else None

    def events(self, x, named):
        for i, ev in enumerate(x.get("events") or []):
            schema = named.get(ev["event"])
            if schema is None:
                return "event %d %r is not one of %s" % (
                    i, ev["event"], ", ".join(named))
            schema = resolve(schema, self.doc)
            if schema.get("contentEncoding") == "base64":
                try:
                    base64.b64decode(ev["data"], validate=True)
                except (binascii.Error, ValueError):
                    return "event %d %s: data is not base64" % (
                        i, ev["event"])
                continue
            try:
                value = json.loads(ev["data"])
            except ValueError as e:
                return "event %d %s: data is not JSON: %s" % (
                    i, ev["event"], e)
            err = schema_error(schema, value)
            if err:
                return "event %d %s: %s" % (i, ev["event"], err)
        return None


def self_test(c):
    """Planted exchanges: the good pass, each bad one fails. 0 or 1."""
    sb = json.dumps({"sandboxes": []})
    good = [
        {"method": "GET", "path": "/v1/sandboxes", "route": "/v1/sandboxes",
         "status": 200, "type": "application/json", "body": sb},
        {"method": "PUT", "path": "/v1/sandboxes", "route": "/v1/sandboxes",
         "status": 405, "type": "application/json", "allow": "GET, POST",
         "body": '{"error":"method not allowed here"}'},
        {"method": "POST", "path": "/v1/sandboxes/a/exec",
         "route": "/v1/sandboxes/{name}/exec", "status": 200,
         "type": "text/event-stream", "events": [
             {"event": "start", "data": '{"id":1}'},
             {"event": "stdout", "data": "aGkK"},
             {"event": "exit", "data": '{"status":0,"signal":null,'
              '"timed_out":false,"error":null}'}]},
    ]
    bad = [
        dict(good[0], body='{"sandboxes":[],"extra":1}'),
        dict(good[0], status=418),
        dict(good[0], type="text/html"),
        dict(good[1], allow="GET"),
        dict(good[2], events=[{"event": "stdin", "data": "{}"}]),
        dict(good[2], events=[{"event": "stdout", "data": "not base64!"}]),
        dict(good[2], events=[{"event": "exit", "data": '{"status":"0",'
                               '"signal":null,"timed_out":false,"error":null}'}]),
        {"method": "GET", "path": "/nowhere", "route": None, "status": 200,
         "type": "application/json", "body": "{}"},
    ]
    rc = 0
    for x in good:
        err = c.check(x)
        if err is not None:
            print("FAIL self-test: a good exchange failed: %s" % err)
            rc = 1
    for i, x in enumerate(bad):
        if c.check(x) is None:
            print("FAIL self-test: planted bad exchange %d passed" % i)
            rc = 1
    print("contract self-test: %d good, %d bad, %s" % (
        len(good), len(bad), "ok" if rc == 0 else "FAILED"))
    return rc


def main(argv):
    if len(argv) == 4 and argv[1] == "--self-test":
        c = Contract(argv[2])
        c.routes(argv[3])
        return self_test(c)
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    c = Contract(argv[1])
    passed, failed = 0, 0
    for f in c.routes(argv[2]):
        print("FAIL " + f)
        failed += 1
    for rec in argv[3:]:
        if not os.path.exists(rec):
            continue  # an unmatched glob: no suite recorded anything
        suite = os.path.basename(rec).rsplit(".", 1)[0]
        with open(rec, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                try:
                    x = json.loads(line)
                except ValueError as e:
                    print("FAIL %s:%d: not a JSON line: %s" % (suite, n, e))
                    failed += 1
                    continue
                err = c.check(x)
                if err is None:
                    passed += 1
                    continue
                failed += 1
                print("FAIL %s: %s %s (%s) %d: %s" % (
                    suite, x.get("method"), x.get("path"),
                    x.get("route"), x["status"], err))
    if passed + failed == 0:
        print("FAIL no exchange recorded")
        failed += 1
    print("contract: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
