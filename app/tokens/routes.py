"""Personal access tokens: minted only from a session, secret shown once."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import sqlalchemy as sa
from litestar import Controller, delete, get, post
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.bounds import Timestamp, Title
from app.api.responses import errors
from app.api.structs import In, Out, parse_time, resource_id, rfc3339
from app.auth.secrets import PAT_PREFIX, digest, new_secret
from app.db.schema import access_token
from app.deps import management_plane, requires_session, requires_user
from app.errors import InvalidArgument, NotFound, PermissionDenied
from app.tokens.restriction import validate_restriction
from app.users.service import get_user

UserName = Annotated[str, Parameter(max_length=80)]


class PersonalAccessToken(Out):
    name: str
    description: str
    created_at: str  # Memos 0.31
    create_time: str  # Daybook's earlier name, kept
    token_hint: str
    expires_at: str | msgspec.UnsetType = msgspec.UNSET
    last_used_at: str | msgspec.UnsetType = msgspec.UNSET
    restriction: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class CreateTokenRequest(In):
    description: Title = ""
    expire_time: Timestamp | msgspec.UnsetType = msgspec.UNSET
    expires_at: Timestamp | msgspec.UnsetType = msgspec.UNSET
    # Its lists are bounded by the validator (app.tokens.restriction).
    restriction: (
        Annotated[dict[str, Any], msgspec.Meta(max_length=8)] | msgspec.UnsetType | None
    ) = msgspec.UNSET
    # Memos 0.31: days from now; 0 (or absent) means the token never expires.
    expires_in_days: Annotated[int, msgspec.Meta(ge=0, le=36500)] | msgspec.UnsetType = (
        msgspec.UNSET
    )
    parent: Any = msgspec.UNSET  # the path names the user


class CreateTokenResponse(Out):
    personal_access_token: PersonalAccessToken
    token: str


class ListTokensResponse(Out):
    personal_access_tokens: list[PersonalAccessToken]
    next_page_token: str = ""  # one page: a user's tokens are few


def _out(username: str, row: Any) -> PersonalAccessToken:
    return PersonalAccessToken(
        name=f"users/{username}/personalAccessTokens/{row.id}",
        description=row.description,
        created_at=rfc3339(row.created_ts),
        create_time=rfc3339(row.created_ts),
        token_hint="…" + row.token_hint,
        expires_at=rfc3339(row.expires_ts) if row.expires_ts else msgspec.UNSET,
        last_used_at=rfc3339(row.last_used_ts) if row.last_used_ts else msgspec.UNSET,
        restriction=row.restriction if row.restriction is not None else msgspec.UNSET,
    )


def _own(caller: Caller, username: str) -> None:
    # Tokens are minted by their holder only. An admin naming another user is
    # refused rather than silently given a token of its own.
    if username != caller.username:
        raise PermissionDenied("personal access tokens can only be managed by their own user")


class TokenController(Controller):
    path = "/api/v1/users/{user:str}/personalAccessTokens"
    tags = ("UserService",)

    @get(
        "",
        operation_id="UserService_ListPersonalAccessTokens",
        guards=[requires_user, management_plane],
        responses=errors(),
    )
    async def list_tokens(
        self, db: AsyncConnection, caller: Caller, user: UserName
    ) -> ListTokensResponse:
        username = resource_id(user, "users", field="user")
        _own(caller, username)
        rows = (
            await db.execute(
                sa.select(access_token)
                .where(access_token.c.user_id == caller.user_id)
                .order_by(access_token.c.id.desc())
            )
        ).all()
        return ListTokensResponse(personal_access_tokens=[_out(username, r) for r in rows])

    @post(
        "",
        operation_id="UserService_CreatePersonalAccessToken",
        status_code=200,
        guards=[requires_session, management_plane],
        responses=errors(),
    )
    async def create_token(
        self,
        db: AsyncConnection,
        caller: Caller,
        now: int,
        user: UserName,
        data: CreateTokenRequest,
    ) -> CreateTokenResponse:
        username = resource_id(user, "users", field="user")
        _own(caller, username)
        await get_user(db, username)
        if len(data.description) > 256:
            raise InvalidArgument("description: longer than 256 characters")
        raw_expiry = data.expire_time if isinstance(data.expire_time, str) else data.expires_at
        expires = parse_time(raw_expiry, "expireTime") if isinstance(raw_expiry, str) else None
        if isinstance(data.expires_in_days, int) and data.expires_in_days > 0:
            if expires is not None:
                raise InvalidArgument("expiresInDays: give it or an expiry time, not both")
            expires = now + data.expires_in_days * 86400
        if expires is not None and expires <= now:
            raise InvalidArgument("expireTime: must be in the future")
        restriction = None
        if isinstance(data.restriction, dict):
            restriction = await validate_restriction(db, caller, data.restriction)
        secret = new_secret(PAT_PREFIX)
        token_id = (
            await db.execute(
                access_token.insert()
                .values(
                    user_id=caller.user_id,
                    description=data.description,
                    token_hash=digest(secret),
                    token_hint=secret[-4:],
                    restriction=restriction,
                    created_ts=now,
                    expires_ts=expires,
                )
                .returning(access_token.c.id)
            )
        ).scalar_one()
        row = (await db.execute(sa.select(access_token).where(access_token.c.id == token_id))).one()
        return CreateTokenResponse(personal_access_token=_out(username, row), token=secret)

    @delete(
        "/{token_id:int}",
        operation_id="UserService_DeletePersonalAccessToken",
        status_code=200,
        guards=[requires_session, management_plane],
        responses=errors(),
    )
    async def delete_token(
        self,
        db: AsyncConnection,
        caller: Caller,
        user: UserName,
        token_id: Annotated[int, Parameter(ge=1, le=2**31 - 1)],
    ) -> dict[str, Any]:
        _own(caller, resource_id(user, "users", field="user"))
        result = await db.execute(
            access_token.delete().where(
                access_token.c.id == token_id, access_token.c.user_id == caller.user_id
            )
        )
        if result.rowcount == 0:
            raise NotFound(f"personal access token {token_id} not found")
        return {}
