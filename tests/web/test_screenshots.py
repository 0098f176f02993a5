"""Screenshots for the README: the timeline on desktop and phone, light and dark,
and the space page, a memo's page, the admin screen and search results.

Saved to docs/screenshots/ on every run, so the README always shows the
current client. One signed-in page takes every shot (the viewport and the
colour scheme change in place), so the module costs one sign-in, not one per
picture.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.web.conftest import ROOT, Server
from tests.web.pages import card, ensure_admin, sign_in

SHOTS = ROOT / "docs" / "screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
# The four screens beyond the timeline are smaller: one theme, a narrower window.
SCREEN = {"width": 1100, "height": 720}
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
def seeded(server: Server) -> dict[str, str]:
    ensure_admin(server)
    made = [
        server.api("alice", "POST", "/memos", json={"content": content, "visibility": visibility})
        for visibility, content in SEED
    ]
    server.api(
        "alice",
        "PATCH",
        f"/{made[0]['name']}",
        params={"updateMask": "pinned"},
        json={"pinned": True},
    )
    # The memo page: a second version, a comment from a colleague, a backlink.
    release = made[2]["name"]
    server.api(
        "alice",
        "PATCH",
        f"/{release}",
        params={"updateMask": "content"},
        json={"content": SEED[2][1] + "\n\nThanks to everyone who tested the betas."},
    )
    server.create_user("alice", "bruno")
    server.api(
        "bruno",
        "POST",
        f"/{release}/comments",
        json={"content": "Reindexed our instance, works well.", "visibility": "PROTECTED"},
    )
    server.api(
        "alice",
        "PATCH",
        f"/{made[4]['name']}/relations",
        json={"relations": [{"relatedMemo": {"name": release}, "type": "REFERENCE"}]},
    )
    # A space with a member and memos in two places of its tree.
    space = server.api(
        "alice",
        "POST",
        "/spaces",
        json={"title": "Garden club", "description": "Seeds, plots and the watering rota."},
    )
    server.api(
        "alice",
        "POST",
        f"/{space['name']}/invitations",
        json={"invitee": "users/bruno", "role": "USER"},
    )
    server.api("bruno", "POST", f"/{space['name']}/invitations/bruno:accept", json={})
    for content, tree in (
        (
            "Watering rota\n- [x] Monday: alice\n- [ ] Tuesday: bruno\n- [ ] Wednesday: open",
            "share",
        ),
        ("Seed order for spring: carrots, beans, two kinds of squash. #seeds", "share"),
        ("Plot 4 soil test came back slightly acidic; lime in March.", "~"),
    ):
        server.api(
            "alice",
            "POST",
            "/memos",
            json={"content": content, "visibility": "SPACE", "space": space["name"], "tree": tree},
        )
    return {"release": release.removeprefix("memos/"), "space": space["name"].split("/")[1]}


def _shot(page: Any, name: str) -> None:
    page.evaluate(
        "document.activeElement && document.activeElement.blur();"
        "document.querySelectorAll('.toast').forEach((t) => t.remove())"
    )
    page.screenshot(path=str(SHOTS / f"{name}.png"), animations="disabled")


def test_screenshots(new_page: Any, seeded: dict[str, str]) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = new_page(viewport=DESKTOP, device_scale_factor=1)
    sign_in(page, "alice")
    for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        if viewport is not DESKTOP:
            page.set_viewport_size(viewport)
            page.reload()  # the composer picks its phone wording when it is drawn
        # Drawn again once the spaces are known (space memos get their controls):
        # wait for that, then for the cards of the final timeline.
        expect(page.locator(".sidebar").get_by_role("link", name="Garden club")).to_be_attached()
        expect(page.locator(".feed[aria-busy=false]")).to_have_count(1)
        expect(card(page, "Reading list for the trip")).to_be_visible()
        expect(page.locator(".sidebar .tag-link").first).to_be_attached()
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            _shot(page, f"timeline-{name}-{scheme}")

    page.emulate_media(color_scheme="light")
    page.set_viewport_size(SCREEN)
    page.goto(f"/#/space/{seeded['space']}")
    expect(card(page, "Watering rota")).to_be_visible()
    expect(card(page, "Plot 4 soil test")).to_be_visible()
    _shot(page, "space")

    page.goto(f"/#/m/{seeded['release']}")
    expect(page.locator(".comment", has_text="Reindexed our instance")).to_be_visible()
    expect(page.get_by_role("region", name="History").locator(".version-row")).to_have_count(2)
    expect(page.get_by_role("region", name="Links").locator(".rel-link")).to_have_count(1)
    _shot(page, "memo-page")

    page.goto("/#/admin")
    expect(page.locator(".user-row", has_text="bruno")).to_be_visible()
    _shot(page, "admin")

    page.goto("/#/?q=work")
    expect(page.locator("li.result mark").first).to_be_visible()
    _shot(page, "search")
    assert page.js_errors == []
