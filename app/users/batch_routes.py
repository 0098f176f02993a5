"""``users:batchGet`` and ``users:stats`` (Memos 0.31), under the same rules as one user.

Routed before ``UserController`` so the literal ``/:batchGet`` and ``/:stats``
segments win over ``/{user}``.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
import sqlalchemy as sa
from litestar import Controller, get, post
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.admission import Admission, conditions
from app.access.caller import Caller
from app.api.bounds import Name
from app.api.responses import errors
from app.api.structs import In, Out, resource_id
from app.db.schema import memo, user_account
from app.errors import Unauthenticated
from app.instance.store import AccessSettings
from app.users.schemas import ListAllUserStatsResponse, User, user_out
from app.users.stats import user_stats

MAX_BATCH = 100


class BatchGetUsersRequest(In):
    usernames: Annotated[list[Name], msgspec.Meta(max_length=MAX_BATCH)] = msgspec.field(
        default_factory=list
    )


class BatchGetUsersResponse(Out):
    users: list[User]


def _signed_in_if_private(caller: Caller | None, access: AccessSettings, what: str) -> None:
    if caller is None and access.access_mode.value == "PRIVATE":
        raise Unauthenticated(f"sign in to view {what} on this instance")


class UserBatchController(Controller):
    path = "/api/v1/users"
    tags = ("UserService",)

    @post(
        "/:batchGet",
        operation_id="UserService_BatchGetUsers",
        opt={"tx": "read"},
        status_code=200,
        responses=errors(),
    )
    async def batch_get(
        self,
        db: AsyncConnection,
        caller: Caller | None,
        access: AccessSettings,
        data: BatchGetUsersRequest,
    ) -> BatchGetUsersResponse:
        """The users named, in the order asked; names that match no user are left out."""
        _signed_in_if_private(caller, access, "users")
        names = [resource_id(n, "users", field="usernames") for n in data.usernames]
        rows = (
            await db.execute(sa.select(user_account).where(user_account.c.username.in_(names)))
        ).all()
        by_name = {r.username: r for r in rows}
        out = []
        for name in dict.fromkeys(names):
            row = by_name.get(name)
            if row is not None:
                private = caller is not None and (caller.user_id == row.id or caller.is_admin)
                out.append(user_out(row, private=private))
        return BatchGetUsersResponse(users=out)

    @get("/:stats", operation_id="UserService_ListAllUserStats", responses=errors())
    async def all_stats(
        self, db: AsyncConnection, caller: Caller | None, access: AccessSettings
    ) -> ListAllUserStatsResponse:
        """Stats of every user with a memo the caller may read (and the caller's own).

        Users whose memos the caller cannot read are not listed, so the call
        reveals no more accounts than the memos themselves do.
        """
        _signed_in_if_private(caller, access, "stats")
        with_memos = sa.select(memo.c.creator_id).where(
            *conditions(Admission(caller, access.access_mode))
        )
        who: sa.ColumnElement[bool] = user_account.c.id.in_(with_memos)
        if caller is not None:
            who = sa.or_(who, user_account.c.id == caller.user_id)
        rows = (
            await db.execute(
                sa.select(user_account.c.id, user_account.c.username)
                .where(who, user_account.c.state == "NORMAL")
                .order_by(user_account.c.id)
            )
        ).all()
        return ListAllUserStatsResponse(
            stats=[await user_stats(db, r.username, r.id, caller, access.access_mode) for r in rows]
        )
