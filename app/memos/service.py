"""Memo writes: validation, derived columns, tags and the history event, in
the caller's transaction.

Every write records a ``memo_event`` row in the same transaction, with the
prior content and fields, the actor and the credential, so a history can
never disagree with the memo it describes.
"""

from __future__ import annotations

import functools
import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.audience import AccessMode, MemoFacts, can_read
from app.access.caller import Caller, Credential
from app.access.scope import EMPTY_SCOPE, SpaceScope, load_scope
from app.access.writes import memo_spot, write_denial
from app.api.context import (
    WriteContext as WriteContext,
)  # re-exported: its importers predate the move
from app.api.structs import parse_time, valid_uid
from app.db.schema import memo, memo_event, memo_tag, user_account, webhook
from app.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
)
from app.instance.store import AccessSettings
from app.memos.html_cache import store_html
from app.memos.parse import Parsed
from app.memos.parse_pool import parse_memo
from app.memos.placement import place_moved, place_new, refuse_if_shared, require_write
from app.memos.rows import MemoRow, PlacedMemoRow, ReadMemoRow
from app.memos.schemas import MemoIn
from app.webhooks.outbox import Activity, emit

VISIBILITIES = ("PRIVATE", "PROTECTED", "PUBLIC", "SPACE")
STATES = ("NORMAL", "ARCHIVED")
UPDATE_PATHS = {
    "content": "content",
    "visibility": "visibility",
    "pinned": "pinned",
    "state": "state",
    "rowstatus": "state",  # Memos before 0.24 (MemoIn.row_status)
    "create_time": "create_time",
    "createtime": "create_time",
    "update_time": "update_time",
    "updatetime": "update_time",
    "display_time": "create_time",
    "displaytime": "create_time",
    "location": "location",
    "space": "space",
    "tree": "tree",
    "attachments": "attachments",  # bound by app.memos.bindings after the update
    "relations": "relations",
}
# Output-only paths of Memos' Memo: a client building its mask from the whole
# resource names them; there is nothing to change, so they are ignored as
# Memos ignores them. Any other unknown path stays a 400 (docs/decisions/0027).
IGNORED_PATHS = {
    "name",
    "creator",
    "tags",
    "property",
    "snippet",
    "reactions",
    "parent",
    "etag",
    "origin",
    "contenthtml",
}
TRACKED = (
    "content",
    "visibility",
    "space_id",
    "tree",
    "state",
    "pinned",
    "created_ts",
    "updated_ts",
    "location_placeholder",
    "location_latitude",
    "location_longitude",
)


_CAS_ATTEMPTS = 20  # recomputations of one update racing others (PostgreSQL only)


# Parses done by :func:`prerender` before the write lock is taken, keyed by the
# content itself (a pure function's results, so any later write of the same
# content may use them). Bounded by entries and characters; a miss only means
# the parse happens later, under the lock.
_PRERENDERED: OrderedDict[str, Parsed] = OrderedDict()
_PRERENDER_ENTRIES = 512
_PRERENDER_CHARS = 8 * 1024 * 1024
_prerender_chars = 0


def _check_length(content: str, limit: int) -> None:
    if len(content.encode()) > limit:
        raise InvalidArgument(
            f"content: {len(content.encode())} bytes exceeds the limit of {limit}"
        )


async def prerender(content: Any, limit: int) -> None:
    """Validate and parse a write's content before its transaction opens.

    Markdown is parsed off the loop (in a worker process beyond a few hundred
    bytes): done inside the write transaction, every other writer would wait
    for it. Errors are the ones the write itself would raise.
    """
    global _prerender_chars
    if not isinstance(content, str) or content in _PRERENDERED:
        return
    _check_length(content, limit)
    parsed = await parse_memo(content)
    _PRERENDERED[content] = parsed
    _prerender_chars += len(content) + len(parsed.html)
    while _PRERENDERED and (
        len(_PRERENDERED) > _PRERENDER_ENTRIES or _prerender_chars > _PRERENDER_CHARS
    ):
        old, dropped = _PRERENDERED.popitem(last=False)
        _prerender_chars -= len(old) + len(dropped.html)


async def content_tags(content: str) -> list[str]:
    """The tags of ``content``, as its write stored them (``memo_tag`` is this parse's)."""
    parsed = _PRERENDERED.get(content)
    if parsed is None:
        parsed = await parse_memo(content)
    return list(parsed.props.tags)


