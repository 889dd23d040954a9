"""A Server-Sent Events reader, fed bytes as they come.

It follows the event-stream rules of the HTML standard: lines end with
CRLF, LF or CR (a CR at the end of one piece waits for the next, which
may begin with its LF); a line starting with ":" is a comment; "field:
value" loses one space after the colon; "data" lines of one event are
joined with newlines; a blank line ends the event, which is dispatched
only if it had data; an event not ended when the stream ends is dropped.
"id" and "retry" are kept but not acted on (the server sends neither).
"""

# One line (or one event's data) at most this long: a stream that sends
# more is not the server's, and must not take all our memory.
MAX_LINE = 64 * 1024 * 1024


class Event:
    """One event: its name ("message" when the stream gave none) and data."""

    __slots__ = ("name", "data", "id")

    def __init__(self, name, data, id=None):
        self.name = name
        self.data = data
        self.id = id

    def __repr__(self):
        return "Event(%r, %r)" % (self.name, self.data)

    def __eq__(self, other):
        return (isinstance(other, Event) and self.name == other.name and
                self.data == other.data and self.id == other.id)


class SSEParser:
    """feed(bytes) -> the events those bytes complete, in order."""

    def __init__(self, max_line=MAX_LINE):
        self._buf = b""
        self._max = max_line
        self._first = True
        self._skip_lf = False
        self._name = None
        self._data = []
        self._size = 0
        self._id = None

    def feed(self, chunk):
        out = []
        if not chunk:
            return out
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf = self._buf + chunk
        if self._first and len(buf) >= 3 or b"\n" in buf or b"\r" in buf:
            if self._first and buf.startswith(b"\xef\xbb\xbf"):
                buf = buf[3:]
            self._first = False
        start = 0
        n = len(buf)
        while start < n:
            lf = buf.find(b"\n", start)
            cr = buf.find(b"\r", start, lf if lf != -1 else n)
            if cr != -1:
                end, nxt = cr, cr + 1
                if nxt < n:
                    if buf[nxt:nxt + 1] == b"\n":
                        nxt += 1
                else:
                    # A CR last: its LF, if any, begins the next piece.
                    self._skip_lf = True
            elif lf != -1:
                end, nxt = lf, lf + 1
            else:
                break
            ev = self._line(buf[start:end])
            if ev is not None:
                out.append(ev)
            start = nxt
        self._buf = buf[start:]
        if len(self._buf) > self._max:
            raise ValueError("event stream: a line longer than %d bytes"
                             % self._max)
        return out

    def _line(self, line):
        if not line:
            return self._dispatch()
        if line[:1] == b":":
            return None
        colon = line.find(b":")
        if colon == -1:
            field, value = line, b""
        else:
            field, value = line[:colon], line[colon + 1:]
            if value[:1] == b" ":
                value = value[1:]
        if field == b"event":
            self._name = value.decode("utf-8", "replace")
        elif field == b"data":
            self._size += len(value) + 1
            if self._size > self._max:
                raise ValueError("event stream: an event's data longer "
                                 "than %d bytes" % self._max)
            self._data.append(value)
        elif field == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
        # "retry" and unknown fields: ignored, as the standard says.
        return None

    def _dispatch(self):
        name, data = self._name, self._data
        self._name, self._data, self._size = None, [], 0
        if not data:
            return None
        return Event(name or "message",
                     b"\n".join(data).decode("utf-8", "replace"), self._id)


def parse(data):
    """Every complete event in data (bytes), for a stream read whole."""
    return SSEParser().feed(data)


def read_events(resp, size=65536):
    """The events of a response (anything with read1) as they arrive."""
    parser = SSEParser()
    while True:
        chunk = resp.read1(size)
        if not chunk:
            return
        for ev in parser.feed(chunk):
            yield ev
