"""``users:batchGet`` and ``users:stats`` (Memos 0.31), under the same rules as one user.

Routed before ``UserController`` so the literal ``/:batchGet`` and ``/:stats``
segments win over ``/{user}``.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, get, post

from app.api.bounds import Name
from app.api.context import RequestContext
from app.api.responses import errors
from app.api.structs import In, Out, resource_id
from app.errors import Unauthenticated
from app.users.schemas import ListAllUserStatsResponse, User, user_out
from app.users.service import users_named
from app.users.stats import all_user_stats

MAX_BATCH = 100


class BatchGetUsersRequest(In):
    usernames: Annotated[list[Name], msgspec.Meta(max_length=MAX_BATCH)] = msgspec.field(
        default_factory=list
    )


class BatchGetUsersResponse(Out):
    users: list[User]


def _signed_in_if_private(ctx: RequestContext, what: str) -> None:
    if ctx.caller is None and ctx.mode.value == "PRIVATE":
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
        self, ctx: RequestContext, data: BatchGetUsersRequest
    ) -> BatchGetUsersResponse:
        """The users named, in the order asked; names that match no user are left out."""
        _signed_in_if_private(ctx, "users")
        names = [resource_id(n, "users", field="usernames") for n in data.usernames]
        by_name = {r.username: r for r in await users_named(ctx.db, names)}
        caller = ctx.caller
        out = []
        for name in dict.fromkeys(names):
            row = by_name.get(name)
            if row is not None:
                private = caller is not None and (caller.user_id == row.id or caller.is_admin)
                out.append(user_out(row, private=private))
        return BatchGetUsersResponse(users=out)

    @get("/:stats", operation_id="UserService_ListAllUserStats", responses=errors())
    async def all_stats(self, ctx: RequestContext) -> ListAllUserStatsResponse:
        """Stats of every user with a memo the caller may read (and the caller's own).

        Users whose memos the caller cannot read are not listed, so the call
        reveals no more accounts than the memos themselves do.
        """
        _signed_in_if_private(ctx, "stats")
        return ListAllUserStatsResponse(stats=await all_user_stats(ctx.db, ctx.caller, ctx.mode))
