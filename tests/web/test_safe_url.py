"""Issue 13 item 19: URLs that a browser reads as another host are remote.

``/\\host/x.png`` (and ``\\\\host``, ``/<TAB>/host``) is protocol-relative to a
browser, which reads a backslash as ``/`` and drops tabs: the client's
``safeUrl`` kept it as relative, so an image in a comment or a search result
loaded from another host without a click. The client's module is loaded in
Chromium from the files on disk (Playwright routes, no server), and the
server's renderer is checked for the same forms.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest

from app.memos.safe_html import render_html, safe_url
from tests.web.conftest import ROOT

ORIGIN = "http://daybook.test"
HOSTILE = [
    "/\\evil.example/x.png",
    "\\\\evil.example/x.png",
    "/\t/evil.example/x.png",
    "\\/evil.example/x",
]
LOCAL = ["/file/attachments/abc/x.png", "x.png", "../up.png", "#top"]


def _serve_web(route: Any) -> None:
    path = route.request.url.removeprefix(ORIGIN).split("?", 1)[0]
    if path == "/blank.html":
        route.fulfill(status=200, content_type="text/html", body="<!doctype html><title>t</title>")
        return
    target = (ROOT / "web" / path.lstrip("/")).resolve()
    if path.startswith("/assets/") and target.is_file():
        route.fulfill(status=200, content_type="text/javascript", body=target.read_bytes())
    else:
        route.fulfill(status=404, body="")


@pytest.fixture
def page(browser: Any) -> Any:
    context = browser.new_context()
    # Any request elsewhere is a failure of the rule under test.
    outside: list[str] = []
    context.route("**/*", lambda r: (outside.append(r.request.url), r.abort()))
    context.route(f"{ORIGIN}/**", _serve_web)
    p = context.new_page()
    p.outside = outside
    p.goto(f"{ORIGIN}/blank.html")
    yield p
    context.close()


def test_client_safe_url_treats_backslash_forms_as_remote(page: Any) -> None:
    results = page.evaluate(
        """async (urls) => {
            const m = await import("/assets/markdown.js");
            return urls.map((u) => m.safeUrl(u));
        }""",
        HOSTILE + LOCAL,
    )
    hostile, local = results[: len(HOSTILE)], results[len(HOSTILE) :]
    for url, safe in zip(HOSTILE, hostile, strict=True):
        assert safe is not None and safe.startswith("https://evil.example/"), (url, safe)
    assert local == LOCAL


def test_client_renders_such_images_as_click_to_load(page: Any) -> None:
    inline = [u for u in HOSTILE if "\t" not in u]  # the client's syntax has no blanks in URLs
    source = "\n\n".join(f"![pic]({u})" for u in inline)
    html = page.evaluate(
        """async (source) => {
            const m = await import("/assets/markdown.js");
            const box = document.createElement("div");
            box.append(m.renderMarkdown(source));
            document.body.append(box);
            await new Promise((r) => setTimeout(r, 200));
            return box.innerHTML;
        }""",
        source,
    )
    assert "<img" not in html and html.count('class="remote-image"') == len(inline), html
    assert not [u for u in page.outside if "evil.example" in u]


@pytest.mark.parametrize("url", HOSTILE)
def test_server_renderer_never_loads_another_host(url: str) -> None:
    assert (safe_url(url) or "").startswith("https://evil.example/"), url
    html = render_html(f"![pic]({url})")
    for src in re.findall(r'<img src="([^"]*)"', html):
        # markdown-it percent-encodes a raw backslash: what remains is a local path.
        assert "\\" not in src and "\t" not in src, html
        assert urlsplit(urljoin("https://self.test/m/", src)).netloc == "self.test", html
