"""Issue 18: the relevance floor, the total, highlights and why each hit matched.

The API tests use the hashing embedder with an explicit floor (the calibrated
floors belong to the real models; ``tests/search/test_real_model.py`` checks
one end to end). With hashing, a memo sharing no word or trigram with the
query has a similarity near 0, one sharing words is well above it.
"""

from __future__ import annotations

import math
import pathlib
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.search.explain import MAX_SENTENCES_PER_MEMO, draft
from app.search.fusion import (
    OFF,
    Floor,
    Fused,
    Fusion,
    LexicalCandidate,
    SemanticCandidate,
    apply_floor,
    fuse,
)
from app.search.highlight import Span, match_spans, phrase_match, sentences, snippet_around
from app.search.relevance import CALIBRATED, parse_floor
from app.search.terms import parse_terms
from app.settings import Settings, load_settings
from tests.conftest import Actor
from tests.search.conftest import contents, embed_all, search
from tests.support import make_settings, restricted_key

FLOOR = "0.35:0.3"  # hashing embedder: a cosine of 0.35 and within 0.3 of the best


@pytest.fixture
def settings(database_url: str, tmp_path: pathlib.Path) -> Settings:
    return make_settings(database_url, tmp_path, embedding_model="hash-64", search_floor=FLOOR)


# --- pure: the floor and the fusion -------------------------------------------------------


def test_the_floor_keeps_close_neighbours_only() -> None:
    sims = [SemanticCandidate(i, s) for i, s in enumerate([0.82, 0.74, 0.41, 0.39, 0.1], 1)]
    kept, needed = apply_floor(sims, Floor(minimum=0.4, margin=0.2))
    assert [c.memo_id for c in kept] == [1, 2]  # 0.41 is above 0.4 but 0.41 < 0.82 - 0.2
    assert needed == pytest.approx(0.62)
    kept, _ = apply_floor(sims, Floor(minimum=0.4, margin=0.5))
    assert [c.memo_id for c in kept] == [1, 2, 3]
    # with a literal answer (every query word in a lexical hit) the tighter margin
    kept, needed = apply_floor(sims, Floor(0.4, 0.5, exact_margin=0.05), exact=True)
    assert [c.memo_id for c in kept] == [1] and needed == pytest.approx(0.77)
    # nothing close: nothing kept
    assert apply_floor(sims, Floor(minimum=0.9))[0] == []
    assert apply_floor(sims, OFF)[0] == sims


def test_the_literal_answer_rule() -> None:
    """The tighter margin applies only when the nearest neighbour is itself a lexical
    hit holding every query word."""
    from app.search.service import Arms

    near = [SemanticCandidate(7, 0.8), SemanticCandidate(8, 0.78)]
    assert Arms([LexicalCandidate(7, 1.0, all_words=True)], near, 0, 50).exact
    assert not Arms([LexicalCandidate(7, 1.0, all_words=False)], near, 0, 50).exact
    assert not Arms([LexicalCandidate(8, 1.0, all_words=True)], near, 0, 50).exact
    assert not Arms([LexicalCandidate(7, 1.0, all_words=True)], [], 0, 50).exact


def test_lexical_hits_always_count() -> None:
    """A lexical hit survives whatever the floor did to the semantic arm."""
    kept, _ = apply_floor([SemanticCandidate(2, 0.1)], Floor(minimum=0.5))
    fused = fuse([LexicalCandidate(1, 3.0)], kept, Fusion())
    assert [f.memo_id for f in fused] == [1]


@pytest.mark.parametrize("method", ["rrf", "minmax", "zscore", "margin"])
def test_fusion_rewards_both_arms_and_exactness(method: Any) -> None:
    lexical = [
        LexicalCandidate(1, 5.0),
        LexicalCandidate(2, 4.5, all_words=True, phrase=True),
        LexicalCandidate(4, 1.0),
    ]
    semantic = [SemanticCandidate(3, 0.9), SemanticCandidate(2, 0.85), SemanticCandidate(5, 0.3)]
    plain = fuse(lexical, semantic, Fusion(method))
    assert plain[0].memo_id == 2  # second in both arms beats first in one
    assert (plain[0].lexical_rank, plain[0].semantic_rank) == (2, 2)
    assert plain[0].similarity == pytest.approx(0.85)
    assert [f.memo_id for f in fuse(lexical, [], Fusion(method))] == [1, 2, 4]
    boosted = fuse(lexical, [], Fusion(method, all_words_boost=5.0))
    assert boosted[0].memo_id == 2  # the exact match overtakes the better engine score


