"""Server-side sessions: the SQL behind sign-in, refresh, sign-out and "who am I".

A session token is a random secret of which only the digest is stored,
with a CSRF token beside it and an absolute expiry. The handlers in
``app.auth.routes`` and ``app.auth.refresh`` decide *when* (throttling,
same-origin checks, cookies); this module only reads and writes the rows.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from litestar.datastructures import Cookie
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from app.auth.middleware import SESSION_COOKIE
from app.auth.secrets import SESSION_PREFIX, digest, new_secret
from app.db.schema import auth_session, user_account
from app.errors import Unauthenticated
from app.settings import Settings


@dataclass(frozen=True, slots=True)
class NewSession:
    """A session just opened: the secret is known here and nowhere else."""

    token: str
    csrf: str
    expires: int


async def user_by_name(conn: AsyncConnection, username: str) -> Row[Any] | None:
    return (
        await conn.execute(sa.select(user_account).where(user_account.c.username == username))
    ).first()


async def replace_password_hash(conn: AsyncConnection, user_id: int, password_hash: str) -> None:
    await conn.execute(
        user_account.update()
        .where(user_account.c.id == user_id)
        .values(password_hash=password_hash)
    )


async def open_session(conn: AsyncConnection, user_id: int, now: int, lifetime: int) -> NewSession:
    token = new_secret(SESSION_PREFIX)
    csrf = secrets.token_urlsafe(24)
    expires = now + lifetime
    await conn.execute(
        auth_session.insert().values(
            user_id=user_id,
            token_hash=digest(token),
            csrf_token=csrf,
            created_ts=now,
            expires_ts=expires,
            last_seen_ts=now,
        )
    )
    return NewSession(token, csrf, expires)


async def rotate_session(
    conn: AsyncConnection, session_id: int, user_id: int, now: int, lifetime: int
) -> NewSession:
    """End the live session ``session_id`` and open its successor, in one transaction."""
    gone = await conn.execute(
        auth_session.delete().where(
            auth_session.c.id == session_id, auth_session.c.expires_ts > now
        )
    )
    if gone.rowcount != 1:  # refreshed or signed out meanwhile
        raise Unauthenticated("the session has ended: sign in again")
    return await open_session(conn, user_id, now, lifetime)


async def close_session(conn: AsyncConnection, session_id: int) -> None:
    await conn.execute(auth_session.delete().where(auth_session.c.id == session_id))


async def current_user(conn: AsyncConnection, user_id: int) -> Row[Any]:
    row = (await conn.execute(sa.select(user_account).where(user_account.c.id == user_id))).first()
    if row is None:
        raise Unauthenticated("the user no longer exists")
    return row


async def session_csrf(conn: AsyncConnection, session_id: int) -> str | None:
    return (
        await conn.execute(
            sa.select(auth_session.c.csrf_token).where(auth_session.c.id == session_id)
        )
    ).scalar_one_or_none()


def session_cookie(token: str, settings: Settings) -> Cookie:
    return Cookie(
        key=SESSION_COOKIE,
        value=token,
        httponly=True,
        samesite="lax",
        path="/",
        max_age=settings.session_lifetime,
        secure=settings.public_url.startswith("https://"),
    )
