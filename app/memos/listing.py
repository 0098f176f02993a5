"""The memo list query: audience predicate, CEL filter, keyset paging, in one statement.

Shape: ``SELECT ... FROM memo WHERE parent_id IS NULL AND state = :state AND
(<audience>) AND (<filter>) AND (<keyset>) ORDER BY <keys>, id LIMIT n+1``.
The audience predicate and the filter sit in WHERE, before ORDER BY and
LIMIT, so hidden memos never fill, count towards or shift a page; the keyset
condition replaces OFFSET, so page 100 costs what page 1 costs.

A restricted key whose reach is a few index ranges (``app.access.reach``)
gets the same statement once per range, each with the whole WHERE clause
and its own LIMIT, merged by ``UNION ALL ... ORDER BY ... LIMIT``: both
dialects merge the ordered walks lazily (SQLite's merge co-routines,
PostgreSQL's Merge Append), so the page reads about as many rows as it
returns instead of walking the whole timeline for a sliver of it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.access.admission import Admission, Kind, conditions
from app.access.audience import AccessMode
from app.access.caller import Caller, reader_of, restriction_key
from app.access.reach import reach_partition
from app.access.restriction import Restriction
from app.api.paging import decode_token, fingerprint, trim_page
from app.db.records import records
from app.db.schema import memo
from app.errors import InvalidArgument
from app.memos.rows import MemoRow

ORDER_FIELDS: dict[str, sa.Column[Any]] = {
    "pinned": memo.c.pinned,
    "create_time": memo.c.created_ts,
    "display_time": memo.c.created_ts,
    "update_time": memo.c.updated_ts,
    "name": memo.c.uid,
}
DEFAULT_ORDER = "create_time desc"


@dataclass(frozen=True, slots=True)
class OrderKey:
    column: sa.Column[Any]
    descending: bool


def parse_order(order_by: str | None) -> list[OrderKey]:
    """``"pinned desc, create_time desc"`` → keys with ``id`` as the final tiebreak.

    ``pinned`` always sorts first when named, as in Memos.
    """
    text = (order_by or DEFAULT_ORDER).strip() or DEFAULT_ORDER
    keys: list[OrderKey] = []
    seen: set[str] = set()
    for part in text.split(","):
        words = part.split()
        if not words or len(words) > 2:
            raise InvalidArgument(f"orderBy: cannot parse {part.strip()!r}")
        field = words[0].replace("createTime", "create_time").replace("updateTime", "update_time")
        field = field.replace("displayTime", "display_time")
        if field not in ORDER_FIELDS:
            raise InvalidArgument(
                f"orderBy: unknown field {words[0]!r} (use pinned, create_time, update_time, name)"
            )
        direction = words[1].lower() if len(words) == 2 else "asc"
        if direction not in ("asc", "desc"):
            raise InvalidArgument(f"orderBy: direction must be asc or desc, not {words[1]!r}")
        if field in seen:
            continue
        seen.add(field)
        keys.append(OrderKey(ORDER_FIELDS[field], direction == "desc"))
    keys.sort(key=lambda k: k.column is not memo.c.pinned)
    last_desc = keys[-1].descending if keys else True
    keys.append(OrderKey(memo.c.id, last_desc))
    return keys


def _after(keys: list[OrderKey], values: list[Any]) -> ColumnElement[bool]:
    """Rows strictly after ``values`` in the order ``keys``.

    ``values`` are SQL values (literals or bound parameters). Uniform
    directions render as one row-value comparison, which both
    dialects serve from the composite index; mixed directions expand.
    """
    if len(values) != len(keys):
        raise InvalidArgument("pageToken: invalid page token")
    if all(k.descending == keys[0].descending for k in keys):
        left = sa.tuple_(*[k.column for k in keys])
        right = sa.tuple_(*values)
        return left < right if keys[0].descending else left > right
    clause: ColumnElement[bool] = sa.false()
    for i in reversed(range(len(keys))):
        k, v = keys[i], values[i]
        step = k.column < v if k.descending else k.column > v
        clause = sa.or_(step, sa.and_(k.column == v, clause)) if i < len(keys) - 1 else step
    return clause


def _key_values(row: MemoRow, keys: list[OrderKey]) -> list[Any]:
    return [
        bool(getattr(row, k.column.name))
        if k.column is memo.c.pinned
        else getattr(row, k.column.name)
        for k in keys
    ]


def _check_token_values(keys: list[OrderKey], values: list[Any]) -> list[Any]:
    if len(values) != len(keys):
        raise InvalidArgument("pageToken: invalid page token")
    checked: list[Any] = []
    for k, v in zip(keys, values, strict=True):
        python_type = (
            bool if k.column is memo.c.pinned else (str if k.column is memo.c.uid else int)
        )
        if type(v) is not python_type:
            raise InvalidArgument("pageToken: invalid page token")
        checked.append(v)
    return checked


def _ordered(keys: list[OrderKey], table: Any) -> list[ColumnElement[Any]]:
    return [
        table.c[k.column.name].desc() if k.descending else table.c[k.column.name].asc()
        for k in keys
    ]


def _time_ordered(keys: list[OrderKey]) -> bool:
    """The order the space timeline index serves: creation time, then id, one direction."""
    return [k.column for k in keys] == [memo.c.created_ts, memo.c.id] and (
        keys[0].descending == keys[1].descending
    )


def _merged_walks(
    parts: tuple[ColumnElement[bool], ...],
    keys: list[OrderKey],
    where: list[ColumnElement[bool]],
    limit: Any,
) -> sa.Select[Any]:
    """One ordered walk per part, merged; the page's rows are read by id afterwards,
    in the same statement (so in the same snapshot as the admission that chose them).

    The walks select only their order keys, so building them stays cheap and
    the merge handles narrow rows.
    """
    walks = [
        sa.select(*[memo.c[k.column.name] for k in keys])
        .where(*where, part)
        .order_by(*_ordered(keys, memo))
        .limit(limit)
        .subquery()
        for part in parts
    ]
    merged = sa.union_all(*(sa.select(w) for w in walks)).subquery("reach")
    page = sa.select(merged).order_by(*_ordered(keys, merged)).limit(limit).subquery("page")
    return sa.select(memo).join(page, page.c.id == memo.c.id).order_by(*_ordered(keys, page))


@functools.lru_cache(maxsize=1024)
def _page_template(
    user_id: int | None,
    restriction: Restriction | None,
    mode: AccessMode,
    order: tuple[tuple[str, bool], ...],
    state: str,
    paged: bool,
) -> sa.Select[Any]:
    """The unfiltered page statement of one reader and one order, built once.

    The statement carries the audience predicate (and, for a restricted key,
    one walk per reach part), which costs milliseconds to build and as much
    again for SQLAlchemy to fingerprint for its compiled cache on every
    execution (``_generate_cache_key`` walks the whole tree): more than
    running it. A reader lists the same shape on every request, so the
    statement is kept, and only the page size and the keyset travel as bound
    parameters (``page_limit``, ``after_<i>``); the fingerprint is memoised on
    the kept object. Like the predicate it holds, it is a pure function of the
    arguments: nothing about grants, rosters or memos is cached, the
    statement reads them (issue 15).
    """
    caller = reader_of(user_id, restriction)
    keys = [OrderKey(memo.c[name], descending) for name, descending in order]
    where = _base_conditions(caller, mode, state, parent_id=None)
    if paged:
        where.append(
            _after(
                keys, [sa.bindparam(f"after_{i}", type_=k.column.type) for i, k in enumerate(keys)]
            )
        )
    limit = sa.bindparam("page_limit", type_=sa.Integer)
    parts = reach_partition(caller) if _time_ordered(keys) else None
    if parts is not None and len(parts) > 1:
        return _merged_walks(parts, keys, where, limit)
    where.extend(parts or ())
    return sa.select(memo).where(*where).order_by(*_ordered(keys, memo)).limit(limit)


def admission_of(
    caller: Caller | None,
    mode: AccessMode,
    state: str,
    parent_id: int | None,
    filter_clause: ColumnElement[bool] | None = None,
) -> Admission:
    """The page's admission (``app.access.admission``): top-level memos or one memo's comments."""
    kind = Kind.TOP_LEVEL if parent_id is None else Kind.COMMENTS
    return Admission(caller, mode, kind, state=state, parent_id=parent_id, filter=filter_clause)


def _base_conditions(
    caller: Caller | None,
    mode: AccessMode,
    state: str,
    parent_id: int | None,
    filter_clause: ColumnElement[bool] | None = None,
) -> list[ColumnElement[bool]]:
    return list(conditions(admission_of(caller, mode, state, parent_id, filter_clause)))


def _page_statement(
    q: ListQuery, keys: list[OrderKey], after: list[Any] | None
) -> tuple[sa.Select[Any], dict[str, Any]]:
    """The page's statement and its parameters.

    Top-level pages without a filter (the usual list) use the reader's kept
    statement (:func:`_page_template`); a filter or one memo's comments build
    theirs per request.
    """
    limit = q.page_size + 1
    if q.parent_id is None and q.filter_clause is None:
        template = _page_template(
            q.caller.user_id if q.caller is not None else None,
            restriction_key(q.caller),
            q.mode,
            tuple((k.column.name, k.descending) for k in keys),
            q.state,
            after is not None,
        )
        params: dict[str, Any] = {"page_limit": limit}
        params.update({f"after_{i}": v for i, v in enumerate(after or ())})
        return template, params
    parts = reach_partition(q.caller) if q.parent_id is None and _time_ordered(keys) else None
    where = _base_conditions(q.caller, q.mode, q.state, q.parent_id, q.filter_clause)
    if after is not None:
        where.append(
            _after(keys, [sa.literal(v, k.column.type) for k, v in zip(keys, after, strict=True)])
        )
    if parts is not None and len(parts) > 1:
        return _merged_walks(parts, keys, where, limit), {}
    where.extend(parts or ())
    return sa.select(memo).where(*where).order_by(*_ordered(keys, memo)).limit(limit), {}


@dataclass(frozen=True, slots=True)
class ListQuery:
    caller: Caller | None
    mode: AccessMode
    state: str = "NORMAL"
    filter_text: str | None = None
    filter_clause: ColumnElement[bool] | None = None
    order_by: str | None = None
    page_size: int = 50
    page_token: str | None = None
    parent_id: int | None = None  # comments of one memo; None: top-level memos


async def list_memos(conn: AsyncConnection, q: ListQuery, secret: str) -> tuple[list[MemoRow], str]:
    keys = parse_order(q.order_by)
    if q.state not in ("NORMAL", "ARCHIVED"):
        raise InvalidArgument(f"state: {q.state!r} is not one of NORMAL, ARCHIVED")
    query_id = fingerprint(
        [str(k.column) + (" desc" if k.descending else "") for k in keys],
        q.state,
        q.filter_text,
        q.caller.user_id if q.caller else None,
        q.parent_id,
    )
    after = None
    if q.page_token:
        after = _check_token_values(keys, decode_token(secret, query_id, q.page_token))
    stmt, params = _page_statement(q, keys, after)
    rows = records(await conn.execute(stmt, params))  # read ~30 columns each: app.db.records
    page = trim_page(
        rows, q.page_size, lambda r: _key_values(r, keys), secret=secret, query=query_id
    )
    return page.rows, page.next_token
