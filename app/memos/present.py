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

import functools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import BindParameter

from app.access.admission import pinned, readable
from app.access.audience import AccessMode
from app.access.caller import Caller, reader_of, restriction_key
from app.access.paths import render_tree_path
from app.access.restriction import Restriction
from app.access.scope import EMPTY_SCOPE, READ, SpaceScope, load_scope
from app.api.structs import rfc3339
from app.db.joins import by_key, ordered_join
from app.db.records import records
from app.db.schema import attachment, memo, memo_tag, reaction, space, user_account
from app.memos import schemas
from app.memos.rows import MemoRow, PlacedMemoRow
from app.relations.visible import relation_of, relation_sides

T = TypeVar("T")
Ids = Sequence[int] | BindParameter[Any]  # the page's ids, or the expanding parameter for them
PARENT = by_key(memo, "parent_memo")  # module level: the read rule is memoised per table


def tags_statement(ids: Ids) -> sa.Select[Any]:
    """The page's tags, each with its memo's version (page rows by primary key first)."""
    return (
        sa.select(memo_tag.c.memo_id, memo.c.version, memo_tag.c.tag)
        .select_from(ordered_join(memo, memo_tag, memo_tag.c.memo_id == memo.c.id))
        .where(memo.c.id.in_(ids))
        .order_by(memo_tag.c.memo_id, memo_tag.c.position)
    )


def reactions_statement(ids: Ids) -> sa.Select[Any]:
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


def attachments_statement(ids: Ids) -> sa.Select[Any]:
    return (
        sa.select(attachment, memo.c.version.label("memo_version"))
        .select_from(ordered_join(memo, attachment, attachment.c.memo_id == memo.c.id))
        .where(memo.c.id.in_(ids))
        .order_by(attachment.c.id)
    )


STRINGS = 5  # s0..s4: the widest branch (a relation) carries five strings
NUMBERS = 2  # n0, n1


def _branch(
    stmt: sa.Select[Any],
    kind: str,
    memo_id: Any,
    version: Any,
    order: Any,
    strings: Sequence[Any] = (),
    numbers: Sequence[Any] = (),
) -> sa.Select[Any]:
    """``stmt``'s FROM and WHERE with the related statement's uniform columns."""
    text = [*strings, *([sa.null()] * (STRINGS - len(strings)))]
    ints = [*numbers, *([sa.null()] * (NUMBERS - len(numbers)))]
    out: sa.Select[Any] = stmt.with_only_columns(  # type: ignore[assignment]
        sa.cast(sa.literal(kind), sa.Text).label("kind"),
        sa.cast(memo_id, sa.BigInteger).label("memo_id"),
        sa.cast(version, sa.BigInteger).label("version"),
        sa.cast(order, sa.BigInteger).label("ord"),
        *[sa.cast(x, sa.Text).label(f"s{i}") for i, x in enumerate(text)],
        *[sa.cast(x, sa.BigInteger).label(f"n{i}") for i, x in enumerate(ints)],
    ).order_by(None)
    return out


def related_statement(
    ids: Sequence[int], creators: set[int], caller: Caller | None, mode: AccessMode
) -> tuple[sa.CompoundSelect[Any], dict[str, Any]]:
    """The page's tags, creators' usernames, reactions, attachments and relations: one
    round trip (issue 15), a ``UNION ALL`` of the per-kind statements above, each
    still driven from the page's ids and planned on its own, with uniform columns
    (``kind, memo_id, version, ord, s0..s4, n0, n1``).

    Returns the statement and its parameters: the statement is the reader's
    kept one (:func:`_related_template`), the page's ids and creators are bound
    as expanding parameters."""
    template = _related_template(
        caller.user_id if caller is not None else None, restriction_key(caller), mode
    )
    return template, {"page_ids": list(ids), "page_creators": sorted(creators)}


@functools.lru_cache(maxsize=1024)
def _related_template(
    user_id: int | None, restriction: Restriction | None, mode: AccessMode
) -> sa.CompoundSelect[Any]:
    """:func:`related_statement` of one reader, built once.

    The relation sides carry the read rule for their other end, so building
    the union and SQLAlchemy's fingerprint of it (``_generate_cache_key``, on
    every execution of a new statement object) cost several milliseconds per
    page; kept, the fingerprint is memoised on the object. A pure function of
    its arguments, like the predicate inside (nothing about grants or memos
    is cached: the statement reads them)."""
    caller = reader_of(user_id, restriction)
    ids = sa.bindparam("page_ids", expanding=True, type_=sa.BigInteger)
    creators = sa.bindparam("page_creators", expanding=True, type_=sa.BigInteger)
    tags = tags_statement(ids)
    reactions = reactions_statement(ids)
    attachments = attachments_statement(ids)
    users = sa.select(user_account.c.id).where(user_account.c.id.in_(creators))
    outgoing, incoming = relation_sides(ids, caller, mode)
    branches = [
        _branch(
            tags, "tag", memo_tag.c.memo_id, memo.c.version, memo_tag.c.position, [memo_tag.c.tag]
        ),
        _branch(users, "user", user_account.c.id, 0, 0, [user_account.c.username]),
        _branch(
            reactions,
            "reaction",
            reaction.c.memo_id,
            memo.c.version,
            reaction.c.id,
            [reaction.c.reaction_type, user_account.c.username],
            [reaction.c.id, reaction.c.created_ts],
        ),
        _branch(
            attachments,
            "attachment",
            attachment.c.memo_id,
            memo.c.version,
            attachment.c.id,
            [attachment.c.uid, attachment.c.filename, attachment.c.mime_type],
            [attachment.c.size, attachment.c.created_ts],
        ),
    ]
    for side in (outgoing, incoming):
        c = side.selected_columns
        branches.append(
            _branch(
                side,
                "relation",
                c.page_id,
                c.page_version,
                0,
                [c.type, c.src_uid, c.src_snippet, c.dst_uid, c.dst_snippet],
                [c.memo_id, c.related_memo_id],
            )
        )
    return sa.union_all(*branches)


