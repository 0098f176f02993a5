"""Screenshots of the timeline for the README: desktop and phone, light and dark.

Saved to docs/screenshots/ on every run, so the README always shows the
current client.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.web.conftest import ROOT, Server
from tests.web.pages import card, ensure_admin, sign_in

SHOTS = ROOT / "docs" / "screenshots"
SEED = [
    (
        "PROTECTED",
        "Reading list for the trip #books/travel\n- [x] The Rings of Saturn\n- [ ] Patagonia\n- [ ] Kon-Tiki",
    ),
    (
        "PRIVATE",
        "Idea: keep a **daily log** of what shipped, one line each. Ctrl+Enter makes it painless. #ideas",
    ),
    (
        "PUBLIC",
        "# Release 0.4 notes\nSearch is hybrid now: lexical and semantic, fused with RRF. #work/release\n\n`daybook reindex` rebuilds it.",
    ),
    ("PRIVATE", "Ran 5 km along the river before work, legs felt fine. #health"),
    ("PROTECTED", "Standup\n- [x] review the spaces PR\n- [ ] write the migration notes #work"),
]


@pytest.fixture(scope="module")
def seeded(server: Server) -> Server:
    ensure_admin(server)
    for visibility, content in SEED:
        server.api("alice", "POST", "/memos", json={"content": content, "visibility": visibility})
    first = server.api("alice", "GET", "/memos", params={"pageSize": 10})["memos"][-1]
    server.api(
        "alice",
        "PATCH",
        f"/{first['name']}",
        params={"updateMask": "pinned"},
        json={"pinned": True},
    )
    return server


@pytest.mark.parametrize(
    ("name", "viewport"),
    [("desktop", {"width": 1280, "height": 800}), ("phone", {"width": 390, "height": 844})],
)
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_timeline_screenshot(
    new_page: Any, seeded: Server, name: str, viewport: dict[str, int], scheme: str
) -> None:
    page = new_page(viewport=viewport, color_scheme=scheme, device_scale_factor=1)
    sign_in(page, "alice")
    expect(card(page, "Reading list for the trip")).to_be_visible()
    expect(page.locator(".sidebar .tag-link").first).to_be_visible()
    page.evaluate("document.activeElement.blur()")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"timeline-{name}-{scheme}.png"))
    assert page.js_errors == []
