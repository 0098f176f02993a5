"""Structured logs: JSON lines in production, readable console output in a terminal.

Request logs carry method, path, status, duration and the user id, never
credentials, cookies or bodies.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

import structlog
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send


class _Stderr:
    """``sys.stderr`` as it is at each write, not as it was when logging was configured
    (a redirected or captured stderr gets the lines)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(fmt: str = "console", level: int = logging.INFO) -> None:
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )


request_log = structlog.get_logger("daybook.request")


def request_logging_middleware(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500
        started = False

        async def capture(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                status, started = message["status"], True
            await send(message)

        try:
            await app(scope, receive, capture)
        except BaseException as exc:
            # Raised before a response started (authentication, for one): the
            # app-level exception handler answers outside this middleware, with
            # the status its handlers give this exception, so log that one.
            if not started:
                from app.errors import status_of

                status = status_of(exc)
            raise
        finally:
            user = scope.get("user")
            request_log.info(
                "request",
                method=scope.get("method"),
                path=scope.get("path"),
                status=status,
                duration_ms=round((time.perf_counter() - start) * 1000, 2),
                user_id=getattr(user, "user_id", None),
                pid=os.getpid(),  # which worker (serve --workers N)
            )

    return middleware
