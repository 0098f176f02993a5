"""A bound on how deeply a request body's JSON nests, checked before anything decodes it.

msgspec's decoder, the body checks and the JSON schema validator all recurse
once per level of nesting, so a small body such as ``[[[[...]]]]`` 3,000
levels deep would exhaust the interpreter's stack in whichever of them met it
first: a ``RecursionError`` and a 500 on any route, anonymous sign-in
included. :class:`JsonDepthMiddleware` measures the depth of every request
body on the raw bytes, without recursion, and answers 400 when it exceeds
:data:`MAX_JSON_DEPTH`; decoders only ever see bodies nested at most that
deep. It sits in front of every route, ``/mcp`` included (whose JSON-RPC
envelope adds three levels to a tool's arguments).

The scan (:func:`json_depth`) is exact for every well-formed prefix of a
body: brackets inside strings (escapes included) do not count. Past the
first syntax error a decoder stops, so what the scan counts there does not
matter. It costs one ``bytes.count`` for bodies with few brackets (nearly
all of them, base64 attachments included) and a few vectorised passes per
mebibyte otherwise.
"""

from __future__ import annotations

import numpy as np
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, ReceiveMessage, Scope, Send

from app.api.raw_errors import send_error

MAX_JSON_DEPTH = 64  # our deepest body (a key's restriction) nests 5 levels
_CHUNK = 1 << 20
# Bodies of these types are never decoded as JSON.
_NOT_JSON = (b"multipart/form-data", b"application/x-www-form-urlencoded")

__all__ = ["MAX_JSON_DEPTH", "JsonDepthMiddleware", "json_depth", "too_deep"]

_STEP = np.zeros(256, dtype=np.int8)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1


def too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``body`` nests arrays and objects more than ``limit`` levels deep."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False  # too few openers to nest deeper, whatever the strings hold
    return json_depth(body, limit) > limit


def json_depth(body: bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """The deepest nesting of arrays and objects in ``body``; the scan stops past ``limit``.

    Past ``limit`` it answers the depth reached within that mebibyte (more
    than ``limit``), so the cost of a hostile body is bounded by where it
    turns hostile.
    """
    in_string, backslashes, depth, deepest = 0, 0, 0, 0
    for start in range(0, len(body), _CHUNK):
        a = np.frombuffer(body, dtype=np.uint8, count=min(_CHUNK, len(body) - start), offset=start)
        n = a.size
        index = np.arange(n, dtype=np.int64)
        is_backslash = a == 0x5C
        # The last non-backslash at or before each position (-1: none in this chunk),
        # hence the run of backslashes just before each position; an odd run escapes.
        last = np.maximum.accumulate(np.where(is_backslash, -1, index))
        run = np.empty(n, dtype=np.int64)
        run[0] = backslashes
        run[1:] = index[:-1] - last[:-1] + np.where(last[:-1] < 0, backslashes, 0)
        quote = (a == 0x22) & ((run & 1) == 0)
        toggles = np.cumsum(quote, dtype=np.int64)
        outside = ((in_string + toggles - quote) & 1) == 0  # the state before each byte
        steps = np.where(outside, _STEP[a], 0).astype(np.int64)
        levels = depth + np.cumsum(steps)
        deepest = max(deepest, int(levels.max()))
        if deepest > limit:
            return deepest
        depth = int(levels[-1])
        in_string = (in_string + int(toggles[-1])) & 1
        backslashes = int(n - 1 - last[-1]) + (backslashes if last[-1] < 0 else 0)
    return deepest


def _header(scope: Scope, name: bytes) -> bytes:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value)
    return b""


class JsonDepthMiddleware:
    """Refuse request bodies nested deeper than :data:`MAX_JSON_DEPTH` with a 400.

    The body is buffered (up to ``max_body`` bytes, the app's own limit),
    scanned, and replayed to the app unchanged. A body that declares or
    reaches more than ``max_body`` is passed through unscanned: the app's
    size limit refuses it before decoding.
    """

    def __init__(self, app: ASGIApp, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or self._skip(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        pending: list[ReceiveMessage] = []
        while more:
            message = await receive()
            if message["type"] != "http.request":
                pending.append(message)  # a disconnect: replayed after the body
                break
            chunk = bytes(message.get("body", b""))
            chunks.append(chunk)
            size += len(chunk)
            more = bool(message.get("more_body", False))
            if size > self.max_body:
                break
        body = b"".join(chunks)
        if not more and not pending and too_deep(body):
            await _refuse(send)
            return
        replay: list[ReceiveMessage] = [
            {"type": "http.request", "body": body, "more_body": more},
            *pending,
        ]

        async def replaying() -> ReceiveMessage:
            return replay.pop(0) if replay else await receive()

        await self.app(scope, replaying, send)

    def _skip(self, scope: Scope) -> bool:
        ctype = _header(scope, b"content-type").lower()
        if ctype.startswith(_NOT_JSON):
            return True
        length = _header(scope, b"content-length")
        return length.isdigit() and int(length) > self.max_body


async def _refuse(send: Send) -> None:
    message = (
        f"invalid argument: the JSON body is nested too deeply (more than {MAX_JSON_DEPTH} levels)"
    )
    await send_error(send, 400, 3, message)
