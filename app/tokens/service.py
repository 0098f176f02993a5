"""Personal access tokens: list, mint (secret returned once, only its digest kept), revoke.

Tokens are managed by their holder only, from a session (the route guards
``requires_session`` and ``management_plane`` refuse keys before this runs).
"""

from __future__ import annotations

from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.structs import parse_time, resource_id, rfc3339
from app.auth.secrets import PAT_PREFIX, digest, new_secret
from app.db.schema import access_token
from app.errors import InvalidArgument, NotFound, PermissionDenied
from app.tokens.restriction import validate_restriction
from app.tokens.schemas import CreateTokenRequest, CreateTokenResponse, PersonalAccessToken
from app.users.service import get_user


def token_out(username: str, row: Row[Any]) -> PersonalAccessToken:
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


def own_name(caller: Caller, user: str) -> str:
    """The user the path names, which must be the caller."""
    username = resource_id(user, "users", field="user")
    # Tokens are minted by their holder only. An admin naming another user is
    # refused rather than silently given a token of its own.
    if username != caller.username:
        raise PermissionDenied("personal access tokens can only be managed by their own user")
    return username


async def list_tokens(
    conn: AsyncConnection, caller: Caller, user: str
) -> list[PersonalAccessToken]:
    username = own_name(caller, user)
    rows = (
        await conn.execute(
            sa.select(access_token)
            .where(access_token.c.user_id == caller.user_id)
            .order_by(access_token.c.id.desc())
        )
    ).all()
    return [token_out(username, r) for r in rows]


def _expiry(data: CreateTokenRequest, now: int) -> int | None:
    raw_expiry = data.expire_time if isinstance(data.expire_time, str) else data.expires_at
    expires = parse_time(raw_expiry, "expireTime") if isinstance(raw_expiry, str) else None
    if isinstance(data.expires_in_days, int) and data.expires_in_days > 0:
        if expires is not None:
            raise InvalidArgument("expiresInDays: give it or an expiry time, not both")
        expires = now + data.expires_in_days * 86400
    if expires is not None and expires <= now:
        raise InvalidArgument("expireTime: must be in the future")
    return expires


async def create_token(
    conn: AsyncConnection, caller: Caller, now: int, user: str, data: CreateTokenRequest
) -> CreateTokenResponse:
    username = own_name(caller, user)
    await get_user(conn, username)
    if len(data.description) > 256:
        raise InvalidArgument("description: longer than 256 characters")
    expires = _expiry(data, now)
    restriction = None
    if isinstance(data.restriction, dict):
        restriction = await validate_restriction(conn, caller, data.restriction)
    secret = new_secret(PAT_PREFIX)
    token_id = (
        await conn.execute(
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
    row = (await conn.execute(sa.select(access_token).where(access_token.c.id == token_id))).one()
    return CreateTokenResponse(personal_access_token=token_out(username, row), token=secret)


async def delete_token(conn: AsyncConnection, caller: Caller, user: str, token_id: int) -> None:
    own_name(caller, user)
    result = await conn.execute(
        access_token.delete().where(
            access_token.c.id == token_id, access_token.c.user_id == caller.user_id
        )
    )
    if result.rowcount == 0:
        raise NotFound(f"personal access token {token_id} not found")
