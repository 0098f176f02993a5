"""Spaces, memo pages, share links and the admin screen, as people use them.

One server for the module; each test signs its users in once and walks a
whole workflow, so the module stays a few page loads per user. Where access
matters there are two or three users: the invitee sees the invitation, a
member with a grant ticks a shared task, a non-member sees nothing.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
from playwright.sync_api import expect

from tests.web.conftest import PASSWORD, ROOT, Server
from tests.web.pages import EDITOR, card, ensure_admin, sign_in

ARTIFACTS = ROOT / "test-artifacts"
PHONE = {"width": 390, "height": 844}


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.evaluate(
        "document.activeElement && document.activeElement.blur();"
        "document.querySelectorAll('.toast').forEach((t) => t.remove())"
    )
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), animations="disabled")


def _ensure_user(server: Server, user: str) -> None:
    if user not in server.tokens:
        server.create_user("alice", user)


def test_memo_page_history_links_and_shares(new_page: Any, signed_in: Any, server: Server) -> None:
    """A memo's time opens its page: comments, backlinks, history with a diff, share links."""
    ensure_admin(server)
    target = server.api("alice", "POST", "/memos", json={"content": "Seed order for spring"})
    server.api(
        "alice",
        "PATCH",
        f"/{target['name']}",
        params={"updateMask": "content"},
        json={"content": "Seed order for spring\n- carrots\n- beans"},
    )
    source = server.api("alice", "POST", "/memos", json={"content": "Budget, see the seed order"})
    server.api(
        "alice",
        "PATCH",
        f"/{source['name']}/relations",
        json={"relations": [{"relatedMemo": {"name": target["name"]}, "type": "REFERENCE"}]},
    )
    uid = target["name"].split("/")[1]

    page = signed_in("alice")
    card(page, "Seed order for spring").locator("a.memo-time").click()
    expect(page).to_have_url(re.compile(rf"#/m/{uid}$"))
    expect(page.locator("article.memo-card")).to_have_count(1)
    expect(page.get_by_role("region", name="Comments")).to_be_visible()
    expect(page.get_by_label("Write a comment")).to_be_visible()
    links = page.get_by_role("region", name="Links")
    expect(links.get_by_role("link", name=re.compile("Budget, see the seed order"))).to_be_visible()

    history = page.get_by_role("region", name="History")
    expect(history.locator(".version-row")).to_have_count(2)
    history.get_by_role("button", name="Changes in v2").click()
    # The server's unified diff: v1 had no final newline, so its line changes too.
    expect(history.locator(".diff-add")).to_have_text(
        ["+ Seed order for spring", "+ - carrots", "+ - beans"]
    )
    # Revert to v1: the content goes back, as a new version.
    history.get_by_role("button", name="Revert to v1").click()
    page.get_by_role("button", name="Revert", exact=True).click()
    expect(page.locator("article.memo-card .memo-content")).not_to_contain_text("carrots")
    assert server.api("alice", "GET", f"/{target['name']}")["content"] == "Seed order for spring"
    history = page.get_by_role("region", name="History")
    expect(history.locator(".version-row")).to_have_count(3)
    # Any two versions, chosen: v2 -> v3 (the revert) takes the list out again;
    # v1 -> v3 (the same text) says so.
    compare = history.get_by_role("group", name="Compare two versions")
    expect(compare.get_by_label("From")).to_have_value("2")
    expect(compare.get_by_label("To")).to_have_value("3")
    compare.get_by_role("button", name="Compare").click()
    expect(history.get_by_role("heading", name="Changes from v2 to v3")).to_be_visible()
    expect(history.locator(".diff-del")).to_have_text(
        ["- Seed order for spring", "- - carrots", "- - beans"]
    )
    compare.get_by_label("From").select_option("1")
    compare.get_by_role("button", name="Compare").click()
    expect(history.get_by_role("heading", name="Changes from v1 to v3")).to_be_visible()
    expect(history).to_contain_text("The text did not change.")

    # Share a Private memo: a warning first, an expiry chosen, then listed.
    shares = page.get_by_role("region", name="Share links")
    expect(shares).to_contain_text("No share links")
    shares.get_by_role("button", name="New share link").click()
    dlg = page.get_by_role("dialog", name="Share link")
    expect(dlg).to_contain_text("This memo is Private")
    dlg.get_by_label("Link expires after").select_option("1")
    dlg.get_by_role("button", name="Share anyway").click()
    expect(shares.locator(".share-row")).to_have_count(1)
    expect(shares.locator(".share-row")).to_contain_text("expires")
    listed = server.api("alice", "GET", f"/{target['name']}/shares")["memoShares"]
    assert len(listed) == 1 and listed[0]["expireTime"]
    token = listed[0]["token"]

    # The shared page, anonymously: branded, readable, no app chrome.
    visitor = new_page()
    visitor.goto(f"/#/share/{token}")
    expect(visitor.locator(".shared-memo")).to_contain_text("Seed order for spring")
    expect(visitor.locator(".shared-top .brand")).to_have_text(re.compile("Daybook"))
    expect(visitor.get_by_role("link", name="Sign in")).to_be_visible()
    _shot(visitor, "shared-desktop")

    # Revoke: the link no longer opens the memo.
    shares.get_by_role("button", name="Revoke this link").click()
    expect(shares).to_contain_text("No share links")
    visitor = visitor.context.new_page()
    visitor.goto(f"/#/share/{token}")
    expect(
        visitor.get_by_role("heading", name="This share link is not valid any more.")
    ).to_be_visible()
    page.goto(f"/#/m/{uid}")
    expect(page.get_by_role("region", name="History")).to_be_visible()
    _shot(page, "memo-page-desktop")
    page.set_viewport_size(PHONE)
    _shot(page, "memo-page-phone")
    assert page.js_errors == []