def test_rrf_without_weights_is_decision_0006() -> None:
    fused = fuse(
        [LexicalCandidate(i, 0) for i in (1, 2, 3)],
        [SemanticCandidate(i, 0) for i in (3, 4)],
        Fusion("rrf", 60),
    )
    assert [f.memo_id for f in fused] == [3, 1, 4, 2]
    assert fused[0].score == pytest.approx(1 / 63 + 1 / 61)


def test_the_floor_setting() -> None:
    assert parse_floor("off", "all-minilm-l6-v2-int8") == OFF
    assert parse_floor("auto", "all-minilm-l6-v2-int8") == CALIBRATED["all-minilm-l6-v2-int8"]
    assert parse_floor("", "hash-64") == OFF  # no calibration: no floor
    assert parse_floor("0.4", "x") == Floor(0.4, math.inf, math.inf)
    assert parse_floor("0.4:0.1", "x") == Floor(0.4, 0.1, 0.1)
    assert parse_floor("0.4:0.1:0.05", "x") == Floor(0.4, 0.1, 0.05)
    for bad in ("high", "0.4:", "2", "0.4:-1", "0.4;0.1", "0.4:0.1:0.05:1"):
        with pytest.raises(ValueError, match="search floor"):
            parse_floor(bad, "x")
    assert load_settings({"DAYBOOK_SEARCH_FLOOR": "0.5:0.2"}).search_floor == "0.5:0.2"


# --- pure: highlights, snippets, sentences -------------------------------------------------


def test_highlights_are_offsets_into_the_content() -> None:
    content = "Dentist moved: the dentists said Thursday. Call the DENTIST's office."
    spans, found = match_spans(content, parse_terms("when is the dentist"))
    assert [content[s.start : s.end] for s in spans] == ["Dentist", "dentists", "DENTIST"]
    assert found == ["dentist"]
    cjk = "我今天去了北京看长城"
    spans, found = match_spans(cjk, parse_terms("北京长城"))
    assert [cjk[s.start : s.end] for s in spans] == ["北京", "长城"]
    assert found == ["北京", "长城"]
    emoji = "🙂🙂 renew passport"
    spans, _ = match_spans(emoji, parse_terms("passport"))
    assert emoji[spans[0].start : spans[0].end] == "passport"  # code points, not UTF-16


def test_phrase_match_skips_stop_words() -> None:
    assert phrase_match("a streak of 21 days so far", parse_terms("streak of 21 days"))
    assert not phrase_match("21 days streak", parse_terms("streak of 21 days"))
    assert not phrase_match("streak", parse_terms("streak"))  # one word is no phrase


def test_phrase_match_shortcut_never_rules_out_a_phrase() -> None:
    """The ASCII-stem shortcut (a stem absent from the lower-cased text) must agree
    with stemming every word, also where lower-casing changes what follows it:
    case, suffixes, stop words between, characters whose lower case is two code
    points (\u0130), the Kelvin sign, final sigma, full-width letters."""
    import random

    from app.search.highlight import _WORD, light_stem
    from app.search.terms import STOPWORDS

    def reference(content: str, query: str) -> bool:
        wanted = [light_stem(w) for w in parse_terms(query).words]
        seq = [light_stem(w) for w in _WORD.findall(content) if w.lower() not in STOPWORDS]
        n = len(wanted)
        return n >= 2 and any(seq[i : i + n] == wanted for i in range(len(seq) - n + 1))

    vocab = [
        *("alpha", "plan", "planning", "plans", "meeting", "meetings", "notes", "draft"),
        *("reviewed", "review", "the", "of", "a", "21", "days", "streak", "abc", "kelvin"),
        *("\u0130stanbul", "\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3", "\u212aelvin"),
        *("\u03c3\u03bf\u03c6\u03cc\u03c2", "\uff21\uff22\uff23", "na\u00efve"),
        *("stra\u00dfe", "STRASSE"),
    ]
    queries = [
        "alpha plan",
        "meeting notes",
        "streak of 21 days",
        "\u0130stanbul alpha",
        "\u03c3\u03bf\u03c6\u03cc\u03c2 notes",
        "kelvin plans",
        "abc draft",
        "strasse plan",
    ]
    rng = random.Random(7)
    agreed = matched = 0
    for _ in range(3000):
        content = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 30)))
        content = content.upper() if rng.random() < 0.3 else content
        for query in queries:
            expected = reference(content, query)
            assert phrase_match(content, parse_terms(query)) is expected, (query, content)
            agreed += 1
            matched += expected
    assert matched > 100  # the phrases do occur: the comparison is not all "no"


