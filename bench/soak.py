#!/usr/bin/env python3
"""Soak a running `qsup serve` on a unix socket, bounded in time.

  soak.py --sock S --token-file F --serve-pid PID --run-dir D
          [--seconds N] [--clients N] [--slow N] [--faults]

Each client loops until the deadline: create a sandbox, exec `cat` fed
through stdin, a command on a terminal, one printing 2 MB, a file put and
got back, then delete. Beside them, with --faults, a loop that kills a
random sandbox's QEMU (SIGKILL) or a client mid-exec (its socket closed
under the stream); with --slow N, N connections that send a request head
one byte a second. Every request must be answered with a status (an
error status is a refusal, counted by kind, as is a body cut short when
its sandbox's QEMU was killed under it); one left without an answer,
a stream without its exit event, or bytes that differ from those sent
while nothing was killed, is a failure. At the end the remaining
sandboxes are deleted and the server's fds and RSS, QEMUs and run
directory are compared with the start. Prints the figures; exit status
0 only when nothing failed and nothing leaked.
"""
import argparse
import base64
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

TIMEOUT = 120           # seconds: a request unanswered past this hangs


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=TIMEOUT):
        super().__init__("qsup", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.lat = {}           # op -> [seconds]
        self.ok = {}            # op -> count
        self.refused = {}       # "op status" -> count
        self.failed = {}        # "op why" -> count
        self.examples = []

    def add(self, table, key, n=1):
        with self.lock:
            table[key] = table.get(key, 0) + n

    def done(self, op, t0):
        with self.lock:
            self.lat.setdefault(op, []).append(time.monotonic() - t0)
            self.ok[op] = self.ok.get(op, 0) + 1

    def fail(self, op, why, detail=""):
        self.add(self.failed, "%s: %s" % (op, why))
        with self.lock:
            if len(self.examples) < 10:
                self.examples.append("%s: %s %s" % (op, why, detail[:4000]))


class Soak:
    def __init__(self, a):
        self.a = a
        self.token = open(a.token_file).read().strip()
        self.stats = Stats()
        self.deadline = time.monotonic() + a.seconds
        self.stop = threading.Event()
        self.klock = threading.Lock()
        self.live = {}          # name -> True while a client uses it
        self.where = threading.local()  # each thread's last request

    def hdrs(self, extra=None):
        h = {"Authorization": "Bearer " + self.token}
        h.update(extra or {})
        return h

    def request(self, method, path, body=None, headers=None):
        """(status, body bytes); raises on a connection without an answer."""
        c = UnixHTTP(self.a.sock)
        self.where.last = "%s %s" % (method, path)
        try:
            c.request(method, path, body=body, headers=self.hdrs(headers))
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def diagnose(self, name):
        """What the server says of a sandbox that left a request
        unanswered: its state, execs and console tail, and its QEMU's."""
        last = getattr(self.where, "last", "?")
        try:
            s, b = self.request("GET", "/v1/sandboxes/" + name)
            info = b.decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as e:
            info = "GET failed: %s" % e
        ps = subprocess.run(["sh", "-c", "ps -o pid,stat,time,cmd -p "
                             "$(pgrep -d, -f 'qemu-system.*%s' || echo 1)"
                             " | cut -c1-60" % self.a.run_dir],
                            capture_output=True, text=True).stdout
        return "%s unanswered; %s; QEMUs: %s" % (last, info, ps)

    def was_killed(self, name):
        """Did the fault loop kill name's QEMU? Its state says: dead (the
        agent's port may close a moment before the server reaps QEMU)."""
        for _ in range(50):
            try:
                s, b = self.request("GET", "/v1/sandboxes/" + name)
                if s == 200 and json.loads(b).get("state") == "dead":
                    return True
            except (OSError, http.client.HTTPException, ValueError):
                return False
            time.sleep(0.1)
        return False

    # One exec: its events read to the end; (exit dict, stdout, stderr).
    def exec_stream(self, name, req, feed=None):
        c = UnixHTTP(self.a.sock)
        try:
            c.request("POST", "/v1/sandboxes/%s/exec" % name,
                      body=json.dumps(req),
                      headers=self.hdrs({"Content-Type": "application/json"}))
            r = c.getresponse()
            if r.status != 200:
                return {"refused": r.status, "body": r.read()}, b"", b""
            out, err, ev, data, exit_ = [], [], None, [], None
            while True:
                line = r.fp.readline()
                if not line:
                    break
                line = line.rstrip(b"\r\n")
                if line.startswith(b":"):
                    continue
                if line.startswith(b"event:"):
                    ev = line[6:].strip().decode()
                    continue
                if line.startswith(b"data:"):
                    data.append(line[5:].lstrip(b" "))
                    continue
                if line == b"" and ev is not None:
                    d = b"\n".join(data)
                    if ev == "start" and feed is not None:
                        xid = json.loads(d)["id"]
                        threading.Thread(target=feed, args=(xid,),
                                         daemon=True).start()
                    elif ev == "stdout":
                        out.append(base64.b64decode(d))
                    elif ev == "stderr":
                        err.append(base64.b64decode(d))
                    elif ev == "exit":
                        exit_ = json.loads(d)
                        break
                    ev, data = None, []
            return exit_, b"".join(out), b"".join(err)
        finally:
            c.close()

    def op(self, op, name, fn):
        """Run fn; count it. fn returns None (ok), or ("refused", status)
        or ("failed", why, detail)."""
        t0 = time.monotonic()
        try:
            res = fn()
        except (OSError, http.client.HTTPException) as e:
            if isinstance(e, socket.timeout):
                self.stats.fail(op, "no answer in %d s" % TIMEOUT,
                                "%s: %s" % (name, self.diagnose(name)))
            elif (isinstance(e, http.client.IncompleteRead) and
                  self.was_killed(name)):
                # Its status came; its QEMU died under the body, which
                # the server can then only cut.
                self.stats.add(self.stats.refused,
                               "%s (QEMU killed mid-body)" % op)
            else:
                self.stats.fail(op, "no status: " + type(e).__name__,
                                str(e))
            return False
        if res is None:
            self.stats.done(op, t0)
            return True
        if res[0] == "refused":
            self.stats.add(self.stats.refused, "%s %s" % (op, res[1]))
            return False
        if res[0] == "failed" and self.was_killed(name):
            self.stats.add(self.stats.refused, "%s (QEMU killed)" % op)
            return False
        self.stats.fail(op, res[1], res[2] if len(res) > 2 else "")
        return False

    def check_exit(self, x, name):
        if x is None:
            return ("failed", "stream ended without an exit event")
        if "refused" in x:
            return ("refused", x["refused"])
        if x.get("error"):
            if self.was_killed(name):
                return ("refused", "exit error")
            return ("failed", "exit error", x["error"])
        return None

    def client(self, n):
        k = 0
        while time.monotonic() < self.deadline and not self.stop.is_set():
            k += 1
            name = "soak-%d-%d" % (n, k)
            self.cycle(name)

    def cycle(self, name):
        st = {}

        def create():
            s, b = self.request("POST", "/v1/sandboxes",
                                json.dumps({"name": name}),
                                {"Content-Type": "application/json"})
            st["created"] = s == 201
            return None if s == 201 else ("refused", s)
        self.op("create", name, create)
        if st.get("created"):
            with self.klock:
                self.live[name] = True
            for step in (self.step_stdin, self.step_tty, self.step_big,
                         self.step_files):
                if time.monotonic() >= self.deadline:
                    break
                step(name)
            with self.klock:
                self.live.pop(name, None)

        def delete():
            s, b = self.request("DELETE", "/v1/sandboxes/" + name)
            return None if s in (200, 404) else ("refused", s)
        self.op("delete", name, delete)

    def step_stdin(self, name):
        data = os.urandom(random.choice((1, 4096, 200000)))

        def feed(xid):
            try:
                p = "/v1/sandboxes/%s/exec/%d/stdin" % (name, xid)
                self.request("POST", p, data)
                self.request("POST", p, b"")
            except OSError:
                pass

        def run():
            x, out, _ = self.exec_stream(
                name, {"argv": ["cat"], "stdin": True}, feed=feed)
            bad = self.check_exit(x, name)
            if bad:
                return bad
            if out != data:
                return ("failed", "stdin echoed wrong",
                        "%d bytes in, %d out" % (len(data), len(out)))
            return None
        self.op("exec stdin", name, run)

    def step_tty(self, name):
        def run():
            x, out, _ = self.exec_stream(
                name, {"argv": ["sh", "-c", "tty; stty size"], "tty": True,
                       "rows": 30, "cols": 99})
            bad = self.check_exit(x, name)
            if bad:
                return bad
            if b"30 99" not in out:
                return ("failed", "tty output", repr(out[:100]))
            return None
        self.op("exec tty", name, run)

    def step_big(self, name):
        n = 2000000

        def run():
            x, out, _ = self.exec_stream(
                name, {"argv": ["head", "-c", str(n), "/dev/zero"]})
            bad = self.check_exit(x, name)
            if bad:
                return bad
            if len(out) != n or out.count(b"\0") != n:
                return ("failed", "big output", "%d bytes" % len(out))
            return None
        self.op("exec 2 MB out", name, run)

    def step_files(self, name):
        data = os.urandom(random.choice((0, 1000, 300000)))
        path = "/v1/sandboxes/%s/files?path=/tmp/soak" % name

        def run():
            s, b = self.request("PUT", path, data)
            if s != 201:
                return ("refused", s)
            s, b = self.request("GET", path)
            if s != 200:
                return ("refused", s)
            if b != data:
                return ("failed", "file read back differs",
                        "%d put, %d got" % (len(data), len(b)))
            return None
        self.op("files put+get", name, run)

    # Faults: a QEMU killed, or a client gone mid-exec.
    def faults(self):
        rnd = random.Random(7)
        while not self.stop.wait(rnd.uniform(2, 5)):
            if time.monotonic() >= self.deadline:
                break
            with self.klock:
                names = list(self.live)
            if not names:
                continue
            name = rnd.choice(names)
            pids = qemus(self.a.run_dir)
            if rnd.random() < 0.5 and pids:
                # Which sandbox it was, the API says: it becomes dead.
                try:
                    os.kill(rnd.choice(pids), signal.SIGKILL)
                    self.stats.add(self.stats.ok, "fault: QEMU killed")
                except OSError:
                    pass
            else:
                try:
                    if self.exec_dropped(name):
                        self.stats.add(self.stats.ok,
                                       "fault: client gone mid-exec")
                except (OSError, http.client.HTTPException):
                    pass

    def exec_dropped(self, name):
        """An exec of sleep whose client goes away once it has started."""
        c = UnixHTTP(self.a.sock)
        try:
            c.request("POST", "/v1/sandboxes/%s/exec" % name,
                      body=json.dumps({"argv": ["sleep", "30"]}),
                      headers=self.hdrs({"Content-Type": "application/json"}))
            r = c.getresponse()
            if r.status != 200:
                return False
            while True:
                line = r.fp.readline()
                if not line or line.startswith(b"event: exit"):
                    return False
                if line.startswith(b"event: start"):
                    break
            time.sleep(0.3)
            c.sock.shutdown(socket.SHUT_RDWR)
            return True
        finally:
            c.close()

    # Slow clients: a head, a byte a second, each connection until the
    # server closes it (then another).
    def slow(self, i):
        head = b"GET /v1/sandboxes HTTP/1.1\r\nHost: q\r\nX-Slow: " + \
            b"a" * 4000 + b"\r\n\r\n"
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(self.a.sock)
                self.stats.add(self.stats.ok, "slow: connections")
                for b in head:
                    if self.stop.wait(1) or \
                            time.monotonic() >= self.deadline:
                        break
                    s.send(bytes([b]))
            except OSError:
                self.stats.add(self.stats.ok, "slow: closed by the server")
            finally:
                s.close()


def qemus(run_dir, name=""):
    r = subprocess.run(["pgrep", "-f", "qemu-system.*%s.*%s" % (run_dir, name)],
                       capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sock", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--serve-pid", type=int, required=True)
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--slow", type=int, default=4)
    ap.add_argument("--faults", action="store_true")
    ap.add_argument("--rss-slack-kb", type=int, default=16384)
    a = ap.parse_args()
    s = Soak(a)
    pid = a.serve_pid

    # A first cycle warms the server (templates, allocator) before the
    # fds and RSS that the end is compared with.
    s.cycle("soak-warmup")
    fd0, rss0 = fds(pid), rss_kb(pid)
    s.deadline = time.monotonic() + a.seconds
    t0 = time.monotonic()
    threads = [threading.Thread(target=s.client, args=(i,))
               for i in range(a.clients)]
    if a.faults:
        threads.append(threading.Thread(target=s.faults))
    threads += [threading.Thread(target=s.slow, args=(i,))
                for i in range(a.slow)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(a.seconds + TIMEOUT * 2)
    s.stop.set()
    hung = [t for t in threads if t.is_alive()]
    elapsed = time.monotonic() - t0

    # Whatever is left: deleted through the API.
    status, body = s.request("GET", "/v1/sandboxes")
    left = [x["name"] for x in json.loads(body)["sandboxes"]] \
        if status == 200 else []
    for n in left:
        s.request("DELETE", "/v1/sandboxes/" + n)
    time.sleep(1)
    fd1, rss1 = fds(pid), rss_kb(pid)
    q = qemus(a.run_dir)
    dirs = [d for d in os.listdir(os.path.join(a.run_dir, "qsup"))
            if d.startswith("sb-")] \
        if os.path.isdir(os.path.join(a.run_dir, "qsup")) else []

    st = s.stats
    nops = sum(v for k, v in st.ok.items() if not k.startswith(("fault", "slow")))
    print("soak: %.0f s, %d clients, %d slow, faults %s" %
          (elapsed, a.clients, a.slow, "on" if a.faults else "off"))
    print("  operations ok: %d, refused with a status: %d, failed: %d" %
          (nops, sum(st.refused.values()), sum(st.failed.values())))
    for op in sorted(st.lat):
        v = st.lat[op]
        print("  %-16s %5d ok  p50 %7.1f ms  p99 %7.1f ms" %
              (op, len(v), pct(v, 50) * 1000, pct(v, 99) * 1000))
    for k in sorted(st.ok):
        if k.startswith(("fault", "slow")):
            print("  %-32s %d" % (k, st.ok[k]))
    for k in sorted(st.refused):
        print("  refused: %-26s %d" % (k, st.refused[k]))
    for k in sorted(st.failed):
        print("  FAILED: %-27s %d" % (k, st.failed[k]))
    for e in st.examples:
        print("    e.g. " + e)
    print("  server fds: %d before, %d after; RSS: %d kB before, %d kB after"
          % (fd0, fd1, rss0, rss1))
    bad = []
    if st.failed:
        bad.append("%d operations failed" % sum(st.failed.values()))
    if hung:
        bad.append("%d threads still waiting" % len(hung))
    if nops == 0:
        bad.append("no operation succeeded")
    if fd1 > fd0:
        bad.append("the server holds %d more fds" % (fd1 - fd0))
    if rss1 - rss0 > a.rss_slack_kb:
        bad.append("the server's RSS grew by %d kB" % (rss1 - rss0))
    if q:
        bad.append("QEMUs left: %s" % q)
    if dirs:
        bad.append("run directories left: %s" % dirs)
    for b in bad:
        print("  LEAK or FAILURE: " + b)
    print("soak: %s" % ("ok" if not bad else "FAILED"))
    sys.stdout.flush()
    os._exit(0 if not bad else 1)


if __name__ == "__main__":
    main()
