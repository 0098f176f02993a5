"""Server-side Markdown rendering: safe by construction (app/memos/safe_html.py)."""

from __future__ import annotations

import pytest

from app.memos.safe_html import render_html, safe_url


@pytest.mark.parametrize(
    "content",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        "<iframe src=/evil></iframe>",
        "<div style='position:fixed'>overlay</div>",
    ],
)
def test_raw_html_is_escaped(content: str) -> None:
    html = render_html(content)
    assert "<script" not in html
    assert "<img" not in html
    assert "<iframe" not in html
    assert "<a " not in html
    assert "<div" not in html
    assert "&lt;" in html


@pytest.mark.parametrize(
    "link",
    [
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](java\tscript:alert(1))",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "[x](vbscript:msgbox)",
        "<javascript:alert(1)>",
        "![x](javascript:alert(1))",
        "![x](data:image/svg+xml,<svg onload=alert(1)>)",
    ],
)
def test_dangerous_links_lose_their_href(link: str) -> None:
    html = render_html(link).lower()
    assert 'href="javascript' not in html
    assert 'href="data' not in html
    assert 'href="vbscript' not in html
    assert "src=" not in html


def test_safe_links_get_rel_and_target() -> None:
    html = render_html("[a](https://example.com) [b](/api/v1/x) [c](mailto:a@b.c) www.e.org")
    assert (
        '<a href="https://example.com" rel="noopener noreferrer nofollow" target="_blank">' in html
    )
    assert '<a href="/api/v1/x" rel="noopener noreferrer nofollow">b</a>' in html
    assert 'href="mailto:a@b.c"' in html
    assert 'href="http://www.e.org"' in html  # linkify


def test_remote_images_wait_for_a_click_local_ones_show() -> None:
    html = render_html("![cat](https://example.com/cat.png) ![own](/file/attachments/abc/a.png)")
    assert (
        '<button type="button" class="remote-image" data-src="https://example.com/cat.png"' in html
    )
    assert '<img src="https://' not in html
    assert '<img src="/file/attachments/abc/a.png" alt="own" loading="lazy">' in html


def test_task_checkboxes_carry_their_index() -> None:
    html = render_html("- [ ] one\n- [x] two\n\n```\n- [ ] not a task\n```\n1. [ ] three")
    assert 'data-task="0">' in html
    assert 'data-task="1" checked' in html
    assert 'data-task="2"' in html
    assert 'data-task="3"' not in html


def test_tags_are_marked_outside_code_and_links() -> None:
    html = render_html("#work and `#code` [#link](https://x.y) #a/b")
    assert '<span class="tag" data-tag="work">#work</span>' in html
    assert '<span class="tag" data-tag="a/b">#a/b</span>' in html
    assert "<code>#code</code>" in html
    assert 'data-tag="link"' not in html


def test_no_inline_styles_under_the_csp() -> None:
    html = render_html("| a | b |\n|:-:|--:|\n| 1 | 2 |")
    assert "style=" not in html
    assert 'class="align-center"' in html


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://a.b/c", "https://a.b/c"),
        ("/x/y", "/x/y"),
        ("x/y", "x/y"),
        ("//evil.example/p", "https://evil.example/p"),
        ("javascript:x", None),
        (" \x01javascript:x", None),
        ("ftp://x", None),
    ],
)
def test_safe_url(url: str, expected: str | None) -> None:
    assert safe_url(url) == expected
