"""The pure half of the selectivity probe: the cap, the sample windows, and which
needles render per row."""

from __future__ import annotations

import math

from sqlalchemy.dialects import sqlite

from app.filter import lower_filter, memo_filter_needles
from app.filter.selectivity import (
    MAX_PROBES,
    SAMPLE,
    Needle,
    Probe,
    Span,
    TagNeedle,
    TrigramNeedle,
    choose_dense,
    needles,
    probe_cap,
)

WORK = TagNeedle("==", ("work",))
COFFEE = TrigramNeedle("coffee")
LINK = TrigramNeedle("link")


def _dense(text: str, density: dict[Needle, float], memos: int = 100_000) -> set[Needle]:
    return set(choose_dense(lower_filter(text), density, memos=memos))


def test_cap() -> None:
    assert probe_cap(0) == 1
    assert probe_cap(1) == 9
    assert probe_cap(100_000) == 2550 == math.ceil(math.sqrt(65 * 100_000))
    assert probe_cap(1_000_000) == 8063


def test_one_needle_is_dense_at_the_cap() -> None:
    at = 2550 / 100_000
    assert _dense('content.contains("coffee")', {COFFEE: at * 0.99}) == set()
    assert _dense('content.contains("coffee")', {COFFEE: at}) == {COFFEE}
    assert _dense('!content.contains("coffee")', {COFFEE: at}) == {COFFEE}
    text = '"work" in tags || content.contains("coffee")'
    assert _dense(text, {COFFEE: 0.23, WORK: 0.01}) == {COFFEE}


def test_conjunction_of_dense_needles() -> None:
    """ "work" (5.4%) and "link" (6.4%) together match 0.35%: at 100k the IN-lists win, at 1M
    the walk; "coffee" (23%) with "link" walks at 100k already."""
    text = '"work" in tags && content.contains("link") && !pinned'
    assert _dense(text, {WORK: 0.054, LINK: 0.064}) == set()
    assert _dense(text, {WORK: 0.054, LINK: 0.064}, memos=1_000_000) == {WORK, LINK}
    text = 'content.contains("coffee") && content.contains("link")'
    assert _dense(text, {COFFEE: 0.23, LINK: 0.064}) == {COFFEE, LINK}


def test_conjunction_keeps_a_much_denser_needle_per_row() -> None:
    """Beside a driving IN-list, a needle over DRIVE_RATIO times as dense is tested per row."""
    text = 'content.contains("coffee") && "work" in tags'
    assert _dense(text, {COFFEE: 0.23, WORK: 0.03}) == {COFFEE}
    # ... and a sparse needle drives without being asked.
    assert _dense(text, {COFFEE: 0.23, WORK: 0.0004}) == {COFFEE}


def test_sample_windows() -> None:
    """A needle at the cap's density has SAMPLE hits in its window; content reads the oldest
    ids, tags the newest."""
    span = Span(1, 100_000)
    probe = Probe((COFFEE, WORK), span, probe_cap(span.size))
    assert probe.window == math.ceil(SAMPLE * 100_000 / 2550) == 1255
    sql = str(probe.statement().compile(dialect=sqlite.dialect()))
    assert "memo_trgm.rowid <= ?" in sql and "memo_tag.memo_id >= ?" in sql
    assert probe.params() == {"hi": 1255, "lo": 98_746, "v0": '"coffee"', "v1": "work"}
    # SAMPLE content hits by id 150; 70 distinct memos tagged work among the newest 1,255
    # (plus 5 memos written since the span was read).
    density, fresh = probe.read([(0, SAMPLE, 150), (1, 70, 98_750), (-1, 1, 100_005)])
    assert fresh == Span(1, 100_005)
    assert density == {COFFEE: SAMPLE / 150, WORK: 70 / 1260}
    # Fewer than SAMPLE content hits: they are spread over the whole window.
    density, _ = probe.read([(0, 10, 1000), (1, 0, None), (-1, 1, 100_000)])
    assert density == {COFFEE: 10 / 1255, WORK: 0.0}
    tiny = Probe((COFFEE,), Span(1, 10), probe_cap(10))
    assert tiny.window == 10


def test_needles_are_bounded() -> None:
    text = " || ".join(f'content.contains("word{i}")' for i in range(12))
    found = memo_filter_needles(text)
    assert len(found) == 12 > MAX_PROBES
    assert needles(lower_filter("pinned")) == ()
    assert memo_filter_needles('content.contains("ab") && content.endsWith("x")') == ()
    # the same needle twice is probed once
    assert memo_filter_needles('content.contains("Tea") || content.startsWith("tea")') == (
        TrigramNeedle("tea"),
    )
