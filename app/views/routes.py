"""MemoViewService: a user's saved CEL filters, validated by the same compiler.

A view is private to its owner (the API names the user, but only that user
reads or writes it), and a filter that would not compile is refused at save
time with the compiler's message and offset, never at use time.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import sqlalchemy as sa
from litestar import Controller, delete, get, patch, post
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.access.writes import key_may_write
from app.api.bounds import FilterText, Title
from app.api.responses import errors
from app.api.structs import In, Out, resource_id, rfc3339
from app.db.schema import saved_view
from app.deps import requires_user
from app.errors import InvalidArgument, NotFound, PermissionDenied
from app.filter import FilterError, validate_memo_filter

UserName = Annotated[str, Parameter(max_length=80)]
ViewId = Annotated[int, Parameter(ge=1, le=2**31 - 1)]
MAX_TITLE = 256


class MemoView(Out):
    name: str
    title: str
    filter: str
    create_time: str
    update_time: str


class MemoViewIn(In):
    title: Title | msgspec.UnsetType = msgspec.UNSET
    filter: FilterText | msgspec.UnsetType = msgspec.UNSET
    name: Any = msgspec.UNSET  # output-only, ignored


class ListMemoViewsResponse(Out):
    memo_views: list[MemoView]
    views: list[MemoView]  # the key before Memos' naming; Daybook's web client reads it


class ListShortcutsResponse(Out):
    """Memos 0.30's name for the same list (``ShortcutService``)."""

    shortcuts: list[MemoView]


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


def _out(username: str, row: Any, collection: str = "views") -> MemoView:
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


def _writer(caller: Caller) -> None:
    if not key_may_write(caller):
        raise PermissionDenied("this access token is read-only")


def _owner(caller: Caller, user: str) -> str:
    username = resource_id(user, "users", field="user")
    if username != caller.username:
        # Another user's views do not exist as far as the caller can tell.
        raise NotFound(f"user {username!r} views not found")
    return username


async def _list(db: AsyncConnection, caller: Caller, user: str, collection: str) -> list[MemoView]:
    username = _owner(caller, user)
    rows = (
        await db.execute(
            sa.select(saved_view)
            .where(saved_view.c.user_id == caller.user_id)
            .order_by(saved_view.c.id)
        )
    ).all()
    return [_out(username, r, collection) for r in rows]


async def _create(
    db: AsyncConnection, caller: Caller, now: int, user: str, data: MemoViewIn, collection: str
) -> MemoView:
    username = _owner(caller, user)
    _writer(caller)
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
    return _out(username, await _load(db, caller, view_id), collection)


async def _update(
    db: AsyncConnection,
    caller: Caller,
    now: int,
    user: str,
    view_id: int,
    data: MemoViewIn,
    mask: str | None,
    collection: str,
) -> MemoView:
    username = _owner(caller, user)
    _writer(caller)
    await _load(db, caller, view_id)
    values: dict[str, Any] = {"updated_ts": now}
    for path in _mask(mask, data):
        value = getattr(data, path)
        if not isinstance(value, str):
            raise InvalidArgument(f"{path}: named in updateMask but missing from the body")
        values[path] = _title(value) if path == "title" else _filter(value)
    await db.execute(saved_view.update().where(saved_view.c.id == view_id).values(**values))
    return _out(username, await _load(db, caller, view_id), collection)


async def _delete(db: AsyncConnection, caller: Caller, user: str, view_id: int) -> dict[str, Any]:
    _owner(caller, user)
    _writer(caller)
    await _load(db, caller, view_id)
    await db.execute(saved_view.delete().where(saved_view.c.id == view_id))
    return {}


Mask = Annotated[str | None, Parameter(query="updateMask", max_length=512)]