async def _content_columns(content: str, limit: int) -> dict[str, Any]:
    _check_length(content, limit)
    parsed = _PRERENDERED.get(content)
    if parsed is None:
        parsed = await parse_memo(content)  # off the event loop, bounded in time
    props = parsed.props
    return {
        "content": content,
        "title": props.title,
        "snippet": props.snippet,
        "has_link": props.has_link,
        "has_task_list": props.has_task_list,
        "has_code": props.has_code,
        "has_incomplete_tasks": props.has_incomplete_tasks,
        "_tags": props.tags,
        "_html": parsed.html,
    }


def _visibility(value: str, access: AccessSettings) -> str:
    if value not in VISIBILITIES:
        raise InvalidArgument(f"visibility: {value!r} is not one of {', '.join(VISIBILITIES)}")
    if value == "PUBLIC" and access.disallow_public_visibility:
        raise PermissionDenied("visibility: PUBLIC is disallowed on this instance")
    return value


def _state(value: str) -> str:
    if value not in STATES:
        raise InvalidArgument(f"state: {value!r} is not one of NORMAL, ARCHIVED")
    return value


def _location(value: Any) -> dict[str, Any]:
    if value is None:
        return {"location_placeholder": None, "location_latitude": None, "location_longitude": None}
    if not (-90 <= value.latitude <= 90 and -180 <= value.longitude <= 180):
        raise InvalidArgument("location: latitude or longitude out of range")
    return {
        "location_placeholder": value.placeholder,
        "location_latitude": value.latitude,
        "location_longitude": value.longitude,
    }


# The write path's statements are built once, their values bound at execution:
# SQLAlchemy fingerprints a new statement object on every execution (its
# cache key walk), a kept one only the first time. Writes hold the write lock
# while they run, so this is time every queued writer waits for (issue 12).
_DELETE_TAGS = memo_tag.delete().where(memo_tag.c.memo_id == sa.bindparam("memo_id"))
_INSERT_TAGS = memo_tag.insert()
_INSERT_EVENT = memo_event.insert()
_HOOKS_OWNER = sa.bindparam("hooks_owner", type_=sa.BigInteger)
_BY_UID = (
    sa.select(memo, user_account.c.state.label("creator_state"))
    .outerjoin(user_account, user_account.c.id == memo.c.creator_id)
    .where(memo.c.uid == sa.bindparam("uid", type_=memo.c.uid.type))
)


def _bound(columns: tuple[str, ...]) -> dict[str, Any]:
    """``column: :v_column`` for a statement's VALUES or SET, typed as the column."""
    return {c: sa.bindparam(f"v_{c}", type_=memo.c[c].type) for c in columns}


def _params(values: dict[str, Any]) -> dict[str, Any]:
    return {f"v_{c}": v for c, v in values.items()}


