"""Carrying a Memos database into Daybook, idempotently, in one transaction.

Order: instance settings, users, spaces and their members, memos (top-level,
then comments), ``REFERENCE`` relations, reactions, attachments. Everything
is keyed by what Memos and Daybook share, so a second run finds it all and
changes nothing: users by username (an existing Daybook user of that name
*is* that person: the tool is for moving an instance, and the report says
which users already existed), spaces, memos and attachments by uid, members
by (space, user), relations and reactions by their natural keys, settings
only when they differ.

Memos are written through the memo services as their creators (a
:class:`~app.portability.access.LocalCaller`, origin ``import-memos-db``),
so each gets its derived columns, tags, a CREATE event, its full-text row
and an embedding-queue entry. Two deliberate differences from an API create,
because this is the instance's own data moving, not a user's request: the
content limit is Memos' (up to 64 MiB), and PUBLIC is kept even where the
instance now disallows it. A SPACE memo stays in its space at the members'
``share`` path even where its creator has no seat left there (in Memos the
members read it; here too), and that is reported.

What cannot be carried is reported, never guessed: a username Daybook does
not accept, a password hash that is not bcrypt (the user is marked for a
reset), an S3 attachment, a local file outside the Memos data directory or
missing, a non-http(s) external link, a memo whose uid another Daybook user
holds. ``--dry-run`` does all of it and rolls back (no file is written).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.access.audience import AccessMode
from app.api.structs import UID_RE, USERNAME_RE
from app.attachments import storage
from app.attachments.metadata import clean_filename, mime_type
from app.auth.passwords import RESET_REQUIRED, is_bcrypt
from app.db.schema import (
    attachment,
    memo,
    memo_relation,
    reaction,
    space,
    space_event,
    space_member,
    user_account,
)
from app.errors import DaybookError, InvalidArgument, NotFound, PermissionDenied
from app.instance.store import AccessSettings, load_access, save_access
from app.memos.lookup import comment_placement
from app.memos.schemas import LocationIn, MemoIn
from app.memos.service import WriteContext, insert_memo, prepare_memo
from app.portability import format as fmt
from app.portability.access import LocalCaller, local_caller
from app.portability.memosdb.rows import MemosAttachment, MemosMemo, MemosUser
from app.portability.memosdb.source import MemosSource
from app.portability.units import write_unit
from app.reactions.service import valid_reaction_type
from app.spaces import provisioning, roster

TOOL = "import-memos-db"
SHARE = provisioning.SHARE
MAX_CONTENT = 64 * 1024 * 1024
MAX_PROBLEMS_SHOWN = 100

__all__ = ["CarryOptions", "Report", "carry"]


class _DryRun(Exception):
    """Raised at the end of a dry run so that the transaction rolls back."""


@dataclass(frozen=True, slots=True)
class CarryOptions:
    data_dir: Path
    memos_data_dir: Path | None
    dry_run: bool = False
    access_mode: str | None = None
    progress: Callable[[int], None] | None = None
    max_attachment_bytes: int = 256 * 1024 * 1024


@dataclass
class Report:
    version: str = ""
    dry_run: bool = False
    carried: Counter[str] = field(default_factory=Counter)
    existing: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0

    def problem(self, kind: str, message: str) -> None:
        self.skipped[kind] += 1
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS_SHOWN:
            self.problems.append(f"{kind}: {message}")

    def note(self, message: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS_SHOWN:
            self.problems.append(message)

    def lines(self) -> list[str]:
        head = "dry run, nothing written: " if self.dry_run else ""
        out = [f"{head}Memos {self.version}"]
        kinds = ["setting", "user", "space", "member", "memo", "comment", "relation", "reaction"]
        kinds.append("attachment")
        for kind in kinds:
            out.append(
                f"  {kind + 's':<12} carried {self.carried[kind]:>7}  already here "
                f"{self.existing[kind]:>7}  not carried {self.skipped[kind]:>7}"
            )
        if self.problem_count:
            out.append(f"could not carry, or carried differently ({self.problem_count}):")
            out.extend(f"  {p}" for p in self.problems)
            if self.problem_count > len(self.problems):
                out.append(f"  ... and {self.problem_count - len(self.problems)} more")
        return out


@dataclass(frozen=True, slots=True)
class _User:
    id: int
    username: str
    role: str


@dataclass
class _State:
    opts: CarryOptions
    report: Report
    users: dict[int, _User] = field(default_factory=dict)  # Memos user id → Daybook user
    spaces: dict[int, tuple[int, str]] = field(default_factory=dict)  # Memos → (id, uid)
    memos: dict[int, int] = field(default_factory=dict)  # Memos memo id → Daybook memo id
    written_keys: list[str] = field(default_factory=list)
    now: int = 0
    mode: AccessMode = AccessMode.PRIVATE


# --- settings -------------------------------------------------------------------------


def _mode(value: Any) -> AccessMode | None:
    text = str(value or "").upper()
    if text.endswith("PUBLIC"):
        return AccessMode.PUBLIC
    if text.endswith("PRIVATE"):
        return AccessMode.PRIVATE
    return None


async def _settings(conn: AsyncConnection, source: MemosSource, st: _State) -> None:
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


async def _users(conn: AsyncConnection, source: MemosSource, st: _State) -> None:
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
            st.users[u.id] = _User(int(row.id), u.username, str(row.role))
            st.report.existing["user"] += 1
            continue
        st.users[u.id] = await _insert_user(conn, u, st)
        st.report.carried["user"] += 1


async def _insert_user(conn: AsyncConnection, u: MemosUser, st: _State) -> _User:
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
    return _User(int(new_id), u.username, role)


# --- spaces ---------------------------------------------------------------------------


async def _spaces(conn: AsyncConnection, source: MemosSource, st: _State) -> None:
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


async def _insert_space(conn: AsyncConnection, s: Any, creator_id: int, st: _State) -> int:
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
    conn: AsyncConnection, st: _State, space_id: int, memos_user: int, role: str, status: str
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


# --- memos ----------------------------------------------------------------------------


def _location(m: MemosMemo) -> LocationIn | msgspec.UnsetType:
    loc = m.location
    if not loc:
        return msgspec.UNSET
    try:
        lat, lng = float(loc.get("latitude", 0.0)), float(loc.get("longitude", 0.0))
    except (TypeError, ValueError):
        return msgspec.UNSET
    if not (-90 <= lat <= 90 and -180 <= lng <= 180):
        return msgspec.UNSET
    return LocationIn(placeholder=str(loc.get("placeholder", "")), latitude=lat, longitude=lng)


def _body(m: MemosMemo, visibility: str) -> MemoIn:
    return MemoIn(
        content=m.content,
        visibility=visibility,
        state="ARCHIVED" if m.row_status == "ARCHIVED" else "NORMAL",
        pinned=m.pinned,
        create_time=fmt.format_time(m.created_ts),
        update_time=fmt.format_time(m.updated_ts),
        location=_location(m),
    )


async def _existing_memo(conn: AsyncConnection, st: _State, m: MemosMemo, kind: str) -> bool:
    row = (
        await conn.execute(sa.select(memo.c.id, memo.c.creator_id).where(memo.c.uid == m.uid))
    ).first()
    if row is None:
        return False
    if row.creator_id == st.users[m.creator_id].id:
        st.memos[m.id] = int(row.id)
        st.report.existing[kind] += 1
    else:
        st.report.problem(kind, f"{m.uid}: this id is held by another Daybook user")
    return True


def _context(st: _State, caller: LocalCaller) -> WriteContext:
    access = AccessSettings(
        access_mode=st.mode, disallow_public_visibility=False, content_length_limit=MAX_CONTENT
    )
    return WriteContext(caller, access, st.now)


async def _insert(
    conn: AsyncConnection,
    st: _State,
    m: MemosMemo,
    data: MemoIn,
    parent_id: int | None,
    force_space: tuple[int, str] | None,
) -> int:
    """Create through the memo services; ``force_space`` keeps a refused SPACE placement."""
    user = st.users[m.creator_id]
    ctx = _context(st, local_caller(user.id, user.username, user.role, TOOL))
    prepared = await prepare_memo(conn, ctx, data, m.uid, parent_id)
    if force_space is not None:
        prepared.values.update(visibility="SPACE", space_id=force_space[0], tree=force_space[1])
    return await insert_memo(conn, ctx, prepared)


async def _top_level(conn: AsyncConnection, st: _State, m: MemosMemo) -> None:
    visibility = (
        m.visibility if m.visibility in ("PRIVATE", "PROTECTED", "PUBLIC", "SPACE") else "PRIVATE"
    )
    placed = st.spaces.get(m.space_id) if m.space_id is not None else None
    if m.space_id is not None and placed is None:
        st.report.note(f"memo: {m.uid}: its space was not carried: imported unplaced")
    if visibility == "SPACE" and placed is None:
        visibility = "PRIVATE"
        st.report.note(f"memo: {m.uid}: SPACE memo without a carried space: imported PRIVATE")
    base = _body(m, "PRIVATE" if visibility == "SPACE" else visibility)
    if placed is None:
        st.memos[m.id] = await _insert(conn, st, m, base, None, None)
        return
    body = msgspec.structs.replace(
        base, visibility=visibility, space=f"spaces/{placed[1]}", tree=SHARE
    )
    try:
        st.memos[m.id] = await _insert(conn, st, m, body, None, None)
    except (PermissionDenied, NotFound, InvalidArgument) as exc:
        if visibility == "SPACE":
            st.report.note(
                f"memo: {m.uid}: kept in space {placed[1]!r} at {SHARE!r} although its creator "
                f"may not write there now ({exc.message})"
            )
            st.memos[m.id] = await _insert(conn, st, m, base, None, (placed[0], SHARE))
        else:
            st.report.note(
                f"memo: {m.uid}: {visibility} memo kept out of its space ({exc.message})"
            )
            st.memos[m.id] = await _insert(conn, st, m, base, None, None)


async def _comment(conn: AsyncConnection, st: _State, m: MemosMemo) -> None:
    parent_id = st.memos.get(m.parent_id or 0)
    if parent_id is None:
        st.report.note(f"comment: {m.uid}: its parent was not carried: imported as a memo")
        await _top_level(conn, st, m)
        return
    parent = (await conn.execute(sa.select(memo).where(memo.c.id == parent_id))).one()
    if parent.parent_id is not None:
        st.report.note(f"comment: {m.uid}: its parent is a comment: imported as a memo")
        await _top_level(conn, st, m)
        return
    visibility = (
        m.visibility if m.visibility in ("PRIVATE", "PROTECTED", "PUBLIC", "SPACE") else "PRIVATE"
    )
    if parent.visibility == "SPACE" and visibility != "SPACE":
        st.report.note(
            f"comment: {m.uid}: a {visibility} comment on a space memo: imported as a separate "
            "memo, so that it is not shown to the space"
        )
        await _top_level(conn, st, _unplaced(m))
        return
    if visibility == "SPACE" and parent.visibility != "SPACE":
        visibility = "PRIVATE"
    user = st.users[m.creator_id]
    caller = local_caller(user.id, user.username, user.role, TOOL)
    data = _body(m, visibility)
    force: tuple[int, str] | None = None
    try:
        data = await comment_placement(conn, caller, parent, data)
    except (PermissionDenied, InvalidArgument) as exc:
        st.report.note(
            f"comment: {m.uid}: kept on its space memo although its author may not write there "
            f"now ({exc.message})"
        )
        data = _body(m, "PRIVATE")
        force = (int(parent.space_id), str(parent.tree))
    new_id = await _insert(conn, st, m, data, parent_id, force)
    await conn.execute(
        memo_relation.insert().values(memo_id=new_id, related_memo_id=parent_id, type="COMMENT")
    )
    st.memos[m.id] = new_id


def _unplaced(m: MemosMemo) -> MemosMemo:
    return dataclasses.replace(m, space_id=None, parent_id=None)


async def _memos(conn: AsyncConnection, source: MemosSource, st: _State) -> None:
    for comments in (False, True):
        kind = "comment" if comments else "memo"
        async for page in source.memos(comments=comments):
            for m in page:
                if st.opts.progress is not None:
                    st.opts.progress(1)
                if m.creator_id not in st.users:
                    st.report.problem(kind, f"{m.uid}: its creator was not carried")
                    continue
                if not UID_RE.fullmatch(m.uid):
                    st.report.problem(kind, f"{m.uid!r}: not a valid memo id")
                    continue
                if len(m.content.encode()) > MAX_CONTENT:
                    st.report.problem(kind, f"{m.uid}: content is larger than {MAX_CONTENT} bytes")
                    continue
                if await _existing_memo(conn, st, m, kind):
                    continue
                try:
                    if comments:
                        await _comment(conn, st, m)
                    else:
                        await _top_level(conn, st, m)
                except DaybookError as exc:
                    st.report.problem(kind, f"{m.uid}: {exc.message}")
                    continue
                st.report.carried[kind] += 1


# --- relations and reactions -------------------------------------------------------------


async def _references(conn: AsyncConnection, source: MemosSource, st: _State) -> None:
    async for page in source.references():
        for src, dst in page:
            a, b = st.memos.get(src), st.memos.get(dst)
            if a is None or b is None or a == b:
                st.report.skipped["relation"] += 1
                continue
            exists = (
                await conn.execute(
                    sa.select(memo_relation.c.memo_id).where(
                        memo_relation.c.memo_id == a,
                        memo_relation.c.related_memo_id == b,
                        memo_relation.c.type == "REFERENCE",
                    )
                )
            ).first()
            if exists is not None:
                st.report.existing["relation"] += 1
                continue
            await conn.execute(
                memo_relation.insert().values(memo_id=a, related_memo_id=b, type="REFERENCE")
            )
            st.report.carried["relation"] += 1


async def _reactions(conn: AsyncConnection, source: MemosSource, st: _State) -> None:
    async for page in source.reactions():
        for r in page:
            memo_id = st.memos.get(r.memo_id or 0)
            user = st.users.get(r.creator_id)
            if memo_id is None or user is None:
                st.report.skipped["reaction"] += 1
                continue
            try:
                kind = valid_reaction_type(r.reaction_type)
            except InvalidArgument:
                st.report.problem("reaction", f"{r.reaction_type!r} is not a valid reaction")
                continue
            exists = (
                await conn.execute(
                    sa.select(reaction.c.id).where(
                        reaction.c.memo_id == memo_id,
                        reaction.c.creator_id == user.id,
                        reaction.c.reaction_type == kind,
                    )
                )
            ).first()
            if exists is not None:
                st.report.existing["reaction"] += 1
                continue
            await conn.execute(
                reaction.insert().values(
                    memo_id=memo_id, creator_id=user.id, reaction_type=kind, created_ts=r.created_ts
                )
            )
            st.report.carried["reaction"] += 1


# --- attachments ----------------------------------------------------------------------


def _local_file(st: _State, a: MemosAttachment) -> tuple[Path | None, str]:
    root = st.opts.memos_data_dir
    if root is None:
        return None, "no Memos data directory given (--attachments-dir)"
    ref = Path(a.reference)
    path = ref if ref.is_absolute() else root / ref
    try:
        real, base = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    except OSError:
        return None, "its path cannot be resolved"
    if base != real and base not in real.parents:
        return None, f"its file {a.reference!r} is outside the Memos data directory"
    if not real.is_file():
        return None, f"its file {a.reference!r} is missing"
    return real, ""


def _bytes_of(st: _State, a: MemosAttachment) -> tuple[bytes | None, str | None, str]:
    """(bytes, external link, why not): exactly one of the first two, or a reason."""
    kind = a.storage_type.upper()
    if kind in ("", "DATABASE", "STORAGE_TYPE_DATABASE"):
        if a.blob is None:
            return None, None, "its bytes are missing from the database"
        return a.blob, None, ""
    if kind in ("LOCAL", "STORAGE_TYPE_LOCAL"):
        path, why = _local_file(st, a)
        if path is None:
            return None, None, why
        if path.stat().st_size > st.opts.max_attachment_bytes:
            return None, None, f"larger than {st.opts.max_attachment_bytes} bytes"
        return path.read_bytes(), None, ""
    if kind == "EXTERNAL":
        if urlsplit(a.reference).scheme.lower() not in ("http", "https"):
            return None, None, "its external link is not an http(s) URL"
        return None, a.reference, ""
    if kind in ("S3", "STORAGE_TYPE_S3"):
        return None, None, "stored in S3: download it from the bucket and attach it again"
    return None, None, f"unknown storage type {a.storage_type!r}"


async def _attachments(conn: AsyncConnection, source: MemosSource, st: _State) -> None:
    async for page in source.attachments():
        for a in page:
            user = st.users.get(a.creator_id)
            if user is None:
                st.report.problem("attachment", f"{a.uid}: its creator was not carried")
                continue
            if not UID_RE.fullmatch(a.uid):
                st.report.problem("attachment", f"{a.uid!r}: not a valid id")
                continue
            found = (
                await conn.execute(sa.select(attachment.c.id).where(attachment.c.uid == a.uid))
            ).first()
            if found is not None:
                st.report.existing["attachment"] += 1
                continue
            data, link, why = _bytes_of(st, a)
            if data is None and link is None:
                st.report.problem("attachment", f"{a.uid} ({a.filename!r}): {why}")
                continue
            memo_id = st.memos.get(a.memo_id) if a.memo_id is not None else None
            if a.memo_id is not None and memo_id is None:
                st.report.note(f"attachment: {a.uid}: its memo was not carried: kept unbound")
            key: str | None = None
            if data is not None and not st.opts.dry_run:
                key = await storage.write_bytes(st.opts.data_dir, data)
                st.written_keys.append(key)
            filename = clean_filename(a.filename)
            try:
                kind = mime_type(a.type, filename)
            except InvalidArgument:
                kind = mime_type("", filename)
            await conn.execute(
                attachment.insert().values(
                    uid=a.uid,
                    creator_id=user.id,
                    memo_id=memo_id,
                    filename=filename,
                    mime_type=kind,
                    size=len(data) if data is not None else a.size,
                    storage_key=key,
                    external_link=link,
                    created_ts=a.created_ts,
                )
            )
            st.report.carried["attachment"] += 1


# --- the whole carry ------------------------------------------------------------------


async def carry(engine: AsyncEngine, source: MemosSource, opts: CarryOptions) -> Report:
    report = Report(version=source.schema.version_label, dry_run=opts.dry_run)
    st = _State(opts, report, now=int(time.time()))
    try:
        async with write_unit(engine) as conn:
            await _settings(conn, source, st)
            await _users(conn, source, st)
            await _spaces(conn, source, st)
            await _memos(conn, source, st)
            await _references(conn, source, st)
            await _reactions(conn, source, st)
            await _attachments(conn, source, st)
            if opts.dry_run:
                raise _DryRun
    except _DryRun:
        pass
    except BaseException:
        for key in st.written_keys:
            await storage.remove(opts.data_dir, key)
        raise
    return report
