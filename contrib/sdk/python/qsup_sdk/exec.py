"""A command in a sandbox: its event stream read as it comes, its stdin,
signals and terminal size; or run to its end, output collected."""

import base64
import binascii
import json
import threading

from .errors import Conflict, NotFound, ProtocolError
from .sse import read_events
from .transport import Stream

# Bytes asked of the socket at a time at most; an event is dispatched as
# soon as its bytes are in.
READ_SIZE = 65536

# stdin from a file object goes up in pieces this big (one chunk each).
STDIN_PIECE = 65536


class ExecEvent:
    """One event of an exec: kind "stdout" or "stderr" with data the bytes;
    kind "exit" with data the exit object (a dict: status, signal,
    timed_out, error); any other kind (a later server's) with data the
    event's text as it came."""

    __slots__ = ("kind", "data")

    def __init__(self, kind, data):
        self.kind = kind
        self.data = data

    def __repr__(self):
        return "ExecEvent(%r, %r)" % (self.kind, self.data)


class ExecResult:
    """How a command ended, and what it wrote (what was collected).

    status: its exit status, or None when it did not exit by itself;
    signal: the signal that killed it, or None; timed_out: killed by its
    timeout; error: why there is neither status nor signal (it could not
    be started, the sandbox died or was deleted), else None.
    """

    def __init__(self, exit, stdout=b"", stderr=b""):
        self.exit = exit
        self.status = exit.get("status")
        self.signal = exit.get("signal")
        self.timed_out = bool(exit.get("timed_out"))
        self.error = exit.get("error")
        self.stdout = stdout
        self.stderr = stderr

    @property
    def exit_code(self):
        """As a shell says it: the status, or 128 + the signal."""
        if self.status is not None:
            return self.status
        if self.signal is not None:
            return 128 + self.signal
        return None

    @property
    def ok(self):
        return self.status == 0

    def __repr__(self):
        return ("ExecResult(status=%r, signal=%r, timed_out=%r, error=%r, "
                "stdout=%d bytes, stderr=%d bytes)"
                % (self.status, self.signal, self.timed_out, self.error,
                   len(self.stdout), len(self.stderr)))


def _pieces(first, f):
    b = first
    while b:
        yield b.encode() if isinstance(b, str) else b
        b = f.read(STDIN_PIECE)


def stdin_body(data):
    """bytes, str or a file object (read in pieces) as a request body."""
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if hasattr(data, "read"):
        # An empty body would close stdin: a file with nothing is b"".
        first = data.read(STDIN_PIECE)
        return _pieces(first, data) if first else b""
    raise TypeError("stdin: bytes, str or a file object, not %s"
                    % type(data).__name__)


class Exec(Stream):
    """A running command: iterate over it for its events (stdout, stderr,
    then exit, the last); write to its stdin, signal it, resize its
    terminal. Closing it (or leaving its `with`) before the exit event
    drops the stream, and the server kills the command.
    """

    def __init__(self, transport, sandbox, resp):
        super().__init__(resp)
        self._t = transport
        self.sandbox = sandbox
        self._events = read_events(resp, READ_SIZE)
        self.exit = None
        self.id = None
        try:
            for ev in self._events:
                if ev.name == "start":
                    self.id = json.loads(ev.data)["id"]
                    break
        except BaseException:
            self.close()
            raise
        if self.id is None:
            self.close()
            raise ProtocolError("exec in %s: the stream ended with no "
                                "start event" % sandbox)

    def _path(self, what):
        return "/v1/sandboxes/%s/exec/%d/%s" % (self.sandbox, self.id, what)

    def __iter__(self):
        for ev in self._events:
            if ev.name in ("stdout", "stderr"):
                try:
                    data = base64.b64decode(ev.data, validate=True)
                except (binascii.Error, ValueError) as e:
                    raise ProtocolError("exec %s in %s: %s event not base64:"
                                        " %s" % (self.id, self.sandbox,
                                                 ev.name, e)) from e
                yield ExecEvent(ev.name, data)
            elif ev.name == "exit":
                self.exit = json.loads(ev.data)
                yield ExecEvent("exit", self.exit)
                self.close()
                return
            elif ev.name != "start":
                yield ExecEvent(ev.name, ev.data)
        if self.exit is None:
            self.close()
            raise ProtocolError("exec %s in %s: the stream ended with no "
                                "exit event" % (self.id, self.sandbox))

    def wait(self):
        """Read it to its end: an ExecResult with the output from here on."""
        out, err = [], []
        for ev in self:
            if ev.kind == "stdout":
                out.append(ev.data)
            elif ev.kind == "stderr":
                err.append(ev.data)
        return ExecResult(self.exit, b"".join(out), b"".join(err))

    def write(self, data):
        """Send data (bytes, str or a file object) to its stdin; returns
        once the command has taken it all. The exec must have been started
        with stdin=True. Its output is not read meanwhile: a command that
        writes much before it reads needs the stream read in another
        thread (or use Sandbox.exec with stdin=, which does that)."""
        body = stdin_body(data)
        if body == b"":
            return
        # Taken when the command reads it: no deadline but the command's.
        self._t.call("POST", self._path("stdin"), raw_body=body,
                     timeout=None)

    def close_stdin(self):
        """End of file on its stdin."""
        self._t.call("POST", self._path("stdin"), raw_body=b"")

    def signal(self, sig):
        """Send a signal to its process group: a name ("TERM", "SIGINT")
        or a number."""
        self._t.call("POST", self._path("signal"), {"signal": sig})

    def resize(self, rows, cols):
        """Its terminal's size (a tty exec only)."""
        self._t.call("POST", self._path("resize"),
                     {"rows": rows, "cols": cols})


def feed_stdin(ex, data):
    """In a thread: data to ex's stdin, then its end. A command that ends
    without taking it all is no error (a pipe's reader that went away):
    409 while the server still holds the exec, 404 once it has let it go."""
    box = {}

    def run():
        try:
            ex.write(data)
            ex.close_stdin()
        except (Conflict, NotFound):
            pass
        except BaseException as e:  # handed to the caller by join()
            box["error"] = e

    th = threading.Thread(target=run, name="qsup-stdin-%s" % ex.id,
                          daemon=True)
    th.start()

    def join():
        th.join()
        if "error" in box:
            raise box["error"]
    return join
