"""Carrying the instance settings, the users and the spaces with their members."""

from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.audience import AccessMode
from app.api.structs import UID_RE, USERNAME_RE
from app.auth.passwords import RESET_REQUIRED, is_bcrypt
from app.db.schema import space, space_event, space_member, user_account
from app.instance.store import AccessSettings, load_access, save_access
from app.portability.memosdb.rows import MemosUser
from app.portability.memosdb.source import MemosSource
from app.portability.memosdb.state import TOOL, CarriedUser, State
from app.spaces import provisioning, roster

__all__ = ["carry_settings", "carry_spaces", "carry_users"]


def _mode(value: Any) -> AccessMode | None:
    text = str(value or "").upper()
    if text.endswith("PUBLIC"):
        return AccessMode.PUBLIC
    if text.endswith("PRIVATE"):
        return AccessMode.PRIVATE
    return None


async def carry_settings(conn: AsyncConnection, source: MemosSource, st: State) -> None:
    stored = await source.settings()
    current = await load_access(conn, AccessSettings())
    wanted = current
    mode = _mode(stored.get("ACCESS", {}).get("accessMode"))
    if mode is None and st.opts.access_mode is not None:
        mode = AccessMode(st.opts.access_mode)
    if mode is None:
        st.report.note(
            "setting: this Memos version keeps its access mode outside the database "
            f"(a start-up flag): Daybook's stays {current.access_mode.value}; "
            "pass --access-mode to choose"
        )
    else:
        wanted = _replace(wanted, access_mode=mode)
    related = stored.get("MEMO_RELATED", {})
    for key in ("disallowPublicVisibility", "disallowPublicVisible"):  # 0.26+, 0.22
        if isinstance(related.get(key), bool):
            wanted = _replace(wanted, disallow_public_visibility=related[key])
            break
    limit = related.get("contentLengthLimit")
    if isinstance(limit, int) and 0 < limit <= 1024 * 1024:
        wanted = _replace(wanted, content_length_limit=limit)
    general = stored.get("GENERAL", {})
    for key in ("disallowUserRegistration", "disallowSignup"):
        if isinstance(general.get(key), bool):
            wanted = _replace(wanted, allow_registration=not general[key])
            break
    st.mode = wanted.access_mode
    if wanted != current:
        await save_access(conn, wanted)
        st.report.carried["setting"] += 1
    else:
        st.report.existing["setting"] += 1


def _replace(settings: AccessSettings, **changes: Any) -> AccessSettings:
    return dataclasses.replace(settings, **changes)


# --- users ----------------------------------------------------------------------------


async def carry_users(conn: AsyncConnection, source: MemosSource, st: State) -> None:
    for u in await source.users():
        if not USERNAME_RE.fullmatch(u.username):
            st.report.problem(
                "user", f"{u.username!r}: not a valid Daybook username; its data stays behind"
            )
            continue
        row = (
            await conn.execute(
                sa.select(user_account.c.id, user_account.c.role).where(
                    user_account.c.username == u.username
                )
            )
        ).first()
        if row is not None:
            st.users[u.id] = CarriedUser(int(row.id), u.username, str(row.role))
            st.report.existing["user"] += 1
            continue
        st.users[u.id] = await _insert_user(conn, u, st)
        st.report.carried["user"] += 1


async def _insert_user(conn: AsyncConnection, u: MemosUser, st: State) -> CarriedUser:
    role = "ADMIN" if u.role in ("HOST", "ADMIN") else "USER"
    password_hash = u.password_hash
    if not is_bcrypt(password_hash):
        password_hash = RESET_REQUIRED
        st.report.note(f"user: {u.username!r}: password hash is not bcrypt: set a new password")
    new_id = (
        await conn.execute(
            user_account.insert()
            .values(
                username=u.username,
                role=role,
                state="ARCHIVED" if u.row_status == "ARCHIVED" else "NORMAL",
                nickname=u.nickname[:128],
                email=u.email[:256],
                description=u.description,
                avatar_url=u.avatar_url,
                password_hash=password_hash,
                created_ts=u.created_ts,
                updated_ts=u.updated_ts,
            )
            .returning(user_account.c.id)
        )
    ).scalar_one()
    return CarriedUser(int(new_id), u.username, role)


