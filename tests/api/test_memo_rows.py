"""``MemoRow`` (``app.memos.rows``) names exactly the ``memo`` table's columns.

The Protocol is what ``mypy --strict`` checks memo code against; if a
migration adds, drops or renames a column and the Protocol is not updated,
the type check would vouch for attributes a real row does not have.
"""

from __future__ import annotations

import inspect

from app.db.schema import memo
from app.memos.rows import MemoRow


def test_memo_row_names_the_memo_columns() -> None:
    declared = {
        name
        for name, value in inspect.getmembers(MemoRow)
        if isinstance(value, property) and not name.startswith("_")
    }
    assert declared == {c.name for c in memo.columns}
