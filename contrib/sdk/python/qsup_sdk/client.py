"""The client of `qsup serve`: sandboxes, their commands and files,
snapshots and forks, and the server's own event stream.

Paths and fields are docs/openapi.json's (GET /v1/openapi.json): the
client sends what it is given and the server checks it, so a bad value
comes back as the server's own 400 naming the field.
"""

import json
import time
import urllib.parse

from .errors import ProtocolError, QsupError
from .exec import Exec, ExecResult, feed_stdin, stdin_body
from .sse import read_events
from .transport import Stream, Transport

# "Not given" for fields where None means something (null: no limit).
UNSET = object()


def _members(**kw):
    return {k: v for k, v in kw.items() if v is not UNSET}


def _q(name):
    return urllib.parse.quote(name, safe="")


class ServerEvent:
    """One event of GET /v1/events: name ("sandbox", "exec", "ttl",
    "snapshot", ...) and data (its JSON, parsed)."""

    __slots__ = ("name", "data")

    def __init__(self, name, data):
        self.name = name
        self.data = data

    def __repr__(self):
        return "ServerEvent(%r, %r)" % (self.name, self.data)


class EventStream(Stream):
    """The server's events as they happen: iterate over it; close it (or
    leave its `with`) to stop. It starts with one "sandbox" event for
    each sandbox there is. A read waits at most timeout seconds (None:
    forever; the server sends a comment every 15 s, which is not an
    event), then raises TimeoutError (socket.timeout before 3.10)."""

    def __init__(self, resp):
        super().__init__(resp)
        self._events = read_events(resp)

    def __iter__(self):
        return self

    def __next__(self):
        ev = next(self._events)
        try:
            data = json.loads(ev.data)
        except ValueError:
            data = ev.data
        return ServerEvent(ev.name, data)


class Client:
    """A client of one `qsup serve`.

    host: "unix:PATH", "tcp:ADDR:PORT", "http://HOST:PORT" or
    "https://HOST:PORT"; default QSUP_HOST, else the server's default
    socket. token: default QSUP_TOKEN, else the file QSUP_TOKEN_FILE
    names, else the server's default token file. cacert: for https
    (default QSUP_CACERT, else the system's). timeout: seconds a call may
    wait for the server (a create that boots under TCG can take a while).
    """

    def __init__(self, host=None, token=None, cacert=None, timeout=300.0):
        self.transport = Transport(host, token, cacert, timeout)

    def __repr__(self):
        return "Client(%r)" % self.transport.host

    # The server.

    def health(self):
        """{"ok": true, "version"}; needs no token."""
        return self.transport.call("GET", "/v1/healthz", auth=False)

    def openapi(self):
        """The API's OpenAPI document, as the server has it."""
        return self.transport.call("GET", "/v1/openapi.json", auth=False)

    def metrics(self):
        """Prometheus text."""
        return self.transport.call("GET", "/metrics", expect_json=False)

    def events(self, timeout=None):
        """An EventStream of GET /v1/events."""
        return EventStream(self.transport.open("GET", "/v1/events",
                                               timeout=timeout))

    # Sandboxes.

    def create(self, name=UNSET, profile=UNSET, settings=UNSET,
               extra_args=UNSET, ttl=UNSET, idle_ttl=UNSET, on_ttl=UNSET,
               wait=UNSET, snapshot=UNSET, disk=UNSET, attach=UNSET,
               persistent=UNSET, persist_every=UNSET, **more):
        """POST /v1/sandboxes: a Sandbox, ready (or booting with
        wait=False). disk: a path, or {"path", "writable"}. Fields this
        client does not name yet go in **more, as the server takes them."""
        if isinstance(disk, str):
            disk = {"path": disk}
        body = _members(name=name, profile=profile, settings=settings,
                        extra_args=extra_args, ttl=ttl, idle_ttl=idle_ttl,
                        on_ttl=on_ttl, wait=wait, snapshot=snapshot,
                        disk=disk, attach=attach, persistent=persistent,
                        persist_every=persist_every)
        body.update(more)
        return Sandbox(self, self.transport.call("POST", "/v1/sandboxes",
                                                 body))

    def list(self):
        """Every sandbox, as Sandbox objects."""
        got = self.transport.call("GET", "/v1/sandboxes")
        return [Sandbox(self, s) for s in got["sandboxes"]]

    def get(self, name):
        """The sandbox NAME as it is now (NotFound if none)."""
        return Sandbox(self, self.transport.call(
            "GET", "/v1/sandboxes/" + _q(name)))

    def sandbox(self, name):
        """A handle on the sandbox NAME, without asking the server."""
        return Sandbox(self, {"name": name})

    # Snapshots.

    def snapshots(self):
        got = self.transport.call("GET", "/v1/snapshots")
        return [Snapshot(self, s) for s in got["snapshots"]]

    def get_snapshot(self, name):
        return Snapshot(self, self.transport.call(
            "GET", "/v1/snapshots/" + _q(name)))

    def delete_snapshot(self, name):
        self.transport.call("DELETE", "/v1/snapshots/" + _q(name))


