"""Each row Protocol names exactly its table's columns.

``MemoRow`` (``app.memos.rows``), the space rows (``app.spaces.rows``) and
``UserRow`` (``app.users.rows``) are what ``mypy --strict`` checks the memo,
space and user code against; if a migration adds, drops or renames a column
and the Protocol is not updated, the type check would vouch for attributes a
real row does not have. ``RestoredRow`` and ``MemberSpaceRow`` are selections
with labels, checked against the columns they select.
"""

from __future__ import annotations

import inspect

import pytest
import sqlalchemy as sa

from app.db.schema import memo, space, space_grant, space_group, space_member, user_account
from app.memos.rows import MemoRow, RestoredRow
from app.memos.trash import RESTORED
from app.spaces.rows import GrantRow, GroupRow, MemberSpaceRow, SeatRow, SpaceRow
from app.users.rows import UserRow


def _declared(protocol: type) -> set[str]:
    return {
        name
        for name, value in inspect.getmembers(protocol)
        if isinstance(value, property) and not name.startswith("_")
    }


@pytest.mark.parametrize(
    ("protocol", "table"),
    [
        (MemoRow, memo),
        (UserRow, user_account),
        (SpaceRow, space),
        (SeatRow, space_member),
        (GroupRow, space_group),
        (GrantRow, space_grant),
    ],
    ids=lambda v: getattr(v, "__name__", getattr(v, "name", "")),
)
def test_row_protocol_names_its_table_columns(protocol: type, table: sa.Table) -> None:
    assert _declared(protocol) == {c.name for c in table.columns}


def test_memo_row_names_the_memo_columns() -> None:
    assert _declared(MemoRow) == {c.name for c in memo.columns}


def test_restored_row_names_the_restored_selection() -> None:
    assert _declared(RestoredRow) == {c.name for c in RESTORED.c}


def test_member_space_row_adds_the_seat_labels() -> None:
    assert _declared(MemberSpaceRow) == {c.name for c in space.columns} | {"my_role", "my_state"}
