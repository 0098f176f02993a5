"""The one-pass parse equals the separate derive and render; the fallback is linear."""

from __future__ import annotations

import time

import pytest

from app.memos.markdown import derive
from app.memos.parse import parse, plain
from app.memos.parse_pool import deadline, parse_memo
from app.memos.safe_html import render_html

SAMPLES = [
    "",
    "hello #work/project",
    "# Title\n\n- [ ] task\n- [x] done",
    "`code` https://example.com and [a link](javascript:alert(1))",
    "| a | b |\n|:-|-:|\n| 1 | 2 |",
    "![img](https://example.com/x.png) ![local](/file/x.png) <script>x</script>",
    "```\n#notatag\n```\n\n#tag ~~strike~~ **bold** _em_",
    "> quote #q\n\n1. [ ] numbered task",
]


@pytest.mark.parametrize("content", SAMPLES)
def test_one_pass_matches_derive_and_render(content: str) -> None:
    parsed = parse(content)
    assert parsed.props == derive(content)
    assert parsed.html == render_html(content)
    assert not parsed.degraded


@pytest.mark.parametrize(
    "content",
    ["\n" * 1_000_000, " " * 1_000_000, "- " * 500_000, "#a/" * 300_000, "![" * 500_000],
)
def test_plain_is_linear_on_hostile_text(content: str) -> None:
    started = time.perf_counter()
    parsed = plain(content)
    assert time.perf_counter() - started < 5  # quadratic would be hours
    assert parsed.degraded and "<script" not in parsed.html


def test_plain_is_safe_and_keeps_what_it_can() -> None:
    parsed = plain("- [ ] todo #a/b <img src=x onerror=y> https://x.io `c`")
    assert parsed.props.tags == ("a", "a/b")
    assert parsed.props.has_task_list and parsed.props.has_incomplete_tasks
    assert parsed.props.has_link and parsed.props.has_code
    assert "<img" not in parsed.html and "&lt;img" in parsed.html


def test_deadline_grows_with_size() -> None:
    assert deadline(0) == pytest.approx(2.0)
    assert deadline(1024 * 1024) == pytest.approx(12.0)


async def test_parse_memo_falls_back_when_the_deadline_passes() -> None:
    hostile = "![" * 20_000
    parsed = await parse_memo(hostile, seconds=0.05)
    assert parsed.degraded
    fine = await parse_memo("**ok** " + "x" * 400)
    assert not fine.degraded and "<strong>ok</strong>" in fine.html
