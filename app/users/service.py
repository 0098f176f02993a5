"""User writes: sign-up rules, profile changes, password changes that revoke sessions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import sqlalchemy as sa
from argon2 import PasswordHasher
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.structs import USERNAME_RE
from app.auth import audit
from app.auth.passwords import (
    MAX_PASSWORD_BYTES,
    PasswordTooLong,
    hash_password,
    password_bytes,
    verify_password,
)
from app.db.schema import auth_session, instance_setting, user_account
from app.db.transactions import read_phase, serialize
from app.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
)
from app.instance.store import AccessSettings
from app.spaces.members import refuse_if_last_space_admin
from app.users.rows import UserRow
from app.users.schemas import UserIn

ROLES = ("ADMIN", "USER")
STATES = ("NORMAL", "ARCHIVED")
MIN_PASSWORD = 8
MAX_PASSWORD = MAX_PASSWORD_BYTES


def valid_username(value: str) -> str:
    if not USERNAME_RE.fullmatch(value):
        raise InvalidArgument(
            f"username: {value!r} must be 1-32 letters, digits, '_', '-' or '.', "
            "starting and ending with a letter or digit"
        )
    return value


def valid_password(value: str, field: str = "password") -> str:
    """At least 8 characters, at most 1024 bytes of UTF-8 (checked before any hashing)."""
    try:
        password_bytes(value)
    except PasswordTooLong:
        raise InvalidArgument(
            f"{field}: must be {MIN_PASSWORD} characters to {MAX_PASSWORD} bytes of UTF-8"
        ) from None
    if len(value) < MIN_PASSWORD:
        raise InvalidArgument(
            f"{field}: must be {MIN_PASSWORD} characters to {MAX_PASSWORD} bytes of UTF-8"
        )
    return value


def _text(value: Any, field: str, limit: int) -> str:
    if len(value) > limit:
        raise InvalidArgument(f"{field}: longer than {limit} characters")
    return str(value)


async def get_user(conn: AsyncConnection, username: str) -> UserRow:
    row = (
        await conn.execute(sa.select(user_account).where(user_account.c.username == username))
    ).first()
    if row is None:
        raise NotFound(f"user {username!r} not found")
    return row


async def list_users(conn: AsyncConnection, caller: Caller) -> Sequence[UserRow]:
    """Every user, oldest first (admins only)."""
    if not caller.is_admin:
        raise PermissionDenied("only an admin can list users")
    return list((await conn.execute(sa.select(user_account).order_by(user_account.c.id))).all())


async def users_named(conn: AsyncConnection, names: list[str]) -> Sequence[UserRow]:
    """The users with these usernames, in no particular order (``users:batchGet``)."""
    stmt = sa.select(user_account).where(user_account.c.username.in_(names))
    return list((await conn.execute(stmt)).all())


async def user_count(conn: AsyncConnection) -> int:
    return int(
        (await conn.execute(sa.select(sa.func.count()).select_from(user_account))).scalar_one()
    )


SIGN_UP_LOCK = 1  # app.db.transactions.serialize key of user creation


def _role(first: bool, by_admin: bool, access: AccessSettings, data: UserIn) -> str:
    """The new user's role, or PermissionDenied when sign-up is closed to this caller."""
    if first:
        return "ADMIN"
    if by_admin:
        role = data.role if isinstance(data.role, str) else "USER"
        if role not in ROLES:
            raise InvalidArgument(f"role: {role!r} is not one of ADMIN, USER")
        return role
    if access.allow_registration:
        return "USER"
    raise PermissionDenied("registration is closed on this instance")


