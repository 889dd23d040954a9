"""Which server, which token, and one HTTP request to it.

The server is found as `qsup client` finds it: a host given, else
QSUP_HOST, else the socket `qsup serve` listens on by default
($XDG_RUNTIME_DIR/qsup/qsup.sock, or /tmp/qsup-UID/qsup.sock without
XDG_RUNTIME_DIR). A host is "unix:PATH", "http://HOST:PORT",
"https://HOST:PORT" or "tcp:ADDR:PORT" (what `qsup serve --listen`
takes). The token: one given, else QSUP_TOKEN, else the file
QSUP_TOKEN_FILE names, else $XDG_RUNTIME_DIR/qsup/token (where the server
writes a new one when it has none). https checks the server against
cacert, else QSUP_CACERT, else the system's roots.

Every call is a connection of its own: an exec's event stream holds one
for as long as the command runs, and the server's idle timeout would
close a kept one between a script's calls anyway.
"""

import http.client
import json
import os
import socket
import ssl
import urllib.parse

from .errors import ConnectError, ProtocolError, error_for

# A JSON answer larger than this is not one the server gives.
MAX_JSON = 64 * 1024 * 1024


def run_path():
    """The directory of `qsup serve`'s default socket and token."""
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "qsup")
    return "/tmp/qsup-%d" % os.getuid()


def default_host():
    return "unix:" + os.path.join(run_path(), "qsup.sock")


def parse_host(spec):
    """(scheme, where): ("unix", PATH), ("http"|"https", "HOST:PORT")."""
    if spec.startswith("unix:"):
        if len(spec) == 5:
            raise ValueError("%s: no socket path after unix:" % spec)
        return "unix", spec[5:]
    if spec.startswith("tcp:"):
        rest = spec[4:]
        if not rest or "/" in rest:
            raise ValueError("%s: not a host (unix:PATH, tcp:ADDR:PORT, "
                             "http://HOST:PORT or https://HOST:PORT)" % spec)
        return "http", rest
    for scheme in ("http", "https"):
        if spec.startswith(scheme + "://"):
            rest = spec[len(scheme) + 3:].rstrip("/")
            if rest and not any(c in rest for c in "/?#"):
                return scheme, rest
    raise ValueError("%s: not a host (unix:PATH, tcp:ADDR:PORT, "
                     "http://HOST:PORT or https://HOST:PORT)" % spec)


def find_token():
    """(token, None), or (None, why there is none)."""
    env = os.environ.get("QSUP_TOKEN", "")
    if env:
        return env, None
    path = os.environ.get("QSUP_TOKEN_FILE", "") or \
        os.path.join(run_path(), "token")
    try:
        with open(path, "rb") as f:
            text = f.read(4096).decode("utf-8", "replace").strip()
    except OSError as e:
        return None, ("no token: QSUP_TOKEN is not set and %s: %s"
                      % (path, e.strerror))
    if not text:
        return None, "no token: %s is empty" % path
    return text, None


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a unix socket: only how it connects differs."""

    def __init__(self, path, timeout=None):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect(self.unix_path)
        except BaseException:
            s.close()
            raise
        self.sock = s


class Transport:
    """Where the server is and how to talk to it; makes each request."""

    def __init__(self, host=None, token=None, cacert=None, timeout=300.0):
        self.host = host or os.environ.get("QSUP_HOST") or default_host()
        self.scheme, self.where = parse_host(self.host)
        self.timeout = timeout
        self.token, self.token_why = (token, None) if token else find_token()
        self.context = None
        if self.scheme == "https":
            cacert = cacert or os.environ.get("QSUP_CACERT") or None
            self.context = ssl.create_default_context(cafile=cacert)

    def connection(self, timeout):
        if self.scheme == "unix":
            return UnixHTTPConnection(self.where, timeout=timeout)
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.where, timeout=timeout,
                                               context=self.context)
        return http.client.HTTPConnection(self.where, timeout=timeout)

    def open(self, method, path, query=None, body=None, ctype=None,
             auth=True, timeout=-1):
        """Send a request; its response, status checked, to read from.

        body: None, bytes, or an iterable of bytes (sent chunked).
        A status of 300 or more raises the ApiError for it. timeout -1:
        the transport's; None: none (an event stream waits for events).
        """
        if query:
            path += "?" + urllib.parse.urlencode(query, quote_via=_quote)
        headers = {"Accept": "*/*"}
        if auth:
            if self.token is None:
                raise ConnectError(self.token_why)
            headers["Authorization"] = "Bearer " + self.token
        if ctype is not None:
            headers["Content-Type"] = ctype
        chunked = body is not None and not isinstance(body, (bytes,
                                                             bytearray))
        if method in ("POST", "PUT", "PATCH") and body is None:
            body = b""
        conn = self.connection(self.timeout if timeout == -1 else timeout)
        try:
            conn.connect()
        except (OSError, ssl.SSLError) as e:
            conn.close()
            raise ConnectError("%s: %s" % (self.host, e.strerror or e)) \
                from e
        try:
            conn.request(method, path, body=body, headers=headers,
                         encode_chunked=chunked)
            resp = conn.getresponse()
        except BaseException:
            conn.close()
            raise
        resp.qsup_conn = conn
        if resp.status >= 300:
            try:
                raw = resp.read(MAX_JSON)
            finally:
                conn.close()
            raise _error(resp.status, resp.reason, raw, method, path)
        return resp

    def call(self, method, path, data=None, query=None, auth=True,
             expect_json=True, raw_body=None, timeout=-1):
        """A JSON call: data sent as JSON (if not None), or raw_body (bytes
        or an iterable of bytes) as it is; the answer parsed (None for an
        empty one, text when expect_json is false). timeout as open's."""
        body = None
        ctype = None
        if data is not None:
            body = json.dumps(data).encode()
            ctype = "application/json"
        elif raw_body is not None:
            body = raw_body
            ctype = "application/octet-stream"
        resp = self.open(method, path, query, body, ctype, auth, timeout)
        try:
            raw = resp.read(MAX_JSON + 1)
        finally:
            resp.qsup_conn.close()
        if len(raw) > MAX_JSON:
            raise ProtocolError("%s %s: an answer over %d bytes"
                                % (method, path, MAX_JSON))
        if not expect_json:
            return raw.decode("utf-8", "replace")
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ProtocolError("%s %s: %d with a body that is not JSON: %s"
                                % (method, path, resp.status, e)) from e


def _quote(s, safe="", encoding=None, errors=None):
    return urllib.parse.quote(s, safe="/", encoding=encoding, errors=errors)


def _error(status, reason, raw, method, path):
    body = None
    try:
        body = json.loads(raw)
    except ValueError:
        pass
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        message = body["error"]
    else:
        message = raw.decode("utf-8", "replace").strip() or reason
    return error_for(status, message, body, method, path)


class Stream:
    """A response read as it comes (an event stream): closing it, or
    leaving its `with`, drops the connection, which ends it server side."""

    def __init__(self, resp):
        self._resp = resp

    def close(self):
        conn = getattr(self._resp, "qsup_conn", None)
        self._resp.close()
        if conn is not None:
            conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
