"""Issue 19's defects that had no browser test pinning them (decision 0034).

One server for the module; the first test creates the first account in the
browser (defect 2 needs a fresh instance), so it must run first.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import PASSWORD, Server
from tests.web.pages import EDITOR, card, ensure_admin, memo_action, sign_in, write_memo


def test_first_setup_sign_out_and_default_visibility(new_page: Any, server: Server) -> None:
    page = new_page()
    page.goto("/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Repeat password").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    page.get_by_label(EDITOR).wait_for()
    server.sign_in("alice")

    # Defect 3: after a Public memo the next one is Private again, and after a reload.
    visibility = page.locator("form.composer").get_by_label("Visibility")
    expect(visibility).to_have_value("PRIVATE")
    visibility.select_option("PUBLIC")
    write_memo(page, "Open announcement")
    expect(visibility).to_have_value("PRIVATE")
    page.reload()
    expect(page.locator("form.composer").get_by_label("Visibility")).to_have_value("PRIVATE")

    # Defect 2: signing out right after the first setup offers Sign in, which works.
    page.get_by_role("button", name="Sign out").first.click()
    expect(page.get_by_role("heading", name="Welcome back")).to_be_visible()
    expect(page.get_by_role("heading", name="Create your account")).to_have_count(0)
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_label(EDITOR)).to_be_visible()
    assert page.js_errors == []


def test_quick_actions_give_feedback(new_page: Any, server: Server) -> None:
    """Defect 8 (slow tick, Pin, Esc) and 10 ("1 comment", the "edited" marker)."""
    ensure_admin(server)
    server.create_user("alice", "quick")
    hour_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    older = server.api("quick", "POST", "/memos", json={"content": "Older memo"})
    server.api(
        "quick", "POST", "/memos", json={"content": "Backdated draft", "createTime": hour_ago}
    )
    backdated = server.api("quick", "GET", "/memos")["memos"][-1]
    server.api(
        "quick",
        "PATCH",
        f"/{backdated['name']}",
        params={"updateMask": "content"},
        json={"content": "Backdated draft, revised"},
    )
    server.api("quick", "POST", "/memos", json={"content": "Chores\n- [ ] water plants"})
    server.api("quick", "POST", "/memos", json={"content": "Newest memo"})
    page = new_page()
    sign_in(page, "quick")

    # "edited" on a memo changed after it was written; none on the others.
    expect(card(page, "Backdated draft, revised").locator(".edited")).to_have_text("edited")
    expect(card(page, "Newest memo").locator(".edited")).to_have_count(0)

    # A tick shows at once on a slow connection (1.5 s per request), then sticks.
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    slow = {"offline": False, "latency": 1500, "downloadThroughput": -1, "uploadThroughput": -1}
    cdp.send("Network.emulateNetworkConditions", slow)
    box = card(page, "Chores").get_by_label("task 1")
    box.click()
    expect(box).to_be_checked(timeout=700)
    fast = {**slow, "latency": 0}
    page.wait_for_function(
        "() => document.querySelector('article.memo-card input[data-task]')?.checked"
    )
    cdp.send("Network.emulateNetworkConditions", fast)
    expect(card(page, "Chores").get_by_label("task 1")).to_be_checked()
    chores = next(
        m for m in server.api("quick", "GET", "/memos")["memos"] if "Chores" in m["content"]
    )
    assert "- [x] water plants" in chores["content"]

    # Pin moves the memo to the top without a reload.
    memo_action(page, "Older memo", "Pin")
    expect(page.locator("article.memo-card").first).to_contain_text("Older memo")
    expect(page.locator("article.memo-card").first.locator(".badge.pin")).to_be_visible()
    assert server.api("quick", "GET", f"/{older['name']}")["pinned"] is True

    # Esc while editing with changes asks; Cancel keeps the text, Discard drops it.
    memo_action(page, "Newest memo", "Edit")
    inline = page.locator("form.composer.editing textarea")
    inline.fill("Newest memo, half rewritten")
    inline.press("Escape")
    dlg = page.get_by_role("dialog")
    expect(dlg).to_contain_text("Discard your changes to this memo?")
    dlg.get_by_role("button", name="Cancel").click()
    expect(inline).to_have_value("Newest memo, half rewritten")
    inline.press("Escape")
    page.get_by_role("dialog").get_by_role("button", name="Discard").click()
    expect(page.locator("form.composer.editing")).to_have_count(0)
    expect(card(page, "Newest memo")).to_have_count(1)
    contents = {m["content"] for m in server.api("quick", "GET", "/memos")["memos"]}
    assert "Newest memo" in contents and "Newest memo, half rewritten" not in contents
    # Esc without changes just leaves the editor.
    memo_action(page, "Newest memo", "Edit")
    page.locator("form.composer.editing textarea").press("Escape")
    expect(page.locator("form.composer.editing")).to_have_count(0)

    # "1 comment", not "1 comments".
    newest = card(page, "Newest memo")
    newest.get_by_role("button", name="Comments").click()
    newest.get_by_label("Write a comment").fill("First!")
    newest.get_by_label("Write a comment").press("Control+Enter")
    expect(newest.get_by_role("button", name="1 comment", exact=True)).to_be_visible()
    assert page.js_errors == []


def test_mixed_list_keeps_bullets_and_space_page_sends_no_400(
    new_page: Any, server: Server
) -> None:
    """Defect 7 (bullets beside tasks, preview = timeline) and defect 9 (no 400 on a space page)."""
    ensure_admin(server)
    server.create_user("alice", "lister")
    space = server.api("lister", "POST", "/spaces", json={"title": "Allotment"})
    page = new_page()
    sign_in(page, "lister")
    content = "Shopping\n- apples\n- [ ] pears\n- plums"
    editor = page.get_by_label(EDITOR)
    editor.fill(content)
    page.get_by_role("button", name="Preview").click()
    preview = page.locator(".preview")
    expect(preview.locator("li")).to_have_count(3)
    expect(preview.locator("li input[type=checkbox]")).to_have_count(1)
    preview_bullets = preview.locator("li").evaluate_all(
        "(els) => els.map((li) => getComputedStyle(li).listStyleType)"
    )
    page.get_by_role("button", name="Write").click()
    editor.press("Control+Enter")
    saved = card(page, "Shopping")
    expect(saved.locator("li")).to_have_count(3)
    expect(saved.locator("li input[type=checkbox]")).to_have_count(1)
    card_bullets = saved.locator("li").evaluate_all(
        "(els) => els.map((li) => getComputedStyle(li).listStyleType)"
    )
    assert card_bullets == preview_bullets
    assert card_bullets[0] != "none" and card_bullets[2] != "none", card_bullets

    bad: list[str] = []
    page.on("response", lambda r: bad.append(r.url) if r.status == 400 else None)
    uid = space["name"].removeprefix("spaces/")
    page.goto(f"/#/space/{uid}")
    expect(page.get_by_role("heading", name="Allotment").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert bad == []
    assert page.js_errors == []