class MemoViewController(Controller):
    path = "/api/v1/users/{user:str}/views"
    tags = ("MemoViewService",)
    guards = [requires_user]  # noqa: RUF012 (Litestar's declared layer attribute)

    @get("", operation_id="MemoViewService_ListMemoViews", responses=errors())
    async def list_views(
        self, db: AsyncConnection, caller: Caller, user: UserName
    ) -> ListMemoViewsResponse:
        found = await _list(db, caller, user, "views")
        return ListMemoViewsResponse(memo_views=found, views=found)

    @get("/{view_id:int}", operation_id="MemoViewService_GetMemoView", responses=errors())
    async def get_view(
        self, db: AsyncConnection, caller: Caller, user: UserName, view_id: ViewId
    ) -> MemoView:
        return _out(_owner(caller, user), await _load(db, caller, view_id))

    @post("", operation_id="MemoViewService_CreateMemoView", status_code=200, responses=errors())
    async def create_view(
        self, db: AsyncConnection, caller: Caller, now: int, user: UserName, data: MemoViewIn
    ) -> MemoView:
        return await _create(db, caller, now, user, data, "views")

    @patch("/{view_id:int}", operation_id="MemoViewService_UpdateMemoView", responses=errors())
    async def update_view(
        self,
        db: AsyncConnection,
        caller: Caller,
        now: int,
        user: UserName,
        view_id: ViewId,
        data: MemoViewIn,
        update_mask: Mask = None,
    ) -> MemoView:
        return await _update(db, caller, now, user, view_id, data, update_mask, "views")

    @delete(
        "/{view_id:int}",
        operation_id="MemoViewService_DeleteMemoView",
        status_code=200,
        responses=errors(),
    )
    async def delete_view(
        self, db: AsyncConnection, caller: Caller, user: UserName, view_id: ViewId
    ) -> dict[str, Any]:
        return await _delete(db, caller, user, view_id)


class ShortcutController(Controller):
    """Memos 0.30's ``ShortcutService``: the same saved filters under their older name."""

    path = "/api/v1/users/{user:str}/shortcuts"
    tags = ("ShortcutService",)
    guards = [requires_user]  # noqa: RUF012 (Litestar's declared layer attribute)

    @get("", operation_id="ShortcutService_ListShortcuts", responses=errors())
    async def list_shortcuts(
        self, db: AsyncConnection, caller: Caller, user: UserName
    ) -> ListShortcutsResponse:
        return ListShortcutsResponse(shortcuts=await _list(db, caller, user, "shortcuts"))

    @get("/{view_id:int}", operation_id="ShortcutService_GetShortcut", responses=errors())
    async def get_shortcut(
        self, db: AsyncConnection, caller: Caller, user: UserName, view_id: ViewId
    ) -> MemoView:
        return _out(_owner(caller, user), await _load(db, caller, view_id), "shortcuts")

    @post("", operation_id="ShortcutService_CreateShortcut", status_code=200, responses=errors())
    async def create_shortcut(
        self, db: AsyncConnection, caller: Caller, now: int, user: UserName, data: MemoViewIn
    ) -> MemoView:
        return await _create(db, caller, now, user, data, "shortcuts")

    @patch("/{view_id:int}", operation_id="ShortcutService_UpdateShortcut", responses=errors())
    async def update_shortcut(
        self,
        db: AsyncConnection,
        caller: Caller,
        now: int,
        user: UserName,
        view_id: ViewId,
        data: MemoViewIn,
        update_mask: Mask = None,
    ) -> MemoView:
        return await _update(db, caller, now, user, view_id, data, update_mask, "shortcuts")

    @delete(
        "/{view_id:int}",
        operation_id="ShortcutService_DeleteShortcut",
        status_code=200,
        responses=errors(),
    )
    async def delete_shortcut(
        self, db: AsyncConnection, caller: Caller, user: UserName, view_id: ViewId
    ) -> dict[str, Any]:
        return await _delete(db, caller, user, view_id)


async def _load(db: AsyncConnection, caller: Caller, view_id: int) -> Any:
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
