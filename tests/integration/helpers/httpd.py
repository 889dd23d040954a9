# An HTTP(S) server on 127.0.0.1 for the image pull tests and bench, on
# Python's standard library: serves DIR, honours Range (206 with its
# Content-Range), takes any free port, writes it to PORTFILE once it
# listens, and logs each request to LOG as "PATH range=RANGE status=N
# method=GET", so a test can tell what reached it.
#   python3 httpd.py [--tls CERT KEY] DIR PORTFILE LOG
# Faults, chosen by a prefix of the path (the rest is the file in DIR):
#   /drop/N/F      close the connection after N bytes of the body, the
#                  first time F is asked for this way only (a resume works)
#   /stall/N/F     send N bytes of the body, then nothing (up to 120 s)
#   /slow/R/F      send at most R bytes a second
#   /norange/F     ignore Range: always 200 and the whole file
#   /badrange/F    answer a Range with 206 but a Content-Range from 0
#   /redirect/F    302 to /F (one /redirect less: a chain of them nests)
#   /404/F         404
#   /short/N/F     cut every body after N bytes (the connection closed)
#   /endless/F     200 without a Content-Length, F over and over, never
#                  ending (until the client goes)
#   /huge/F        200 claiming a Content-Length of 1 PB, then F's bytes
#   /tofile/F      302 to file:///etc/passwd
import http.server
import os
import re
import ssl
import sys
import threading
import time

args = sys.argv[1:]
tls = None
if args and args[0] == "--tls":
    tls = (args[1], args[2])
    args = args[3:]
root, portfile, log = args[:3]
root = os.path.abspath(root)
dropped = set()
lock = threading.Lock()
CHUNK = 256 * 1024


def parse(path):
    """(faults, file path): the fault prefixes and what they serve."""
    faults = {}
    parts = path.split("?")[0].lstrip("/").split("/")
    while parts:
        if parts[0] in ("drop", "stall", "slow", "short") and \
                len(parts) > 1 and \
                parts[1].isdigit():
            faults[parts[0]] = int(parts[1])
            parts = parts[2:]
        elif parts[0] in ("norange", "badrange", "redirect", "404",
                          "endless", "huge", "tofile"):
            faults[parts[0]] = True
            parts = parts[1:]
        else:
            break
    return faults, "/".join(parts)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as nginx sets on kept-alive connections: else the
    # body's first segment waits for the ACK of the headers', which a
    # client that reused the connection (the checksums first, then the
    # image) delays 40 ms; curl -o, on a fresh one, did not wait.
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass

    def note(self, status):
        with lock, open(log, "a") as f:
            f.write("%s range=%s status=%d method=%s\n" % (
                self.path, self.headers.get("Range", "-"), status,
                self.command))

    def fail(self, status):
        self.note(status)
        body = b"no\n"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        faults, rel = parse(self.path)
        if "404" in faults:
            return self.fail(404)
        if "redirect" in faults:
            self.note(302)
            self.send_response(302)
            self.send_header("Location", self.path.replace(
                "/redirect", "", 1))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if "tofile" in faults:
            self.note(302)
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path = os.path.realpath(os.path.join(root, rel))
        if not path.startswith(root + "/") or not os.path.isfile(path):
            return self.fail(404)
        if "endless" in faults:
            return self.endless(path, faults)
        size = os.path.getsize(path)
        start, end = 0, size - 1
        rng = self.headers.get("Range")
        m = re.match(r"bytes=(\d+)-(\d*)$", rng or "")
        status = 200
        if m and "norange" not in faults:
            start = int(m.group(1))
            if m.group(2):
                end = min(int(m.group(2)), size - 1)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.note(416)
                return
            status = 206
        self.note(status)
        self.send_response(status)
        if status == 206:
            shown = 0 if "badrange" in faults else start
            self.send_header("Content-Range", "bytes %d-%d/%d" % (
                shown, end, size))
        if "huge" in faults:
            self.send_header("Content-Length", str(10 ** 15))
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if self.command == "HEAD":
            return
        self.body(path, start, end - start + 1, faults)

    def body(self, path, start, n, faults):
        limit = None
        key = self.path
        if "drop" in faults:
            with lock:
                if key not in dropped:
                    dropped.add(key)
                    limit = faults["drop"]
        if "stall" in faults:
            limit = faults["stall"]
        if "short" in faults:
            limit = faults["short"]
        if "huge" in faults:
            n += 1      # short of what it claims: closed after the file
        rate = faults.get("slow")
        sent = 0
        t0 = time.monotonic()
        with open(path, "rb") as f:
            f.seek(start)
            while sent < n:
                want = min(CHUNK, n - sent)
                if rate:
                    want = min(want, max(1, rate // 10))
                if limit is not None:
                    want = min(want, limit - sent)
                if want <= 0:
                    break
                data = f.read(want)
                if not data:
                    break
                self.wfile.write(data)
                sent += len(data)
                if rate:
                    ahead = sent / rate - (time.monotonic() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
        self.wfile.flush()
        if "stall" in faults and sent < n:
            time.sleep(120)
        if sent < n:
            self.close_connection = True
            try:
                self.connection.shutdown(2)
            except OSError:
                pass


    def endless(self, path, faults):
        """F's bytes over and over, no length: a body that never ends."""
        self.note(200)
        self.send_response(200)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        if self.command == "HEAD":
            return
        with open(path, "rb") as f:
            data = f.read()
        rate = faults.get("slow")
        step = max(1, rate // 10) if rate else CHUNK
        try:
            while True:
                for i in range(0, len(data), step):
                    self.wfile.write(data[i:i + step])
                    if rate:
                        time.sleep(0.1)
        except OSError:
            pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass


srv = Server(("127.0.0.1", 0), Handler)
if tls:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tls[0], tls[1])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(portfile + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