def parents_statement(
    parent_ids: set[int], caller: Caller | None, mode: AccessMode
) -> sa.Select[Any]:
    """Comments' parents the caller may read (the other end: the read rule applies)."""
    return sa.select(PARENT.c.id, PARENT.c.uid).where(
        PARENT.c.id.in_(parent_ids), readable(caller, mode, PARENT)
    )


def etag(row: MemoRow) -> str:
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
    conn: AsyncConnection, row: MemoRow, caller: Caller | None, mode: AccessMode
) -> schemas.Memo:
    """One memo resource (a page of one)."""
    return (await present(conn, [row], caller, mode))[0]


async def present(
    conn: AsyncConnection, rows: Sequence[MemoRow], caller: Caller | None, mode: AccessMode
) -> list[schemas.Memo]:
    if not rows:
        return []
    ids = [r.id for r in rows]
    versions = {r.id: r.version for r in rows}
    uids = {r.id: r.uid for r in rows}
    tags: dict[int, list[tuple[int, str]]] = defaultdict(list)
    usernames: dict[int, str] = {}
    reactions: dict[int, list[tuple[int, schemas.Reaction]]] = defaultdict(list)
    attachments: dict[int, list[tuple[int, schemas.AttachmentRef]]] = defaultdict(list)
    relation_rows: list[Any] = []
    creators = {r.creator_id for r in rows}
    statement, params = related_statement(ids, creators, caller, mode)
    for x in records(await conn.execute(statement, params)):
        if x.kind == "user":
            usernames[int(x.memo_id)] = x.s0
        elif not pinned(versions, x.memo_id, x.version):
            continue  # the memo was rewritten since the page read it
        elif x.kind == "tag":
            tags[x.memo_id].append((x.ord, x.s0))
        elif x.kind == "reaction":
            reactions[x.memo_id].append(
                (
                    x.ord,
                    schemas.Reaction(
                        name=f"memos/{uids[x.memo_id]}/reactions/{x.n0}",
                        creator=f"users/{x.s1}",
                        content_id=f"memos/{uids[x.memo_id]}",
                        reaction_type=x.s0,
                        create_time=rfc3339(x.n1),
                    ),
                )
            )
        elif x.kind == "attachment":
            attachments[x.memo_id].append(
                (
                    x.ord,
                    schemas.AttachmentRef(
                        name=f"attachments/{x.s0}",
                        filename=x.s1,
                        type=x.s2,
                        size=str(x.n0),
                        create_time=rfc3339(x.n1),
                        memo=f"memos/{uids[x.memo_id]}",
                    ),
                )
            )
        else:
            relation_rows.append(x)
    relation_rows.sort(key=lambda x: (x.n0, x.n1, x.s0))
    relations: dict[int, list[schemas.Relation]] = defaultdict(list)
    for x in relation_rows:
        relations[x.memo_id].append(
            relation_of(
                _RelationRow(
                    type=x.s0, src_uid=x.s1, src_snippet=x.s2, dst_uid=x.s3, dst_snippet=x.s4
                )
            )
        )

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
                tags=[t for _, t in sorted(tags.get(r.id, []), key=lambda t: t[0])],
                pinned=bool(r.pinned),
                attachments=_in_order(attachments.get(r.id, [])),
                relations=relations.get(r.id, []),
                reactions=_in_order(reactions.get(r.id, [])),
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
                tree=render_tree_path(r.tree, viewer)
                if shown and r.tree is not None  # shown implies a tree; mypy cannot see it
                else msgspec.UNSET,
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class _RelationRow:
    type: str
    src_uid: str
    src_snippet: str
    dst_uid: str
    dst_snippet: str


def _in_order(items: list[tuple[int, T]]) -> list[T]:
    return [item for _, item in sorted(items, key=lambda pair: pair[0])]


async def _space_names(
    conn: AsyncConnection, rows: Sequence[MemoRow], caller: Caller | None
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


def _shows_place(row: PlacedMemoRow, spaces: dict[int | None, str], scope: SpaceScope) -> bool:
    return (
        row.space_id is not None
        and row.space_id in spaces
        and row.tree is not None
        and scope.level_at(row.space_id, row.tree) >= READ
    )


async def _parent_names(
    conn: AsyncConnection, rows: Sequence[MemoRow], caller: Caller | None, mode: AccessMode
) -> dict[int, str]:
    """Each comment's parent name, only where the caller can read the parent.

    A readable comment on an unreadable parent must not carry that memo's name.
    """
    parent_ids = {r.parent_id for r in rows if r.parent_id is not None}
    if not parent_ids:
        return {}
    names = dict((await conn.execute(parents_statement(parent_ids, caller, mode))).all())
    return {r.id: f"memos/{names[r.parent_id]}" for r in rows if r.parent_id in names}
