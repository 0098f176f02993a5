"""Tag management, the calendar, search results, the installable app, and the
issue 19 defects that had no browser test pinning them (docs/decisions/0034).

One server (and one browser) for the module, to keep CI time small. The
first test creates the first account in the browser (defect 2 needs a fresh
instance), so it must stay first. Each test signs in once; two users where
another person's memos must stay untouched.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import PASSWORD, Server
from tests.web.pages import EDITOR, card, ensure_admin, memo_action, sign_in, write_memo

PHONE = {"width": 390, "height": 844}
# The web client's kept files (IndexedDB, decision 0039): id, queued memo, bytes still here.
KEPT_FILES = """() => new Promise((resolve, reject) => {
    const open = indexedDB.open('daybook-files', 1);
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
        const all = open.result.transaction('files').objectStore('files').getAll();
        all.onsuccess = () => {
            open.result.close();
            resolve(all.result.map((f) => ({ id: f.id, memo: f.memo, blob: Boolean(f.blob) })));
        };
    };
})"""
DOT_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_first_setup_sign_out_and_default_visibility(new_page: Any, server: Server) -> None:
    page = new_page()
    page.goto("/")
    page.get_by_label("Username").fill("alice")
    # Defect 10: the password rule is there before anything fails.
    expect(page.locator(".auth form")).to_contain_text("At least 8 characters, at most 1024 bytes.")
    page.get_by_label("Password", exact=True).fill("short")
    page.get_by_label("Repeat password").fill("short")
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_label("Password", exact=True)).to_have_js_property(
        "validationMessage", "The password needs at least 8 characters."
    )
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
    # The server is read only once the tick's PATCH has been answered: on a
    # loaded machine it may still be in flight when the box shows checked.
    with page.expect_response(
        lambda r: r.request.method == "PATCH" and "/api/v1/memos/" in r.url
    ) as saved:
        box.click()
        expect(box).to_be_checked(timeout=700)
        fast = {**slow, "latency": 0}
        page.wait_for_function(
            "() => document.querySelector('article.memo-card input[data-task]')?.checked"
        )
        cdp.send("Network.emulateNetworkConditions", fast)
    assert saved.value.ok
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
    """Defects 7 (bullets beside tasks, preview = timeline), 6 (an image once) and 9 (no 400)."""
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

    # Defect 6: an uploaded image is a chip, not a Markdown line, and shows once.
    png = base64.b64decode(DOT_PNG)
    page.locator("form.composer input[type=file]").set_input_files(
        files=[{"name": "dot.png", "mimeType": "image/png", "buffer": png}]
    )
    chip = page.locator(".pending-files li", has_text="dot.png")
    expect(chip).to_be_visible()
    expect(page.locator(".pending-files")).not_to_contain_text("Uploading")
    editor.fill("Photo of the plot")
    assert "/file/" not in editor.input_value()
    editor.press("Control+Enter")
    photo = card(page, "Photo of the plot")
    expect(photo.locator("img")).to_have_count(1)
    expect(page.locator(".pending-files li")).to_have_count(0)
    stored = next(m for m in _mine(server, "lister") if m["content"] == "Photo of the plot")
    assert [a["filename"] for a in stored["attachments"]] == ["dot.png"]

    bad: list[str] = []
    page.on("response", lambda r: bad.append(r.url) if r.status == 400 else None)
    uid = space["name"].removeprefix("spaces/")
    page.goto(f"/#/space/{uid}")
    expect(page.get_by_role("heading", name="Allotment").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert bad == []
    assert page.js_errors == []


def _user(server: Server, name: str) -> None:
    ensure_admin(server)
    if name not in server.tokens:
        server.create_user("alice", name)


def _mine(server: Server, user: str) -> list[dict[str, Any]]:
    res = server.api(user, "GET", "/memos", params={"filter": f'creator == "users/{user}"'})
    return list(res.get("memos", []))


def test_rename_merge_delete_a_tag(new_page: Any, server: Server) -> None:
    _user(server, "tagger")
    _user(server, "bystander")
    for text in ("Standup notes #work", "Sprint plan #work/q4", "Interview #job"):
        server.api("tagger", "POST", "/memos", json={"content": text})
    server.api("bystander", "POST", "/memos", json={"content": "Not yours #work"})
    page = new_page(color_scheme="dark")
    sign_in(page, "tagger")
    page.get_by_role("link", name="Manage tags").click()
    expect(page).to_have_url(re.compile("#/tags$"))
    rows = page.locator(".tag-row")
    expect(rows.filter(has_text="#work/q4")).to_have_count(1)

    # Rename #work → #project: the sub-tag moves with it.
    page.get_by_role("button", name="Rename #work", exact=True).click()
    dlg = page.get_by_role("dialog")
    dlg.get_by_label("New name").fill("project")
    dlg.get_by_role("button", name="Save").click()
    expect(page.locator(".toast", has_text="Renamed #work to #project in 2 memos.")).to_be_visible()
    expect(rows.filter(has_text="#project/q4")).to_have_count(1, timeout=10_000)
    expect(rows.filter(has_text="#work")).to_have_count(0)
    contents = {m["content"] for m in _mine(server, "tagger")}
    assert contents == {"Standup notes #project", "Sprint plan #project/q4", "Interview #job"}
    assert [m["content"] for m in _mine(server, "bystander")] == ["Not yours #work"]

    # Merge #project into #job (chosen from the existing tags).
    page.get_by_role("button", name="Merge #project into another tag").click()
    dlg = page.get_by_role("dialog")
    dlg.get_by_label("Merge into").select_option("job")
    dlg.get_by_role("button", name="Save").click()
    expect(page.locator(".toast", has_text="Merged #project into #job in 2 memos.")).to_be_visible()
    expect(rows.filter(has_text="#project")).to_have_count(0, timeout=10_000)

    # Delete #job: cancel changes nothing, confirm un-tags all three.
    page.get_by_role("button", name="Delete #job", exact=True).click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    assert len([m for m in _mine(server, "tagger") if "#job" in m["content"]]) == 3
    page.get_by_role("button", name="Delete #job", exact=True).click()
    page.get_by_role("dialog").get_by_role("button", name="Delete tag").click()
    expect(page.get_by_text("Tags you write as #tag show up here.").first).to_be_visible()
    memos = _mine(server, "tagger")
    assert {m["content"] for m in memos} == {
        "Standup notes job",
        "Sprint plan job/q4",
        "Interview job",
    }
    # Every rewrite is a version in the memo's history.
    standup = next(m for m in memos if m["content"].startswith("Standup"))
    history = server.api("tagger", "GET", f"/{standup['name']}/history")["versions"]
    assert [v["content"] for v in history][:4] == [
        "Standup notes job",
        "Standup notes #job",
        "Standup notes #project",
        "Standup notes #work",
    ]
    assert [m["content"] for m in _mine(server, "bystander")] == ["Not yours #work"]
    assert page.js_errors == []


def test_backdate_a_memo_and_the_month_calendar(new_page: Any, server: Server) -> None:
    _user(server, "diarist")
    page = new_page(viewport=PHONE)
    sign_in(page, "diarist")
    yesterday = dt.date.today() - dt.timedelta(days=1)

    # Write yesterday's entry: the date field sets the memo's display time.
    page.get_by_label("Date of the memo").first.fill(yesterday.isoformat())
    page.get_by_label(EDITOR).fill("Backfilled entry")
    page.get_by_label(EDITOR).press("Control+Enter")
    expect(card(page, "Backfilled entry")).to_have_count(1)
    (memo,) = _mine(server, "diarist")
    shown = dt.datetime.fromisoformat(memo["displayTime"].replace("Z", "+00:00")).astimezone()
    assert shown.date() == yesterday
    assert page.get_by_label("Date of the memo").first.input_value() == ""  # next one: now again

    # The month view marks the day; a day opens Home filtered to it.
    page.goto(f"/#/calendar?month={yesterday:%Y-%m}")
    day = page.locator(f'.cal-day[data-day="{yesterday.isoformat()}"]')
    expect(day).to_have_class(re.compile("has-memos"))
    expect(page.locator(".cal-day.has-memos")).to_have_count(1)
    title = page.locator(".cal-title")
    before = title.text_content()
    page.get_by_role("button", name="Previous month").click()
    expect(title).not_to_have_text(before or "")
    expect(page.locator(".cal-day.has-memos")).to_have_count(0)
    page.get_by_role("button", name="Next month").click()
    expect(title).to_have_text(before or "")
    page.locator(f'.cal-day[data-day="{yesterday.isoformat()}"]').click()
    expect(page).to_have_url(re.compile(rf"#/\?day={yesterday.isoformat()}$"))
    expect(card(page, "Backfilled entry")).to_have_count(1)

    # Editing moves it to another day (two days ago).
    server.api("diarist", "POST", "/memos", json={"content": "Today entry"})
    page.goto("/#/")
    earlier = yesterday - dt.timedelta(days=1)
    c = card(page, "Backfilled entry")
    c.get_by_label("Actions").click()
    c.get_by_role("menuitem", name="Edit").click()
    editing = page.locator("form.composer.editing")
    editing.get_by_label("Date of the memo").fill(earlier.isoformat())
    editing.get_by_role("button", name="Save").click()
    expect(editing).to_have_count(0)
    moved = next(m for m in _mine(server, "diarist") if m["content"] == "Backfilled entry")
    when = dt.datetime.fromisoformat(moved["displayTime"].replace("Z", "+00:00")).astimezone()
    assert when.date() == earlier
    assert page.js_errors == []


def test_search_shows_results_with_what_matched(new_page: Any, server: Server) -> None:
    _user(server, "seeker")
    for text in ("Apple pie recipe with cinnamon", "Banana bread", "Notes on apple trees"):
        server.api("seeker", "POST", "/memos", json={"content": text})
    page = new_page()
    sign_in(page, "seeker")
    page.get_by_role("searchbox").fill("apple")
    page.get_by_role("searchbox").press("Enter")
    count = page.locator(".result-count")
    expect(count).to_have_text("2 results for “apple”")
    results = page.locator("ol.results > li.result")
    expect(results).to_have_count(2)
    expect(results.filter(has_text="Banana")).to_have_count(0)
    marks = page.locator(".result mark")
    expect(marks).to_have_count(2)
    assert {m.lower() for m in marks.all_text_contents()} == {"apple"}
    expect(results.first.locator(".result-why")).to_contain_text("apple")
    # No timeline cards on a search: results only; the link opens the memo page.
    expect(page.locator("article.memo-card")).to_have_count(0)
    results.filter(has_text="Apple pie").get_by_role("link").click()
    expect(page).to_have_url(re.compile("#/m/"))
    page.goto("/#/?q=zzzqqq")
    expect(count).to_have_text("No memos match “zzzqqq”.")
    assert page.js_errors == []


def test_offline_timeline_outbox_and_share_target(new_page: Any, server: Server) -> None:
    _user(server, "traveller")
    server.api("traveller", "POST", "/memos", json={"content": "Packed the bags"})
    page = new_page()
    ctx = page.context
    sign_in(page, "traveller")
    page.evaluate("() => navigator.serviceWorker.ready.then(() => true)")
    page.reload()  # now controlled by the worker, which keeps what this load fetches
    expect(card(page, "Packed the bags")).to_have_count(1)
    page.wait_for_function("() => navigator.serviceWorker.controller !== null")
    manifest = page.evaluate("fetch('/assets/manifest.webmanifest').then((r) => r.json())")
    assert manifest["share_target"]["action"] == "/share-target"

    # Offline: the app opens with the last timeline.
    ctx.set_offline(True)
    page.reload()
    expect(card(page, "Packed the bags")).to_have_count(1)
    # A memo written offline is kept, then sent once when back online.
    page.get_by_label(EDITOR).fill("Written on the train")
    page.get_by_label(EDITOR).press("Control+Enter")
    expect(page.locator(".toast", has_text="Offline: the memo is kept here")).to_be_visible()
    queued = page.evaluate("JSON.parse(localStorage.getItem('daybook.outbox.traveller'))")
    assert len(queued) == 1 and queued[0]["body"]["content"] == "Written on the train"
    assert all(m["content"] != "Written on the train" for m in _mine(server, "traveller"))
    ctx.set_offline(False)
    page.evaluate("window.dispatchEvent(new Event('online'))")
    page.wait_for_function("() => localStorage.getItem('daybook.outbox.traveller') === null")
    sent = [m for m in _mine(server, "traveller") if m["content"] == "Written on the train"]
    assert len(sent) == 1 and sent[0]["name"] == f"memos/{queued[0]['id']}"  # its client id
    # A retry of an entry that did get through (the answer was lost) is no duplicate.
    page.evaluate(
        """async (item) => {
            const m = await import('/assets/outbox.js');
            m.enqueue('traveller', item.id, item.body);
            await m.flush('traveller');
        }""",
        queued[0],
    )
    again = [m for m in _mine(server, "traveller") if m["content"] == "Written on the train"]
    assert len(again) == 1
    assert page.evaluate("localStorage.getItem('daybook.outbox.traveller')") is None

    # Files: one uploaded online rides with a memo queued offline (bound in the
    # create); one chosen offline is kept in IndexedDB, shown as kept, and
    # uploaded under its own id before the memo once back online (decision 0039).
    png = base64.b64decode(DOT_PNG)
    # Opened offline, the app found no attachments endpoint; online again, it asks again.
    expect(page.locator("form.composer").get_by_role("button", name="Attach files")).to_be_visible()
    files = page.locator("form.composer input[type=file]")
    with page.expect_response(lambda r: r.request.method == "POST" and "/attachments?" in r.url):
        files.set_input_files(
            files=[{"name": "ticket.png", "mimeType": "image/png", "buffer": png}]
        )
    expect(page.locator(".pending-files li", has_text="ticket.png")).to_have_text("ticket.png ×")
    ctx.set_offline(True)
    files.set_input_files(files=[{"name": "late.png", "mimeType": "image/png", "buffer": png}])
    expect(page.locator(".pending-files li.kept", has_text="late.png")).to_contain_text(
        "kept here, sent when online"
    )
    expect(page.locator(".pending-files li")).to_have_count(2)
    page.get_by_label(EDITOR).fill("Train ticket")
    page.get_by_label(EDITOR).press("Control+Enter")
    page.wait_for_function("() => localStorage.getItem('daybook.outbox.traveller') !== null")
    entry = page.evaluate("JSON.parse(localStorage.getItem('daybook.outbox.traveller'))")[0]
    assert len(entry["files"]) == 1 and len(entry["body"]["attachments"]) == 2
    assert [f["memo"] for f in page.evaluate(KEPT_FILES)] == [entry["id"]]
    ctx.set_offline(False)
    page.evaluate("window.dispatchEvent(new Event('online'))")
    page.wait_for_function("() => localStorage.getItem('daybook.outbox.traveller') === null")
    ticket = [m for m in _mine(server, "traveller") if m["content"] == "Train ticket"]
    assert [[a["filename"] for a in m["attachments"]] for m in ticket] == [
        ["ticket.png", "late.png"]
    ]
    assert entry["files"] == [
        a["name"] for a in ticket[0]["attachments"] if a["filename"] == "late.png"
    ]
    assert page.evaluate(KEPT_FILES) == []

    # Kept across a reload like the draft's text, and sent exactly once through
    # lost answers: the upload's (the server has it, the app does not know),
    # then the memo create's. Each retry repeats the upload under the same id.
    ctx.set_offline(True)
    files.set_input_files(files=[{"name": "receipt.png", "mimeType": "image/png", "buffer": png}])
    expect(page.locator(".pending-files li.kept", has_text="receipt.png")).to_be_visible()
    page.reload()
    expect(page.locator(".pending-files li.kept", has_text="receipt.png")).to_be_visible()
    page.get_by_label(EDITOR).fill("Receipt")
    page.get_by_label(EDITOR).press("Control+Enter")
    page.wait_for_function("() => localStorage.getItem('daybook.outbox.traveller') !== null")
    lost = {"attachments": 1, "memos": 1}

    def lose_answer(route: Any) -> None:
        kind = "attachments" if "/attachments?" in route.request.url else "memos"
        if route.request.method == "POST" and lost[kind]:
            lost[kind] -= 1
            route.fetch()  # the server gets the request...
            route.abort()  # ...and its answer is lost
        else:
            route.continue_()

    writes = re.compile(r"/api/v1/(attachments\?attachmentId=|memos\?memoId=)")
    page.route(writes, lose_answer)
    ctx.set_offline(False)
    for _ in range(5):
        page.evaluate("import('/assets/outbox.js').then((m) => m.flush('traveller'))")
        if page.evaluate("localStorage.getItem('daybook.outbox.traveller')") is None:
            break
    page.unroute(writes)
    assert lost == {"attachments": 0, "memos": 0}
    receipt = [m for m in _mine(server, "traveller") if m["content"] == "Receipt"]
    assert [[a["filename"] for a in m["attachments"]] for m in receipt] == [["receipt.png"]]
    uploaded = server.api("traveller", "GET", "/attachments", params={"pageSize": 100})
    assert [a["filename"] for a in uploaded["attachments"]].count("receipt.png") == 1
    assert page.evaluate(KEPT_FILES) == []
    page.reload()  # nothing left to bring back
    expect(page.get_by_label(EDITOR)).to_have_value("")
    expect(page.locator(".pending-files li")).to_have_count(0)

    # Web Share Target: another app posts text, a URL and an image. Its upload
    # is held back until the save below is pressed, so the save is pressed
    # while the file is still on its way: it waits for it instead of leaving
    # the file out.
    held: list[Any] = []
    uploads = re.compile(r"/api/v1/attachments\?attachmentId=")
    page.route(uploads, lambda route: held.append(route))
    page.evaluate(
        """() => {
            const form = document.createElement('form');
            form.method = 'POST'; form.action = '/share-target'; form.enctype = 'multipart/form-data';
            for (const [k, v] of [['title', 'Shared title'], ['text', 'Look at this'], ['url', 'https://example.com/x']]) {
                const i = document.createElement('input'); i.name = k; i.value = v; form.append(i);
            }
            const file = document.createElement('input'); file.type = 'file'; file.name = 'image';
            const dt = new DataTransfer();
            const png = Uint8Array.from(atob('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=='), (c) => c.charCodeAt(0));
            dt.items.add(new File([png], 'dot.png', { type: 'image/png' }));
            file.files = dt.files; form.append(file);
            document.body.append(form); form.submit();
        }"""
    )
    editor = page.get_by_label(EDITOR)
    expect(editor).to_have_value(re.compile(r"^Shared title\nLook at this\nhttps://example.com/x"))
    expect(page.locator(".pending-files li", has_text="dot.png")).to_be_visible()
    expect(page.locator(".pending-files")).to_contain_text("Uploading")  # still on its way
    editor.press("Control+Enter")
    expect(page.locator("form.composer").get_by_role("button", name="Saving")).to_be_visible()
    assert len(held) == 1
    held[0].continue_()
    expect(card(page, "Look at this")).to_have_count(1)
    page.unroute(uploads)
    shared = next(m for m in _mine(server, "traveller") if "Look at this" in m["content"])
    assert [a["filename"] for a in shared["attachments"]] == ["dot.png"]

    # Signing out drops the worker's cache (the next person sees nothing offline).
    page.get_by_role("button", name="Sign out").first.click()
    page.get_by_label("Username").wait_for()
    page.wait_for_function(
        "() => caches.open('daybook-v1').then((c) => c.match('/api/v1/auth/me')).then((r) => !r)"
    )
    assert page.js_errors == []


LONG = "Long diary\n" + "\n".join(f"{i}. a line of the long entry" for i in range(1, 31))


def test_rough_edges_placement_and_share_offer(new_page: Any, server: Server) -> None:
    """Defect 10's rest (comment count before opening, long memos collapse, theme
    toggle, password rule up front, phone placeholder and search) and the
    composer placing a Public memo in a space (0030), with no share action
    offered for a placed memo (the server refuses it)."""
    _user(server, "edges")
    _user(server, "peer")
    lunch = server.api(
        "edges", "POST", "/memos", json={"content": "Lunch menu #food", "visibility": "PROTECTED"}
    )
    for text, vis in (
        ("soup please", "PROTECTED"),
        ("and bread", "PUBLIC"),
        ("peer's own note", "PRIVATE"),
    ):
        server.api(
            "peer", "POST", f"/{lunch['name']}/comments", json={"content": text, "visibility": vis}
        )
    server.api("edges", "POST", "/memos", json={"content": LONG})
    space = server.api("edges", "POST", "/spaces", json={"title": "Workshop"})
    placed = server.api(
        "edges",
        "POST",
        "/memos",
        json={
            "content": "Placed announcement",
            "visibility": "PUBLIC",
            "space": space["name"],
            "tree": "share",
        },
    )
    server.api("edges", "POST", "/memos", json={"content": "Open letter", "visibility": "PUBLIC"})
    page = new_page()
    lists: list[str] = []
    page.on(
        "request", lambda r: lists.append(r.url) if "/memos?" in r.url and "tag" in r.url else None
    )
    sign_in(page, "edges")
    # A tag chosen as soon as it shows is fetched once (defect 10: the first
    # tag filter took 2 s; the late render after the spaces fetched it again).
    page.locator(".sidebar .tag-link", has_text="#food").click()
    expect(page.locator(".sidebar").get_by_role("link", name="Workshop")).to_be_visible()
    expect(card(page, "Lunch menu")).to_be_visible()
    expect(card(page, "Open letter")).to_have_count(0)
    assert len(lists) == 1, lists
    page.get_by_role("button", name="Remove filter #food").click()

    # The count shows before the thread is opened, and only comments edges may read.
    expect(
        card(page, "Lunch menu").get_by_role("button", name="2 comments", exact=True)
    ).to_be_visible()
    expect(
        card(page, "Open letter").get_by_role("button", name="Comments", exact=True)
    ).to_be_visible()

    # A long memo is collapsed with "Show more"; a short one has no such button.
    diary = card(page, "Long diary")
    expect(diary.locator(".memo-content")).to_have_class(re.compile(r"\bcollapsed\b"))
    page.wait_for_function(
        "() => { const el = document.querySelector('article.memo-card .memo-content.collapsed');"
        " return el && el.scrollHeight > el.clientHeight + 100; }"
    )
    diary.get_by_role("button", name="Show more").click()
    expect(diary.locator(".memo-content")).not_to_have_class(re.compile(r"\bcollapsed\b"))
    expect(diary.get_by_role("button", name="Show less")).to_have_attribute("aria-expanded", "true")
    expect(card(page, "Open letter").get_by_role("button", name="Show more")).to_have_count(0)

    # Share is offered for the unplaced Public memo, not for the placed one.
    for text, offered in (("Open letter", 1), ("Placed announcement", 0)):
        c = card(page, text)
        c.get_by_label("Actions").click()
        expect(c.get_by_role("menuitem", name="Copy share link")).to_have_count(offered)
        c.get_by_label("Actions").click()
    page.goto(f"/#/m/{placed['name'].removeprefix('memos/')}")
    expect(page.locator(".memo-page article.memo-card")).to_contain_text("Placed announcement")
    expect(page.get_by_role("region", name="History")).to_be_visible()
    expect(page.get_by_role("region", name="Share links")).to_have_count(0)

    # The composer places a memo of any visibility: Public, in Workshop at share.
    page.goto("/#/")
    composer = page.locator("form.composer")
    composer.get_by_label("Visibility").select_option("PUBLIC")
    composer.get_by_label("Space", exact=True).select_option(space["name"])
    expect(composer.get_by_label("Path: share")).to_be_visible()
    write_memo(page, "Public notice from the workshop")
    made = next(
        m for m in _mine(server, "edges") if m["content"] == "Public notice from the workshop"
    )
    assert (made["visibility"], made.get("space"), made.get("tree")) == (
        "PUBLIC",
        space["name"],
        "share",
    )
    expect(composer.get_by_label("Space", exact=True)).to_have_value("")  # back to no space
    expect(composer.get_by_label(re.compile("^Path: "))).to_be_hidden()

    # Theme: chosen in the sidebar, kept across a reload, "System" follows the OS.
    background = "() => getComputedStyle(document.body).backgroundColor"
    page.emulate_media(color_scheme="light")
    page.get_by_label("Theme").select_option("dark")
    assert page.evaluate(background) == "rgb(17, 19, 24)"
    page.reload()
    expect(page.get_by_label("Theme")).to_have_value("dark")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.evaluate(background) == "rgb(17, 19, 24)"
    page.emulate_media(color_scheme="dark")
    page.get_by_label("Theme").select_option("light")
    assert page.evaluate(background) == "rgb(246, 247, 249)"
    page.get_by_label("Theme").select_option("system")
    assert page.evaluate(background) == "rgb(17, 19, 24)"
    assert page.evaluate("localStorage.getItem('daybook.theme')") is None

    # Settings opens at the top (defect 10), whether reached from a timeline
    # scrolled far down or loaded directly by its URL.
    def settings_at_top() -> None:
        expect(page.get_by_role("heading", name="Settings", level=1)).to_be_in_viewport()
        expect(page.get_by_role("link", name="Export memos")).to_be_visible()  # lazy part drawn
        assert page.evaluate("scrollY") == 0

    def scroll_home_down() -> None:
        card(page, "Long diary").get_by_role("button", name="Show more").click()
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        assert page.evaluate("scrollY") > 300

    scroll_home_down()
    page.goto("about:blank")
    page.goto("/#/settings")
    settings_at_top()
    page.goto("/#/")
    scroll_home_down()
    # The password rule is shown before a failure and checked as the server does.
    patches: list[str] = []
    page.on("request", lambda r: patches.append(r.url) if r.method == "PATCH" else None)
    page.get_by_role("link", name="Settings").click()
    settings_at_top()
    form = page.get_by_role("region", name="Change password")
    expect(form).to_contain_text("At least 8 characters, at most 1024 bytes.")
    form.get_by_label("Current password").fill(PASSWORD)
    new = form.get_by_label("New password")
    new.fill("😀😀😀😀")  # 8 UTF-16 units, 4 characters: the server counts 4
    form.get_by_label("Repeat password").fill("😀😀😀😀")
    form.get_by_role("button", name="Change password").click()
    assert (
        new.evaluate("(el) => el.validationMessage") == "The password needs at least 8 characters."
    )
    assert patches == []
    # Signing out there and in again lands on Home, not back on Settings.
    page.get_by_role("button", name="Sign out").first.click()
    page.get_by_label("Username").fill("edges")  # in place: no navigation to "/"
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_label(EDITOR)).to_be_visible()
    expect(page).to_have_url(re.compile(r"#/$"))

    # Phone: no Ctrl+Enter in the placeholder, and search in the top bar.
    page.set_viewport_size(PHONE)
    page.goto("/#/")
    page.reload()
    placeholder = page.get_by_label(EDITOR).get_attribute("placeholder") or ""
    assert "Ctrl" not in placeholder and placeholder
    top = page.get_by_label("Search memos")
    expect(top).to_be_visible()
    expect(page.locator(".sidebar")).not_to_be_in_viewport()
    top.fill("lunch")
    top.press("Enter")
    expect(page.locator(".result-count")).to_have_text("1 result for “lunch”")
    assert page.js_errors == []