@functools.lru_cache(maxsize=64)
def _insert_statement(dialect: str, columns: tuple[str, ...]) -> Any:
    """The memo INSERT of one dialect and set of columns (see ``_DELETE_TAGS``)."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return (
        insert(memo)
        .values(_bound(columns))
        .on_conflict_do_nothing(index_elements=[memo.c.uid])
        .returning(*memo.c, _has_webhooks(_HOOKS_OWNER))
    )


@functools.lru_cache(maxsize=256)
def _cas_statement(columns: tuple[str, ...]) -> sa.Update:
    """The compare-and-swap UPDATE of one set of columns (see ``_DELETE_TAGS``)."""
    return (
        memo.update()
        .where(memo.c.id == sa.bindparam("cas_id"), memo.c.version == sa.bindparam("cas_version"))
        .values(_bound(columns))
        .returning(*memo.c, _has_webhooks(_HOOKS_OWNER))
    )


async def _replace_tags(conn: AsyncConnection, memo_id: int, tags: tuple[str, ...]) -> None:
    await conn.execute(_DELETE_TAGS, {"memo_id": memo_id})
    if tags:
        await conn.execute(
            _INSERT_TAGS,
            [{"memo_id": memo_id, "tag": t, "position": i} for i, t in enumerate(tags)],
        )


async def _event(
    conn: AsyncConnection,
    ctx: WriteContext,
    memo_id: int,
    kind: str,
    version: int,
    prior: dict[str, Any] | None,
) -> None:
    prior_content = prior.pop("content", None) if prior else None
    await conn.execute(
        _INSERT_EVENT,
        {
            "memo_id": memo_id,
            "kind": kind,
            "actor_id": ctx.caller.user_id,
            "credential": ctx.caller.origin(),
            "prior_content": prior_content,
            "prior": prior,
            "version": version,
            "created_ts": ctx.now,
        },
    )


@dataclass(frozen=True, slots=True)
class PreparedMemo:
    """A create that passed every check (key, shape, limits, placement): nothing written yet."""

    values: dict[str, Any]
    tags: tuple[str, ...]
    html: str

    @property
    def uid(self) -> str:
        return str(self.values["uid"])


async def create_memo(
    conn: AsyncConnection,
    ctx: WriteContext,
    data: MemoIn,
    uid: str | None,
    parent_id: int | None = None,
) -> int:
    return int((await create_memo_row(conn, ctx, data, uid, parent_id)).id)


async def create_memo_row(
    conn: AsyncConnection,
    ctx: WriteContext,
    data: MemoIn,
    uid: str | None,
    parent_id: int | None = None,
) -> MemoRow:
    """Create a memo; its ``memo`` row as written (the response needs no re-read)."""
    return await insert_memo_row(conn, ctx, await prepare_memo(conn, ctx, data, uid, parent_id))


async def prepare_memo(
    conn: AsyncConnection,
    ctx: WriteContext,
    data: MemoIn,
    uid: str | None,
    parent_id: int | None = None,
) -> PreparedMemo:
    """Every check a create makes, without looking at or writing any memo row.

    A read-only key is refused before this runs (``app.api.context.writable_key``
    on the route); if one got here, the write rule in ``place_new`` refuses it.
    """
    uid = valid_uid(uid) if uid else secrets.token_hex(11)
    values = await _content_columns(
        data.content if isinstance(data.content, str) else "", ctx.access.content_length_limit
    )
    tags = values.pop("_tags")
    html = values.pop("_html")
    if isinstance(data.visibility, str):
        _visibility(data.visibility, ctx.access)
    in_space = isinstance(data.space, str) and data.space != ""
    scope = await load_scope(conn, ctx.caller) if in_space else EMPTY_SCOPE
    placed = await place_new(conn, ctx.caller, data, scope)
    visibility = _visibility(placed.visibility, ctx.access)
    # Importers set the times; an imported memo's update time defaults to its creation.
    created = ctx.now
    if isinstance(data.create_time, str):
        created = parse_time(data.create_time, "createTime")
    elif isinstance(data.display_time, str):
        created = parse_time(data.display_time, "displayTime")
    updated = created
    if isinstance(data.update_time, str):
        updated = parse_time(data.update_time, "updateTime")
    values.update(
        uid=uid,
        creator_id=ctx.caller.user_id,
        visibility=visibility,
        space_id=placed.space_id,
        tree=placed.tree,
        state=_state(data.state) if isinstance(data.state, str) else "NORMAL",
        pinned=data.pinned if isinstance(data.pinned, bool) else False,
        created_ts=created,
        updated_ts=updated,
        parent_id=parent_id,
        origin=ctx.caller.origin(),
        version=1,
    )
    if not isinstance(data.location, msgspec.UnsetType):
        values.update(_location(data.location))
    return PreparedMemo(values, tags, html)


def _has_webhooks(creator_id: Any) -> Any:
    """Returned with a written memo row: whether its creator has webhooks.

    The outbox then needs no statement of its own for a user without any (the
    usual case). The creator is bound as a value, never correlated with
    ``memo``: inside an INSERT's or UPDATE's RETURNING, SQLAlchemy compiles a
    reference to ``memo`` as a second FROM (a cross join with the whole table,
    which on PostgreSQL cannot see the row being inserted: a user's first
    memo after adding a webhook lost its event).
    """
    return sa.exists().where(webhook.c.owner_id == creator_id).label("has_webhooks")


async def insert_memo(conn: AsyncConnection, ctx: WriteContext, prepared: PreparedMemo) -> int:
    """Insert a prepared memo with its tags and CREATE event; 409 if the id is taken."""
    return int((await insert_memo_row(conn, ctx, prepared)).id)


async def insert_memo_row(
    conn: AsyncConnection, ctx: WriteContext, prepared: PreparedMemo
) -> MemoRow:
    """:func:`insert_memo`, answering the ``memo`` row as written.

    Every statement here runs while the write lock is held (SQLite's only
    writer), so there are as few as the write needs (docs/decisions/0028):
    ``ON CONFLICT (uid) DO NOTHING RETURNING`` both detects a taken id (no
    SAVEPOINT round trips) and hands back the row; a new memo has no tags or
    rendering to delete first; the outbox asks for the creator's webhooks
    before it loads anything else.
    """
    stmt = _insert_statement(conn.dialect.name, tuple(prepared.values))
    params = _params(prepared.values)
    params["hooks_owner"] = int(prepared.values["creator_id"])
    row = (await conn.execute(stmt, params)).first()
    if row is None:
        raise AlreadyExists(f"memo {prepared.uid!r} already exists")
    memo_id = int(row.id)
    if prepared.tags:
        await conn.execute(
            _INSERT_TAGS,
            [{"memo_id": memo_id, "tag": t, "position": i} for i, t in enumerate(prepared.tags)],
        )
    await store_html(conn, memo_id, prepared.values["content"], prepared.html, fresh=True)
    await _event(conn, ctx, memo_id, "CREATE", 1, None)
    await emit(
        conn, ctx, memo_id, Activity.CREATED, owner_id=row.creator_id, has_hooks=row.has_webhooks
    )
    return row


async def load_for_read(
    conn: AsyncConnection, uid: str, caller: Caller | None, mode: AccessMode
) -> ReadMemoRow:
    """The memo row if the caller may read it, else the right error."""
    row = (await conn.execute(_BY_UID, {"uid": uid})).first()
    if row is not None:
        facts = MemoFacts(
            creator_id=row.creator_id,
            creator_state=row.creator_state,
            visibility=row.visibility,
            state=row.state,
            space_id=row.space_id,
            tree=row.tree,
        )
        scope = await _scope_of(conn, caller, row.space_id)
        if can_read(facts, caller, mode, scope):
            return row
        if caller is None and can_read(facts, _ANY_USER, mode):
            raise Unauthenticated("sign in to read this memo")
    raise NotFound(f"memo {uid!r} not found")


async def _scope_of(
    conn: AsyncConnection, caller: Caller | None, space_id: int | None
) -> SpaceScope:
    """The caller's scope in one memo's space (empty for personal memos)."""
    if caller is None or space_id is None:
        return EMPTY_SCOPE
    return await load_scope(conn, caller, space_id)


def _may_write(caller: Caller, row: PlacedMemoRow, scope: SpaceScope) -> bool:
    return write_denial(caller, row.creator_id, memo_spot(row), None, scope) is None


async def may_write(conn: AsyncConnection, caller: Caller, row: PlacedMemoRow) -> bool:
    """The write rule for a loaded memo row, with the caller's scope in its space."""
    return _may_write(caller, row, await _scope_of(conn, caller, row.space_id))


