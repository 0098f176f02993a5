"""A Memos database opened read-only, read page by page in id order.

SQLite is opened with ``mode=ro`` (nothing, not even a WAL switch, is ever
written to the Memos file); PostgreSQL runs every read in one ``REPEATABLE
READ READ ONLY`` transaction, so the whole carry sees one consistent state
of a Memos that may still be running. Every statement is text SQL with bound
parameters; only table and column names chosen from the detected schema
(:mod:`.schema`) are spliced in, never anything read from the database.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from app.portability.memosdb.rows import (
    MemosAttachment,
    MemosMember,
    MemosMemo,
    MemosReaction,
    MemosSpace,
    MemosUser,
    json_object,
)
from app.portability.memosdb.schema import MemosSchema, detect

PAGE = 500
ATTACHMENT_PAGE = 16  # blobs: a few at a time

__all__ = ["MemosSource", "open_source"]


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in text.split("."))


class MemosSource:
    """Typed, paged reads of one Memos database (see :mod:`.schema` for what differs)."""

    def __init__(self, conn: AsyncConnection, schema: MemosSchema) -> None:
        self.conn = conn
        self.schema = schema

    async def _rows(self, sql: str, **params: Any) -> list[Any]:
        return list((await self.conn.execute(sa.text(sql), params)).all())

    async def count_memos(self) -> int:
        return int((await self.conn.execute(sa.text("SELECT count(*) FROM memo"))).scalar_one())

    async def settings(self) -> dict[str, dict[str, Any]]:
        rows = await self._rows("SELECT name, value FROM system_setting")
        return {str(name): json_object(value) for name, value in rows}

    async def users(self) -> list[MemosUser]:
        table = self.schema.user_table
        rows = await self._rows(
            "SELECT id, username, role, row_status, email, nickname, password_hash, avatar_url,"  # noqa: S608 (schema identifiers only)
            f" description, created_ts, updated_ts FROM {table} ORDER BY id"
        )
        return [
            MemosUser(
                id=int(r.id),
                username=str(r.username),
                role=str(r.role),
                row_status=str(r.row_status),
                email=str(r.email or ""),
                nickname=str(r.nickname or ""),
                password_hash=str(r.password_hash or ""),
                avatar_url=str(r.avatar_url or ""),
                description=str(r.description or ""),
                created_ts=int(r.created_ts),
                updated_ts=int(r.updated_ts),
            )
            for r in rows
        ]

    async def spaces(self) -> list[MemosSpace]:
        if not self.schema.has_spaces:
            return []
        rows = await self._rows("SELECT id, uid, title, description FROM space ORDER BY id")
        return [
            MemosSpace(int(r.id), str(r.uid), str(r.title), str(r.description or "")) for r in rows
        ]

    async def members(self) -> list[MemosMember]:
        if not self.schema.has_spaces:
            return []
        status = "status" if self.schema.member_has_status else "'ACTIVE'"
        rows = await self._rows(
            f"SELECT space_id, user_id, role, {status} AS status FROM space_member"  # noqa: S608 (schema identifiers only)
            " ORDER BY space_id, user_id"
        )
        return [
            MemosMember(int(r.space_id), int(r.user_id), str(r.role), str(r.status)) for r in rows
        ]

    def _pinned(self) -> str:
        if self.schema.memo_has_pinned:
            return "m.pinned"
        if self.schema.has_memo_organizer:
            return (
                "EXISTS (SELECT 1 FROM memo_organizer o WHERE o.memo_id = m.id"
                " AND o.user_id = m.creator_id AND o.pinned = 1)"
            )
        return "0"

    async def memos(self, *, comments: bool) -> AsyncIterator[list[MemosMemo]]:
        """Top-level memos, or (``comments``) the memos with a COMMENT relation to a parent."""
        space = "m.space_id" if self.schema.memo_has_space_id else "NULL"
        which = "IS NOT NULL" if comments else "IS NULL"
        sql = (
            "SELECT * FROM (SELECT m.id, m.uid, m.creator_id, m.created_ts, m.updated_ts,"  # noqa: S608 (schema identifiers only)
            f" m.row_status, m.content, m.visibility, {self._pinned()} AS pinned, m.payload,"
            f" {space} AS space_id,"
            " (SELECT min(r.related_memo_id) FROM memo_relation r"
            "  WHERE r.memo_id = m.id AND r.type = 'COMMENT') AS parent_id"
            f" FROM memo m WHERE m.id > :after) q WHERE q.parent_id {which}"
            " ORDER BY q.id LIMIT :limit"
        )
        after = 0
        while rows := await self._rows(sql, after=after, limit=PAGE):
            after = int(rows[-1].id)
            yield [
                MemosMemo(
                    id=int(r.id),
                    uid=str(r.uid),
                    creator_id=int(r.creator_id),
                    created_ts=int(r.created_ts),
                    updated_ts=int(r.updated_ts),
                    row_status=str(r.row_status),
                    content=str(r.content or ""),
                    visibility=str(r.visibility),
                    pinned=bool(r.pinned),
                    payload=json_object(r.payload),
                    space_id=int(r.space_id) if r.space_id is not None else None,
                    parent_id=int(r.parent_id) if r.parent_id is not None else None,
                )
                for r in rows
            ]

    async def references(self) -> AsyncIterator[list[tuple[int, int]]]:
        sql = (
            "SELECT memo_id, related_memo_id FROM memo_relation WHERE type = 'REFERENCE'"
            " AND (memo_id > :a OR (memo_id = :a AND related_memo_id > :b))"
            " ORDER BY memo_id, related_memo_id LIMIT :limit"
        )
        a, b = 0, 0
        while rows := await self._rows(sql, a=a, b=b, limit=PAGE):
            a, b = int(rows[-1].memo_id), int(rows[-1].related_memo_id)
            yield [(int(r.memo_id), int(r.related_memo_id)) for r in rows]

    async def reactions(self) -> AsyncIterator[list[MemosReaction]]:
        if self.schema.reaction_by_memo_id:
            target = "x.memo_id"
            joins = ""
        else:
            # 'memos/<uid>' (0.24+) or 'memos/<numeric id>' (0.22-0.23, kept after upgrades).
            target = "COALESCE(mu.id, mi.id)"
            joins = (
                " LEFT JOIN memo mu ON x.content_id = 'memos/' || mu.uid"
                " LEFT JOIN memo mi ON x.content_id = 'memos/' || CAST(mi.id AS TEXT)"
            )
        sql = (
            f"SELECT x.id, x.created_ts, x.creator_id, {target} AS memo_id, x.reaction_type"  # noqa: S608 (schema identifiers only)
            f" FROM reaction x{joins} WHERE x.id > :after ORDER BY x.id LIMIT :limit"
        )
        after = 0
        while rows := await self._rows(sql, after=after, limit=PAGE):
            after = int(rows[-1].id)
            yield [
                MemosReaction(
                    int(r.id),
                    int(r.created_ts),
                    int(r.creator_id),
                    int(r.memo_id) if r.memo_id is not None else None,
                    str(r.reaction_type),
                )
                for r in rows
            ]

    async def attachments(self) -> AsyncIterator[list[MemosAttachment]]:
        sql = (
            "SELECT id, uid, creator_id, created_ts, filename, blob, type, size, memo_id,"  # noqa: S608 (schema identifiers only)
            f" storage_type, reference FROM {self.schema.attachment_table}"
            " WHERE id > :after ORDER BY id LIMIT :limit"
        )
        after = 0
        while rows := await self._rows(sql, after=after, limit=ATTACHMENT_PAGE):
            after = int(rows[-1].id)
            yield [
                MemosAttachment(
                    id=int(r.id),
                    uid=str(r.uid),
                    creator_id=int(r.creator_id),
                    created_ts=int(r.created_ts),
                    filename=str(r.filename or ""),
                    blob=bytes(r.blob) if r.blob is not None else None,
                    type=str(r.type or ""),
                    size=int(r.size or 0),
                    memo_id=int(r.memo_id) if r.memo_id is not None else None,
                    storage_type=str(r.storage_type or ""),
                    reference=str(r.reference or ""),
                )
                for r in rows
            ]


async def _columns(conn: AsyncConnection, dialect: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    if dialect == "sqlite":
        tables = (
            await conn.execute(sa.text("SELECT name FROM sqlite_master WHERE type = 'table'"))
        ).scalars()
        for table in list(tables):
            # ``table`` comes from sqlite_master: quoted as an identifier, never a value.
            quoted = '"' + str(table).replace('"', '""') + '"'
            cols = await conn.execute(sa.text(f"PRAGMA table_info({quoted})"))
            out[str(table)] = {str(c[1]) for c in cols}
        return out
    rows = await conn.execute(
        sa.text(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema()"
        )
    )
    for table, column in rows:
        out.setdefault(str(table), set()).add(str(column))
    return out


async def _stored_version(conn: AsyncConnection, columns: dict[str, set[str]]) -> str | None:
    if "migration_history" in columns:
        versions = (await conn.execute(sa.text("SELECT version FROM migration_history"))).scalars()
        found = sorted((str(v) for v in versions), key=_version_key)
        if found:
            return found[-1]
    basic = (
        await conn.execute(sa.text("SELECT value FROM system_setting WHERE name = 'BASIC'"))
    ).scalar()
    version = json_object(basic).get("schemaVersion")
    return str(version) if version else None


def _sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///file:{quote(str(path.resolve()))}?mode=ro&uri=true"


@contextlib.asynccontextmanager
async def open_source(path: Path | None, postgres_url: str | None) -> AsyncIterator[MemosSource]:
    if path is not None:
        if not await anyio.Path(path).is_file():
            raise FileNotFoundError(f"{path}: no such Memos database file")
        url = _sqlite_url(path)
    else:
        assert postgres_url is not None
        url = make_url(postgres_url).set(drivername="postgresql+asyncpg").render_as_string(False)
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            dialect = conn.dialect.name
            if dialect == "postgresql":
                await conn.execution_options(
                    isolation_level="REPEATABLE READ", postgresql_readonly=True
                )
            async with conn.begin():
                columns = await _columns(conn, dialect)
                detect(dialect, columns, None)  # refuses a database that is not Memos'
                schema = detect(dialect, columns, await _stored_version(conn, columns))
                yield MemosSource(conn, schema)
    finally:
        await engine.dispose()
