"""MemoViewService's rules and SQL: a user's saved CEL filters.

A view is private to its owner (the API names the user, but only that user
reads or writes it), and a filter that would not compile is refused at save
time with the compiler's message and offset, never at use time. Read-only
keys are refused before this module runs (``app.api.context.writable_key``).
"""

from __future__ import annotations

from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.structs import resource_id, rfc3339
from app.db.schema import saved_view
from app.errors import InvalidArgument, NotFound
from app.filter import FilterError, validate_memo_filter
from app.views.schemas import MemoView, MemoViewIn

MAX_TITLE = 256

VIEW_MASK = {"title": "title", "filter": "filter"}
IGNORED_VIEW_PATHS = {"name", "createtime", "updatetime"}


def _mask(raw: str | None, data: MemoViewIn) -> set[str]:
    """The fields to change: the mask's (output-only paths ignored), else those sent."""
    if raw is None or not raw.strip():
        return {f for f in VIEW_MASK.values() if isinstance(getattr(data, f), str)}
    paths = set()
    for item in raw.split(","):
        key = item.strip().replace("_", "").lower()
        if key in IGNORED_VIEW_PATHS:
            continue
        if key not in VIEW_MASK:
            raise InvalidArgument(f"updateMask: unknown path {item.strip()!r}")
        paths.add(VIEW_MASK[key])
    return paths


def view_out(username: str, row: Row[Any], collection: str = "views") -> MemoView:
    return MemoView(
        name=f"users/{username}/{collection}/{row.id}",
        title=row.title,
        filter=row.filter,
        create_time=rfc3339(row.created_ts),
        update_time=rfc3339(row.updated_ts),
    )


def _title(value: str) -> str:
    if not value.strip() or len(value) > MAX_TITLE:
        raise InvalidArgument(f"title: must be 1 to {MAX_TITLE} characters")
    return value.strip()


def _filter(value: str) -> str:
    try:
        validate_memo_filter(value)
    except FilterError as exc:
        raise InvalidArgument(f"filter: {exc}") from None
    return value


def owner_name(caller: Caller, user: str) -> str:
    username = resource_id(user, "users", field="user")
    if username != caller.username:
        # Another user's views do not exist as far as the caller can tell.
        raise NotFound(f"user {username!r} views not found")
    return username


async def list_views(
    db: AsyncConnection, caller: Caller, user: str, collection: str
) -> list[MemoView]:
    username = owner_name(caller, user)
    rows = (
        await db.execute(
            sa.select(saved_view)
            .where(saved_view.c.user_id == caller.user_id)
            .order_by(saved_view.c.id)
        )
    ).all()
    return [view_out(username, r, collection) for r in rows]


async def create_view(
    db: AsyncConnection, caller: Caller, now: int, user: str, data: MemoViewIn, collection: str
) -> MemoView:
    username = owner_name(caller, user)
    if isinstance(data.title, msgspec.UnsetType) or isinstance(data.filter, msgspec.UnsetType):
        raise InvalidArgument("title and filter are required")
    view_id = (
        await db.execute(
            saved_view.insert()
            .values(
                user_id=caller.user_id,
                title=_title(data.title),
                filter=_filter(data.filter),
                created_ts=now,
                updated_ts=now,
            )
            .returning(saved_view.c.id)
        )
    ).scalar_one()
    return view_out(username, await load_view(db, caller, view_id), collection)


async def update_view(
    db: AsyncConnection,
    caller: Caller,
    now: int,
    user: str,
    view_id: int,
    data: MemoViewIn,
    mask: str | None,
    collection: str,
) -> MemoView:
    username = owner_name(caller, user)
    await load_view(db, caller, view_id)
    values: dict[str, Any] = {"updated_ts": now}
    for path in _mask(mask, data):
        value = getattr(data, path)
        if not isinstance(value, str):
            raise InvalidArgument(f"{path}: named in updateMask but missing from the body")
        values[path] = _title(value) if path == "title" else _filter(value)
    await db.execute(saved_view.update().where(saved_view.c.id == view_id).values(**values))
    return view_out(username, await load_view(db, caller, view_id), collection)


async def delete_view(
    db: AsyncConnection, caller: Caller, user: str, view_id: int
) -> dict[str, Any]:
    owner_name(caller, user)
    await load_view(db, caller, view_id)
    await db.execute(saved_view.delete().where(saved_view.c.id == view_id))
    return {}


async def load_view(db: AsyncConnection, caller: Caller, view_id: int) -> Row[Any]:
    row = (
        await db.execute(
            sa.select(saved_view).where(
                saved_view.c.id == view_id, saved_view.c.user_id == caller.user_id
            )
        )
    ).first()
    if row is None:
        raise NotFound(f"view {view_id} not found")
    return row
