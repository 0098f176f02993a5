"""Per-route request body limits, enforced while the bytes arrive and before
anything else (authentication, a database connection) is spent on the request.

One 48 MiB limit for every route let a sign-in carry 48 MiB and six 45 MB
memo bodies (content is capped at 8 KiB) take the process from 330 MB to
1.1 GB. Here each route gets what its largest valid body can need
(:func:`limit_for`): sign-in and other JSON small, memo writes a small
multiple of the instance's content limit (JSON escaping can grow text six
times), a batch a thousand of those, an attachment upload the attachment
limit plus its base64 growth. A declared ``Content-Length`` over the limit
is refused at once (413) without reading; a chunked body is counted and
refused as soon as it passes the limit.

The body is read *completely* here before the app is called, so a slow
client holds no connection or transaction while it trickles: small bodies
in memory, attachment uploads in a spool file (memory beyond 1 MiB goes to
disk), replayed to the app in 64 KiB chunks. The Memos import route has its
own streaming bound and is passed through.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, ReceiveMessage, Scope, Send

from app.api import uploads
from app.api.raw_errors import send_error

__all__ = ["BodyLimitMiddleware", "Limits", "limit_for"]

KIB = 1024
SMALL = 64 * KIB  # sign-in, sign-up, tokens
DEFAULT = 256 * KIB  # every other JSON body (grants, restrictions, relation lists)
_REPLAY_CHUNK = 64 * KIB
_SPOOL_IN_MEMORY = 1024 * KIB
_BATCH_MEMOS = 1000  # app.memos.batch.MAX_BATCH

_PASS = re.compile(r"^/api/v1/users/[^/]+/:importMemos\Z")
_AUTH = re.compile(r"^/api/v1/(auth/|users\Z|users/[^/]+\Z|users/[^/]+/personalAccessTokens)")
_ATTACHMENT = re.compile(r"^/api/v1/attachments\Z")
_BATCH = re.compile(r"^/api/v1/memos/:batchCreate\Z")
_MEMO = re.compile(r"^(/api/v1/memos(/.*)?|/mcp/?)\Z", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Limits:
    attachment_size: int
    content_length: int  # the largest content limit this process has seen in force


def _memo_body(content_length: int) -> int:
    return 6 * content_length + 64 * KIB


def limit_for(method: str, path: str, limits: Limits) -> int | None:
    """The largest body ``method path`` may carry, or None (route bounds it itself)."""
    if method in ("GET", "HEAD", "OPTIONS", "DELETE"):
        return SMALL
    if _PASS.match(path):
        return None
    if _ATTACHMENT.match(path):
        return (limits.attachment_size // 3 + 1) * 4 + 64 * KIB
    if _BATCH.match(path):
        return _BATCH_MEMOS * (limits.content_length + 2 * KIB) + 64 * KIB
    if _MEMO.match(path):
        return _memo_body(limits.content_length)
    if _AUTH.match(path):
        return SMALL
    return DEFAULT


class BodyLimitMiddleware:
    """Bound, read and replay request bodies (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        attachment_size: int,
        content_length: int,
        spool_dir: Path | None = None,
    ) -> None:
        self.app = app
        self.limits = Limits(attachment_size, content_length)
        # Where multipart uploads are parsed to as they arrive (app.api.uploads);
        # None: spooled whole like any other attachment body.
        self.spool_dir = spool_dir

    async def _stream_form(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        limit: int,
        boundary: bytes,
        spool_dir: Path,
    ) -> None:
        """A multipart upload: parsed chunk by chunk, the file part straight to disk."""
        form = uploads.StreamingForm(boundary, self.limits.attachment_size, spool_dir)
        upload: uploads.Upload | None = None
        try:
            pending = await _read_body(receive, limit, form.write)
            if pending is None:
                await _too_large(send, limit)
                return
            upload = form.finish()
        except uploads.TooLarge as exc:
            await _refuse(send, 413, str(exc))
            return
        except uploads.FormError as exc:
            await _refuse(send, 400, str(exc))
            return
        finally:
            if upload is None:
                form.upload.close()  # refused or cut off: nothing is kept
        try:
            scope[uploads.SCOPE_KEY] = upload  # type: ignore[literal-required]
            await self.app(scope, _replay([], pending, receive), send)
        finally:
            upload.close()

    def _limits(self, scope: Scope) -> Limits:
        # The instance's content limit lives in the database; app.deps records
        # the largest one it loaded, so a raised limit widens the memo routes.
        seen = getattr(scope["app"].state, "content_length_seen", 0)
        if isinstance(seen, int) and seen > self.limits.content_length:
            return Limits(self.limits.attachment_size, seen)
        return self.limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        limit = limit_for(scope["method"], scope["path"], self._limits(scope))
        if limit is None:
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        if declared.isdigit() and int(declared) > limit:
            await _too_large(send, limit)
            return
        spool = _ATTACHMENT.match(scope["path"]) is not None
        if spool and self.spool_dir is not None:
            try:
                boundary = uploads.boundary_of(_header(scope, b"content-type"))
            except uploads.FormError as exc:
                await _refuse(send, 400, str(exc))
                return
            if boundary is not None:
                await self._stream_form(scope, receive, send, limit, boundary, self.spool_dir)
                return
        sink: IO[bytes] | list[bytes]
        sink = (
            tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY)  # noqa: SIM115 (closed below)
            if spool
            else []
        )
        write: Callable[[bytes], object] = sink.append if isinstance(sink, list) else sink.write
        try:
            pending = await _read_body(receive, limit, write)
            if pending is None:
                await _too_large(send, limit)
                return
            await self.app(scope, _replay(sink, pending, receive), send)
        finally:
            if not isinstance(sink, list):
                sink.close()


async def _read_body(
    receive: Receive, limit: int, write: Callable[[bytes], object]
) -> list[ReceiveMessage] | None:
    """Read the request body chunk by chunk into ``write``, counted against ``limit``.

    Returns the other messages met on the way (a disconnect: the app sees it
    after the body), or None as soon as the body passed ``limit`` (nothing
    past the limit is read).
    """
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return [message]
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        if chunk:
            write(bytes(chunk))
        if not message.get("more_body", False):
            return []


def _replay(sink: IO[bytes] | list[bytes], pending: list[ReceiveMessage], receive: Receive) -> Any:
    if isinstance(sink, list):
        queue: list[ReceiveMessage] = [
            {"type": "http.request", "body": b"".join(sink), "more_body": False}
        ]
    else:
        sink.seek(0)
        queue = []
    done = False

    async def replaying() -> ReceiveMessage:
        nonlocal done
        if queue:
            return queue.pop(0)
        if not done and not isinstance(sink, list):
            chunk = sink.read(_REPLAY_CHUNK)
            more = len(chunk) == _REPLAY_CHUNK
            if not more:
                done = True
            return {"type": "http.request", "body": chunk, "more_body": more}
        done = True
        if pending:
            return pending.pop(0)
        return await receive()

    if isinstance(sink, list):
        done = True
    return replaying


def _header(scope: Scope, name: bytes) -> bytes:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value)
    return b""


async def _too_large(send: Send, limit: int) -> None:
    await _refuse(send, 413, f"request body: larger than this route's limit of {limit} bytes")


async def _refuse(send: Send, status: int, message: str) -> None:
    await send_error(send, status, 3, message, [(b"connection", b"close")])