class Sandbox:
    """A sandbox of the server. info is what the server last said of it
    (a dict; its members are attributes too: sb.state, sb.boot_s);
    refresh() asks again."""

    def __init__(self, client, info):
        self.client = client
        self._t = client.transport
        self.info = info
        self.name = info["name"]

    def __getattr__(self, key):
        info = self.__dict__.get("info") or {}
        if key in info:
            return info[key]
        raise AttributeError("%s: no %r (its info has %s)"
                             % (self.__dict__.get("name"), key,
                                ", ".join(sorted(info))))

    def __repr__(self):
        return "Sandbox(%r, state=%r)" % (self.name, self.info.get("state"))

    def _path(self, tail=""):
        return "/v1/sandboxes/" + _q(self.name) + tail

    def _set(self, info):
        self.info = info
        return self

    def refresh(self):
        return self._set(self._t.call("GET", self._path()))

    def patch(self, ttl=UNSET, idle_ttl=UNSET, on_ttl=UNSET):
        """Change its limits; None (or 0) lifts one."""
        return self._set(self._t.call(
            "PATCH", self._path(),
            _members(ttl=ttl, idle_ttl=idle_ttl, on_ttl=on_ttl)))

    def delete(self, quit=None):
        """Stop and remove it: its teardown report. quit: for an attached
        QEMU, True ends it (otherwise it is detached and runs on)."""
        query = None if quit is None else {"quit": "true" if quit
                                           else "false"}
        return self._t.call("DELETE", self._path(), query=query)

    def pause(self):
        return self._set(self._t.call("POST", self._path("/pause")))

    def resume(self):
        return self._set(self._t.call("POST", self._path("/resume")))

    def wait_ready(self, timeout=300.0, every=0.2):
        """For a create with wait=False: poll until it is ready. A sandbox
        that died raises QsupError with its reason; TimeoutError if it is
        not ready in time."""
        end = time.monotonic() + timeout
        while True:
            self.refresh()
            state = self.info.get("state")
            if state == "ready":
                return self
            if state == "dead":
                raise QsupError("sandbox %s died: %s"
                                % (self.name, self.info.get("reason")))
            if time.monotonic() >= end:
                raise TimeoutError("sandbox %s is %s after %g s"
                                   % (self.name, state, timeout))
            time.sleep(every)

    # Commands.

    def exec_stream(self, argv, env=None, cwd=None, stdin=False, tty=False,
                    rows=None, cols=None, timeout=None):
        """Start argv; an Exec to iterate over for its events. stdin=True
        keeps its stdin open for Exec.write (else it reads end of file at
        once); tty=True runs it on a terminal of rows x cols (its output
        all comes as stdout). timeout: seconds (default the profile's;
        0: none)."""
        body = {"argv": list(argv)}
        for k, v in (("env", env), ("cwd", cwd), ("rows", rows),
                     ("cols", cols), ("timeout", timeout)):
            if v is not None:
                body[k] = v
        if stdin:
            body["stdin"] = True
        if tty:
            body["tty"] = True
        resp = self._t.open("POST", self._path("/exec"),
                            body=json.dumps(body).encode(),
                            ctype="application/json", timeout=None)
        return Exec(self._t, self.name, resp)

    def exec(self, argv, stdin=None, env=None, cwd=None, tty=False,
             rows=None, cols=None, timeout=None):
        """Run argv to its end: an ExecResult (status, signal, timed_out,
        error, stdout, stderr). stdin: bytes, str or a file object fed to
        it (beside the output, so neither waits for the other)."""
        ex = self.exec_stream(argv, env=env, cwd=cwd,
                              stdin=stdin is not None, tty=tty, rows=rows,
                              cols=cols, timeout=timeout)
        with ex:
            join = feed_stdin(ex, stdin) if stdin is not None else None
            result = ex.wait()
            if join is not None:
                join()
        return result

    # Files.

    def write_file(self, path, data, mode=None):
        """Write the guest's file path (absolute), whole or not at all:
        data is bytes, str or a file object (streamed). mode: an int
        (0o755) or an octal string. {"path", "size"}."""
        query = {"path": path}
        if mode is not None:
            query["mode"] = mode if isinstance(mode, str) else "%o" % mode
        return self._t.call("PUT", self._path("/files"), query=query,
                            raw_body=stdin_body(data))

    def read_file(self, path, into=None):
        """The guest's file path: its bytes, or, with into (a file
        object), the count of bytes streamed into it."""
        resp = self._t.open("GET", self._path("/files"),
                            query={"path": path})
        try:
            if into is None:
                return resp.read()
            n = 0
            while True:
                b = resp.read1(65536)
                if not b:
                    return n
                into.write(b)
                n += len(b)
        finally:
            resp.qsup_conn.close()

    # Snapshots and forks.

    def load(self, snapshot):
        """An attached QEMU's snapshot (kept in its qcow2 disks) loaded
        back into it; other sandboxes start copies with Snapshot.restore."""
        self.info = self._t.call("POST", self._path("/restore"),
                                 {"snapshot": snapshot})
        return self

    def snapshot(self, name):
        """Save it whole (RAM, devices, disk) as the snapshot name."""
        return Snapshot(self.client, self._t.call(
            "POST", self._path("/snapshots"), {"name": name}))

    def fork(self, count=None, names=None, machine_id=None):
        """Running copies of it: a ForkResult (source, seconds, sandboxes,
        a copy that failed is None there). machine_id=True: each copy
        gets a new /etc/machine-id."""
        got = self._t.call("POST", self._path("/fork"),
                           _members(count=UNSET if count is None else count,
                                    names=UNSET if names is None
                                    else list(names),
                                    machine_id=UNSET if machine_id is None
                                    else bool(machine_id)))
        if not isinstance(got, dict) or "sandboxes" not in got:
            raise ProtocolError("fork of %s: %r" % (self.name, got))
        return ForkResult(got["source"], got["seconds"],
                          [None if s is None else Sandbox(self.client, s)
                           for s in got["sandboxes"]])


class ForkResult:
    __slots__ = ("source", "seconds", "sandboxes")

    def __init__(self, source, seconds, sandboxes):
        self.source = source
        self.seconds = seconds
        self.sandboxes = sandboxes

    def __repr__(self):
        return "ForkResult(%r, %r s, %r)" % (self.source, self.seconds,
                                             self.sandboxes)


class Snapshot:
    """A snapshot (info: its record as the server shows it)."""

    def __init__(self, client, info):
        self.client = client
        self.info = info
        self.name = info["name"]

    def __getattr__(self, key):
        info = self.__dict__.get("info") or {}
        if key in info:
            return info[key]
        raise AttributeError(key)

    def __repr__(self):
        return "Snapshot(%r, of %r)" % (self.name, self.info.get("sandbox"))

    def delete(self):
        self.client.delete_snapshot(self.name)

    def restore(self, name=UNSET, **fields):
        """A new sandbox started from it (ttl, idle_ttl, ... as create)."""
        return self.client.create(name=name, snapshot=self.name, **fields)


__all__ = ["Client", "Sandbox", "Snapshot", "ForkResult", "EventStream",
           "ServerEvent", "Exec", "ExecResult", "UNSET"]
