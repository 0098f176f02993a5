"""Keyset paging helpers (``app.api.paging``): the trim, the token, the position check.

Every list fetches ``LIMIT size + 1`` and hands the rows to ``trim_page``; a
token it mints must resume after the last row kept, and ``decode_int_key``
must refuse any position that is not the list's shape (a bool is not an id).
"""

from __future__ import annotations

import pytest

from app.api.paging import decode_int_key, decode_token, encode_token, trim_page
from app.errors import InvalidArgument

SECRET, QUERY = "s", "q"


def test_a_full_fetch_is_cut_to_size_and_resumes_after_the_last_row_kept() -> None:
    page = trim_page([(5, 50), (4, 40), (3, 30)], 2, list, secret=SECRET, query=QUERY)
    assert page.rows == [(5, 50), (4, 40)]
    assert decode_token(SECRET, QUERY, page.next_token) == [4, 40]


@pytest.mark.parametrize("fetched", [[], [1], [1, 2]])
def test_the_last_page_has_no_token(fetched: list[int]) -> None:
    page = trim_page(fetched, 2, lambda r: [r], secret=SECRET, query=QUERY)
    assert page.rows == fetched and page.next_token == ""


def test_a_token_is_bound_to_its_query() -> None:
    token = trim_page([1, 2], 1, lambda r: [r], secret=SECRET, query=QUERY).next_token
    with pytest.raises(InvalidArgument, match="different query"):
        decode_int_key(SECRET, "other", token, 1)
    assert decode_int_key(SECRET, QUERY, token, 1) == [1]


@pytest.mark.parametrize("key", [[1], [1, 2, 3], [True, 2], ["1", 2], [1.0, 2], [None, 2]])
def test_a_position_of_another_shape_is_a_400(key: list[object]) -> None:
    token = encode_token(SECRET, QUERY, list(key))
    with pytest.raises(InvalidArgument, match="pageToken: invalid page token"):
        decode_int_key(SECRET, QUERY, token, 2)
