"""Domain errors and their one translation into the API's error body.

The body is Memos' gateway shape, ``{"code": <gRPC code>, "message": ...,
"details": []}``, so Memos clients that inspect ``code`` keep working. Every
handler raises these; nothing else decides a status code. An unexpected
exception becomes a 500 with a generic message: no stack trace or SQL ever
reaches the client.
"""

from __future__ import annotations

from typing import Any

import msgspec
import structlog
from litestar import Request, Response
from litestar.exceptions import (
    HTTPException,
    MethodNotAllowedException,
    NotFoundException,
    ValidationException,
)
from sqlalchemy.exc import DBAPIError

from app.api.messages import reword

log = structlog.get_logger("daybook.errors")


class ErrorBody(msgspec.Struct):
    code: int
    message: str
    details: list[Any] = []


class DaybookError(Exception):
    """Base of every error the API reports on purpose."""

    status = 500
    grpc_code = 13
    details: list[Any] = []  # noqa: RUF012 (read-only default; set per instance)

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(DaybookError):
    status, grpc_code = 400, 3


class Unauthenticated(DaybookError):
    status, grpc_code = 401, 16


class PermissionDenied(DaybookError):
    status, grpc_code = 403, 7


class NotFound(DaybookError):
    status, grpc_code = 404, 5

    def __init__(self, message: str = "not found") -> None:
        if "not found" not in message:
            message = f"{message}: not found"
        super().__init__(message)


class AlreadyExists(DaybookError):
    status, grpc_code = 409, 6


class IdUnavailable(AlreadyExists):
    """A client-chosen memo id held by a memo the caller may not use (decision 0023)."""


class FailedPrecondition(DaybookError):
    status, grpc_code = 412, 9


class Conflict(DaybookError):
    """FAILED_PRECONDITION answered as 409 (state conflicts, not stale etags)."""

    status, grpc_code = 409, 9


class ResourceExhausted(DaybookError):
    status, grpc_code = 429, 8

    def __init__(
        self,
        message: str,
        *,
        retry_after: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.headers = headers or {}  # RateLimit fields (app.limits.policy.render)


class Unavailable(DaybookError):
    """The database cannot be reached, or stayed busy past its wait budget (503)."""

    status, grpc_code = 503, 14
    retry_after = 2


class InsufficientStorage(DaybookError):
    """The disk (or the database's volume) is full (507)."""

    status, grpc_code = 507, 8
    retry_after = 30


_HTTP_TO_GRPC = {400: 3, 401: 16, 403: 7, 404: 5, 405: 12, 409: 6, 412: 9, 413: 3, 429: 8}


def _body(status: int, code: int, message: str, details: list[Any] | None = None) -> Response[Any]:
    return Response(
        content={"code": code, "message": message, "details": details or []},
        status_code=status,
        media_type="application/json",
    )


def daybook_error_handler(_: Request[Any, Any, Any], exc: DaybookError) -> Response[Any]:
    response = _body(exc.status, exc.grpc_code, exc.message, exc.details)
    if isinstance(exc, Unauthenticated):
        response.headers["WWW-Authenticate"] = "Bearer"
    retry_after = getattr(exc, "retry_after", None)
    if (exc.status in (503, 507) or isinstance(exc, ResourceExhausted)) and isinstance(
        retry_after, int
    ):
        response.headers["Retry-After"] = str(retry_after)
    if isinstance(exc, ResourceExhausted):
        response.headers.update(exc.headers)
    return response


def validation_error_handler(_: Request[Any, Any, Any], exc: ValidationException) -> Response[Any]:
    """Litestar's request validation, reworded so the message names the field."""
    extra = exc.extra if isinstance(exc.extra, list) else []
    parts = []
    for item in extra:
        if isinstance(item, dict):
            key, message = item.get("key"), reword(str(item.get("message", "invalid value")))
            parts.append(f"{key}: {message}" if key else message)
    message = "; ".join(parts) or reword(str(exc.detail or "")) or "invalid request"
    return _body(400, 3, f"invalid argument: {message}")


def http_error_handler(_: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    status = exc.status_code
    detail = exc.detail or "error"
    if isinstance(exc, NotFoundException) and "not found" not in detail.lower():
        detail = f"{detail}: not found"
    if status >= 500:
        return internal_error_handler(_, exc)
    response = _body(status, _HTTP_TO_GRPC.get(status, 2), detail)
    if isinstance(exc, MethodNotAllowedException) and exc.headers:
        response.headers.update(exc.headers)
    return response


def database_error_handler(request: Request[Any, Any, Any], exc: DBAPIError) -> Response[Any]:
    """A regex that RE2 accepted but PostgreSQL's engine rejects is the user's
    input, not our failure: 400. An unreachable, busy or full database is
    503/507 (:func:`app.db.faults.classify`). Every other database error
    stays a 500."""
    if "invalid regular expression" in str(exc.orig).lower():
        return _body(400, 3, "filter: invalid regular expression for this database")
    return internal_error_handler(request, exc)


def internal_error_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    from app.db.faults import classify

    fault = classify(exc)
    if fault is not None:
        # One line, no traceback: an outage would otherwise log one per request.
        log.warning(
            "database unavailable", path=request.url.path, status=fault.status, reason=fault.message
        )
        return daybook_error_handler(request, fault)
    log.error("internal error", path=request.url.path, exc_info=exc)
    return _body(500, 13, "internal error")


def status_of(exc: BaseException) -> int:
    """The status the handlers above answer for ``exc`` (for the request log)."""
    if isinstance(exc, DaybookError):
        return exc.status
    if isinstance(exc, ValidationException):
        return 400
    if isinstance(exc, HTTPException):
        return exc.status_code
    if isinstance(exc, Exception):
        from app.db.faults import classify

        fault = classify(exc)
        if fault is not None:
            return fault.status
    return 500


EXCEPTION_HANDLERS: dict[Any, Any] = {
    DaybookError: daybook_error_handler,
    ValidationException: validation_error_handler,
    HTTPException: http_error_handler,
    DBAPIError: database_error_handler,
    OSError: internal_error_handler,
    Exception: internal_error_handler,
}