async def create_user(
    conn: AsyncConnection,
    hasher: PasswordHasher,
    caller: Caller | None,
    access: AccessSettings,
    data: UserIn,
    now: int,
) -> UserRow:
    """Sign-up or an admin creating a user.

    The first user becomes ADMIN; after that sign-up is open only when the
    instance allows registration, and only an admin can choose a role.
    """
    if isinstance(data.username, msgspec.UnsetType) or isinstance(data.password, msgspec.UnsetType):
        raise InvalidArgument("username and password are required")
    username = valid_username(data.username)
    password = valid_password(data.password)
    by_admin = caller is not None and caller.is_admin and not caller.is_restricted
    # Refuse early (closed registration) from a short read, and hash the
    # password before the write lock is taken; then decide for real.
    async with read_phase(conn):
        _role(await user_count(conn) == 0, by_admin, access, data)
    password_hash = await hash_password(hasher, password)
    # Exactly one first ADMIN however many sign-ups race: the count and the
    # insert happen under one lock (SQLite: the write transaction's; PostgreSQL:
    # an advisory lock, since READ COMMITTED would let every racer count 0).
    await serialize(conn, SIGN_UP_LOCK)
    role = _role(await user_count(conn) == 0, by_admin, access, data)
    values = {
        "username": username,
        "role": role,
        "state": "NORMAL",
        "password_hash": password_hash,
        "nickname": _text(data.nickname if isinstance(data.nickname, str) else "", "nickname", 128),
        "email": _text(data.email if isinstance(data.email, str) else "", "email", 256),
        "description": _text(
            data.description if isinstance(data.description, str) else "", "description", 1024
        ),
        "avatar_url": _text(
            data.avatar_url if isinstance(data.avatar_url, str) else "", "avatarUrl", 2048
        ),
        "created_ts": now,
        "updated_ts": now,
    }
    try:
        async with conn.begin_nested():
            await conn.execute(user_account.insert().values(**values))
    except IntegrityError:
        raise AlreadyExists(f"user {username!r} already exists") from None
    return await get_user(conn, username)


async def _active_admins(conn: AsyncConnection) -> int:
    return int(
        (
            await conn.execute(
                sa.select(sa.func.count()).where(
                    user_account.c.role == "ADMIN", user_account.c.state == "NORMAL"
                )
            )
        ).scalar_one()
    )


MASK_FIELDS = {
    "username": "username",
    "password": "password",
    "role": "role",
    "state": "state",
    "email": "email",
    "nickname": "nickname",
    "displayname": "nickname",
    "description": "description",
    "avatarurl": "avatar_url",
}
# Output-only paths a Memos client may name (a mask built from the whole
# resource): nothing to change, so they are ignored as Memos ignores them.
IGNORED_MASK_PATHS = {"name", "createtime", "updatetime"}


def user_mask(mask: str | None, data: UserIn) -> set[str]:
    if mask is None or not mask.strip():
        return {
            f
            for f in set(MASK_FIELDS.values())
            if not isinstance(getattr(data, f), msgspec.UnsetType)
        }
    paths = set()
    for raw in mask.split(","):
        key = raw.strip().replace("_", "").lower()
        if key in IGNORED_MASK_PATHS:
            continue
        if key not in MASK_FIELDS:
            raise InvalidArgument(f"updateMask: unknown path {raw.strip()!r}")
        paths.add(MASK_FIELDS[key])
    return paths


CREDENTIAL_FIELDS = frozenset({"password", "username"})


async def _check_credential_change(
    hasher: PasswordHasher,
    caller: Caller,
    target: UserRow,
    data: UserIn,
    paths: set[str],
    is_self: bool,
) -> None:
    """What a credential change needs (decision 0022), checked before anything is written.

    - No personal access token changes a credential (password, username), even
      its holder's: a key must never become its holder.
    - A password is set only by its own user, from a session, proving the
      current password; an admin issues a reset link instead, so that it never
      holds a working password of somebody else's.
    """
    if not paths & CREDENTIAL_FIELDS:
        return
    if caller.pat_id is not None or caller.session_id is None:
        raise PermissionDenied(
            "personal access tokens cannot change credentials (password, username): sign in"
        )
    if "password" not in paths:
        return
    if not is_self:
        raise PermissionDenied(
            "an admin cannot set another user's password: issue a one-time reset link"
            f" (POST /api/v1/users/{target.username}/passwordResets,"
            f" or `daybook reset-password {target.username}`)"
        )
    current = data.current_password
    if isinstance(current, msgspec.UnsetType) or not current:
        raise InvalidArgument("currentPassword: required to change the password")
    try:
        password_bytes(current)
    except PasswordTooLong:
        raise InvalidArgument(
            f"currentPassword: longer than {MAX_PASSWORD_BYTES} bytes of UTF-8"
        ) from None
    if not await verify_password(hasher, target.password_hash, current):
        raise PermissionDenied("currentPassword: incorrect")


