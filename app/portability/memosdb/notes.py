"""Carrying memos (top-level, then comments), their references and their reactions."""

from __future__ import annotations

import dataclasses

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.api.structs import UID_RE
from app.db.schema import memo, memo_relation, reaction
from app.errors import DaybookError, InvalidArgument, NotFound, PermissionDenied
from app.instance.store import AccessSettings
from app.memos.bulk import NewMemo, insert_memos, prerender_all
from app.memos.lookup import comment_placement
from app.memos.schemas import LocationIn, MemoIn
from app.memos.service import WriteContext, insert_memo, prepare_memo
from app.portability import format as fmt
from app.portability.access import LocalCaller, local_caller
from app.portability.memosdb.rows import MemosMemo
from app.portability.memosdb.source import MemosSource
from app.portability.memosdb.state import TOOL, State
from app.reactions.service import valid_reaction_type
from app.spaces import provisioning

SHARE = provisioning.SHARE
MAX_CONTENT = 64 * 1024 * 1024

__all__ = ["MAX_CONTENT", "carry_memos", "carry_reactions", "carry_references"]


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


def _context(st: State, caller: LocalCaller) -> WriteContext:
    access = AccessSettings(
        access_mode=st.mode, disallow_public_visibility=False, content_length_limit=MAX_CONTENT
    )
    return WriteContext(caller, access, st.now)


async def _prepare(
    conn: AsyncConnection,
    st: State,
    m: MemosMemo,
    data: MemoIn,
    parent_id: int | None,
    force_space: tuple[int, str] | None,
) -> NewMemo:
    """Every create check, as its creator; ``force_space`` keeps a refused SPACE placement."""
    user = st.users[m.creator_id]
    ctx = _context(st, local_caller(user.id, user.username, user.role, TOOL))
    prepared = await prepare_memo(conn, ctx, data, m.uid, parent_id)
    if force_space is not None:
        prepared.values.update(visibility="SPACE", space_id=force_space[0], tree=force_space[1])
    return NewMemo(ctx, prepared)


async def _insert(
    conn: AsyncConnection,
    st: State,
    m: MemosMemo,
    data: MemoIn,
    parent_id: int | None,
    force_space: tuple[int, str] | None,
) -> int:
    """Create through the memo services, now (a comment, whose parent must exist)."""
    new = await _prepare(conn, st, m, data, parent_id, force_space)
    return await insert_memo(conn, new.ctx, new.prepared)


async def _top_level(conn: AsyncConnection, st: State, m: MemosMemo) -> NewMemo:
    """The memo prepared as a top-level one (placed in its carried space when it may be)."""
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
        return await _prepare(conn, st, m, base, None, None)
    body = msgspec.structs.replace(
        base, visibility=visibility, space=f"spaces/{placed[1]}", tree=SHARE
    )
    try:
        return await _prepare(conn, st, m, body, None, None)
    except (PermissionDenied, NotFound, InvalidArgument) as exc:
        if visibility == "SPACE":
            st.report.note(
                f"memo: {m.uid}: kept in space {placed[1]!r} at {SHARE!r} although its creator "
                f"may not write there now ({exc.message})"
            )
            return await _prepare(conn, st, m, base, None, (placed[0], SHARE))
        st.report.note(f"memo: {m.uid}: {visibility} memo kept out of its space ({exc.message})")
        return await _prepare(conn, st, m, base, None, None)


async def _comment(conn: AsyncConnection, st: State, m: MemosMemo) -> None:
    parent_id = st.memos.get(m.parent_id or 0)
    if parent_id is None:
        st.report.note(f"comment: {m.uid}: its parent was not carried: imported as a memo")
        await _now(conn, st, m, await _top_level(conn, st, m))
        return
    parent = (await conn.execute(sa.select(memo).where(memo.c.id == parent_id))).one()
    if parent.parent_id is not None:
        st.report.note(f"comment: {m.uid}: its parent is a comment: imported as a memo")
        await _now(conn, st, m, await _top_level(conn, st, m))
        return
    visibility = (
        m.visibility if m.visibility in ("PRIVATE", "PROTECTED", "PUBLIC", "SPACE") else "PRIVATE"
    )
    if parent.visibility == "SPACE" and visibility != "SPACE":
        st.report.note(
            f"comment: {m.uid}: a {visibility} comment on a space memo: imported as a separate "
            "memo, so that it is not shown to the space"
        )
        await _now(conn, st, m, await _top_level(conn, st, _unplaced(m)))
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


async def _now(conn: AsyncConnection, st: State, m: MemosMemo, new: NewMemo) -> None:
    st.memos[m.id] = await insert_memo(conn, new.ctx, new.prepared)


async def _existing(conn: AsyncConnection, page: list[MemosMemo]) -> dict[str, tuple[int, int]]:
    """The page's uids already on this instance: uid → (memo id, creator id), one statement."""
    found = await conn.execute(
        sa.select(memo.c.uid, memo.c.id, memo.c.creator_id).where(
            memo.c.uid.in_(sorted({m.uid for m in page}))
        )
    )
    return {str(uid): (int(memo_id), int(creator)) for uid, memo_id, creator in found}


async def carry_memos(conn: AsyncConnection, source: MemosSource, st: State) -> None:
    """Top-level memos a page at a time (parsed in parallel, written in a few statements:
    :mod:`app.memos.bulk`), then comments one by one (each needs its parent's row)."""
    for comments in (False, True):
        kind = "comment" if comments else "memo"
        async for page in source.memos(comments=comments):
            existing = await _existing(conn, page)
            await prerender_all(
                (m.content for m in page if m.uid not in existing and m.creator_id in st.users),
                MAX_CONTENT,
            )
            pending: list[tuple[MemosMemo, NewMemo]] = []
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
                if m.uid in existing:
                    memo_id, creator = existing[m.uid]
                    if creator == st.users[m.creator_id].id:
                        st.memos[m.id] = memo_id
                        st.report.existing[kind] += 1
                    else:
                        st.report.problem(kind, f"{m.uid}: this id is held by another Daybook user")
                    continue
                try:
                    if comments:
                        await _comment(conn, st, m)
                    else:
                        pending.append((m, await _top_level(conn, st, m)))
                        continue
                except DaybookError as exc:
                    st.report.problem(kind, f"{m.uid}: {exc.message}")
                    continue
                st.report.carried[kind] += 1
            ids = await insert_memos(conn, [new for _, new in pending])
            for (m, _), memo_id in zip(pending, ids, strict=True):
                st.memos[m.id] = memo_id
                st.report.carried[kind] += 1


# --- relations and reactions -------------------------------------------------------------


async def carry_references(conn: AsyncConnection, source: MemosSource, st: State) -> None:
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


async def carry_reactions(conn: AsyncConnection, source: MemosSource, st: State) -> None:
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
