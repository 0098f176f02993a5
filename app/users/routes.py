"""UserService: sign-up, profiles and stats."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, delete, get, patch, post
from litestar.datastructures import State
from litestar.params import Parameter

from app.api.context import RequestContext
from app.api.responses import errors
from app.api.structs import Out, resource_id, rfc3339
from app.auth import audit, reset
from app.auth.routes import admit_password_guess
from app.deps import management_plane, requires_session, requires_user
from app.errors import FailedPrecondition, PermissionDenied, Unauthenticated
from app.users import service
from app.users.schemas import ListUsersResponse, User, UserIn, UserStats, user_out
from app.users.stats import user_stats

UserName = Annotated[str, Parameter(description="username or users/{username}", max_length=80)]


class PasswordResetLink(Out):
    reset_url: str
    token: str
    expire_time: str


class AuditEvent(Out):
    action: str
    actor: str
    create_time: str
    detail: dict[str, Any]


class ListAuditEventsResponse(Out):
    events: list[AuditEvent]


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
    async def create_user(self, ctx: RequestContext, state: State, data: UserIn) -> User:
        row = await service.create_user(ctx.db, state.hasher, ctx.caller, ctx.access, data, ctx.now)
        return user_out(row, private=True)

    @get(
        "",
        operation_id="UserService_ListUsers",
        guards=[requires_user, management_plane],
        responses=errors(),
    )
    async def list_users(self, ctx: RequestContext) -> ListUsersResponse:
        rows = await service.list_users(ctx.db, ctx.user)
        return ListUsersResponse(users=[user_out(r, private=True) for r in rows])

    @get("/{user:str}", operation_id="UserService_GetUser", responses=errors())
    async def get_user(self, ctx: RequestContext, user: UserName) -> User:
        caller = ctx.caller
        if caller is None and ctx.mode.value == "PRIVATE":
            raise Unauthenticated("sign in to view users on this instance")
        row = await service.get_user(ctx.db, _username(user))
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
        request: Request[Any, Any, Any],
        ctx: RequestContext,
        state: State,
        user: UserName,
        data: UserIn,
        update_mask: Annotated[str | None, Parameter(query="updateMask", max_length=512)] = None,
        update_mask_snake: Annotated[
            str | None, Parameter(query="update_mask", max_length=512)
        ] = None,
    ) -> User:
        paths = service.user_mask(
            update_mask if update_mask is not None else update_mask_snake, data
        )
        caller = ctx.user
        if "password" in paths and _username(user) == caller.username:
            # Guesses at the current password count like sign-in guesses (before any
            # write of this request, so no write lock is held meanwhile).
            await admit_password_guess(request, state, ctx.settings, caller.username, ctx.now)
        target = await service.get_user(ctx.db, _username(user))
        row = await service.update_user(ctx.db, state.hasher, caller, target, data, paths, ctx.now)
        return user_out(row, private=True)

    @delete(
        "/{user:str}",
        operation_id="UserService_DeleteUser",
        status_code=200,
        guards=[requires_user, management_plane],
        responses=errors(412),
    )
    async def delete_user(self, ctx: RequestContext, user: UserName) -> dict[str, Any]:
        target = await service.get_user(ctx.db, _username(user))
        await service.delete_user(ctx.db, ctx.user, target)
        return {}

    @post(
        "/{user:str}/passwordResets",
        operation_id="UserService_CreatePasswordReset",
        status_code=200,
        guards=[requires_session, management_plane],
        responses=errors(),
    )
    async def create_password_reset(
        self, request: Request[Any, Any, Any], ctx: RequestContext, user: UserName
    ) -> PasswordResetLink:
        """A one-time link with which the user sets a new password (admin only).

        The admin never chooses nor learns a password; the user's current one
        keeps working until the link is used. Recorded in the user's audit events.
        """
        caller, settings = ctx.user, ctx.settings
        if not caller.is_admin:
            raise PermissionDenied("only an admin can issue a password reset link")
        target = await service.get_user(ctx.db, _username(user))
        if target.state != "NORMAL":
            raise FailedPrecondition(f"user {target.username!r} is archived")
        issued = await reset.issue(
            ctx.db,
            target.id,
            issued_by=f"users/{caller.username}",
            now=ctx.now,
            lifetime=settings.reset_link_lifetime,
        )
        base = settings.public_url or str(request.base_url)
        return PasswordResetLink(
            reset_url=issued.url(base), token=issued.secret, expire_time=rfc3339(issued.expires_ts)
        )

    @get(
        "/{user:str}/auditEvents",
        operation_id="UserService_ListAuditEvents",
        guards=[requires_user, management_plane],
        responses=errors(),
    )
    async def list_audit_events(
        self, ctx: RequestContext, user: UserName
    ) -> ListAuditEventsResponse:
        """Security events about the account (reset links, password changes), newest first."""
        caller = ctx.user
        target = await service.get_user(ctx.db, _username(user))
        if not (caller.user_id == target.id or caller.is_admin):
            raise PermissionDenied("only the user or an admin can read its audit events")
        rows = await audit.events_of(ctx.db, target.id)
        return ListAuditEventsResponse(
            events=[
                AuditEvent(
                    action=r.action,
                    actor=r.actor,
                    create_time=rfc3339(r.created_ts),
                    detail=r.detail,
                )
                for r in rows
            ]
        )

    @get("/{user:str}/:getStats", operation_id="UserService_GetUserStats", responses=errors())
    async def get_stats(self, ctx: RequestContext, user: UserName) -> UserStats:
        if ctx.caller is None and ctx.mode.value == "PRIVATE":
            raise Unauthenticated("sign in to view stats on this instance")
        row = await service.get_user(ctx.db, _username(user))
        return await user_stats(ctx.db, row.username, row.id, ctx.caller, ctx.mode)
