"""One-time password reset links (decision 0022).

An instance ADMIN never sets another user's password: ``access.md`` makes
ADMIN structural, and a password the admin chose would let it sign in as the
user and read its PRIVATE memos. What an admin (or the operator, through
``daybook reset-password USER``) gets instead is a one-time link for the user:

- a 256-bit secret, stored only as its SHA-256 digest (so every process on the
  database agrees, and a dump reveals no usable link);
- expiring (``reset_link_lifetime``, default 24 hours) and single use: the
  redeeming UPDATE succeeds only while ``used_ts`` is NULL, so two concurrent
  redemptions cannot both set a password;
- issuing a new link voids the user's unused ones; using one ends every
  session of the user and voids its other links;
- recorded in ``audit_event`` when issued and when used, readable by the user.

The old password keeps working until the link is used, so issuing a link
cannot lock a user out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from argon2 import PasswordHasher
from sqlalchemy.ext.asyncio import AsyncConnection

from app.auth import audit
from app.auth.passwords import hash_password
from app.auth.secrets import digest, new_secret
from app.db.schema import auth_session, password_reset, user_account
from app.errors import InvalidArgument

RESET_PREFIX = "dbk_reset_"
RESET_PATH = "/reset-password"


@dataclass(frozen=True, slots=True)
class IssuedReset:
    secret: str
    expires_ts: int

    def url(self, base: str) -> str:
        """The link for the user; the secret travels in the fragment (never sent to a server)."""
        return f"{base.rstrip('/')}{RESET_PATH}#token={self.secret}"


async def _void_links(conn: AsyncConnection, user_id: int, now: int) -> None:
    await conn.execute(
        password_reset.update()
        .where(
            password_reset.c.user_id == user_id,
            password_reset.c.used_ts.is_(None),
            password_reset.c.expires_ts > now,
        )
        .values(expires_ts=now)
    )


async def issue(
    conn: AsyncConnection, user_id: int, *, issued_by: str, now: int, lifetime: int
) -> IssuedReset:
    """A new link for ``user_id``; earlier unused links of the user stop working."""
    await _void_links(conn, user_id, now)
    secret = new_secret(RESET_PREFIX)
    expires = now + lifetime
    await conn.execute(
        password_reset.insert().values(
            user_id=user_id,
            token_hash=digest(secret),
            issued_by=issued_by[:64],
            created_ts=now,
            expires_ts=expires,
        )
    )
    await audit.record(
        conn,
        audit.Action.PASSWORD_RESET_ISSUED,
        actor=issued_by,
        target_user_id=user_id,
        now=now,
        detail={"expires_ts": expires},
    )
    return IssuedReset(secret, expires)


INVALID_LINK = "this reset link is invalid, expired or already used"


async def redeem(
    conn: AsyncConnection, hasher: PasswordHasher, secret: str, password: str, now: int
) -> Any:
    """Set the user's password through a live link; answers the user row.

    ``password`` has been validated by the caller. Every failure reads the
    same, so the endpoint is no oracle for which links exist.
    """
    if not secret.startswith(RESET_PREFIX) or len(secret) > 128:
        raise InvalidArgument(INVALID_LINK)
    row = (
        await conn.execute(
            sa.select(password_reset.c.id, password_reset.c.user_id, password_reset.c.issued_by)
            .join(user_account, user_account.c.id == password_reset.c.user_id)
            .where(
                password_reset.c.token_hash == digest(secret),
                password_reset.c.used_ts.is_(None),
                password_reset.c.expires_ts > now,
                user_account.c.state == "NORMAL",
            )
        )
    ).first()
    if row is None:
        raise InvalidArgument(INVALID_LINK)
    password_hash = await hash_password(hasher, password)
    claimed = await conn.execute(
        password_reset.update()
        .where(password_reset.c.id == row.id, password_reset.c.used_ts.is_(None))
        .values(used_ts=now)
    )
    if claimed.rowcount != 1:  # redeemed concurrently
        raise InvalidArgument(INVALID_LINK)
    await _void_links(conn, row.user_id, now)
    await conn.execute(
        user_account.update()
        .where(user_account.c.id == row.user_id)
        .values(password_hash=password_hash, updated_ts=now)
    )
    await conn.execute(auth_session.delete().where(auth_session.c.user_id == row.user_id))
    await audit.record(
        conn,
        audit.Action.PASSWORD_RESET_USED,
        actor="reset-link",
        target_user_id=row.user_id,
        now=now,
        detail={"issued_by": row.issued_by},
    )
    return (
        await conn.execute(sa.select(user_account).where(user_account.c.id == row.user_id))
    ).one()
