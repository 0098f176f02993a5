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
    views: list[MemoView]


def _out(username: str, row: Any) -> MemoView:
    return MemoView(
        name=f"users/{username}/views/{row.id}",
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


class MemoViewController(Controller):
    path = "/api/v1/users/{user:str}/views"
    tags = ("MemoViewService",)
    guards = [requires_user]  # noqa: RUF012 (Litestar's declared layer attribute)

    @get("", operation_id="MemoViewService_ListMemoViews", responses=errors())
    async def list_views(
        self, db: AsyncConnection, caller: Caller, user: UserName
    ) -> ListMemoViewsResponse:
        username = _owner(caller, user)
        rows = (
            await db.execute(
                sa.select(saved_view)
                .where(saved_view.c.user_id == caller.user_id)
                .order_by(saved_view.c.id)
            )
        ).all()
        return ListMemoViewsResponse(views=[_out(username, r) for r in rows])

    @post("", operation_id="MemoViewService_CreateMemoView", status_code=200, responses=errors())
    async def create_view(
        self, db: AsyncConnection, caller: Caller, now: int, user: UserName, data: MemoViewIn
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
        return _out(username, await _load(db, caller, view_id))

    @patch("/{view_id:int}", operation_id="MemoViewService_UpdateMemoView", responses=errors())
    async def update_view(
        self,
        db: AsyncConnection,
        caller: Caller,
        now: int,
        user: UserName,
        view_id: ViewId,
        data: MemoViewIn,
    ) -> MemoView:
        username = _owner(caller, user)
        _writer(caller)
        await _load(db, caller, view_id)
        values: dict[str, Any] = {"updated_ts": now}
        if isinstance(data.title, str):
            values["title"] = _title(data.title)
        if isinstance(data.filter, str):
            values["filter"] = _filter(data.filter)
        await db.execute(saved_view.update().where(saved_view.c.id == view_id).values(**values))
        return _out(username, await _load(db, caller, view_id))

    @delete(
        "/{view_id:int}",
        operation_id="MemoViewService_DeleteMemoView",
        status_code=200,
        responses=errors(),
    )
    async def delete_view(
        self, db: AsyncConnection, caller: Caller, user: UserName, view_id: ViewId
    ) -> dict[str, Any]:
        _owner(caller, user)
        _writer(caller)
        await _load(db, caller, view_id)
        await db.execute(saved_view.delete().where(saved_view.c.id == view_id))
        return {}


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
