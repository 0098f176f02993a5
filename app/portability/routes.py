"""``users/{u}:exportMemos`` and ``users/{u}:importMemos`` (Memos' UserService RPCs).

Routed as ``/api/v1/users/{u}/:exportMemos``: the app's custom-method
rewrite (``app.server._CUSTOM_METHOD``) turns the AIP form into it, as for
``:getStats``. Neither route takes the request's own database connection:

- export streams after the handler returns, so it opens its own read
  snapshot when the first byte is asked for (``app.portability.export``);
  the refusals (who may export) are decided before the response starts;
- import first spools the upload to disk and validates it in a worker
  thread, holding no connection, let alone a lock; only a valid archive gets
  a transaction (a read snapshot to plan, ``validateOnly``; one write
  transaction to import). The body is the raw ZIP (any content type),
  bounded by ``DAYBOOK_IMPORT_MAX_BYTES`` as it arrives, never held in
  memory.

Memos' own import is a chunked upload protocol over gRPC; over REST, one
POST of the archive is the equivalent a script can use. The plan and the
report are one shape (``ImportPlan``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.to_thread
from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.params import Parameter
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncEngine

from app.access.caller import Caller
from app.api.context import writable_key
from app.api.responses import errors
from app.api.structs import resource_id
from app.db import statistics
from app.errors import DaybookError, InvalidArgument
from app.instance.store import AccessSettings, load_access
from app.memos.service import WriteContext
from app.portability import format as fmt
from app.portability.access import export_refusal, import_refusal
from app.portability.apply import ImportContext, run_import
from app.portability.export import ExportRequest, export_archive
from app.portability.limits import ArchiveLimits
from app.portability.plan import ImportPlan, Policy
from app.portability.staging import Staging
from app.portability.units import read_snapshot, write_unit
from app.portability.unzip import TAIL_BYTES
from app.portability.validation import validate_archive
from app.settings import Settings

UserName = Annotated[str, Parameter(description="username or users/{username}", max_length=80)]
SPOOL_CHUNK = 1024 * 1024

__all__ = ["PortabilityController", "import_archive_file", "spool_limits"]


class ArchiveTooLarge(DaybookError):
    status, grpc_code = 413, 3


def spool_limits(settings: Settings) -> ArchiveLimits:
    return ArchiveLimits(
        max_archive_bytes=settings.import_max_bytes,
        max_attachment_bytes=settings.attachment_size_limit,
    )


def _file_chunks(path: Path, read: Callable[[int], None] | None = None) -> Any:
    """The archive's bytes; ``read`` is told how many after each chunk (the CLI's
    validation bar: reading and checking a large archive takes as long as a
    good part of the import, and should not look stuck)."""
    with path.open("rb") as fh:
        while chunk := fh.read(SPOOL_CHUNK):
            yield chunk
            if read is not None:
                read(len(chunk))


def _tail(path: Path) -> bytes:
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        fh.seek(max(0, size - TAIL_BYTES))
        return fh.read()


async def _access(engine: AsyncEngine, settings: Settings) -> AccessSettings:
    async with read_snapshot(engine) as conn:
        return await load_access(
            conn, AccessSettings(content_length_limit=settings.content_length_limit)
        )


async def import_archive_file(
    engine: AsyncEngine,
    settings: Settings,
    caller: Caller,
    archive: Path,
    staging: Staging,
    policy: Policy,
    validate_only: bool,
    now: int,
    progress: Any = None,
    validating: Callable[[int], None] | None = None,
) -> ImportPlan:
    """Validate the archive at ``archive``, then plan or apply it (shared by the route and CLI).

    ``validating`` hears the bytes of the archive as they are read and checked;
    ``progress`` each memo as it is planned or applied."""
    access = await _access(engine, settings)
    limits = spool_limits(settings)
    validated = await anyio.to_thread.run_sync(
        lambda: validate_archive(
            _file_chunks(archive, validating),
            staging,
            limits,
            access.content_length_limit,
            _tail(archive),
        )
    )
    ctx = ImportContext(
        write=WriteContext(caller, access, now),
        policy=policy,
        data_dir=settings.data_dir,
        dry_run=validate_only,
        progress=progress,
    )
    unit = read_snapshot if validate_only else write_unit
    async with unit(engine) as conn:
        plan = await run_import(conn, ctx, validated)
    if not validate_only:
        await statistics.refresh(engine)  # committed: the planner sees what was imported
    return plan


async def _spool(request: Request[Any, Any, Any], target: Path, limit: int) -> None:
    size = 0
    async with await anyio.open_file(target, "xb") as fh:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ArchiveTooLarge(f"the archive is larger than {limit} bytes")
            await fh.write(chunk)
    if size == 0:
        raise InvalidArgument("the request body must be the archive (a ZIP file)")


def _policy(value: str | None) -> Policy:
    if value is None or value == "":
        return Policy.SKIP
    try:
        return Policy(value.upper())
    except ValueError:
        raise InvalidArgument(
            f"conflictPolicy: {value!r} is not one of SKIP, REPLACE, DUPLICATE"
        ) from None


def _flag(value: str | None, field: str) -> bool:
    if value is None or value.lower() in ("", "false", "0"):
        return False
    if value.lower() in ("true", "1"):
        return True
    raise InvalidArgument(f"{field}: {value!r} is not true or false")


class PortabilityController(Controller):
    path = "/api/v1/users"
    tags = ("UserService",)

    @get(
        "/{user:str}/:exportMemos",
        operation_id="UserService_ExportMemos",
        responses=errors(),
        description="The caller's own memos as a Memos Export Format 1.0 archive (streamed ZIP).",
        media_type=fmt.MEDIA_TYPE,
    )
    async def export_memos(
        self, state: State, caller: Caller | None, settings: Settings, now: int, user: UserName
    ) -> Stream:
        username = resource_id(user, "users", field="user")
        refusal = export_refusal(caller, username)
        if refusal is not None:
            raise refusal
        assert caller is not None
        access = await _access(state.engine, settings)
        req = ExportRequest(
            caller=caller, mode=access.access_mode, data_dir=settings.data_dir, export_ts=now
        )
        filename = fmt.archive_filename(caller.username, now)
        return Stream(
            export_archive(state.engine, req),
            media_type=fmt.MEDIA_TYPE,
            headers={
                "Content-Disposition": f"attachment; filename*=UTF-8''{filename}",
                "Cache-Control": "private, no-store",
                "X-Content-Type-Options": "nosniff",
            },
        )

    @post(
        "/{user:str}/:importMemos",
        operation_id="UserService_ImportMemos",
        status_code=200,
        guards=[writable_key],
        responses=errors(413),
        request_max_body_size=None,  # bounded below, as the bytes arrive
        description=(
            "Import a Memos Export Format 1.0 archive (the raw ZIP as the body). "
            "conflictPolicy SKIP (default), REPLACE or DUPLICATE; validateOnly=true answers "
            "the plan without writing. Refused whole (400, every problem in details) unless "
            "the archive passes validation."
        ),
    )
    async def import_memos(
        self,
        request: Request[Any, Any, Any],
        state: State,
        caller: Caller | None,
        settings: Settings,
        now: int,
        user: UserName,
        conflict_policy: Annotated[
            str | None, Parameter(query="conflictPolicy", max_length=16)
        ] = None,
        validate_only: Annotated[str | None, Parameter(query="validateOnly", max_length=8)] = None,
    ) -> ImportPlan:
        username = resource_id(user, "users", field="user")
        refusal = import_refusal(caller, username)
        if refusal is not None:
            raise refusal
        assert caller is not None
        policy = _policy(conflict_policy)
        dry = _flag(validate_only, "validateOnly")
        with Staging(settings.data_dir / "tmp") as staging:
            upload = staging.root / "upload.zip"
            await _spool(request, upload, settings.import_max_bytes)
            return await import_archive_file(
                state.engine, settings, caller, upload, staging, policy, dry, now
            )
