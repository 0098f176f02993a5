"""Rows to Memo resources, loading a page's related rows in a few batched queries.

The rows given are ones a read has admitted (``app.access.admission``): the
page statement, a search's admitted re-read, a point read's rule. Their
related rows (tags, reactions, attachments, relations) are loaded driven by
the page's ids, each statement joining the page's memo rows by primary key
and keeping a related row only while its memo still has the version the page
read (``admission.pinned``). Inside the request's single read snapshot that
is always so and the page's rows need no second audience check; without it,
a memo rewritten in between (made PRIVATE with new tags) shows none of its
new version's rows rather than some. What lies at the other end of something
(a relation's other memo, a comment's parent) passes the read rule itself
(:func:`app.access.admission.readable`): a relation appears only when its
other end is readable by the caller (:mod:`app.relations.visible`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.admission import pinned, readable
from app.access.audience import AccessMode
from app.access.caller import Caller
from app.access.paths import render_tree_path
from app.access.scope import EMPTY_SCOPE, READ, SpaceScope, load_scope
from app.api.structs import rfc3339
from app.db.joins import by_key, ordered_join
from app.db.schema import attachment, memo, memo_tag, reaction, space, user_account
from app.memos import schemas
from app.relations.visible import visible_relations

PARENT = by_key(memo, "parent_memo")  # module level: the read rule is memoised per table


def tags_statement(ids: Sequence[int]) -> sa.Select[Any]:
    """The page's tags, each with its memo's version (page rows by primary key first)."""
    return (
        sa.select(memo_tag.c.memo_id, memo.c.version, memo_tag.c.tag)
        .select_from(ordered_join(memo, memo_tag, memo_tag.c.memo_id == memo.c.id))
        .where(memo.c.id.in_(ids))
        .order_by(memo_tag.c.memo_id, memo_tag.c.position)
    )


def reactions_statement(ids: Sequence[int]) -> sa.Select[Any]:
    return (
        sa.select(reaction, memo.c.version.label("memo_version"), user_account.c.username)
        .select_from(
            ordered_join(
                ordered_join(memo, reaction, reaction.c.memo_id == memo.c.id),
                user_account,
                user_account.c.id == reaction.c.creator_id,
            )
        )
        .where(memo.c.id.in_(ids))
        .order_by(reaction.c.id)
    )


def attachments_statement(ids: Sequence[int]) -> sa.Select[Any]:
    return (
        sa.select(attachment, memo.c.version.label("memo_version"))
        .select_from(ordered_join(memo, attachment, attachment.c.memo_id == memo.c.id))
        .where(memo.c.id.in_(ids))
        .order_by(attachment.c.id)
    )


def parents_statement(
    parent_ids: set[int], caller: Caller | None, mode: AccessMode
) -> sa.Select[Any]:
    """Comments' parents the caller may read (the other end: the read rule applies)."""
    return sa.select(PARENT.c.id, PARENT.c.uid).where(
        PARENT.c.id.in_(parent_ids), readable(caller, mode, PARENT)
    )


def etag(row: Any) -> str:
    return f'"{row.id}-{row.version}"'


def _origin(value: Any) -> schemas.Origin:
    if isinstance(value, dict) and value.get("kind") == "pat":
        return schemas.Origin(
            kind="pat",
            token=f"personalAccessTokens/{value.get('id')}",
            description=str(value.get("description", "")),
        )
    kind = value.get("kind") if isinstance(value, dict) else None
    return schemas.Origin(kind=str(kind or "session"))


async def present_one(
    conn: AsyncConnection, row: Any, caller: Caller | None, mode: AccessMode
) -> schemas.Memo:
    """One memo resource (a page of one)."""
    return (await present(conn, [row], caller, mode))[0]


