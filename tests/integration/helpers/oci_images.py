#!/usr/bin/env python3
"""Test helper for oci_test.sh and bench/oci.sh: OCI image layouts written
by hand from mkrootfs.py's busybox userland, for skopeo to push to a test
registry. Every layer is deterministic (fixed mtimes, gzip without a
time), so two images built on the same base share its layer's digest.

  oci_images.py gzip DIR      two gzip layers: the base, and an upper one
                              that deletes (.wh.), empties (opaque) and
                              replaces lower files
  oci_images.py zstd DIR      the same with zstd layers
  oci_images.py multi DIR     an index: linux/amd64 and linux/arm64
  oci_images.py arm DIR       an index with linux/arm64 only
  oci_images.py shared DIR    the gzip base layer and another upper one
  oci_images.py latewh DIR    an upper layer whose whiteout of a lower file
                              comes between its own entries
  oci_images.py ownwh DIR     an upper layer with a whiteout of a file it
                              holds itself (it stays: whiteouts are of the
                              layers below)
  oci_images.py big DIR MB    DIR/a: the base and a layer of MB MiB of random
                              bytes; DIR/b: the same layers and a small one
"""
import gzip
import io
import json
import os
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mkrootfs import add, base, blob  # noqa: E402

OCI_MAN = "application/vnd.oci.image.manifest.v1+json"
OCI_IDX = "application/vnd.oci.image.index.v1+json"
OCI_CFG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"


def tar_of(fill):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=tarfile.PAX_FORMAT) as t:
        fill(t)
    return b.getvalue()


def compress(data, how):
    if how == "gzip":
        return gzip.compress(data, mtime=0), LAYER + "+gzip"
    if how == "zstd":
        return subprocess.run(["zstd", "-q", "-c", "-3"], input=data,
                              capture_output=True, check=True).stdout, \
            LAYER + "+zstd"
    return data, LAYER


def upper(flavor):
    def fill(t):
        add(t, "etc/.wh.gone")
        add(t, "opt/o", tarfile.DIRTYPE, mode=0o755)
        add(t, "opt/o/.wh..wh..opq")
        add(t, "opt/o/new", data=b"layer 2\n")
        add(t, "etc/passwd", data=b"root:x:0:0:replaced:/root:/bin/sh\n")
        add(t, "etc/flavor", data=flavor.encode() + b"\n", uid=42, gid=43)
    return fill


def late_whiteout(own):
    def fill(t):
        add(t, "etc/new", data=b"new\n")
        if own:
            add(t, "etc/.wh.new")
        add(t, "etc/.wh.motd")
        add(t, "etc/after", data=b"after\n")
    return fill


def image(d, layers, arch="amd64", how="gzip"):
    """A manifest of layers (tar bytes) in d's blobs: its descriptor."""
    descs = []
    for data in layers:
        c, mt = compress(data, how)
        dg, n = blob(d, c)
        descs.append({"mediaType": mt, "digest": dg, "size": n})
    cfg = {"architecture": arch, "os": "linux",
           "config": {"Env": ["PATH=/bin", "QSUP_IMG=from-registry"],
                      "WorkingDir": "/"},
           "rootfs": {"type": "layers", "diff_ids": []}}
    dc, nc = blob(d, json.dumps(cfg).encode())
    man = {"schemaVersion": 2, "mediaType": OCI_MAN,
           "config": {"mediaType": OCI_CFG, "digest": dc, "size": nc},
           "layers": descs}
    dm, nm = blob(d, json.dumps(man).encode())
    return {"mediaType": OCI_MAN, "digest": dm, "size": nm,
            "platform": {"architecture": arch, "os": "linux"}}


def layout(d, desc):
    desc = dict(desc)
    desc["annotations"] = {"org.opencontainers.image.ref.name": "latest"}
    with open(os.path.join(d, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [desc]}, f)
    print(desc["digest"])


def index(d, descs):
    idx = {"schemaVersion": 2, "mediaType": OCI_IDX, "manifests": descs}
    di, ni = blob(d, json.dumps(idx).encode())
    return {"mediaType": OCI_IDX, "digest": di, "size": ni}


def big_layer(mb):
    def fill(t):
        ti = tarfile.TarInfo("srv/big")
        ti.size = int(mb) << 20
        ti.mtime = 1700000000
        with open("/dev/urandom", "rb") as z:
            t.addfile(ti, z)
    return fill


def main():
    c, d = sys.argv[1], sys.argv[2]
    os.makedirs(d, exist_ok=True)
    lower = tar_of(base)
    if c in ("gzip", "zstd"):
        layout(d, image(d, [lower, tar_of(upper(c))], how=c))
    elif c == "multi":
        a = image(d, [lower, tar_of(upper("amd64"))])
        b = image(d, [lower, tar_of(upper("arm64"))], arch="arm64")
        layout(d, index(d, [b, a]))
    elif c == "arm":
        layout(d, index(d, [image(d, [lower, tar_of(upper("arm64"))],
                                  arch="arm64")]))
    elif c == "shared":
        layout(d, image(d, [lower, tar_of(upper("shared"))]))
    elif c in ("latewh", "ownwh"):
        layout(d, image(d, [lower, tar_of(late_whiteout(c == "ownwh"))]))
    elif c == "big":
        big = tar_of(big_layer(sys.argv[3]))
        for sub, ls in (("a", [lower, big]),
                        ("b", [lower, big, tar_of(upper("big"))])):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
            layout(os.path.join(d, sub), image(os.path.join(d, sub), ls))


if __name__ == "__main__":
    main()
