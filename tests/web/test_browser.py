"""The web client end to end, in Debian's chromium (see conftest.py for skips)."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import PASSWORD, Server
from tests.web.pages import EDITOR, card, ensure_admin, memo_action, sign_in, write_memo


def test_first_user_journey(new_page: Any, server: Server) -> None:
    """Sign up, write, tick, filter, search, edit, archive and restore."""
    page = new_page()
    page.goto("/")
    expect(page.get_by_role("heading", name="Create your account")).to_be_visible()
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Repeat password").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    editor = page.get_by_label(EDITOR)
    editor.wait_for()
    server.sign_in("alice")

    # Write: Ctrl+Enter puts the memo in the timeline, the editor empties.
    write_memo(page, "Weekend groceries #errands\n- [ ] buy milk\n- [ ] bread")
    expect(editor).to_have_value("")
    write_memo(page, "Standup notes about the release")
    groceries = card(page, "Weekend groceries")
    expect(groceries.locator(".tag", has_text="#errands")).to_be_visible()

    # #tag autocomplete offers the user's tags.
    editor.fill("Call the plumber #er")
    expect(page.get_by_role("option", name="#errands")).to_be_visible()
    editor.press("Enter")
    expect(editor).to_have_value("Call the plumber #errands ")
    editor.fill("")

    # Tick a task in place: the source is patched, the box stays ticked.
    with page.expect_response(lambda r: r.request.method == "PATCH" and r.ok):
        groceries.get_by_label("task 1").click()  # ticks at once; the PATCH is awaited
    expect(card(page, "Weekend groceries").get_by_label("task 1")).to_be_checked()
    memos = server.api("alice", "GET", "/memos", params={"filter": '"errands" in tags'})["memos"]
    assert memos[0]["content"].startswith("Weekend groceries #errands\n- [x] buy milk\n- [ ] bread")

    # Filter by the tag from the sidebar's tag tree.
    page.locator(".sidebar").get_by_role("button", name=re.compile(r"#errands")).click()
    expect(page).to_have_url(re.compile(r"tag=errands"))
    expect(card(page, "Weekend groceries")).to_be_visible()
    expect(card(page, "Standup notes")).to_have_count(0)
    page.get_by_role("button", name="Remove filter #errands").click()
    expect(card(page, "Standup notes")).to_be_visible()

    # Search: "/" focuses the box.
    page.locator("body").click(position={"x": 5, "y": 790})
    page.keyboard.press("/")
    search = page.get_by_label("Search", exact=True)
    expect(search).to_be_focused()
    search.fill("groceries")
    search.press("Enter")
    expect(page).to_have_url(re.compile(r"q=groceries"))
    # Results, not a timeline (decision 0034): a count, the hit, its term marked.
    expect(page.locator(".result-count")).to_have_text("1 result for “groceries”")
    hit = page.locator("li.result", has_text="Weekend groceries")
    expect(hit.locator("mark")).to_have_text("groceries")
    expect(page.locator("li.result", has_text="Standup notes")).to_have_count(0)
    page.get_by_role("link", name="Home").click()

    # Edit inline.
    memo_action(page, "Standup notes", "Edit")
    inline = page.locator("article.memo-card").get_by_label(EDITOR)
    expect(inline).to_have_value("Standup notes about the release")
    inline.fill("Standup notes about the release, edited")
    inline.press("Control+Enter")
    expect(card(page, "release, edited")).to_be_visible()

    # Archive, find it under Archived, restore it.
    memo_action(page, "release, edited", "Archive")
    expect(card(page, "release, edited")).to_have_count(0)
    page.get_by_role("link", name="Archived").click()
    expect(card(page, "release, edited")).to_be_visible()
    memo_action(page, "release, edited", "Restore")
    expect(card(page, "release, edited")).to_have_count(0)
    page.get_by_role("link", name="Home").click()
    expect(card(page, "release, edited")).to_be_visible()

    # Keyboard: "n" focuses the editor; a draft survives a reload.
    page.locator("body").click(position={"x": 5, "y": 790})
    page.keyboard.press("n")
    expect(editor).to_be_focused()
    editor.fill("half-written thought")
    page.wait_for_timeout(400)  # the draft is saved after a 250 ms pause
    page.reload()
    expect(page.get_by_label(EDITOR)).to_have_value("half-written thought")

    # Delete with confirmation.
    memo_action(page, "Weekend groceries", "Delete")
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(card(page, "Weekend groceries")).to_have_count(0)
    assert page.js_errors == []


def test_restricted_key_for_an_agent(new_page: Any, signed_in: Any, server: Server) -> None:
    ensure_admin(server)
    page = signed_in("alice")
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Description").fill("calendar agent")
    page.get_by_label("Restrict this key (for agents)").check()
    page.get_by_label("Read and write").check()
    page.get_by_label("Only mine").check()
    page.get_by_role("button", name="Create token").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("will not be shown again")
    secret = dialog.locator("code.secret").inner_text()
    dialog.get_by_role("button", name="Close").click()
    expect(page.locator(".token", has_text="calendar agent")).to_contain_text(
        "restricted: Read and write; personal memos: Only mine; spaces: none"
    )
    token = server.api("alice", "GET", "/users/alice/personalAccessTokens")
    made = [t for t in token["personalAccessTokens"] if t["description"] == "calendar agent"]
    assert made[0]["restriction"]["scope"] == "WRITE"
    assert made[0]["restriction"]["personal"] == "OWN"
    server.tokens["agent"] = secret
    server.api("agent", "GET", "/memos")  # the key works


def test_second_user_sees_protected_but_not_private(new_page: Any, server: Server) -> None:
    ensure_admin(server)
    server.api(
        "alice", "POST", "/memos", json={"content": "alice private diary", "visibility": "PRIVATE"}
    )
    server.api(
        "alice", "POST", "/memos", json={"content": "alice team update", "visibility": "PROTECTED"}
    )
    server.create_user("alice", "bob")
    page = new_page()  # another browser context: its own cookies
    sign_in(page, "bob")
    # Home is bob's own memos (issue 19, defect 4): alice's are on Explore.
    expect(page.locator(".feed-status")).to_have_text("No memos here yet.")
    expect(card(page, "alice team update")).to_have_count(0)
    page.get_by_role("link", name="Explore").click()
    expect(card(page, "alice team update")).to_be_visible()
    expect(card(page, "alice private diary")).to_have_count(0)
    # bob cannot tick or edit alice's memo: no actions menu on it.
    expect(card(page, "alice team update").get_by_label("Actions")).to_have_count(0)


HOSTILE = (
    "hostile <script>window.__pwned = 1</script>\n\n"
    '<img src=x onerror="window.__pwned = 2"> <b>raw bold</b>\n\n'
    "[click me](javascript:window.__pwned=3) [data](data:text/html,<script>1</script>) "
    '<a href="javascript:window.__pwned=4">html link</a>\n\n'
    "![remote](https://example.invalid/pixel.png)"
)


def test_hostile_content_renders_inert(new_page: Any, signed_in: Any, server: Server) -> None:
    ensure_admin(server)
    server.api("alice", "POST", "/memos", json={"content": HOSTILE})
    page = signed_in("alice")
    memo = card(page, "hostile")
    expect(memo).to_be_visible()
    content = memo.locator(".memo-content")
    expect(content).to_contain_text("<script>window.__pwned = 1</script>")
    expect(content).to_contain_text("<b>raw bold</b>")
    assert content.locator("script, b, iframe, object").count() == 0
    assert content.locator("img").count() == 0  # neither the raw one nor the remote one
    hrefs = content.locator("a").evaluate_all("els => els.map(a => a.getAttribute('href'))")
    assert not any(h and h.lower().startswith(("javascript:", "data:")) for h in hrefs)
    memo.get_by_text("click me", exact=False).click()
    assert page.evaluate("window.__pwned") is None
    # A remote image waits for a click.
    memo.get_by_role("button", name=re.compile("Load remote image")).click()
    expect(content.locator("img")).to_have_attribute("src", "https://example.invalid/pixel.png")
    assert page.evaluate("window.__pwned") is None
    assert page.js_errors == []


def test_comments_reactions_and_a_share_link(new_page: Any, signed_in: Any, server: Server) -> None:
    ensure_admin(server)
    server.api(
        "alice",
        "POST",
        "/memos",
        json={"content": "Lunch plans for friday", "visibility": "PROTECTED"},
    )
    page = signed_in("alice")
    memo = card(page, "Lunch plans")
    memo.get_by_role("button", name="Comments").click()
    memo.get_by_label("Write a comment").fill("count me in")
    memo.get_by_role("button", name="Send").click()
    expect(memo.locator(".comment")).to_contain_text("count me in")

    memo.get_by_label("Add a reaction").click()
    memo.get_by_role("button", name="React with 🎉").click()
    expect(card(page, "Lunch plans").locator(".reaction.mine")).to_contain_text("🎉 1")

    memo_action(page, "Lunch plans", "Copy share link")
    # Not Private: no warning, but still a choice (expiry) before the link exists.
    dialog = page.get_by_role("dialog", name="Share link")
    expect(dialog).not_to_contain_text("This memo is Private")
    dialog.get_by_role("button", name="Create and copy link").click()
    expect(page.locator("#toasts")).to_contain_text("Share link copied.")
    name = server.api(
        "alice", "GET", "/memos", params={"filter": 'content.contains("Lunch plans")'}
    )["memos"][0]["name"]
    shares = server.api("alice", "GET", f"/{name}/shares")["memoShares"]
    anonymous = new_page()
    anonymous.goto(f"/#/share/{shares[0]['token']}")
    expect(card(anonymous, "Lunch plans for friday")).to_be_visible()
    expect(anonymous.get_by_label(EDITOR)).to_have_count(0)


def test_heatmap_day_and_keyboard_navigation(new_page: Any, signed_in: Any, server: Server) -> None:
    ensure_admin(server)
    server.api("alice", "POST", "/memos", json={"content": "written today for the heatmap"})
    page = signed_in("alice")
    today = page.evaluate(
        "() => { const d = new Date(); const p = (n) => String(n).padStart(2, '0');"
        " return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`; }"
    )
    page.locator(f'.heatmap button[data-day="{today}"]').click()
    expect(page).to_have_url(re.compile(f"day={today}"))
    expect(card(page, "written today for the heatmap")).to_be_visible()
    expect(page.get_by_role("button", name=f"Remove filter Day {today}")).to_be_visible()
    page.locator("body").click(position={"x": 5, "y": 790})
    page.keyboard.press("j")
    expect(page.locator("article.memo-card").first).to_be_focused()
    page.keyboard.press("j")
    expect(page.locator("article.memo-card").nth(1)).to_be_focused()
    page.keyboard.press("k")
    expect(page.locator("article.memo-card").first).to_be_focused()