async def present(
    conn: AsyncConnection, rows: Sequence[Any], caller: Caller | None, mode: AccessMode
) -> list[schemas.Memo]:
    if not rows:
        return []
    ids = [r.id for r in rows]
    versions = {r.id: r.version for r in rows}
    tags: dict[int, list[str]] = defaultdict(list)
    for memo_id, version, tag in await conn.execute(tags_statement(ids)):
        if pinned(versions, memo_id, version):
            tags[memo_id].append(tag)

    creators = {r.creator_id for r in rows}
    usernames = dict(
        (
            await conn.execute(
                sa.select(user_account.c.id, user_account.c.username).where(
                    user_account.c.id.in_(creators)
                )
            )
        ).all()
    )
    uids = {r.id: r.uid for r in rows}

    reactions: dict[int, list[schemas.Reaction]] = defaultdict(list)
    reaction_rows = await conn.execute(reactions_statement(ids))
    for r in reaction_rows:
        if not pinned(versions, r.memo_id, r.memo_version):
            continue
        reactions[r.memo_id].append(
            schemas.Reaction(
                name=f"memos/{uids[r.memo_id]}/reactions/{r.id}",
                creator=f"users/{r.username}",
                content_id=f"memos/{uids[r.memo_id]}",
                reaction_type=r.reaction_type,
                create_time=rfc3339(r.created_ts),
            )
        )

    attachments: dict[int, list[schemas.AttachmentRef]] = defaultdict(list)
    for a in await conn.execute(attachments_statement(ids)):
        if not pinned(versions, a.memo_id, a.memo_version):
            continue
        attachments[a.memo_id].append(
            schemas.AttachmentRef(
                name=f"attachments/{a.uid}",
                filename=a.filename,
                type=a.mime_type,
                size=str(a.size),
                create_time=rfc3339(a.created_ts),
                memo=f"memos/{uids[a.memo_id]}",
            )
        )

    relations = await visible_relations(conn, versions, caller, mode)
    parents = await _parent_names(conn, rows, caller, mode)
    spaces, where = await _space_names(conn, rows, caller)
    viewer = caller.user_id if caller else None

    out = []
    for r in rows:
        shown = _shows_place(r, spaces, where)
        location: schemas.Location | msgspec.UnsetType = msgspec.UNSET
        if r.location_placeholder is not None:
            location = schemas.Location(
                placeholder=r.location_placeholder,
                latitude=r.location_latitude or 0.0,
                longitude=r.location_longitude or 0.0,
            )
        out.append(
            schemas.Memo(
                name=f"memos/{r.uid}",
                state=r.state,
                creator=f"users/{usernames.get(r.creator_id, '')}",
                create_time=rfc3339(r.created_ts),
                update_time=rfc3339(r.updated_ts),
                display_time=rfc3339(r.created_ts),
                content=r.content,
                visibility=r.visibility,
                tags=tags.get(r.id, []),
                pinned=bool(r.pinned),
                attachments=attachments.get(r.id, []),
                relations=relations.get(r.id, []),
                reactions=reactions.get(r.id, []),
                property=schemas.MemoProperty(
                    has_link=bool(r.has_link),
                    has_task_list=bool(r.has_task_list),
                    has_code=bool(r.has_code),
                    has_incomplete_tasks=bool(r.has_incomplete_tasks),
                    title=r.title,
                ),
                snippet=r.snippet,
                origin=_origin(r.origin),
                etag=etag(r),
                parent=parents.get(r.id, msgspec.UNSET),
                location=location,
                space=spaces[r.space_id] if shown else msgspec.UNSET,
                tree=render_tree_path(r.tree, viewer) if shown else msgspec.UNSET,
            )
        )
    return out


async def _space_names(
    conn: AsyncConnection, rows: Sequence[Any], caller: Caller | None
) -> tuple[dict[int | None, str], SpaceScope]:
    """``spaces/{uid}`` of the page's spaces the caller is a member of, and its scope.

    A memo's space and path are shown only where the caller could read a SPACE
    memo at that path (:func:`_shows_place`): a PUBLIC memo placed in a space
    is readable by non-members and by members without a grant there, and
    neither learns the space's tree from it (decision 0030).
    """
    wanted = {r.space_id for r in rows if r.space_id is not None}
    if not wanted or caller is None:
        return {}, EMPTY_SCOPE
    scope = await load_scope(conn, caller)
    member_of = scope.space_ids() & wanted
    if not member_of:
        return {}, scope
    found = await conn.execute(sa.select(space.c.id, space.c.uid).where(space.c.id.in_(member_of)))
    return {int(i): f"spaces/{u}" for i, u in found.all()}, scope


def _shows_place(row: Any, spaces: dict[int | None, str], scope: SpaceScope) -> bool:
    return (
        row.space_id in spaces
        and row.tree is not None
        and scope.level_at(row.space_id, row.tree) >= READ
    )


async def _parent_names(
    conn: AsyncConnection, rows: Sequence[Any], caller: Caller | None, mode: AccessMode
) -> dict[int, str]:
    """Each comment's parent name, only where the caller can read the parent.

    A readable comment on an unreadable parent must not carry that memo's name.
    """
    parent_ids = {r.parent_id for r in rows if r.parent_id is not None}
    if not parent_ids:
        return {}
    names = dict((await conn.execute(parents_statement(parent_ids, caller, mode))).all())
    return {r.id: f"memos/{names[r.parent_id]}" for r in rows if r.parent_id in names}
