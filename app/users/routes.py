"""UserService: sign-up, profiles and stats."""

from __future__ import annotations

from typing import Annotated, Any

import sqlalchemy as sa
from litestar import Controller, delete, get, patch, post
from litestar.datastructures import State
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.responses import errors
from app.api.structs import resource_id
from app.db.schema import user_account
from app.deps import management_plane, requires_user
from app.errors import PermissionDenied, Unauthenticated
from app.instance.store import AccessSettings
from app.memos.schemas import UserStats
from app.users import service
from app.users.schemas import ListUsersResponse, User, UserIn, user_out
from app.users.stats import user_stats

UserName = Annotated[str, Parameter(description="username or users/{username}", max_length=80)]


def _username(value: str) -> str:
    return resource_id(value, "users", field="user")


class UserController(Controller):
    path = "/api/v1/users"
    tags = ("UserService",)

    @post(
        "",
        operation_id="UserService_CreateUser",
        status_code=200,
        guards=[management_plane],
        responses=errors(409),
    )
    async def create_user(
        self,
        db: AsyncConnection,
        state: State,
        caller: Caller | None,
        access: AccessSettings,
        now: int,
        data: UserIn,
    ) -> User:
        row = await service.create_user(db, state.hasher, caller, access, data, now)
        return user_out(row, private=True)

    @get(
        "",
        operation_id="UserService_ListUsers",
        guards=[requires_user, management_plane],
        responses=errors(),
    )
    async def list_users(self, db: AsyncConnection, caller: Caller) -> ListUsersResponse:
        if not caller.is_admin:
            raise PermissionDenied("only an admin can list users")
        rows = (await db.execute(sa.select(user_account).order_by(user_account.c.id))).all()
        return ListUsersResponse(users=[user_out(r, private=True) for r in rows])

    @get("/{user:str}", operation_id="UserService_GetUser", responses=errors())
    async def get_user(
        self, db: AsyncConnection, caller: Caller | None, access: AccessSettings, user: UserName
    ) -> User:
        if caller is None and access.access_mode.value == "PRIVATE":
            raise Unauthenticated("sign in to view users on this instance")
        row = await service.get_user(db, _username(user))
        private = caller is not None and (caller.user_id == row.id or caller.is_admin)
        return user_out(row, private=private)

    @patch(
        "/{user:str}",
        operation_id="UserService_UpdateUser",
        guards=[requires_user, management_plane],
        responses=errors(409, 412),
    )
    async def update_user(
        self,
        db: AsyncConnection,
        state: State,
        caller: Caller,
        now: int,
        user: UserName,
        data: UserIn,
        update_mask: Annotated[str | None, Parameter(query="updateMask", max_length=512)] = None,
        update_mask_snake: Annotated[
            str | None, Parameter(query="update_mask", max_length=512)
        ] = None,
    ) -> User:
        target = await service.get_user(db, _username(user))
        paths = service.user_mask(
            update_mask if update_mask is not None else update_mask_snake, data
        )
        row = await service.update_user(db, state.hasher, caller, target, data, paths, now)
        return user_out(row, private=True)

    @delete(
        "/{user:str}",
        operation_id="UserService_DeleteUser",
        status_code=200,
        guards=[requires_user, management_plane],
        responses=errors(412),
    )
    async def delete_user(
        self, db: AsyncConnection, caller: Caller, user: UserName
    ) -> dict[str, Any]:
        target = await service.get_user(db, _username(user))
        await service.delete_user(db, caller, target)
        return {}

    @get("/{user:str}/:getStats", operation_id="UserService_GetUserStats", responses=errors())
    async def get_stats(
        self, db: AsyncConnection, caller: Caller | None, access: AccessSettings, user: UserName
    ) -> UserStats:
        if caller is None and access.access_mode.value == "PRIVATE":
            raise Unauthenticated("sign in to view stats on this instance")
        row = await service.get_user(db, _username(user))
        return await user_stats(db, row.username, row.id, caller, access.access_mode)
