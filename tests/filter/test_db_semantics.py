"""Behaviour on real databases beyond the differential test: the trigram
table staying in step with writes, attachment filters, and the case-folding
agreement between PostgreSQL's lower() and ``app.fold``."""

from __future__ import annotations

import sqlite3

import pytest
import sqlalchemy as sa

from app.db import sqlite_functions
from app.db.schema import attachment, memo
from app.filter import (
    compile_attachment_filter,
    compile_memo_filter,
    content_index_ddl,
    content_index_drop_ddl,
    fold,
    memo_filter_needles,
)
from tests.filter.conftest import Db


def _memo(i: int, content: str) -> dict[str, object]:
    return {
        "id": i,
        "uid": f"s{i}",
        "creator_id": 1,
        "content": content,
        "visibility": "PUBLIC",
        "state": "NORMAL",
        "created_ts": 0,
        "updated_ts": 0,
        "origin": {"kind": "session"},
    }


def _ids(db: Db, text: str) -> set[int]:
    """The matching ids, the same in the sparse and the dense rendering."""
    found = []
    for dense in (frozenset(), frozenset(memo_filter_needles(text))):
        where = compile_memo_filter(text, now=0, dialect_name=db.dialect_name, dense=dense)
        found.append(set(db.scalars(sa.select(memo.c.id).where(where))))
    assert found[0] == found[1], (text, found)
    return found[0]


def test_content_index_follows_writes(filter_db: Db) -> None:
    filter_db.execute(
        sa.delete(memo),
        (sa.insert(memo), [_memo(1, "Привет МИР"), _memo(2, "İstanbul 50%_off"), _memo(3, "ΟΔΟΣ")]),
    )
    assert _ids(filter_db, 'content.contains("привет мир")') == {1}
    assert _ids(filter_db, 'content.contains("istanbul")') == {2}
    assert _ids(filter_db, 'content.contains("50%_OFF")') == {2}
    assert _ids(filter_db, 'content.contains("50x_off")') == set()
    assert _ids(filter_db, 'content.contains("οδοσ")') == {3}
    filter_db.execute(sa.update(memo).where(memo.c.id == 1).values(content="пока"))
    assert _ids(filter_db, 'content.contains("привет")') == set()
    assert _ids(filter_db, 'content.contains("ПОКА")') == {1}
    filter_db.execute(sa.delete(memo).where(memo.c.id == 2))
    assert _ids(filter_db, 'content.contains("istanbul")') == set()
    filter_db.execute(sa.delete(memo))


def test_attachment_filters(filter_db: Db) -> None:
    filter_db.execute(
        sa.delete(attachment),
        sa.delete(memo),
        (sa.insert(memo), [_memo(10, "x")]),
        (
            sa.insert(attachment),
            [
                {
                    "id": 1,
                    "uid": "a1",
                    "creator_id": 1,
                    "memo_id": 10,
                    "filename": "Report_Q1.PDF",
                    "mime_type": "application/pdf",
                    "size": 1,
                    "created_ts": 100,
                },
                {
                    "id": 2,
                    "uid": "a2",
                    "creator_id": 1,
                    "memo_id": None,
                    "filename": "cat.png",
                    "mime_type": "image/png",
                    "size": 1,
                    "created_ts": 200,
                },
            ],
        ),
    )

    def ids(text: str) -> set[int]:
        where = compile_attachment_filter(text, now=300, dialect_name=filter_db.dialect_name)
        return set(filter_db.scalars(sa.select(attachment.c.id).where(where)))

    assert ids('filename.contains("report_q")') == {1}
    assert ids('filename.endsWith(".pdf")') == {1}
    assert ids('mime_type.startsWith("image/")') == {2}
    assert ids('mime_type == "IMAGE/PNG"') == set()
    assert ids('mime_type in ["application/pdf"]') == {1}
    assert ids("memo_id == null") == {2}
    assert ids("memo_id != null") == {1}
    assert ids('memo_id == "memos/s10"') == {1}
    assert ids('memo_id == "s10"') == {1}
    assert ids('memo_id != "memos/s10"') == {2}
    assert ids('create_time > now - duration("150s")') == {2}
    assert ids("create_time.getMinutes() == 3") == {2}
    filter_db.execute(sa.delete(attachment), sa.delete(memo))


def test_fold_matches_postgresql_lower(filter_db: Db) -> None:
    """Every code point: PostgreSQL's lower() (C.UTF-8) equals app.fold."""
    if filter_db.dialect_name != "postgresql":
        pytest.skip("PostgreSQL's lower() only")
    rows = filter_db.execute(
        "SELECT c, lower(chr(c)) FROM generate_series(1, 1114111) AS c "
        "WHERE c NOT BETWEEN 55296 AND 57343"
    )[0]
    differences = [hex(c) for c, lowered in rows if fold(chr(c)) != lowered]
    assert differences == []


def test_register_on_plain_sqlite3_and_ddl_round_trip() -> None:
    conn = sqlite3.connect(":memory:")
    sqlite_functions.register(conn)
    assert conn.execute("SELECT daybook_fold('ПРИВЕТ İ ΟΔΟΣ')").fetchone() == ("привет i οδοσ",)
    assert conn.execute("SELECT 'abc' REGEXP 'b.$'").fetchone() == (1,)
    assert conn.execute("SELECT regexp('(', 'x')").fetchone() == (0,)
    conn.execute("CREATE TABLE memo (id INTEGER PRIMARY KEY, content TEXT NOT NULL)")
    conn.execute("INSERT INTO memo VALUES (1, 'Ünïcode ПРИВЕТ')")
    for statement in content_index_ddl("sqlite"):
        conn.execute(statement)
    conn.execute("INSERT INTO memo VALUES (2, 'second ПРИВЕТ')")
    match = "SELECT rowid FROM memo_trgm WHERE memo_trgm.content MATCH ? ORDER BY rowid"
    assert conn.execute(match, ('"привет"',)).fetchall() == [(1,), (2,)]
    for statement in content_index_drop_ddl("sqlite"):
        conn.execute(statement)
    tables = conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'memo_trgm%'").fetchall()
    assert tables == []