def test_timeline_share_asks_before_sharing_private(
    new_page: Any, signed_in: Any, server: Server
) -> None:
    """ "Copy share link" on a Private memo asks first; cancelling makes no link."""
    ensure_admin(server)
    memo = server.api("alice", "POST", "/memos", json={"content": "Door code is in the drawer"})
    page = signed_in("alice")
    c = card(page, "Door code is in the drawer")
    c.get_by_label("Actions").click()
    c.get_by_role("menuitem", name="Copy share link").click()
    dlg = page.get_by_role("dialog", name="Share link")
    expect(dlg).to_contain_text("This memo is Private")
    dlg.get_by_role("button", name="Cancel").click()
    expect(dlg).to_have_count(0)
    assert server.api("alice", "GET", f"/{memo['name']}/shares")["memoShares"] == []


def _patch_of(field: str) -> Any:
    """A predicate for the PATCH that changes one field of a user."""

    def matches(response: Any) -> bool:
        return bool(
            response.request.method == "PATCH"
            and "/api/v1/users/" in response.url
            and f"updateMask={field}" in response.url
        )

    return matches


def test_admin_screen(new_page: Any, signed_in: Any, server: Server) -> None:
    """List, create, change role, archive; the registration switch."""
    ensure_admin(server)
    page = signed_in("alice")
    page.locator(".sidebar").get_by_role("link", name="Users").click()
    expect(page.get_by_role("heading", name="Users", level=1)).to_be_visible()
    expect(page.locator(".user-row", has_text="alice")).to_contain_text("(you)")

    form = page.get_by_role("region", name="Create a user")
    form.get_by_label("Username").fill("dave")
    form.get_by_label("Password").fill(PASSWORD)
    form.get_by_role("button", name="Create a user").click()
    expect(page.locator(".user-row", has_text="dave")).to_be_visible()
    server.sign_in("dave")

    # The select shows its new value before the PATCH lands: wait for the response itself.
    with page.expect_response(_patch_of("role")) as changed:
        page.get_by_label("Role of dave").select_option("ADMIN")
    assert changed.value.ok, changed.value.status
    assert server.api("alice", "GET", "/users/dave")["role"] == "ADMIN"
    with page.expect_response(_patch_of("role")) as changed:
        page.get_by_label("Role of dave").select_option("USER")
    assert changed.value.ok, changed.value.status
    assert server.api("alice", "GET", "/users/dave")["role"] == "USER"

    page.get_by_role("button", name="Archive dave").click()
    page.get_by_role("dialog").get_by_role("button", name="Archive").click()
    expect(page.locator(".user-row", has_text="dave")).to_contain_text("archived")
    r = httpx.post(
        f"{server.url}/api/v1/auth/signin",
        json={"passwordCredentials": {"username": "dave", "password": PASSWORD}},
        timeout=30,
    )
    assert r.status_code in (401, 403), r.text
    page.get_by_role("button", name="Restore dave").click()
    expect(page.locator(".user-row", has_text="dave")).not_to_contain_text("archived")

    # A one-time reset link for dave, shown once (the page it opens: below).
    page.get_by_role("button", name="Password reset link for dave").click()
    dlg = page.get_by_role("dialog", name="Password reset link")
    expect(dlg).to_contain_text("dave chooses the new password")
    assert (
        dlg.locator("code").inner_text().startswith(f"{server.url}/reset-password#token=dbk_reset_")
    )
    dlg.get_by_role("button", name="Close").click()
    expect(page.get_by_role("button", name="Password reset link for alice")).to_have_count(0)

    switch = page.get_by_label("Allow anyone to sign up")
    before = switch.is_checked()
    switch.click()
    expect(page.locator("#toasts")).to_contain_text(
        "Anyone can sign up now." if not before else "Sign-up is closed."
    )
    assert server.api("alice", "GET", "/instance/settings/ACCESS")["allowRegistration"] is (
        not before
    )
    switch.click()
    expect(switch).to_be_checked(checked=before)
    _shot(page, "admin-desktop")
    page.set_viewport_size(PHONE)
    _shot(page, "admin-phone")

    # A non-admin has no Users link and the screen says so.
    bob = new_page()
    _ensure_user(server, "erin")
    sign_in(bob, "erin")
    expect(bob.locator(".sidebar").get_by_role("link", name="Users")).to_have_count(0)
    assert page.js_errors == [] and bob.js_errors == []


