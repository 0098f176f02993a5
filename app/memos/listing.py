"""The memo list query: audience predicate, CEL filter, keyset paging, in one statement.

Shape: ``SELECT ... FROM memo WHERE parent_id IS NULL AND state = :state AND
(<audience>) AND (<filter>) AND (<keyset>) ORDER BY <keys>, id LIMIT n+1``.
The audience predicate and the filter sit in WHERE, before ORDER BY and
LIMIT, so hidden memos never fill, count towards or shift a page; the keyset
condition replaces OFFSET, so page 100 costs what page 1 costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from app.access.audience import AccessMode, audience_predicate
from app.access.caller import Caller
from app.api.paging import decode_token, encode_token, fingerprint
from app.db.schema import memo
from app.errors import InvalidArgument

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

    Uniform directions render as one row-value comparison, which both
    dialects serve from the composite index; mixed directions expand.
    """
    if len(values) != len(keys):
        raise InvalidArgument("pageToken: invalid page token")
    if all(k.descending == keys[0].descending for k in keys):
        left = sa.tuple_(*[k.column for k in keys])
        right = sa.tuple_(
            *[sa.literal(v, k.column.type) for k, v in zip(keys, values, strict=True)]
        )
        return left < right if keys[0].descending else left > right
    clause: ColumnElement[bool] = sa.false()
    for i in reversed(range(len(keys))):
        k, v = keys[i], values[i]
        step = k.column < v if k.descending else k.column > v
        clause = sa.or_(step, sa.and_(k.column == v, clause)) if i < len(keys) - 1 else step
    return clause


def _key_values(row: Any, keys: list[OrderKey]) -> list[Any]:
    return [
        bool(getattr(row, k.column.name))
        if k.column is memo.c.pinned
        else getattr(row, k.column.name)
        for k in keys
    ]


def _check_token_values(keys: list[OrderKey], values: list[Any]) -> list[Any]:
    checked: list[Any] = []
    for k, v in zip(keys, values, strict=True):
        python_type = (
            bool if k.column is memo.c.pinned else (str if k.column is memo.c.uid else int)
        )
        if type(v) is not python_type:
            raise InvalidArgument("pageToken: invalid page token")
        checked.append(v)
    return checked


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


async def list_memos(conn: AsyncConnection, q: ListQuery, secret: str) -> tuple[list[Any], str]:
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
    conditions: list[ColumnElement[bool]] = [
        memo.c.parent_id.is_(None) if q.parent_id is None else memo.c.parent_id == q.parent_id,
        memo.c.state == q.state,
        audience_predicate(q.caller, q.mode),
    ]
    if q.state == "ARCHIVED":
        # The archive is a personal view: only the caller's own archived memos.
        conditions.append(memo.c.creator_id == (q.caller.user_id if q.caller else -1))
    if q.filter_clause is not None:
        conditions.append(q.filter_clause.self_group())
    if q.page_token:
        values = _check_token_values(keys, decode_token(secret, query_id, q.page_token))
        conditions.append(_after(keys, values))
    order = [k.column.desc() if k.descending else k.column.asc() for k in keys]
    stmt = sa.select(memo).where(*conditions).order_by(*order).limit(q.page_size + 1)
    rows = list((await conn.execute(stmt)).all())
    next_token = ""
    if len(rows) > q.page_size:
        rows = rows[: q.page_size]
        next_token = encode_token(secret, query_id, _key_values(rows[-1], keys))
    return rows, next_token