async def update_user(
    conn: AsyncConnection,
    hasher: PasswordHasher,
    caller: Caller,
    target: UserRow,
    data: UserIn,
    paths: set[str],
    now: int,
) -> UserRow:
    is_self = caller.user_id == target.id
    if not (is_self or caller.is_admin):
        raise PermissionDenied("only the user or an admin can change a user")
    await _check_credential_change(hasher, caller, target, data, paths, is_self)
    if ("role" in paths or "state" in paths) and not caller.is_admin:
        raise PermissionDenied("only an admin can change roles and states")
    values: dict[str, Any] = {}
    for field in paths:
        value = getattr(data, field)
        if isinstance(value, msgspec.UnsetType):
            raise InvalidArgument(f"{field}: named in updateMask but missing from the body")
        if field == "username":
            values["username"] = valid_username(value)
        elif field == "password":
            values["password_hash"] = await hash_password(hasher, valid_password(value))
        elif field == "role":
            if value not in ROLES:
                raise InvalidArgument(f"role: {value!r} is not one of ADMIN, USER")
            values["role"] = value
        elif field == "state":
            if value not in STATES:
                raise InvalidArgument(f"state: {value!r} is not one of NORMAL, ARCHIVED")
            values["state"] = value
        else:
            limit = {"email": 256, "nickname": 128, "description": 1024, "avatar_url": 2048}[field]
            values[field] = _text(value, field, limit)
    demoting = (
        values.get("role", target.role) != "ADMIN" or values.get("state", target.state) != "NORMAL"
    )
    if (
        target.role == "ADMIN"
        and target.state == "NORMAL"
        and demoting
        and await _active_admins(conn) <= 1
    ):
        raise FailedPrecondition("the last active admin cannot be demoted or archived")
    if values.get("state") == "ARCHIVED" and target.state != "ARCHIVED":
        await refuse_if_last_space_admin(conn, target.id, "be archived")
    if not values:
        return target
    values["updated_ts"] = now
    try:
        async with conn.begin_nested():
            await conn.execute(
                user_account.update().where(user_account.c.id == target.id).values(**values)
            )
    except IntegrityError:
        raise AlreadyExists(f"user {values.get('username')!r} already exists") from None
    if "password_hash" in values:
        await audit.record(
            conn,
            audit.Action.PASSWORD_CHANGED,
            actor=f"users/{caller.username}",
            target_user_id=target.id,
            now=now,
        )
    if "password_hash" in values or values.get("state") == "ARCHIVED":
        # A password change (or deactivation) ends every session and sign-in token.
        await conn.execute(auth_session.delete().where(auth_session.c.user_id == target.id))
    return (await conn.execute(sa.select(user_account).where(user_account.c.id == target.id))).one()


async def delete_user(conn: AsyncConnection, caller: Caller, target: UserRow) -> None:
    if not caller.is_admin:
        raise PermissionDenied("only an admin can delete users")
    if target.role == "ADMIN" and target.state == "NORMAL" and await _active_admins(conn) <= 1:
        raise FailedPrecondition("the last active admin cannot be deleted")
    await refuse_if_last_space_admin(conn, target.id, "be deleted")
    await conn.execute(user_account.delete().where(user_account.c.id == target.id))
    # Its settings (app.users.settings_service): an id SQLite may hand out again.
    await conn.execute(
        instance_setting.delete().where(instance_setting.c.name.like(f"user:{target.id}:%"))
    )
