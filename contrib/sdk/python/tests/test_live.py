#!/usr/bin/env python3
"""qsup_sdk against a real `qsup serve` (QSUP_HOST and QSUP_TOKEN say
which; tests/integration/sdk_python_test.sh starts one and installs the
package first). One sandbox, "a", made by the first test and deleted by
the last, serves every test between; a snapshot's restore and a fork are
the only other boots. Every command that waits on the test has a
timeout, so a test that goes wrong fails rather than hangs.
QSUP_TEST_TCP, if set, is a TCP listener of the same server
(tcp:ADDR:PORT) for the transport test.
"""

import hashlib
import io
import os
import time
import unittest

import runner
from qsup_sdk import (BadRequest, Client, Conflict, ConnectError, NotFound,
                      QsupError, Unauthorized)

OK_EXIT = {"status": 0, "signal": None, "timed_out": False, "error": None}


def until(events, pred, what, limit=200):
    """The first event of events that pred holds for (bounded)."""
    seen = []
    for ev in events:
        if pred(ev):
            return ev
        seen.append(ev)
        if len(seen) >= limit:
            break
    raise AssertionError("no %s among %r" % (what, seen[-10:]))


class Live(unittest.TestCase):
    client = None
    sb = None

    def need(self):
        if Live.sb is None:
            self.fail("no sandbox a: test_create failed")
        return Live.sb

    def test_create(self):
        Live.client = Client()
        self.assertTrue(Live.client.health()["ok"])
        sb = Live.client.create(name="a", ttl=600, on_ttl="pause",
                                persistent=True)
        Live.sb = sb
        self.assertEqual(sb.name, "a")
        self.assertEqual(sb.state, "ready")
        self.assertEqual((sb.ttl, sb.on_ttl, sb.persistent),
                         (600, "pause", True))
        self.assertGreater(sb.ttl_left, 0)
        self.assertIn(sb.start, ("cold", "warm", "template-build", "pool"))
        print("    create: %s start, boot %.3f s" % (sb.start, sb.boot_s))

    def test_list_get_patch(self):
        sb = self.need()
        names = [s.name for s in Live.client.list()]
        self.assertIn("a", names)
        got = Live.client.get("a")
        self.assertEqual((got.name, got.state), ("a", "ready"))
        sb.patch(ttl=None, idle_ttl=300)
        self.assertEqual((sb.ttl, sb.idle_ttl, sb.ttl_left), (None, 300,
                                                              None))
        self.assertGreater(sb.idle_left, 0)
        sb.patch(on_ttl="delete", idle_ttl=None)
        self.assertEqual(sb.refresh().info["on_ttl"], "delete")
        self.assertIsNone(sb.idle_ttl)

    def test_exec_output(self):
        sb = self.need()
        r = sb.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
        self.assertEqual((r.stdout, r.stderr, r.status, r.exit_code,
                          r.ok), (b"out\n", b"err\n", 3, 3, False))
        r = sb.exec(["sh", "-c", 'echo "$FOO"; pwd'], env={"FOO": "bar"},
                    cwd="/tmp")
        self.assertEqual(r.stdout, b"bar\n/tmp\n")
        self.assertTrue(r.ok)
        r = sb.exec(["no-such-command"])
        self.assertEqual(r.status, 127)
        self.assertTrue(r.error)

    def test_exec_stdin(self):
        sb = self.need()
        data = os.urandom(1 << 20)
        r = sb.exec(["sha256sum"], stdin=data)
        self.assertEqual(r.stdout.split()[0].decode(),
                         hashlib.sha256(data).hexdigest())
        r = sb.exec(["cat"], stdin=io.BytesIO(data))
        self.assertEqual(r.stdout, data)
        r = sb.exec(["tr", "a-z", "A-Z"], stdin="text\n")
        self.assertEqual(r.stdout, b"TEXT\n")
        # A command that ends without reading its stdin is no error.
        r = sb.exec(["true"], stdin=data)
        self.assertEqual(r.exit, OK_EXIT)

    def test_exec_stream_long(self):
        sb = self.need()
        lines, pieces, size, tail = 0, 0, 0, b""
        with sb.exec_stream(["seq", "1", "200000"]) as ex:
            self.assertGreater(ex.id, 0)
            for ev in ex:
                if ev.kind == "stdout":
                    lines += ev.data.count(b"\n")
                    pieces += 1
                    size += len(ev.data)
                    tail = (tail + ev.data)[-16:]
                elif ev.kind == "exit":
                    self.assertEqual(ev.data, OK_EXIT)
                else:
                    self.fail("event %r" % ev)
        self.assertEqual(lines, 200000)
        self.assertTrue(tail.endswith(b"\n199999\n200000\n"), tail)
        self.assertGreater(pieces, 1)
        self.assertEqual(ex.exit, OK_EXIT)
        print("    %d bytes of output in %d stdout events" % (size, pieces))

    def test_exec_stdin_stream(self):
        sb = self.need()
        with sb.exec_stream(["cat"], stdin=True, timeout=60) as ex:
            events = iter(ex)
            ex.write(b"one\n")
            ev = until(events, lambda e: e.kind == "stdout", "stdout")
            self.assertEqual(ev.data, b"one\n")
            ex.write(io.BytesIO(b"two\n"))
            ex.close_stdin()
            rest = ex.wait()
        self.assertEqual(rest.stdout, b"two\n")
        self.assertEqual(rest.exit, OK_EXIT)
        with self.assertRaises(NotFound):
            ex.write(b"late")

    def test_signal(self):
        sb = self.need()
        t0 = time.monotonic()
        with sb.exec_stream(["sh", "-c", "echo up; exec sleep 100"],
                            timeout=60) as ex:
            events = iter(ex)
            until(events, lambda e: e.kind == "stdout", "stdout")
            ex.signal("TERM")
            ev = until(events, lambda e: e.kind == "exit", "exit")
        self.assertEqual((ev.data["status"], ev.data["signal"]), (None, 15))
        self.assertLess(time.monotonic() - t0, 90)
        with sb.exec_stream(["sleep", "100"], timeout=60) as ex:
            ex.signal(9)
            r = ex.wait()
        self.assertEqual((r.signal, r.exit_code), (9, 137))
        with self.assertRaises(NotFound):
            ex.signal("TERM")

    def test_tty(self):
        sb = self.need()
        out = b""
        with sb.exec_stream(["sh", "-c", "tty; stty size; read x; "
                             "echo got $x; stty size"], tty=True, rows=40,
                            cols=100, stdin=True, timeout=60) as ex:
            for ev in ex:
                self.assertIn(ev.kind, ("stdout", "exit"))
                if ev.kind == "stdout":
                    out += ev.data
                    if b"40 100\r\n" in out and b"yes" not in out:
                        ex.resize(50, 120)
                        ex.write(b"yes\n")
        self.assertEqual(ex.exit, OK_EXIT)
        self.assertRegex(out, rb"^/dev/pts/[0-9]+\r\n40 100\r\n")
        self.assertTrue(out.endswith(b"got yes\r\n50 120\r\n"), out)
        # Not a TTY: 409 (closing the stream ends the command).
        with sb.exec_stream(["sleep", "30"], timeout=60) as ex:
            with self.assertRaises(Conflict):
                ex.resize(10, 10)

    def test_timeout(self):
        r = self.need().exec(["sleep", "30"], timeout=1)
        self.assertTrue(r.timed_out)
        self.assertIsNone(r.status)

    def test_files(self):
        sb = self.need()
        got = sb.write_file("/tmp/small", b"hello\n", mode=0o600)
        self.assertEqual(got, {"path": "/tmp/small", "size": 6})
        self.assertEqual(sb.read_file("/tmp/small"), b"hello\n")
        self.assertEqual(sb.exec(["stat", "-c", "%a", "/tmp/small"]).stdout,
                         b"600\n")
        data = os.urandom(3 << 20)
        got = sb.write_file("/tmp/big file", io.BytesIO(data), mode="755")
        self.assertEqual(got["size"], len(data))
        into = io.BytesIO()
        self.assertEqual(sb.read_file("/tmp/big file", into=into),
                         len(data))
        self.assertEqual(into.getvalue(), data)
        r = sb.exec(["sh", "-c", "stat -c %a '/tmp/big file'; "
                     "sha256sum '/tmp/big file'"])
        mode, digest = r.stdout.split()[:2]
        self.assertEqual((mode, digest.decode()),
                         (b"755", hashlib.sha256(data).hexdigest()))
        sb.write_file("/tmp/empty", b"")
        self.assertEqual(sb.read_file("/tmp/empty"), b"")
        with self.assertRaises(NotFound) as cm:
            sb.read_file("/tmp/no-such-file")
        self.assertIn("/tmp/no-such-file", cm.exception.message)
        with self.assertRaises(NotFound):
            sb.write_file("/no-such-dir/f", b"x")
        with self.assertRaises(Conflict):
            sb.read_file("/tmp")
        with self.assertRaises(BadRequest) as cm:
            sb.write_file("relative", b"x")
        self.assertEqual(cm.exception.field, "path")

    def test_events_pause_resume(self):
        sb = self.need()
        with Live.client.events(timeout=60) as events:
            ev = until(events, lambda e: e.name == "sandbox" and
                       e.data["name"] == "a", "a's state")
            self.assertEqual(ev.data["state"], "ready")
            self.assertEqual(sb.pause().state, "paused")
            with self.assertRaises(Conflict) as cm:
                sb.exec(["true"])
            self.assertEqual(cm.exception.message, "sandbox a is paused")
            self.assertEqual(cm.exception.status, 409)
            with self.assertRaises(Conflict):
                sb.read_file("/tmp/small")
            self.assertEqual(Live.client.get("a").state, "paused")
            self.assertEqual(sb.resume().state, "ready")
            self.assertEqual(sb.exec(["cat", "/tmp/small"]).stdout,
                             b"hello\n")
            for state in ("paused", "ready"):
                until(events, lambda e: e.name == "sandbox" and
                      e.data == {"name": "a", "state": state,
                                 "reason": None}, "a " + state)
            ev = until(events, lambda e: e.name == "exec", "an exec event")
            self.assertEqual((ev.data["sandbox"], ev.data["state"]),
                             ("a", "running"))

    def test_snapshot_restore_fork(self):
        sb = self.need()
        c = Live.client
        sb.write_file("/tmp/mark", b"before the snapshot\n")
        snap = sb.snapshot("s1")
        try:
            self.assertEqual((snap.name, snap.sandbox), ("s1", "a"))
            self.assertGreater(snap.size_bytes, 0)
            self.assertIn("s1", [s.name for s in c.snapshots()])
            self.assertEqual(c.get_snapshot("s1").sandbox, "a")
            with self.assertRaises(Conflict):
                sb.snapshot("s1")
            sb.write_file("/tmp/mark", b"after\n")
            # wait=False: answered at once (202), then polled to ready.
            b = snap.restore(name="b", wait=False)
            try:
                self.assertIn(b.state, ("booting", "ready"))
                b.wait_ready(timeout=120)
                self.assertEqual((b.state, b.start), ("ready", "snapshot"))
                self.assertEqual(b.read_file("/tmp/mark"),
                                 b"before the snapshot\n")
                b.write_file("/tmp/mark", b"b's\n")
                self.assertEqual(sb.read_file("/tmp/mark"), b"after\n")
            finally:
                self.assertEqual(b.delete()["state"], "deleted")
        finally:
            snap.delete()
        with self.assertRaises(NotFound):
            c.get_snapshot("s1")
        fork = sb.fork(names=["a-copy"])
        self.assertEqual(fork.source, "a")
        copy = fork.sandboxes[0]
        try:
            self.assertEqual((copy.name, copy.state), ("a-copy", "ready"))
            self.assertEqual(copy.read_file("/tmp/mark"), b"after\n")
            copy.write_file("/tmp/mark", b"the copy's\n")
            self.assertEqual(sb.read_file("/tmp/mark"), b"after\n")
        finally:
            copy.delete()
        print("    fork: %.3f s" % fork.seconds)

    def test_errors(self):
        sb = self.need()
        c = Live.client
        with self.assertRaises(NotFound) as cm:
            c.get("nope")
        self.assertEqual((cm.exception.status, cm.exception.message),
                         (404, "no sandbox named nope"))
        with self.assertRaises(NotFound):
            c.sandbox("nope").exec(["true"])
        with self.assertRaises(NotFound):
            c.sandbox("nope").delete()
        with self.assertRaises(Conflict) as cm:
            c.create(name="a")
        self.assertEqual((cm.exception.status, cm.exception.message),
                         (409, "a sandbox named a exists"))
        with self.assertRaises(BadRequest) as cm:
            c.create(name="x", ttl=-1)
        self.assertEqual((cm.exception.status, cm.exception.field),
                         (400, "ttl"))
        with self.assertRaises(BadRequest) as cm:
            c.create(name="Not A Name")
        self.assertEqual(cm.exception.field, "name")
        with self.assertRaises(BadRequest) as cm:
            sb.exec([])
        self.assertEqual(cm.exception.field, "argv")
        with self.assertRaises(BadRequest) as cm:
            sb.patch(on_ttl="explode")
        self.assertEqual(cm.exception.field, "on_ttl")
        with self.assertRaises(NotFound):
            c.create(name="x", snapshot="no-such-snapshot")
        bad = Client(host=c.transport.host, token="wrong")
        with self.assertRaises(Unauthorized) as cm:
            bad.list()
        self.assertEqual(cm.exception.status, 401)
        self.assertTrue(bad.health()["ok"])
        with self.assertRaises(ConnectError) as cm:
            Client(host="unix:/nonexistent/qsup.sock", token="t").list()
        self.assertIsInstance(cm.exception, QsupError)
        self.assertNotIn("x", [s.name for s in c.list()])

    def test_server(self):
        c = Live.client
        doc = c.openapi()
        self.assertIn("/v1/sandboxes/{name}/exec", doc["paths"])
        self.assertRegex(c.metrics(), r'(?m)^qsup_sandboxes\{state="ready"\}')

    def test_tcp(self):
        where = os.environ.get("QSUP_TEST_TCP")
        if not where:
            self.skipTest("QSUP_TEST_TCP is not set")
        sb = self.need()
        c = Client(host=where, token=Live.client.transport.token)
        self.assertEqual(c.get("a").state, "ready")
        r = c.sandbox("a").exec(["cat"], stdin=b"over tcp")
        self.assertEqual(r.stdout, b"over tcp")
        self.assertEqual(c.sandbox("a").read_file("/tmp/small"), b"hello\n")
        self.assertIsNotNone(sb)

    def test_delete(self):
        sb = self.need()
        report = sb.delete()
        self.assertEqual((report["name"], report["state"]), ("a", "deleted"))
        with self.assertRaises(NotFound):
            Live.client.get("a")
        self.assertEqual(Live.client.list(), [])
        Live.sb = None


if __name__ == "__main__":
    runner.main(Live)