def test_snippet_windows_the_densest_matches() -> None:
    content = ("filler words here. " * 20) + "the tax return is due. " + ("more filler. " * 20)
    spans, _ = match_spans(content, parse_terms("tax return"))
    snip = snippet_around(content, spans, 60)
    assert "tax return" in content[snip.start : snip.end]
    assert snip.end - snip.start <= 80
    assert snippet_around("short", [], 60) == Span(0, 5)
    parts = sentences("First one. Second one!\n- a list item\n\n")
    assert [p for p in parts] == [Span(0, 10), Span(11, 22), Span(23, 36)]


def test_a_semantic_only_hit_shows_its_best_sentence() -> None:
    hit = Fused(1, 0.5, 0, 1, 0.7)
    content = "Groceries for Sunday. The garage fixed the brakes. Call mum."
    d = draft(hit, content, parse_terms("brakes repair"))
    assert d.explanation.matched_by == "SEMANTIC"
    assert content[d.explanation.snippet.start : d.explanation.snippet.end] == (
        "The garage fixed the brakes."
    )  # the sentence holding a query word, no embedding needed
    d = draft(hit, content * 3, parse_terms("vehicle maintenance"))
    assert len(d.candidates) == MAX_SENTENCES_PER_MEMO  # no query word: sentences go to the model
    d = draft(hit, content, parse_terms("vehicle maintenance"))
    assert d.candidates == ()  # no longer than a snippet: shown whole
    assert (d.explanation.snippet.start, d.explanation.snippet.end) == (0, len(content))


# --- the API, on both dialects ----------------------------------------------------------------

NOTES = [
    "dentist appointment moved to Thursday",
    "renew the passport before the trip",
    "lentil soup with cumin",
    "quarterly report for the finance team",
    "brake pads replaced at the garage",
]


