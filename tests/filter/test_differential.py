"""Differential test: SQL on each dialect == cel-python's evaluator, memo by memo.

Hypothesis generates a small world of memos and a batch of filters (each
with its oracle text, see ``oracle.py`` for the documented differences); the
ids the compiled SQL returns must equal the ids the oracle accepts. Several
filters per world keep the database round trips affordable.

Each filter runs in both renderings a selectivity probe can choose
(``app.filter.selectivity``): every needle sparse (IN-lists) and every
needle dense (per-row tests), so the probe's choice can never change a
result.
"""

from __future__ import annotations

import json
import os

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.db.schema import memo, memo_tag, user_account
from app.filter import FilterError, compile_memo_filter, memo_filter_needles
from tests.filter.conftest import Db
from tests.filter.oracle import NOW, USERS, MemoRow, filters, memo_rows, oracle_ids

FILTERS_PER_WORLD = 10
WORLDS = int(os.environ.get("FILTER_WORLDS", "50"))  # x 10 = 500 filters per dialect


def _load(db: Db, rows: list[MemoRow]) -> None:
    memos = [
        {
            "id": r.id,
            "uid": f"m{r.id}",
            "creator_id": r.creator_id,
            "content": r.content,
            "visibility": r.visibility,
            "state": "NORMAL",
            "pinned": r.pinned,
            "created_ts": r.created_ts,
            "updated_ts": r.updated_ts,
            "has_link": r.has_link,
            "has_task_list": r.has_task_list,
            "has_code": r.has_code,
            "has_incomplete_tasks": r.has_incomplete_tasks,
            "location_placeholder": r.location,
            "space_id": r.space_id,
            "tree": r.tree,
            "origin": {"kind": "session"},
        }
        for r in rows
    ]
    tags = [
        {"memo_id": r.id, "tag": tag, "position": pos}
        for r in rows
        for pos, tag in enumerate(r.stored_tags())
    ]
    statements: list[object] = [sa.delete(memo_tag), sa.delete(memo), (sa.insert(memo), memos)]
    if tags:
        statements.append((sa.insert(memo_tag), tags))
    db.execute(*statements)


def _ensure_users(db: Db) -> None:
    if not db.scalars(sa.select(sa.func.count()).select_from(user_account))[0]:
        db.execute(
            (
                sa.insert(user_account),
                [
                    {
                        "id": uid,
                        "username": name,
                        "role": "USER",
                        "state": "NORMAL",
                        "password_hash": "x",
                        "created_ts": 0,
                        "updated_ts": 0,
                    }
                    for uid, name in USERS.items()
                ],
            )
        )


@settings(
    max_examples=WORLDS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
@given(
    rows=memo_rows(),
    pairs=st.lists(filters, min_size=FILTERS_PER_WORLD, max_size=FILTERS_PER_WORLD),
)
def test_sql_matches_cel_oracle(
    filter_db: Db, rows: list[MemoRow], pairs: list[tuple[str, str]]
) -> None:
    _ensure_users(filter_db)
    _load(filter_db, rows)
    statements = []
    cases = []
    for text, oracle_text in pairs:
        try:
            needles = frozenset(memo_filter_needles(text))
        except FilterError as exc:  # pragma: no cover - the generator only writes valid filters
            raise AssertionError(f"rejected generated filter {text!r}: {exc}") from exc
        for rendering, dense in (("sparse", frozenset()), ("dense", needles)):
            where = compile_memo_filter(
                text, now=NOW, dialect_name=filter_db.dialect_name, dense=dense
            )
            statements.append(sa.select(memo.c.id).where(where))
            cases.append((text, oracle_text, rendering))
    results = filter_db.execute(*statements)
    for (text, oracle_text, rendering), result in zip(cases, results, strict=True):
        got = {row[0] for row in result}
        expected = oracle_ids(oracle_text, rows)
        assert got == expected, (
            f"{filter_db.dialect_name} ({rendering}): {text!r} (oracle {oracle_text!r})\n"
            f"sql={sorted(got)} oracle={sorted(expected)}\n"
            + json.dumps([r.__dict__ for r in rows], ensure_ascii=False, default=str)
        )
