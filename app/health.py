"""Liveness and readiness probes."""

from __future__ import annotations

import sqlalchemy as sa
from litestar import Response, get
from litestar.datastructures import State

from app.db.migrate import current_revision, head_revision


@get("/healthz", operation_id="Health_Live", exclude_from_auth=True, include_in_schema=False)
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@get("/readyz", operation_id="Health_Ready", exclude_from_auth=True, include_in_schema=False)
async def readyz(state: State) -> Response[dict[str, str]]:
    try:
        async with state.engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))
        revision = await current_revision(state.engine)
    except Exception:  # any failure means "not ready", never a 500
        return Response({"status": "database unreachable"}, status_code=503)
    if revision != head_revision():
        return Response({"status": f"migrations pending (at {revision})"}, status_code=503)
    return Response({"status": "ready"})
