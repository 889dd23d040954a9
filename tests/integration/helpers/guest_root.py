#!/usr/bin/env python3
"""Boot qsup's built-in guest in QEMU with a disk image attached as qsup
attaches it (a qcow2 overlay, virtio-blk-pci, serial qsup-root), speak the
agent protocol (wire.h) to it directly, and report what happened. Used by
guest_root_test.sh while the host side of disk images is not merged.

    guest_root.py [options] -- ARGV...

Boots with qsup.template=1 qsup.root=1 (or restores --restore STATE),
POSTs the config (--config FILE) to /setup, prints the /setup answer on
one line, runs ARGV (stdout and stderr pass through), powers the guest
off, and exits with ARGV's status. --save STATE instead saves the booted
template's VM state to STATE and exits; --setup-only stops after /setup
(status 0, or 3 when /setup did not answer 200)."""

import argparse
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import time

TOKEN = "guest-root-test-token"


def die(msg):
    print("guest_root.py: " + msg, file=sys.stderr)
    sys.exit(2)


class Conn:
    """One HTTP/1.1 connection on an agent port."""

    def __init__(self, path, deadline):
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.s.connect(path)
                break
            except OSError:
                self.s.close()
                if time.time() > deadline:
                    die("cannot connect to " + path)
                time.sleep(0.05)
        self.buf = b""
        self.deadline = deadline

    def fill(self):
        self.s.settimeout(max(0.1, self.deadline - time.time()))
        try:
            data = self.s.recv(65536)
        except socket.timeout:
            die("the agent did not answer in time")
        if not data:
            die("the agent closed the port")
        self.buf += data

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def take(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def request(self, method, path, body=b"", auth=True):
        head = "%s %s HTTP/1.1\r\nHost: guest\r\n" % (method, path)
        if auth:
            head += "Authorization: Bearer %s\r\n" % TOKEN
        head += "Content-Length: %d\r\n\r\n" % len(body)
        self.s.sendall(head.encode() + body)
        status = None
        while True:
            ln = self.line()
            status = int(ln.split()[1])
            headers = {}
            while True:
                h = self.line()
                if not h:
                    break
                k, v = h.decode().split(":", 1)
                headers[k.strip().lower()] = v.strip()
            if status != 100:
                break
        return status, headers

    def body(self, headers):
        if headers.get("transfer-encoding") == "chunked":
            return None
        return self.take(int(headers.get("content-length", "0")))

    def chunks(self):
        """The chunks of a chunked body, as they come."""
        while True:
            size = int(self.line(), 16)
            if size == 0:
                self.line()
                return
            yield self.take(size)
            self.take(2)


def run_exec(conn, argv):
    st, hd = conn.request("POST", "/exec",
                          json.dumps({"argv": argv}).encode())
    if st != 200:
        die("exec: %d %s" % (st, conn.body(hd)))
    sse = b""
    status = 125
    for chunk in conn.chunks():
        sse += chunk
        while b"\n\n" in sse:
            ev, sse = sse.split(b"\n\n", 1)
            name = data = ""
            for ln in ev.decode().split("\n"):
                if ln.startswith("event: "):
                    name = ln[7:]
                elif ln.startswith("data: "):
                    data += ln[6:]
            if name == "stdout":
                sys.stdout.buffer.write(base64.b64decode(data))
                sys.stdout.flush()
            elif name == "stderr":
                sys.stderr.buffer.write(base64.b64decode(data))
                sys.stderr.flush()
            elif name == "exit":
                x = json.loads(data)
                if "error" in x:
                    print("exec: " + x["error"], file=sys.stderr)
                status = x.get("status", 128 + x.get("signal", 0))
    return status


def both16(v):
    return struct.pack("<H", v) + struct.pack(">H", v)


def both32(v):
    return struct.pack("<I", v) + struct.pack(">I", v)


def dirrec(lba, size, flags, name):
    n = 33 + len(name)
    rec = (bytes([n + (n & 1), 0]) + both32(lba) + both32(size) +
           bytes(7) + bytes([flags, 0, 0]) + both16(1) +
           bytes([len(name)]) + name)
    return rec + bytes(n & 1)


def seed_iso(path, config):
    """The smallest ISO 9660 image the agent's reader (guest/iso.c)
    takes as a seed: volume cidata, a root directory, qsup-config."""
    sec = 2048
    pvd = bytearray(sec)
    pvd[0:7] = b"\x01CD001\x01"
    pvd[40:72] = b"cidata".ljust(32)
    pvd[80:88] = both32(20)
    pvd[120:124] = both16(1)
    pvd[124:128] = both16(1)
    pvd[128:132] = both16(sec)
    pvd[156:190] = dirrec(18, sec, 2, b"\x00")
    term = bytearray(sec)
    term[0:7] = b"\xffCD001\x01"
    root = (dirrec(18, sec, 2, b"\x00") + dirrec(18, sec, 2, b"\x01") +
            dirrec(19, len(config), 0, b"qsup-config"))
    with open(path, "wb") as f:
        f.write(bytes(16 * sec) + pvd + term + root.ljust(sec, b"\0") +
                config.ljust(sec, b"\0"))


def qmp(path, cmds, deadline):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    while True:
        try:
            s.connect(path)
            break
        except OSError:
            if time.time() > deadline:
                die("no QMP socket")
            time.sleep(0.05)
    f = s.makefile("rwb")
    f.readline()
    out = []
    for c in [{"execute": "qmp_capabilities"}] + cmds:
        f.write(json.dumps(c).encode() + b"\n")
        f.flush()
        while True:
            r = json.loads(f.readline())
            if "return" in r or "error" in r:
                out.append(r)
                break
    return s, f, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--disk", required=True)
    ap.add_argument("--disk-format", default="qcow2")
    ap.add_argument("--config")
    ap.add_argument("--dir", required=True, help="sockets and console")
    ap.add_argument("--tsc-khz", default="2600000")
    ap.add_argument("--save")
    ap.add_argument("--restore")
    ap.add_argument("--setup-only", action="store_true")
    ap.add_argument("--no-root-word", action="store_true",
                    help="boot without qsup.root=1")
    ap.add_argument("--resize", type=int,
                    help="QMP block_resize the disk to this many bytes "
                    "before /setup (as a host does after a restore)")
    ap.add_argument("--cold", action="store_true",
                    help="boot with the config on a seed ISO, not a "
                    "template taking /setup")
    ap.add_argument("--share", action="append", default=[],
                    metavar="DIR:TAG", help="a 9p share, as qsup adds one")
    ap.add_argument("--timeout", type=float, default=150)
    ap.add_argument("argv", nargs="*")
    a = ap.parse_args()

    deadline = time.time() + a.timeout
    agent = os.path.join(a.dir, "agent.sock")
    qmps = os.path.join(a.dir, "qmp.sock")
    for p in (agent, qmps):
        if os.path.exists(p):
            os.unlink(p)
    append = ("console=ttyS0 quiet panic=-1 tsc_early_khz=%s tsc=reliable "
              "no_timer_check cryptomgr.notests random.trust_cpu=on "
              "mitigations=off init_on_alloc=0 audit=0 apparmor=0 "
              "8250.nr_uarts=1 qsup.ports=1" % a.tsc_khz)
    if not a.cold:
        append += " qsup.template=1"
    if not a.no_root_word:
        append += " qsup.root=1"
    cmd = ["qemu-system-x86_64", "-M", "microvm,pcie=on",
           "-accel", "tcg,tb-size=64", "-m", "512", "-smp", "1",
           "-nodefaults", "-no-user-config", "-display", "none",
           "-no-reboot", "-kernel", a.kernel, "-initrd", a.initrd,
           "-append", append,
           "-serial", "file:" + os.path.join(a.dir, "console.log"),
           "-device", "virtio-serial-device",
           "-chardev", "socket,id=agent0,path=%s,server=on,wait=off" % agent,
           "-device", "virtserialport,chardev=agent0,name=org.qsup.agent.0",
           "-netdev", "user,id=net0,restrict=on",
           "-device", "virtio-net-device,netdev=net0",
           "-blockdev", "driver=%s,node-name=root,file.driver=file,"
           "file.filename=%s" % (a.disk_format, a.disk),
           "-device", "virtio-blk-pci,drive=root,serial=qsup-root",
           "-qmp", "unix:%s,server=on,wait=off" % qmps]
    if a.restore:
        cmd += ["-incoming", "exec:cat " + a.restore]
    for i, share in enumerate(a.share):
        path, tag = share.rsplit(":", 1)
        cmd += ["-fsdev", "local,id=fs%d,path=%s,security_model=none" %
                (i, path),
                "-device", "virtio-9p-pci,fsdev=fs%d,mount_tag=%s" % (i, tag)]
    if a.cold:
        iso = os.path.join(a.dir, "seed.iso")
        with open(a.config, "rb") as fh:
            seed_iso(iso, fh.read().replace(b"@TOKEN@", TOKEN.encode()))
        cmd += ["-blockdev", "driver=file,node-name=seed,read-only=on,"
                "filename=" + iso,
                "-device", "virtio-blk-pci,drive=seed"]
    q = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
    try:
        return session(a, q, agent, qmps, deadline)
    finally:
        if q.poll() is None:
            try:
                q.wait(timeout=10)
            except subprocess.TimeoutExpired:
                q.kill()
                q.wait()


def session(a, q, agent, qmps, deadline):
    if a.restore:
        s, f, out = qmp(qmps, [], deadline)
        while True:
            r = qmp_status(f)
            if r in ("paused", "postmigrate", "running"):
                break
            if time.time() > deadline:
                die("the restore did not complete")
            time.sleep(0.05)
        f.write(b'{"execute":"cont"}\n')
        f.flush()
        f.readline()
        f.close()
        s.close()
    conn = Conn(agent, deadline)
    t0 = time.time()
    if a.cold:
        st, hd = conn.request("GET", "/ping")
        answer = conn.body(hd).decode()
        print("setup %d %s %.2f" % (st, answer, time.time() - t0))
        sys.stdout.flush()
        return finish(a, q, conn, st)
    st, hd = conn.request("GET", "/ping", auth=False)
    ping = conn.body(hd)
    if st != 200:
        die("template ping: %d %s" % (st, ping))
    if a.save:
        s, f, out = qmp(qmps, [
            {"execute": "stop"},
            {"execute": "migrate", "arguments":
             {"uri": "exec:cat > " + a.save}}], deadline)
        while qmp_migrate(f) not in ("completed", "failed"):
            time.sleep(0.05)
        f.write(b'{"execute":"quit"}\n')
        f.flush()
        f.close()
        s.close()
        print(ping.decode())
        return 0
    if a.resize:
        s, f, out = qmp(qmps, [{"execute": "block_resize", "arguments":
                                {"node-name": "root", "size": a.resize}}],
                        deadline)
        if "error" in out[-1]:
            die("block_resize: %s" % out[-1]["error"])
        f.close()
        s.close()
    with open(a.config, "rb") as fh:
        config = fh.read().replace(b"@TOKEN@", TOKEN.encode())
    st, hd = conn.request("POST", "/setup", config, auth=False)
    answer = conn.body(hd).decode()
    print("setup %d %s %.2f" % (st, answer, time.time() - t0))
    sys.stdout.flush()
    return finish(a, q, conn, st)


def finish(a, q, conn, st):
    """Run the command once set up, then power the guest off."""
    status = 3 if st != 200 else 0
    if st == 200 and not a.setup_only and a.argv:
        status = run_exec(conn, a.argv)
    # A guest still in template state (/setup refused) takes no poweroff.
    if st == 400:
        q.kill()
        return status
    try:
        conn.request("POST", "/poweroff")
    except SystemExit:
        pass
    try:
        q.wait(timeout=max(1, min(20, conn.deadline - time.time())))
    except subprocess.TimeoutExpired:
        q.kill()
    return status


def qmp_status(f):
    f.write(b'{"execute":"query-status"}\n')
    f.flush()
    while True:
        r = json.loads(f.readline())
        if "return" in r:
            return r["return"]["status"]


def qmp_migrate(f):
    f.write(b'{"execute":"query-migrate"}\n')
    f.flush()
    while True:
        r = json.loads(f.readline())
        if "return" in r:
            return r["return"].get("status", "none")


if __name__ == "__main__":
    sys.exit(main())
