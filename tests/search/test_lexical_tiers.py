"""The lexical arm admits genuine matches only: all words, else a majority, and a
single word of a multi-word query only in lexical mode (both dialects)."""

from __future__ import annotations

from typing import Any

from litestar.testing import AsyncTestClient

from app.search.terms import fts5_match, min_match_tiers
from tests.conftest import Actor
from tests.search.conftest import embed_all, search


def _lexical(body: dict[str, Any]) -> list[str]:
    hits = [r for r in body["results"] if r["lexicalRank"]]
    return [r["memo"]["content"] for r in sorted(hits, key=lambda r: r["lexicalRank"])]


def test_tiers() -> None:
    assert min_match_tiers(1, False) == [1]
    assert min_match_tiers(2, False) == [2]
    assert min_match_tiers(2, True) == [2, 1]
    assert min_match_tiers(5, False) == [5, 3]
    assert min_match_tiers(9, True) == [9, 1]  # no majority tier past MAJORITY_MAX_WORDS
    assert fts5_match(("a", "b", "c"), 2) == '("a" AND "b") OR ("a" AND "c") OR ("b" AND "c")'


async def test_all_words_first_then_majority_never_one_in_hybrid(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    for text in ("kayak paddle rental", "kayak club dinner", "paddle board", "rental car"):
        await alice.memo(text)
    await embed_all(client)
    assert _lexical(await search(alice, "kayak rental")) == ["kayak paddle rental"]
    # no memo has all three words: the majority (two of three) enter, nothing with one
    assert set(_lexical(await search(alice, "kayak paddle dinner"))) == {
        "kayak paddle rental",
        "kayak club dinner",
    }
    # two words, none share both: hybrid's lexical arm stays empty...
    assert _lexical(await search(alice, "board dinner")) == []
    # ...while lexical mode falls back to any word
    lexical = await search(alice, "board dinner", mode="lexical")
    assert {r["memo"]["content"] for r in lexical["results"]} == {
        "paddle board",
        "kayak club dinner",
    }


async def test_a_hidden_memo_does_not_choose_the_tier(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    await alice.memo("quince jam recipe", visibility="PROTECTED")
    await alice.memo("quince marmalade recipe secret")  # private: all three words
    await embed_all(client)
    assert _lexical(await search(bob, "quince marmalade recipe")) == ["quince jam recipe"]
