#!/usr/bin/env python3
"""Test helper for oci_test.sh: a proxy in front of a real docker-registry
that logs each request ("METHOD PATH" a line) and plays one fault:

  registry_proxy.py PORT UPSTREAM_PORT MODE LOG
  MODE  pass        forward everything
        expire      as bearer, but tokens are numbered, and blobs want
                    the second one or later (the first "expired")
        bearer      /v2/ wants "Bearer good-token" (a 401 with a bearer
                    challenge otherwise); /token gives it for the Basic
                    credentials in $PROXY_CRED (base64 of user:password),
                    or to anyone when $PROXY_CRED is empty
        drop        the first GET of each blob sends half its body, then
                    closes the connection
        dropall     every GET of a blob does, until the file LOG.heal is
                    there
        norange     as drop (after a pause of a second), and the GET
                    after it is sent whole, its Range ignored (the pull
                    starts the blob again from 0)
        wrong       every blob's bytes with one byte changed
        wronglate   every blob's first half, a pause of a second, then
                    the rest with its last byte changed (a layer is
                    being extracted when its digest fails)
        stall       blob GETs send their headers, then nothing
        status:N    manifests answer HTTP N (with Retry-After:
                    $PROXY_RETRY_AFTER, else 1)
        busy:K:S    the first K manifest GETs answer 429 with
                    Retry-After: S, the rest are forwarded
        blobbusy:N:K:S  the first K blob GETs answer HTTP N with
                    Retry-After: S (none: without one), the rest are
                    forwarded
"""
import http.client
import json
import os
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, UP, MODE, LOG = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], \
    sys.argv[4]
CRED = os.environ.get("PROXY_CRED", "")
LOCK = threading.Lock()
DROPPED = set()
ISSUED = [0]
BUSY = [0]
RETRY_AFTER = os.environ.get("PROXY_RETRY_AFTER", "1")
PASS_HEADERS = ("content-type", "content-length", "docker-content-digest",
                "content-range", "accept-ranges", "location", "etag")


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        with LOCK, open(LOG, "a") as f:
            f.write("%s %s\n" % (self.command, self.path))
        blob = "/blobs/" in self.path
        if MODE == "bearer":
            if self.path.startswith("/token"):
                got = self.headers.get("Authorization", "")
                if CRED and got != "Basic " + CRED:
                    return self.answer(401, b"{}")
                return self.answer(200, json.dumps(
                    {"token": "good-token"}).encode())
            if self.headers.get("Authorization") != "Bearer good-token":
                return self.answer(401, b"{}", [(
                    "WWW-Authenticate", 'Bearer realm="http://127.0.0.1:%d'
                    '/token",service="qsup-test",scope="repository:x:pull"'
                    % PORT)])
        if MODE == "expire":
            if self.path.startswith("/token"):
                with LOCK:
                    ISSUED[0] += 1
                    n = ISSUED[0]
                return self.answer(200, json.dumps(
                    {"token": "tok-%d" % n}).encode())
            got = self.headers.get("Authorization", "")
            ok = got.startswith("Bearer tok-") and (
                not blob or int(got[11:]) >= 2)
            if not ok:
                return self.answer(401, b"{}", [(
                    "WWW-Authenticate", 'Bearer realm="http://127.0.0.1:%d'
                    '/token",service="qsup-test"' % PORT)])
        if MODE.startswith("status:") and "/manifests/" in self.path:
            return self.answer(int(MODE[7:]), b"{}",
                               [("Retry-After", RETRY_AFTER)])
        if MODE.startswith("busy:") and "/manifests/" in self.path:
            k, secs = MODE[5:].split(":")
            with LOCK:
                BUSY[0] += 1
                busy = BUSY[0] <= int(k)
            if busy:
                return self.answer(429, b"{}", [("Retry-After", secs)])
        if MODE.startswith("blobbusy:") and blob:
            code, k, secs = MODE[9:].split(":")
            with LOCK:
                BUSY[0] += 1
                busy = BUSY[0] <= int(k)
            if busy:
                return self.answer(int(code), b"{}", [] if secs == "none"
                                   else [("Retry-After", secs)])
        c = http.client.HTTPConnection("127.0.0.1", UP, timeout=60)
        hd = {k: v for k, v in self.headers.items()
              if k.lower() in ("accept", "range") and not (
                  MODE == "norange" and k.lower() == "range")}
        c.request(self.command, self.path, headers=hd)
        r = c.getresponse()
        body = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() in PASS_HEADERS:
                self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            return
        if blob and r.status in (200, 206) and MODE == "stall":
            time.sleep(3600)
        if blob and r.status in (200, 206) and MODE in ("drop", "dropall",
                                                         "norange"):
            with LOCK:
                first = self.path not in DROPPED
                DROPPED.add(self.path)
            if MODE == "dropall":
                first = not os.path.exists(LOG + ".heal")
            if first and len(body) > 1:
                self.wfile.write(body[:len(body) // 2])
                self.wfile.flush()
                if MODE == "norange":
                    # The half surely written and read by the build
                    # before the restart: else the pull may see the drop
                    # first, and the build has nothing to stop for.
                    time.sleep(1)
                self.close_connection = True
                return
        if blob and r.status == 200 and MODE == "wrong" and body:
            body = bytes([body[0] ^ 1]) + body[1:]
        if blob and r.status == 200 and MODE == "wronglate" and body:
            body = body[:-1] + bytes([body[-1] ^ 1])
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            time.sleep(1)
            body = body[len(body) // 2:]
        self.wfile.write(body)


class S(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


socketserver.TCPServer.allow_reuse_address = True
S(("127.0.0.1", PORT), H).serve_forever()
