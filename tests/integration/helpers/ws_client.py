#!/usr/bin/env python3
"""A WebSocket client (RFC 6455) for the tests, standard library only.

    ws = WS.connect(sock_path_or_host_port, path, headers={...})
    ws.status      the handshake's HTTP status (101 when upgraded)
    ws.head        the response head
    ws.send(op, payload, mask=True)   a whole frame (op 1 text, 2 binary,
                                      8 close, 9 ping); raw=bytes sends
                                      bytes as they are
    ws.recv()      (op, payload) of the next frame, or (None, b"") at EOF

Also a command line for quick checks:
    ws_client.py SOCK PATH TOKEN [FIRST_TEXT]   prints the frames received
"""
import base64
import os
import socket
import struct
import sys


class WS:
    def __init__(self, s):
        self.s = s
        self.buf = b""
        self.status = None
        self.head = ""

    @classmethod
    def connect(cls, where, path, headers=None, timeout=60):
        if isinstance(where, tuple):
            s = socket.create_connection(where, timeout=timeout)
            host = "%s:%d" % where
        else:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(timeout)
            s.connect(where)
            host = "qsup"
        ws = cls(s)
        key = base64.b64encode(os.urandom(16)).decode()
        h = {"Host": host, "Upgrade": "websocket", "Connection": "Upgrade",
             "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13"}
        h.update(headers or {})
        req = "GET %s HTTP/1.1\r\n" % path
        req += "".join("%s: %s\r\n" % (k, v) for k, v in h.items() if v is not None)
        s.sendall((req + "\r\n").encode())
        while b"\r\n\r\n" not in ws.buf:
            d = s.recv(65536)
            if not d:
                break
            ws.buf += d
        head, _, ws.buf = ws.buf.partition(b"\r\n\r\n")
        ws.head = head.decode(errors="replace")
        try:
            ws.status = int(ws.head.split(" ", 2)[1])
        except (IndexError, ValueError):
            ws.status = None
        return ws

    def send(self, op, payload=b"", mask=True, fin=True, raw=None):
        if raw is not None:
            self.s.sendall(raw)
            return
        if isinstance(payload, str):
            payload = payload.encode()
        b0 = (0x80 if fin else 0) | op
        n = len(payload)
        m = 0x80 if mask else 0
        if n < 126:
            hdr = struct.pack("!BB", b0, m | n)
        elif n < 65536:
            hdr = struct.pack("!BBH", b0, m | 126, n)
        else:
            hdr = struct.pack("!BBQ", b0, m | 127, n)
        if mask:
            k = os.urandom(4)
            payload = bytes(c ^ k[i % 4] for i, c in enumerate(payload))
            hdr += k
        self.s.sendall(hdr + payload)

    def _need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                return False
            self.buf += d
        return True

    def recv(self):
        if not self._need(2):
            return (None, b"")
        b0, b1 = self.buf[0], self.buf[1]
        n = b1 & 0x7F
        off = 2
        if n == 126:
            if not self._need(4):
                return (None, b"")
            n = struct.unpack("!H", self.buf[2:4])[0]
            off = 4
        elif n == 127:
            if not self._need(10):
                return (None, b"")
            n = struct.unpack("!Q", self.buf[2:10])[0]
            off = 10
        if not self._need(off + n):
            return (None, b"")
        p = self.buf[off:off + n]
        self.buf = self.buf[off + n:]
        return (b0 & 0x0F, p)

    def close(self):
        self.s.close()


def main():
    sock, path, token = sys.argv[1:4]
    ws = WS.connect(sock, path, {"Authorization": "Bearer " + token})
    print("status", ws.status)
    if ws.status != 101:
        print(ws.head)
        return
    if len(sys.argv) > 4:
        ws.send(1, sys.argv[4])
    while True:
        op, p = ws.recv()
        if op is None:
            break
        print(op, p[:200])
        if op == 8:
            break


if __name__ == "__main__":
    main()
