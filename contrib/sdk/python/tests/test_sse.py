#!/usr/bin/env python3
"""The pieces that need no server: the event-stream parser (fed whole and
byte by byte), the host specs, the token's sources, the errors' types."""

import os
import tempfile
import unittest

import runner
from qsup_sdk import (ApiError, BadRequest, Conflict, Event, ExecResult,
                      NotFound, SSEParser, ServerError, Unavailable)
from qsup_sdk.errors import error_for
from qsup_sdk.transport import find_token, parse_host, run_path

# A stream as the server writes one (an exec's), with a comment.
EXEC_STREAM = (b"event: start\ndata: {\"id\":3}\n\n"
               b": keepalive\n\n"
               b"event: stdout\ndata: aGVsbG8K\n\n"
               b"event: exit\ndata: {\"status\":0,\"signal\":null,"
               b"\"timed_out\":false,\"error\":null}\n\n")


def byte_by_byte(data):
    p = SSEParser()
    out = []
    for i in range(len(data)):
        out.extend(p.feed(data[i:i + 1]))
    return out


class SSE(unittest.TestCase):
    def test_exec_stream(self):
        want = [Event("start", '{"id":3}'), Event("stdout", "aGVsbG8K"),
                Event("exit", '{"status":0,"signal":null,"timed_out":false,'
                      '"error":null}')]
        self.assertEqual(SSEParser().feed(EXEC_STREAM), want)
        self.assertEqual(byte_by_byte(EXEC_STREAM), want)

    def test_line_ends(self):
        # LF, CRLF and CR alone, and a CRLF split between two pieces.
        for sep in (b"\n", b"\r\n", b"\r"):
            data = sep.join([b"event: a", b"data: 1", b"", b"data: 2",
                             b"", b""])
            self.assertEqual(SSEParser().feed(data),
                             [Event("a", "1"), Event("message", "2")], sep)
            self.assertEqual(byte_by_byte(data),
                             [Event("a", "1"), Event("message", "2")], sep)
        p = SSEParser()
        self.assertEqual(p.feed(b"data: x\r"), [])
        # The LF after a CR is that CR's, not a blank line of its own.
        self.assertEqual(p.feed(b"\ndata: y\r\n\r\n"),
                         [Event("message", "x\ny")])

    def test_fields(self):
        data = (b"\xef\xbb\xbfdata:no space\ndata:  two spaces\n"
                b"event\nid: 7\nretry: 10\nbogus: 1\n: comment\n\n")
        self.assertEqual(SSEParser().feed(data),
                         [Event("message", "no space\n two spaces", "7")])

    def test_no_data_no_event(self):
        # A blank line after only a name dispatches nothing, and the name
        # does not carry over to the next event.
        self.assertEqual(SSEParser().feed(b"event: x\n\ndata: 1\n\n"),
                         [Event("message", "1")])

    def test_unended_event_dropped(self):
        p = SSEParser()
        self.assertEqual(p.feed(b"data: 1\n\ndata: 2\n"),
                         [Event("message", "1")])

    def test_bounded(self):
        p = SSEParser(max_line=16)
        with self.assertRaises(ValueError):
            p.feed(b"data: " + b"x" * 40)
        p = SSEParser(max_line=16)
        with self.assertRaises(ValueError):
            p.feed(b"data: 1234567\ndata: 1234567\ndata: 1234567\n")

    def test_utf8(self):
        self.assertEqual(SSEParser().feed("data: é\n\n".encode()),
                         [Event("message", "é")])


class Pieces(unittest.TestCase):
    def test_hosts(self):
        self.assertEqual(parse_host("unix:/run/q.sock"),
                         ("unix", "/run/q.sock"))
        self.assertEqual(parse_host("tcp:127.0.0.1:8080"),
                         ("http", "127.0.0.1:8080"))
        self.assertEqual(parse_host("https://h:1/"), ("https", "h:1"))
        self.assertEqual(parse_host("http://[::1]:8080"),
                         ("http", "[::1]:8080"))
        for bad in ("unix:", "tcp:", "ftp://h", "http://h/path",
                    "localhost:80"):
            with self.assertRaises(ValueError, msg=bad):
                parse_host(bad)

    def test_token_sources(self):
        saved = {k: os.environ.get(k) for k in
                 ("QSUP_TOKEN", "QSUP_TOKEN_FILE", "XDG_RUNTIME_DIR")}
        try:
            with tempfile.TemporaryDirectory() as d:
                os.environ["XDG_RUNTIME_DIR"] = d
                os.environ.pop("QSUP_TOKEN", None)
                os.environ.pop("QSUP_TOKEN_FILE", None)
                self.assertEqual(run_path(), d + "/qsup")
                tok, why = find_token()
                self.assertIsNone(tok)
                self.assertIn(d + "/qsup/token", why)
                os.mkdir(d + "/qsup")
                with open(d + "/qsup/token", "w") as f:
                    f.write("abc\n")
                self.assertEqual(find_token(), ("abc", None))
                with open(d + "/other", "w") as f:
                    f.write("def")
                os.environ["QSUP_TOKEN_FILE"] = d + "/other"
                self.assertEqual(find_token(), ("def", None))
                os.environ["QSUP_TOKEN"] = "ghi"
                self.assertEqual(find_token(), ("ghi", None))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_errors(self):
        e = error_for(400, "ttl: negative", {"error": "ttl: negative",
                                             "field": "ttl"}, "POST", "/x")
        self.assertIsInstance(e, BadRequest)
        self.assertEqual((e.status, e.message, e.field), (400,
                                                          "ttl: negative",
                                                          "ttl"))
        self.assertIsInstance(error_for(404, "m"), NotFound)
        self.assertIsInstance(error_for(409, "m"), Conflict)
        u = error_for(503, "m", {"error": "m", "limit": "max_sandboxes",
                                 "max": 2})
        self.assertIsInstance(u, Unavailable)
        self.assertEqual((u.limit, u.max), ("max_sandboxes", 2))
        self.assertIsInstance(error_for(502, "m"), ServerError)
        self.assertIsInstance(error_for(408, "m"), ApiError)

    def test_exit_code(self):
        r = ExecResult({"status": None, "signal": 15, "timed_out": False,
                        "error": None})
        self.assertEqual(r.exit_code, 143)
        self.assertFalse(r.ok)


if __name__ == "__main__":
    runner.main(SSE, Pieces)