# --- spaces ---------------------------------------------------------------------------


async def carry_spaces(conn: AsyncConnection, source: MemosSource, st: State) -> None:
    members = await source.members()
    for s in await source.spaces():
        if not UID_RE.fullmatch(s.uid):
            st.report.problem("space", f"{s.uid!r}: not a valid id")
            continue
        seats = [m for m in members if m.space_id == s.id and m.user_id in st.users]
        existing = (await conn.execute(sa.select(space.c.id).where(space.c.uid == s.uid))).scalar()
        if existing is not None:
            st.spaces[s.id] = (int(existing), s.uid)
            st.report.existing["space"] += 1
        else:
            admins = sorted((m for m in seats if m.role == "ADMIN"), key=lambda m: m.user_id)
            ranked = admins or sorted(seats, key=lambda m: m.user_id)
            if not ranked:
                st.report.problem("space", f"{s.uid!r}: no member of it was carried")
                continue
            creator = ranked[0]
            st.spaces[s.id] = (
                await _insert_space(conn, s, st.users[creator.user_id].id, st),
                s.uid,
            )
            st.report.carried["space"] += 1
        for m in seats:
            await _member(conn, st, st.spaces[s.id][0], m.user_id, m.role, m.status)


async def _insert_space(conn: AsyncConnection, s: Any, creator_id: int, st: State) -> int:
    space_id = (
        await conn.execute(
            space.insert()
            .values(
                uid=s.uid,
                title=roster.valid_title(s.title or s.uid),
                description=s.description[: roster.MAX_DESCRIPTION],
                creator_id=creator_id,
                default_member_grants=roster.DEFAULT_MEMBER_GRANTS,
                created_ts=st.now,
                updated_ts=st.now,
            )
            .returning(space.c.id)
        )
    ).scalar_one()
    await conn.execute(
        space_event.insert().values(
            space_id=space_id,
            actor_id=creator_id,
            kind="CREATE",
            detail={"title": s.title, "credential": {"kind": TOOL}},
            created_ts=st.now,
        )
    )
    return int(space_id)


async def _member(
    conn: AsyncConnection, st: State, space_id: int, memos_user: int, role: str, status: str
) -> None:
    user = st.users[memos_user]
    state = {"ACTIVE": "ACTIVE", "INVITED": "INVITED", "PENDING": "INVITED"}.get(status.upper())
    if state is None:
        st.report.problem("member", f"{user.username!r}: seat status {status!r} is not carried")
        return
    exists = (
        await conn.execute(
            sa.select(space_member.c.user_id).where(
                space_member.c.space_id == space_id, space_member.c.user_id == user.id
            )
        )
    ).first()
    if exists is not None:
        st.report.existing["member"] += 1
        return
    role = role if role in roster.ROLES else "USER"
    await conn.execute(
        space_member.insert().values(
            space_id=space_id,
            user_id=user.id,
            role=role,
            state=state,
            invited_by=None,
            created_ts=st.now,
            updated_ts=st.now,
        )
    )
    if state == "ACTIVE":
        creator = (
            await conn.execute(sa.select(space.c.creator_id).where(space.c.id == space_id))
        ).scalar_one()
        grants = (
            provisioning.creator_grants(user.id)
            if creator == user.id
            else provisioning.member_grants_on_accept(user.id, roster.DEFAULT_MEMBER_GRANTS)
        )
        await provisioning.provision(conn, space_id, user.id, grants, st.now)
    await conn.execute(
        space_event.insert().values(
            space_id=space_id,
            actor_id=user.id,
            kind="IMPORT",
            detail={"user_id": user.id, "role": role, "state": state, "credential": {"kind": TOOL}},
            created_ts=st.now,
        )
    )
    st.report.carried["member"] += 1