def test_space_workflow(new_page: Any, signed_in: Any, server: Server) -> None:
    """Create, invite, accept, grant from the tree, tick a shared task; an outsider sees nothing."""
    ensure_admin(server)
    for user in ("bob", "carol"):
        _ensure_user(server, user)

    alice = signed_in("alice")
    alice_console = alice.console_errors  # from the page's load on
    sidebar = alice.locator(".sidebar")
    sidebar.get_by_role("button", name="New space").click()
    alice.get_by_label("Title").fill("Garden club")
    alice.get_by_label("About").fill("Seeds, plots and the watering rota.")
    alice.get_by_role("button", name="Create space").click()
    # The page is titled by the space's title, never its raw id.
    expect(alice.get_by_role("heading", name="Garden club", level=1)).to_be_visible()
    expect(alice).to_have_title(re.compile(r"^Garden club · Daybook"))
    space = next(
        s for s in server.api("alice", "GET", "/spaces")["spaces"] if s["title"] == "Garden club"
    )
    uid = space["name"].split("/")[1]
    expect(alice.locator(".page-title")).not_to_contain_text(uid)
    expect(sidebar.get_by_role("link", name="Garden club")).to_be_visible()

    # Invite bob from the members tab; he is listed as invited.
    alice.get_by_role("link", name="Members").click()
    alice.get_by_label("Invite by username").fill("bob")
    alice.get_by_role("button", name="Invite", exact=True).click()
    bob_row = alice.locator(".member-row", has_text="bob")
    expect(bob_row).to_contain_text("invited")

    # Bob sees the pending invitation on Home and accepts it.
    bob = new_page()
    sign_in(bob, "bob")
    invite = bob.get_by_role("region", name="Invitations")
    expect(invite).to_contain_text("Garden club")
    expect(invite).to_contain_text("Invited by alice")
    invite.get_by_role("button", name="Accept").click()
    expect(bob.get_by_role("heading", name="Garden club", level=1)).to_be_visible()
    expect(bob.get_by_role("region", name="Invitations")).to_have_count(0)

    # Alice's roster now shows bob as an active member with a role control.
    alice.reload()
    expect(alice.get_by_label("Role of bob")).to_have_value("USER")

    # Access tab: the tree, not a free-text path. Add share.tasks under share
    # and give bob OWNER there.
    alice.get_by_role("link", name="Access").click()
    tree = alice.get_by_role("tree", name="Access")
    expect(tree.get_by_role("treeitem", name=re.compile(r"^share"))).to_be_visible()
    expect(tree.get_by_role("treeitem", name=re.compile(r"My home"))).to_be_visible()
    tree.get_by_role("treeitem", name=re.compile(r"^share")).click()
    alice.get_by_label("New path under share").fill("tasks")
    alice.get_by_role("button", name="Add path").click()
    expect(alice.get_by_role("heading", name="Grants at share.tasks")).to_be_visible()
    alice.get_by_label("Grant to").select_option("users/bob")
    alice.get_by_label("Level", exact=True).select_option("OWNER")
    alice.get_by_role("button", name="Grant", exact=True).click()
    expect(tree.get_by_role("treeitem", name=re.compile(r"^tasks"))).to_be_visible()
    expect(alice.locator(".tree-row", has_text="tasks")).to_contain_text("bob · Owner")
    grants = server.api("alice", "GET", f"/spaces/{uid}/grants")["grants"]
    assert {"principal": "users/bob", "path": "share.tasks", "level": "OWNER"} in [
        {k: g[k] for k in ("principal", "path", "level")} for g in grants
    ]

    # Alice writes a task list into share.tasks, the path picked from the tree.
    alice.get_by_role("link", name="Memos").click()
    editor = alice.get_by_label(EDITOR)
    editor.fill("Watering rota\n- [ ] water the tomatoes")
    alice.get_by_label(re.compile(r"^Path: ")).click()
    alice.locator(".path-panel").get_by_role("treeitem", name=re.compile(r"^tasks")).click()
    expect(alice.get_by_label("Path: share.tasks")).to_be_visible()
    editor.press("Control+Enter")
    expect(card(alice, "Watering rota")).to_contain_text("Garden club · share.tasks")
    memo = next(
        m
        for m in server.api("alice", "GET", "/memos", params={"filter": "space != null"})["memos"]
        if m["space"] == space["name"]
    )
    assert (memo["visibility"], memo["tree"]) == ("SPACE", "share.tasks")

    # Bob (OWNER at share.tasks) can tick alice's task; the source changes.
    bob.goto(f"/#/space/{uid}")
    bob.reload()
    box = card(bob, "Watering rota").get_by_label("task 1")
    expect(box).to_be_enabled()
    # The box ticks at once (decision 0034); the server's answer is awaited here.
    with bob.expect_response(lambda r: r.request.method == "PATCH" and r.ok):
        box.click()
    expect(card(bob, "Watering rota").get_by_label("task 1")).to_be_checked()
    content = server.api("bob", "GET", f"/{memo['name']}")["content"]
    assert "- [x] water the tomatoes" in content

    # A memo bob may not edit (alice's, at share: bob has only WRITE there).
    server.api(
        "alice",
        "POST",
        "/memos",
        json={
            "content": "Plot map\n- [ ] mark plot 4",
            "visibility": "SPACE",
            "space": space["name"],
            "tree": "share",
        },
    )
    bob.reload()
    expect(card(bob, "Plot map").get_by_label("task 1")).to_be_disabled()
    expect(card(bob, "Plot map").get_by_label("Actions")).to_have_count(0)

    # Revert is offered by the write rule (the history's canEdit), not authorship:
    # bob may revert alice's memo at share.tasks (OWNER there), not her Plot map
    # at share (WRITE: his own memos only); the server refuses him that too.
    plot = next(
        m
        for m in server.api("alice", "GET", "/memos", params={"filter": "space != null"})["memos"]
        if m["content"].startswith("Plot map")
    )
    server.api(
        "alice",
        "PATCH",
        f"/{plot['name']}",
        params={"updateMask": "content"},
        json={"content": "Plot map\n- [ ] mark plot 4\n- [ ] mark plot 5"},
    )
    bob.goto(f"/#/m/{memo['name'].split('/')[1]}")
    rota = bob.get_by_role("region", name="History")
    expect(rota.locator(".version-row")).to_have_count(2)
    expect(rota.get_by_role("button", name="Revert to v1")).to_be_visible()
    bob.goto(f"/#/m/{plot['name'].split('/')[1]}")
    plot_history = bob.get_by_role("region", name="History")
    expect(plot_history.locator(".version-row")).to_have_count(2)
    expect(plot_history.get_by_role("button", name="Changes in v2")).to_be_visible()
    expect(plot_history.get_by_role("button", name=re.compile("^Revert"))).to_have_count(0)
    refused = httpx.post(
        f"{server.url}/api/v1/{plot['name']}:revert",
        json={"version": 1},
        headers={"Authorization": f"Bearer {server.tokens['bob']}"},
    )
    assert refused.status_code == 403, refused.text

    # Carol is no member: no invitation, no space, no space memos anywhere.
    carol = new_page()
    sign_in(carol, "carol")
    expect(carol.get_by_role("region", name="Invitations")).to_have_count(0)
    expect(carol.locator(".sidebar").get_by_role("link", name="Garden club")).to_have_count(0)
    carol.goto(f"/#/space/{uid}")
    expect(carol.get_by_role("heading", name="Space not found")).to_be_visible()
    expect(card(carol, "Watering rota")).to_have_count(0)
    carol.goto("/#/explore")
    expect(carol.locator(".feed-status")).not_to_have_text("Loading…")
    expect(card(carol, "Watering rota")).to_have_count(0)
    carol.goto(f"/#/m/{memo['name'].split('/')[1]}")
    expect(carol.get_by_role("heading", name="Memo not found")).to_be_visible()

    # A restricted key's ceiling is chosen from the same tree, and the block
    # is there when Settings is loaded directly (issue 19, defect 5).
    alice.goto("/#/settings")
    alice.reload()
    alice.get_by_label("Description").fill("garden agent")
    alice.get_by_label("Restrict this key (for agents)").check()
    alice.get_by_label("Let this key reach Garden club").check()
    alice.get_by_role("button", name="Limit to a path").click()
    alice.locator(".space-ceiling").get_by_label(re.compile(r"^Path: ")).click()
    alice.locator(".space-ceiling .path-panel").get_by_role(
        "treeitem", name=re.compile(r"^tasks")
    ).click()
    alice.locator(".space-ceiling").get_by_label("Level").select_option("WRITE")
    alice.get_by_role("button", name="Create token").click()
    alice.get_by_role("dialog").get_by_role("button", name="Close").click()
    expect(alice.locator(".token", has_text="garden agent")).to_contain_text(
        "Garden club: share.tasks (Write)"
    )
    pats = server.api("alice", "GET", "/users/alice/personalAccessTokens")["personalAccessTokens"]
    restriction = next(p for p in pats if p["description"] == "garden agent")["restriction"]
    assert [(d["space"], d["trees"]) for d in restriction["spaces"]] == [
        (space["name"], [{"path": "share.tasks", "level": "WRITE"}])
    ]

    # Screens for the record (desktop, then phone).
    alice.goto(f"/#/space/{uid}?tab=access")
    expect(alice.get_by_role("tree", name="Access")).to_be_visible()
    _shot(alice, "space-access-desktop")
    alice.goto(f"/#/space/{uid}")
    expect(card(alice, "Watering rota")).to_be_visible()
    _shot(alice, "space-desktop")
    alice.set_viewport_size(PHONE)
    _shot(alice, "space-phone")

    # No invalid `pattern` (or any other) console error on these screens.
    assert not [
        e for e in alice_console if "pattern" in e.lower() or "regular expression" in e.lower()
    ]
    assert alice.js_errors == [] and bob.js_errors == [] and carol.js_errors == []


