"""Result rows as named tuples (``app.db.records``): the same values, read by name."""

from __future__ import annotations

import sqlalchemy as sa

from app.db.records import record_type, records


def _result(conn: sa.Connection, sql: str) -> sa.CursorResult[tuple[object, ...]]:
    return conn.execute(sa.text(sql))


def test_a_record_reads_as_the_row_reads() -> None:
    engine = sa.create_engine("sqlite://")
    with engine.connect() as conn:
        rows = _result(conn, "SELECT 1 AS id, 'abc' AS uid UNION ALL SELECT 2, 'def'").all()
        kept = records(_result(conn, "SELECT 1 AS id, 'abc' AS uid UNION ALL SELECT 2, 'def'"))
    assert (
        [(r.id, r.uid) for r in kept]
        == [(r.id, r.uid) for r in rows]
        == [
            (1, "abc"),
            (2, "def"),
        ]
    )
    assert [tuple(r) for r in kept] == [tuple(r) for r in rows]
    assert kept[0]._asdict() == {"id": 1, "uid": "abc"}


def test_one_type_per_column_list() -> None:
    assert record_type(("id", "uid")) is record_type(("id", "uid"))
    assert record_type(("id", "uid")) is not record_type(("id", "version"))


def test_a_column_that_is_no_identifier_is_renamed_not_refused() -> None:
    engine = sa.create_engine("sqlite://")
    with engine.connect() as conn:
        (row,) = records(_result(conn, "SELECT 1 AS id, 2 + 3"))
    assert row.id == 1
    assert row[1] == 5


def test_an_empty_result_is_an_empty_list() -> None:
    engine = sa.create_engine("sqlite://")
    with engine.connect() as conn:
        assert records(_result(conn, "SELECT 1 AS id WHERE 0")) == []
