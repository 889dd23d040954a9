"""The exceptions of the client: one base, the server's answers by status."""


class QsupError(Exception):
    """Anything this package raises on purpose."""


class ConnectError(QsupError):
    """The server could not be reached (no socket, refused, TLS failed)."""


class ProtocolError(QsupError):
    """The server answered something this client cannot read."""


class ApiError(QsupError):
    """The server refused a call: its status and its error object.

    status: the HTTP status; message: the server's "error"; field: the
    request field it refused (or None); limit and max: the server limit
    reached (or None); console_tail: a failed create's console (or None);
    body: the whole error object as the server sent it.
    """

    def __init__(self, status, message, body=None, method=None, path=None):
        self.status = status
        self.message = message
        self.body = body if isinstance(body, dict) else {}
        self.field = self.body.get("field")
        self.limit = self.body.get("limit")
        self.max = self.body.get("max")
        self.console_tail = self.body.get("console_tail")
        self.method = method
        self.path = path
        where = "%s %s: " % (method, path) if method else ""
        super().__init__("%s%d %s" % (where, status, message))


class BadRequest(ApiError):
    """400: malformed JSON, an unknown or wrong-typed field, a bad setting."""


class Unauthorized(ApiError):
    """401: no token, or not this server's."""


class Forbidden(ApiError):
    """403: the guest refused a file (permissions)."""


class NotFound(ApiError):
    """404: no such sandbox, exec, snapshot or file."""


class Conflict(ApiError):
    """409: a name in use, a sandbox not in a state for the call, ..."""


class ServerError(ApiError):
    """500 and other 5xx but 503: a sandbox failed to start, ..."""


class Unavailable(ApiError):
    """503: a server limit reached (see .limit and .max)."""


_BY_STATUS = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    503: Unavailable,
}


def error_for(status, message, body=None, method=None, path=None):
    """The ApiError subclass for status."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else ApiError
    return cls(status, message, body, method, path)