def test_wrong_password_says_so_and_keeps_the_username(new_page: Any, server: Server) -> None:
    """Issue 19 defect 1: an inline error, the username kept, then signing in works."""
    ensure_admin(server)
    page = new_page()
    page.goto("/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password", exact=True).fill("not-the-password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".form-error")).to_have_text("Wrong username or password.")
    expect(page.get_by_label("Username")).to_have_value("alice")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_label(EDITOR).wait_for()
    assert page.js_errors == []


def test_archive_has_undo(new_page: Any, signed_in: Any, server: Server) -> None:
    """Archiving offers Undo; Undo puts the memo back in the timeline and on the server."""
    ensure_admin(server)
    memo = server.api("alice", "POST", "/memos", json={"content": "Return the library books"})
    page = signed_in("alice")
    # The heatmap has month and weekday labels and a legend.
    side = page.locator(".sidebar")
    expect(side.locator(".heat-month").filter(has_text=re.compile(r"[A-Za-z]"))).not_to_have_count(
        0
    )
    expect(side.locator(".heat-days")).to_contain_text("Mon")
    expect(side.locator(".heat-legend")).to_contain_text("Less")
    expect(side.locator(".heat-legend .legend-cell")).to_have_count(5)
    _shot(page, "timeline-heatmap-desktop")
    c = card(page, "Return the library books")
    c.get_by_label("Actions").click()
    c.get_by_role("menuitem", name="Archive").click()
    expect(card(page, "Return the library books")).to_have_count(0)
    page.locator("#toasts").get_by_role("button", name="Undo").click()
    expect(card(page, "Return the library books")).to_be_visible()
    assert server.api("alice", "GET", f"/{memo['name']}")["state"] == "NORMAL"
    assert page.js_errors == []


def test_an_open_menu_survives_the_space_access_arriving(new_page: Any, server: Server) -> None:
    """The caller's space access arrives after the timeline is drawn: the space
    cards are drawn again with the controls their grants allow, in place, and a
    menu opened on another card meanwhile stays open (the whole timeline used to
    be replaced, closing it under the reader's pointer: a CI failure)."""
    ensure_admin(server)
    server.create_user("alice", "mira")
    space = server.api("mira", "POST", "/spaces", json={"title": "Greenhouse"})
    server.api(
        "mira",
        "POST",
        "/memos",
        json={"content": "Water the seedlings", "space": space["name"], "tree": "share"},
    )
    server.api("mira", "POST", "/memos", json={"content": "Call the plumber"})
    page = new_page()
    held: list[Any] = []
    page.route(re.compile(r"/api/v1/spaces/[^/?]+/access"), lambda route: held.append(route))
    sign_in(page, "mira")
    placed = card(page, "Water the seedlings")
    expect(placed).to_be_visible()
    expect(placed.get_by_label("Actions")).to_have_count(0)  # no access known yet
    personal = card(page, "Call the plumber")
    personal.get_by_label("Actions").click()
    expect(personal.get_by_role("menuitem", name="Archive")).to_be_visible()
    for _ in range(200):
        if held:
            break
        page.wait_for_timeout(25)
    assert held, "the client never asked for the space access"
    for route in held:
        route.continue_()
    expect(placed.get_by_label("Actions")).to_be_visible()  # drawn again with its controls
    expect(personal.get_by_role("menuitem", name="Archive")).to_be_visible()  # still open
    personal.get_by_role("menuitem", name="Archive").click()
    expect(personal).to_have_count(0)
    assert page.js_errors == []


def test_reset_link_page_sets_the_users_own_password(new_page: Any, server: Server) -> None:
    """The page a one-time reset link opens: the user sets its own password (decision 0022).

    (Was a module of its own, with its own server and browser.)"""
    ensure_admin(server)
    server.create_user("alice", "dana")
    link = server.api("alice", "POST", "/users/dana/passwordResets")["resetUrl"]
    assert link.startswith(server.url + "/reset-password#token=dbk_reset_")

    page = new_page()
    page.goto(link)
    assert "#token" not in page.url  # dropped from the address bar (and history)
    # The rule is on the page, and checked before anything is sent.
    expect(page.locator("#pw-rule")).to_have_text("At least 8 characters, at most 1024 bytes.")
    page.fill("#pw", "short")
    page.fill("#pw2", "short")
    page.click("button[type=submit]")
    expect(page.locator("#pw")).to_have_js_property(
        "validationMessage", "The password needs at least 8 characters."
    )
    page.fill("#pw", "danas-own-pass")
    page.fill("#pw2", "danas-own-pass")
    page.click("button[type=submit]")
    page.wait_for_selector("text=Password set for dana")
    assert page.js_errors == []
    csp = httpx.get(f"{server.url}/reset-password").headers["content-security-policy"]
    assert "script-src 'self'" in csp
    server.sign_in("dana", "danas-own-pass")
    r = httpx.post(
        f"{server.url}/api/v1/auth/signin",
        json={"passwordCredentials": {"username": "dana", "password": PASSWORD}},
    )
    assert r.status_code == 401
