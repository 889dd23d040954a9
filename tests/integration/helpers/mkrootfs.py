#!/usr/bin/env python3
"""Test helper for image_build_test.sh: container file systems written as
tar archives entry by entry (owners, modes, devices, links and xattrs as a
root-made archive has them, made by anyone), and OCI image layouts of them
by hand (index.json -> manifest -> config + layers, sha256 blobs).

  mkrootfs.py base OUT.tar        a busybox userland (see base())
  mkrootfs.py oci DIR             a two-layer OCI layout of it, tag "latest"
  mkrootfs.py bad KIND OUT.tar    an archive with one bad entry
  mkrootfs.py big OUT.tar MB [random]
                                  base plus a file of MB MiB of zeros (slow
                                  to extract) or random bytes (to fill)
  mkrootfs.py many OUT.tar N      base plus N small files (slow to build)
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

BUSYBOX = shutil.which("busybox") or "/bin/busybox"
CAP_NET_RAW = bytes.fromhex("0100000200200000000000000000000000000000")


def add(t, name, kind=tarfile.REGTYPE, data=b"", mode=0o644, uid=0, gid=0,
        link="", dev=(0, 0), xattrs=None):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mode = mode
    ti.uid, ti.gid = uid, gid
    ti.mtime = 1700000000
    ti.linkname = link
    ti.devmajor, ti.devminor = dev
    if xattrs:
        ti.pax_headers = {"SCHILY.xattr." + k: v.decode("latin-1")
                          for k, v in xattrs.items()}
    if kind == tarfile.REGTYPE:
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)


def base(t, extra=True):
    bb = open(BUSYBOX, "rb").read()
    applets = subprocess.run([BUSYBOX, "--list"], capture_output=True,
                             text=True, check=True).stdout.split()
    for d in ("bin", "etc", "home", "home/u", "srv", "tmp", "root", "work",
              "opt", "opt/o", "proc", "sys", "dev", "run"):
        add(t, "./" + d, tarfile.DIRTYPE, mode=0o1777 if d == "tmp" else 0o755)
    add(t, "./bin/busybox", data=bb, mode=0o755)
    for a in applets:
        if a != "busybox":
            add(t, "./bin/" + a, tarfile.SYMTYPE, mode=0o777, link="busybox")
    # Set-uid root, and a file capability, in an archive the builder
    # (uid 65534) could never make itself.
    add(t, "./bin/suid", data=bb, mode=0o4755)
    add(t, "./bin/capped", data=b"#!/bin/sh\n", mode=0o755,
        xattrs={"security.capability": CAP_NET_RAW,
                "user.qsup": b"hello"})
    add(t, "./home/u/f", data=b"owned by 1234\n", uid=1234, gid=1234)
    add(t, "./home/u/g", tarfile.LNKTYPE, link="./home/u/f", uid=1234,
        gid=1234)
    add(t, "./srv/null9", tarfile.CHRTYPE, mode=0o666, dev=(1, 3))
    add(t, "./srv/blk", tarfile.BLKTYPE, mode=0o600, dev=(7, 9))
    add(t, "./etc/passwd", data=b"root:x:0:0:root:/root:/bin/sh\n")
    add(t, "./etc/motd", tarfile.SYMTYPE, link="/etc/passwd")
    if extra:
        add(t, "./etc/gone", data=b"whited out by layer 2\n")
        add(t, "./opt/o/old", data=b"hidden by the opaque dir\n")


def cmd_base(out):
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        base(t)


def cmd_big(out, mb, fill="zero"):
    """Random bytes for a file system to hold (mke2fs -d makes holes of
    zero blocks), zeros for a tree that is only slow to extract."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        base(t)
        ti = tarfile.TarInfo("./srv/big")
        ti.size = int(mb) << 20
        with open("/dev/urandom" if fill == "random" else "/dev/zero",
                  "rb") as z:
            t.addfile(ti, z)


def cmd_many(out, n):
    """base and n small files: slow to extract under fakeroot, whose
    every chown and chmod is a round trip to its daemon."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        base(t)
        add(t, "./srv/many", tarfile.DIRTYPE, mode=0o755)
        for i in range(int(n)):
            add(t, "./srv/many/%d" % i, data=b"x", uid=i % 5000)


def blob(d, data):
    h = hashlib.sha256(data).hexdigest()
    os.makedirs(os.path.join(d, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(d, "blobs", "sha256", h), "wb") as f:
        f.write(data)
    return "sha256:" + h, len(data)


def cmd_oci(d):
    l1 = io.BytesIO()
    with tarfile.open(fileobj=l1, mode="w", format=tarfile.PAX_FORMAT) as t:
        base(t)
    l2 = io.BytesIO()
    with tarfile.open(fileobj=l2, mode="w", format=tarfile.PAX_FORMAT) as t:
        add(t, "etc/.wh.gone")
        add(t, "opt/o", tarfile.DIRTYPE, mode=0o755)
        add(t, "opt/o/.wh..wh..opq")
        add(t, "opt/o/new", data=b"layer 2\n")
        add(t, "srv/added", data=b"added by layer 2\n", uid=42, gid=43)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    d1, n1 = blob(d, l1.getvalue())
    d2, n2 = blob(d, gzip.compress(l2.getvalue()))
    cfg = {"architecture": "amd64", "os": "linux",
           "config": {"Env": ["PATH=/bin", "QSUP_IMG=from-oci",
                              "SPACED=a b%c"],
                      "WorkingDir": "/work",
                      "Entrypoint": ["/bin/sh", "-c"],
                      "Cmd": ["echo default"]},
           "rootfs": {"type": "layers", "diff_ids": []}}
    dc, nc = blob(d, json.dumps(cfg).encode())
    man = {"schemaVersion": 2,
           "mediaType": "application/vnd.oci.image.manifest.v1+json",
           "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                      "digest": dc, "size": nc},
           "layers": [
               {"mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": d1, "size": n1},
               {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": d2, "size": n2}]}
    dm, nm = blob(d, json.dumps(man).encode())
    idx = {"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json",
         "digest": dm, "size": nm,
         "annotations": {"org.opencontainers.image.ref.name": "latest"}}]}
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump(idx, f)
    # What the test breaks: the layers' and the manifest's digests.
    print(d1, d2, dm)


def cmd_bad(kind, out):
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
        add(t, "./bin", tarfile.DIRTYPE, mode=0o755)
        if kind == "dotdot":
            add(t, "./bin/../../evil", data=b"x")
        elif kind == "absolute":
            add(t, "/etc/evil", data=b"x")
        elif kind == "symlink":
            add(t, "./bin/escape", tarfile.SYMTYPE, link="../../etc/passwd")
        elif kind == "hardlink":
            add(t, "./bin/hard", tarfile.LNKTYPE, link="../outside")
        elif kind == "through":
            add(t, "./etc", tarfile.SYMTYPE, link="/tmp")
            add(t, "./etc/evil", data=b"x")
        else:
            sys.exit("unknown kind " + kind)


if __name__ == "__main__":
    c = sys.argv[1]
    {"base": cmd_base, "oci": cmd_oci, "bad": cmd_bad,
     "big": cmd_big, "many": cmd_many}[c](*sys.argv[2:])