async def test_a_query_with_one_answer_returns_it_not_the_timeline(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    for text in NOTES:
        await alice.memo(text)
    await embed_all(client)
    body = await search(alice, "dentist")
    assert contents(body) == [NOTES[0]]
    assert body["totalSize"] == 1 and body["totalIsExact"] and not body["noRelevantMatch"]
    hit = body["results"][0]
    assert hit["matchedBy"] == "BOTH" and hit["matchedTerms"] == ["dentist"]
    assert hit["highlights"] == [{"start": 0, "end": 7}]
    assert hit["snippet"] == {"start": 0, "end": len(NOTES[0]), "text": NOTES[0]}
    assert 0 < hit["similarity"] <= 1 and body["semanticFloor"] >= 0.35
    # without the floor the semantic arm fills the page with the other memos
    client.app.state.search.floor_setting = "off"
    client.app.state.search._floors.clear()
    unfloored = await search(alice, "dentist")
    assert unfloored["totalSize"] == len(NOTES) and unfloored["semanticFloor"] == -1


async def test_no_good_match_returns_nothing_and_says_so(
    client: AsyncTestClient[Any], alice: Actor
) -> None:
    for text in NOTES:
        await alice.memo(text)
    await embed_all(client)
    for mode in ("hybrid", "semantic", "lexical"):
        body = await search(alice, "zyxwv qqqq", mode=mode)
        assert body["results"] == [], mode
        assert body["noRelevantMatch"] is True and body["totalSize"] == 0
        assert body["nextPageToken"] == ""


async def test_a_semantic_only_hit_is_explained(client: AsyncTestClient[Any], alice: Actor) -> None:
    """Misspelt words share character trigrams, not words, with the memo: the
    hashing embedder finds it, the lexical arm cannot; its snippet is the
    sentence closest to the query."""
    m = await alice.memo(
        "Groceries on Sunday, and the list for the market: apples, bread, cheese, coffee"
        " and the washing powder that is on offer. Renewal of passports for the trip.\n"
        "Call mum about the weekend and the birthday present for grandma."
    )
    await embed_all(client)
    client.app.state.search.floor_setting = "0.1"  # a long memo: hashing cosines are low
    client.app.state.search._floors.clear()
    body = await search(alice, "passportt renewall", mode="semantic")
    assert [r["memo"]["name"] for r in body["results"]] == [m["name"]]
    hit = body["results"][0]
    assert hit["matchedBy"] == "SEMANTIC" and hit["lexicalRank"] == 0
    assert hit["matchedTerms"] == [] and hit["highlights"] == []
    assert hit["snippet"]["text"] == "Renewal of passports for the trip."
    content = hit["memo"]["content"]
    assert content[hit["snippet"]["start"] : hit["snippet"]["end"]] == hit["snippet"]["text"]


async def test_the_total_never_counts_hidden_memos(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """Two users and a restricted key: the total, the results and the pages cover
    exactly what each caller may read."""
    mine = [await bob.memo(f"harbor walk number {i}") for i in range(3)]
    theirs = [await alice.memo(f"harbor walk secret {i}") for i in range(5)]
    shared = await alice.memo("harbor walk for everyone", visibility="PROTECTED")
    await embed_all(client)
    for mode in ("hybrid", "lexical", "semantic"):
        body = await search(bob, "harbor walk", mode=mode, pageSize=2)
        seen = [r["memo"]["name"] for r in body["results"]]
        token = body["nextPageToken"]
        while token:
            more = await search(bob, "harbor walk", mode=mode, pageSize=2, pageToken=token)
            seen += [r["memo"]["name"] for r in more["results"]]
            token = more["nextPageToken"]
        assert set(seen) == {m["name"] for m in mine} | {shared["name"]}, mode
        assert body["totalSize"] == 4, mode
        assert not set(seen) & {m["name"] for m in theirs}
    alice_total = (await search(alice, "harbor walk"))["totalSize"]
    assert alice_total == 6  # her five and the shared one; bob's private ones never
    key = await restricted_key(bob, scope="READ", personal="OWN")
    r = await client.get("/api/v1/memos:search", params={"query": "harbor walk"}, headers=key)
    assert r.status_code == 200, r.text
    body = r.json()
    assert {x["memo"]["name"] for x in body["results"]} == {m["name"] for m in mine}
    assert body["totalSize"] == 3  # the PROTECTED memo is outside the key's personal reach
    none_key = await restricted_key(bob, scope="READ", personal="NONE")
    r = await client.get("/api/v1/memos:search", params={"query": "harbor walk"}, headers=none_key)
    assert r.status_code == 200, r.text
    assert r.json()["results"] == [] and r.json()["totalSize"] == 0
    assert r.json()["noRelevantMatch"] is True


async def test_hidden_memos_never_take_a_slot_under_the_floor(
    client: AsyncTestClient[Any], alice: Actor, bob: Actor
) -> None:
    """Alice's closer private memos change neither bob's hits nor the floor he gets
    (the floor is relative to the best neighbour *he* may see)."""
    await bob.memo("garden tomatoes need water")
    await bob.memo("garden fence paint")
    await embed_all(client)
    before = await search(bob, "garden tomatoes")
    for _ in range(10):
        await alice.memo("garden tomatoes")  # identical to the query: similarity 1
    await embed_all(client)
    after = await search(bob, "garden tomatoes")
    assert after["results"] == before["results"]
    assert after["semanticFloor"] == before["semanticFloor"]
    assert after["totalSize"] == before["totalSize"]


def test_a_bad_floor_setting_fails_at_startup(tmp_path: pathlib.Path) -> None:
    from app.server import create_app

    settings = Settings(
        data_dir=tmp_path / "d",
        database_url=f"sqlite:///{tmp_path}/x.db",
        password_hasher="cheap",
        secret="s",
        embedding_model="hash-64",
        search_floor="very high",
    )
    with pytest.raises(ValueError, match="search floor 'very high'"):
        create_app(settings)


async def test_a_model_switch_re_embeds_and_takes_the_new_models_floor(
    client: AsyncTestClient[Any], alice: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors are stamped with their model: after a switch the semantic arm ranks
    only re-embedded memos, under the floor calibrated for the new model."""
    from app.search import relevance
    from app.search.runtime import SearchRuntime

    for text in NOTES:
        await alice.memo(text)
    await embed_all(client)  # hash-64
    monkeypatch.setitem(relevance.CALIBRATED, "hash-32", Floor(minimum=0.2, margin=0.5))
    old = client.app.state.search
    client.app.state.search = SearchRuntime("hash-32", old.pgvector, "auto")
    body = await search(alice, "dentist appointment", mode="semantic")
    assert body["results"] == []  # no vector of the new model yet: nothing ranked
    assert contents(await search(alice, "dentist appointment")) == [NOTES[0]]  # lexically
    assert await embed_all(client) == len(NOTES)  # the worker's sweep and loop re-embed all
    body = await search(alice, "dentist appointment", mode="semantic")
    assert body["pendingEmbeddings"] == 0
    assert contents(body)[0] == NOTES[0]
    assert body["semanticFloor"] >= 0.2
    assert all(r["similarity"] >= body["semanticFloor"] - 1e-6 for r in body["results"])


def test_the_lexical_rank_includes_the_exactness_boosts() -> None:
    """``lexicalRank`` is the order of the arm's contribution to the fused score, so
    ``mode=lexical`` (the lexical arm alone) lists hits by ``lexicalRank``."""
    from app.search.fusion import lexical_order

    arm = [LexicalCandidate(1, 5.0), LexicalCandidate(2, 4.8, all_words=True, phrase=True)]
    fusion = Fusion("minmax", lexical_weight=0.3, all_words_boost=0.3, phrase_boost=0.2)
    assert [c.memo_id for c in lexical_order(arm, fusion)] == [2, 1]
    fused = fuse(lexical_order(arm, fusion), [], fusion)
    assert [(f.memo_id, f.lexical_rank) for f in fused] == [(2, 1), (1, 2)]
    assert [c.memo_id for c in lexical_order(arm, Fusion("minmax"))] == [1, 2]


def test_past_the_budget_the_snippet_is_the_sentence_sharing_most_trigrams() -> None:
    from app.search.explain import closest_by_trigrams

    content = (
        "Groceries on Sunday, the long list for the market and the bakery on the corner."
        " The mechanic replaced the brake pads. Call mum about the weekend plans, soon, and the trip."
    )
    d = draft(Fused(1, 0.5, 0, 1, 0.7), content, parse_terms("mechanics braking"))
    assert d.candidates == ()  # "mechanics" stems to "mechanic": that sentence, no model
    snip = d.explanation.snippet
    assert content[snip.start : snip.end] == "The mechanic replaced the brake pads."
    d = draft(Fused(1, 0.5, 0, 1, 0.7), content, parse_terms("garage visit"))
    e = closest_by_trigrams(d, content, "mechanical brakes")
    assert content[e.snippet.start : e.snippet.end] == "The mechanic replaced the brake pads."


async def test_one_page_gives_the_model_a_bounded_number_of_characters() -> None:
    """Decision 0041: sentence embeddings for snippets were a search's p95 (31 ms of
    CPU for four 160-character sentences); a page gives the model at most
    ``MAX_EMBEDDED_SENTENCES`` sentences and ``MAX_EMBEDDED_CHARS`` characters,
    each sentence's opening, and the rest of the page's semantic-only hits
    fall back to trigrams."""
    import numpy as np

    from app.search.explain import MAX_EMBEDDED_CHARS, MAX_EMBEDDED_SENTENCES
    from app.search.service import explain

    long = " ".join(
        f"Sentence number {i} talks about the harbour and the ferries at length." * 2
        for i in range(3)
    )
    content = (
        ". ".join(
            f"Part {i} of a long memo about the harbour, the ferries and the weather on the coast"
            for i in range(6)
        )
        + "."
    )

    class Row:
        def __init__(self, text: str) -> None:
            self.content = text

    class Runtime:
        def __init__(self) -> None:
            self.calls: list[list[str]] = []

        async def embed_sentences(self, query: str, texts: list[str]) -> tuple[Any, Any]:
            self.calls.append(texts)
            return np.ones(4, dtype=np.float32), np.ones((len(texts), 4), dtype=np.float32)

    runtime = Runtime()
    hits = [Fused(i, 0.5, 0, 1, 0.7) for i in (1, 2, 3)]
    rows = {1: Row(content), 2: Row(long), 3: Row(content)}
    out = await explain(runtime, hits, rows, parse_terms("zzz qqq"), "zzz qqq")  # type: ignore[arg-type]
    assert set(out) == {1, 2, 3}
    assert len(runtime.calls) == 1
    texts = runtime.calls[0]
    assert 0 < len(texts) <= MAX_EMBEDDED_SENTENCES
    assert sum(len(t) for t in texts) <= MAX_EMBEDDED_CHARS
    assert all(t and (t in content or t in long) for t in texts)  # openings of sentences
