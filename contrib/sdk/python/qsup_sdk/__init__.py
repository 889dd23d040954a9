"""A client of `qsup serve`'s HTTP API (standard library only).

    from qsup_sdk import Client
    sb = Client().create(name="demo")
    print(sb.exec(["uname", "-r"]).stdout.decode())
    sb.delete()

See contrib/sdk/python/README.md in qsup's tree.
"""

from .client import (UNSET, Client, EventStream, ForkResult, Sandbox,
                     ServerEvent, Snapshot)
from .errors import (ApiError, BadRequest, Conflict, ConnectError, Forbidden,
                     NotFound, ProtocolError, QsupError, ServerError,
                     Unauthorized, Unavailable)
from .exec import Exec, ExecEvent, ExecResult
from .sse import Event, SSEParser

__version__ = "0.1.0"

__all__ = [
    "Client", "Sandbox", "Snapshot", "ForkResult", "EventStream",
    "ServerEvent", "Exec", "ExecEvent", "ExecResult", "UNSET",
    "QsupError", "ConnectError", "ProtocolError", "ApiError", "BadRequest",
    "Unauthorized", "Forbidden", "NotFound", "Conflict", "ServerError",
    "Unavailable", "Event", "SSEParser",
]
