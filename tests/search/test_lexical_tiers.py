"""The lexical arm admits genuine matches only: all words, else a majority, never a
single word of a multi-word query. ``mode=lexical`` is that arm, plus one last
any-word tier when the arm is empty (both dialects)."""

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
    assert min_match_tiers(0) == []
    assert min_match_tiers(1) == [1]
    assert min_match_tiers(2) == [2]
    assert min_match_tiers(5) == [5, 3]
    assert min_match_tiers(7) == [7, 4]
    assert min_match_tiers(9) == [9]  # no majority tier past MAJORITY_MAX_WORDS
    assert min_match_tiers(5, any_word=True) == [5, 3, 1]
    assert min_match_tiers(1, any_word=True) == [1]
    assert fts5_match(("a", "b", "c"), 2) == '("a" AND "b") OR ("a" AND "c") OR ("b" AND "c")'


async def test_all_words_first_then_majority_never_one(
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
    # two words, no memo has both: hybrid's lexical arm stays empty; a keyword
    # search (mode=lexical) falls back to the memos with any one of them
    assert _lexical(await search(alice, "board dinner")) == []
    fallback = await search(alice, "board dinner", mode="lexical")
    assert {r["memo"]["content"] for r in fallback["results"]} == {
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


LEXICAL_QUERIES = [
    "kayak",  # one word, several matches
    "kayak rental",  # all words
    "kayak paddle dinner",  # no memo has all three: the majority tier
    "board dinner",  # no memo has both: nothing in hybrid, any word in lexical mode
    "the",  # stop words only: kept, as nothing else is left
    "rental of the kayak",  # stop words dropped
    "北京",  # CJK bigrams
    "長城 北京",  # CJK, two runs
    '"kayak" OR -rental*',  # query syntax is only separators
    "zzz unmatched",
]


async def test_lexical_mode_is_the_lexical_arm_of_hybrid(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """For every query and caller: when hybrid ranks anything lexically,
    ``mode=lexical`` returns exactly those memos, in the same order with the
    same ranks (when hybrid's arm is empty, lexical mode's any-word tier may
    answer; ``test_all_words_first_then_majority_never_one`` pins that)."""
    texts = [
        "kayak paddle rental",
        "kayak club dinner",
        "paddle board",
        "rental car for the trip",
        "kayak kayak kayak",
        "the and of",
        "我今天去了北京看长城",
        "北京的長城很长",
        *(f"kayak note {i}" for i in range(12)),
    ]
    for i, text in enumerate(texts):
        await alice.memo(text, visibility="PROTECTED" if i % 3 else "PRIVATE")
    await bob.memo("bob's kayak rental", visibility="PRIVATE")
    await embed_all(client)
    checked = 0
    for actor in (alice, bob):
        for query in LEXICAL_QUERIES:
            for params in ({}, {"filter": 'visibility == "PROTECTED"'}):
                params = {**params, "poolSize": 10, "pageSize": 100}
                lexical = await search(actor, query, mode="lexical", **params)
                hybrid = await search(actor, query, **params)
                by_mode = [(r["memo"]["name"], r["lexicalRank"]) for r in lexical["results"]]
                in_hybrid = sorted(
                    ((r["memo"]["name"], r["lexicalRank"]) for r in hybrid["results"]),
                    key=lambda pair: pair[1],
                )
                arm = [p for p in in_hybrid if p[1]]
                if not arm:
                    continue
                assert by_mode == arm, (actor.username, query, params)
                assert [rank for _, rank in by_mode] == list(range(1, len(by_mode) + 1))
                assert all(r["semanticRank"] == 0 for r in lexical["results"])
                checked += len(by_mode)
    assert checked > 50  # the queries do match