# A stand-in signed-in user who created nothing: used only to decide whether an
# anonymous caller should be told to sign in (401) rather than "not found".
_ANY_USER = Caller(user_id=-1, username="", role="USER", credential=Credential.SESSION)


def normalise_mask(mask: str | None, data: MemoIn) -> set[str]:
    if mask is None or not mask.strip():
        present = {
            name
            for name in (
                "content",
                "visibility",
                "pinned",
                "state",
                "create_time",
                "update_time",
                "location",
                "space",
                "tree",
                "attachments",
                "relations",
            )
            if not isinstance(getattr(data, name), msgspec.UnsetType)
        }
        if not isinstance(data.display_time, msgspec.UnsetType):
            present.add("create_time")
        return present
    paths = set()
    for raw in mask.split(","):
        key = raw.strip().replace("_", "").lower()
        if key in IGNORED_PATHS:
            continue
        path = UPDATE_PATHS.get(key) or UPDATE_PATHS.get(raw.strip())
        if path is None:
            raise InvalidArgument(f"updateMask: unknown path {raw.strip()!r}")
        paths.add(path)
    return paths


async def update_memo(
    conn: AsyncConnection,
    ctx: WriteContext,
    row: MemoRow,
    data: MemoIn,
    paths: set[str],
    if_match: str | None,
    *,
    _attempt: int = 1,
) -> MemoRow | None:
    """Apply ``paths`` of ``data`` to ``row``: the new ``memo`` row, or None if nothing changed.

    ``row`` may come from a read made before the write lock was taken: the
    compare-and-swap on its version below is what makes the write safe.
    """
    from app.memos.present import etag

    moving = bool(paths & {"visibility", "space", "tree"})
    scope = (
        await load_scope(conn, ctx.caller)
        if moving
        else await _scope_of(conn, ctx.caller, row.space_id)
    )
    require_write(ctx.caller, row.creator_id, memo_spot(row), None, scope, row.uid)
    if if_match is not None and if_match.strip() not in (etag(row), "*"):
        raise FailedPrecondition("If-Match: the memo changed since it was read (stale etag)")
    values: dict[str, Any] = {}
    tags: tuple[str, ...] | None = None
    html: str | None = None

    def need(name: str) -> Any:
        value = getattr(data, name)
        if isinstance(value, msgspec.UnsetType):
            raise InvalidArgument(f"{name}: named in updateMask but missing from the body")
        return value

    if "content" in paths:
        cols = await _content_columns(need("content"), ctx.access.content_length_limit)
        tags = cols.pop("_tags")
        html = cols.pop("_html")
        values.update(cols)
    if "visibility" in paths:
        _visibility(need("visibility"), ctx.access)
    placed = await place_moved(conn, ctx.caller, row, data, paths, scope)
    if placed is not None:
        values["visibility"] = _visibility(placed.visibility, ctx.access)
        values["space_id"] = placed.space_id
        values["tree"] = placed.tree
        if placed.space_id is not None and row.space_id is None:
            await refuse_if_shared(conn, row.id, ctx.now)
    if "pinned" in paths:
        values["pinned"] = bool(need("pinned"))
    if "state" in paths:
        values["state"] = _state(need("state"))
    if "create_time" in paths:
        raw = data.create_time if isinstance(data.create_time, str) else need("display_time")
        values["created_ts"] = parse_time(raw, "createTime")
    if "update_time" in paths:
        values["updated_ts"] = parse_time(need("update_time"), "updateTime")
    if "location" in paths:
        values.update(
            _location(None if isinstance(data.location, msgspec.UnsetType) else data.location)
        )

    changed = {k: v for k, v in values.items() if getattr(row, k) != v}
    if not changed:
        return None
    if "updated_ts" not in values and set(changed) - {"pinned"}:
        changed["updated_ts"] = ctx.now
    prior = {k: getattr(row, k) for k in TRACKED if k in changed or k == "content"}
    kind = "UPDATE"
    if changed.get("state") == "ARCHIVED":
        kind = "ARCHIVE"
    elif changed.get("state") == "NORMAL":
        kind = "RESTORE"
    changed["version"] = row.version + 1
    changed["origin"] = ctx.caller.origin()
    # Compare-and-swap: the row is written only if it is still the version this
    # update was computed from. On SQLite the write lock makes a miss
    # impossible; on PostgreSQL (READ COMMITTED) a concurrent update's commit
    # turns ours into a miss: with If-Match that is a stale etag (412),
    # without it the update is recomputed from the new version, so every
    # acknowledged update gets its own version and history event.
    params = _params(changed)
    params.update(cas_id=row.id, cas_version=row.version, hooks_owner=int(row.creator_id))
    new_row = (await conn.execute(_cas_statement(tuple(sorted(changed))), params)).first()
    if new_row is None:
        if if_match is not None and if_match.strip() != "*":
            raise FailedPrecondition("If-Match: the memo changed since it was read (stale etag)")
        if _attempt >= _CAS_ATTEMPTS:
            raise Unavailable("the memo is being changed by others: retry shortly")
        fresh = (await conn.execute(sa.select(memo).where(memo.c.id == row.id))).first()
        if fresh is None:
            raise NotFound(f"memo {row.uid!r} not found")
        return await update_memo(conn, ctx, fresh, data, paths, if_match, _attempt=_attempt + 1)
    if tags is not None:
        await _replace_tags(conn, row.id, tags)
    if html is not None and "content" in changed:
        await store_html(conn, row.id, changed["content"], html)
    await _event(conn, ctx, row.id, kind, row.version + 1, prior)
    await emit(
        conn,
        ctx,
        row.id,
        Activity.UPDATED,
        owner_id=new_row.creator_id,
        has_hooks=new_row.has_webhooks,
    )
    return new_row
