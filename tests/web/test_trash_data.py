"""Trash, export and import in the browser, as a person does it (issue 19).

One server for the module, one page load per user per test: delete a memo
and undo it from the toast; delete, open the Trash, restore, purge one,
empty the rest; export a ZIP from Settings and import it into a second
user's account, validate-only first (nothing written until confirmed).
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import Server
from tests.web.pages import card, ensure_admin, memo_action, sign_in


def _contents(server: Server, user: str) -> set[str]:
    memos = server.api(user, "GET", "/memos", params={"filter": f'creator == "users/{user}"'})
    return {m["content"] for m in memos.get("memos", [])}


def _trash(server: Server, user: str) -> list[str]:
    return [m["content"] for m in server.api(user, "GET", f"/users/{user}/trash")["memos"]]


def _delete(page: Any, text: str) -> None:
    memo_action(page, text, "Delete")
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(card(page, text)).to_have_count(0)


def test_delete_undo_trash_restore_purge(new_page: Any, server: Server) -> None:
    ensure_admin(server)
    if "tara" not in server.tokens:
        server.create_user("alice", "tara")
    for text in ("Tomato seedlings", "Old draft", "Scratch note"):
        server.api("tara", "POST", "/memos", json={"content": text})
    page = new_page()
    sign_in(page, "tara")

    # Delete → Undo in the toast: the memo is back, on the server too.
    _delete(page, "Tomato seedlings")
    assert _trash(server, "tara") == ["Tomato seedlings"]
    toast = page.locator(".toast", has_text="Moved to the trash.")
    toast.get_by_role("button", name="Undo").click()
    expect(card(page, "Tomato seedlings")).to_have_count(1)
    assert _trash(server, "tara") == []
    assert "Tomato seedlings" in _contents(server, "tara")

    # Delete two, open the Trash from the sidebar: both listed with times.
    _delete(page, "Tomato seedlings")
    _delete(page, "Old draft")
    page.get_by_role("link", name="Trash").click()
    expect(page).to_have_url(re.compile("#/trash$"))
    rows = page.locator(".trash-row")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("Deleted just now")
    expect(rows.first).to_contain_text("purged on")  # default retention: 30 days

    # Restore one: it leaves the trash and is a memo again.
    page.get_by_role("button", name="Restore “Tomato seedlings”").click()
    expect(rows).to_have_count(1)
    assert "Tomato seedlings" in _contents(server, "tara")

    # Purge one: cancel first (nothing happens), then confirm.
    page.get_by_role("button", name="Purge “Old draft”").click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    assert _trash(server, "tara") == ["Old draft"]
    page.get_by_role("button", name="Purge “Old draft”").click()
    page.get_by_role("dialog").get_by_role("button", name="Purge").click()
    expect(page.get_by_text("The trash is empty.")).to_be_visible()
    assert _trash(server, "tara") == []
    assert "Old draft" not in _contents(server, "tara")

    # Empty trash (with a confirm) purges everything in it.
    server.api("tara", "DELETE", f"/memos/{_uid(server, 'tara', 'Scratch note')}")
    page.reload()
    expect(rows).to_have_count(1)
    page.get_by_role("button", name="Empty trash").click()
    page.get_by_role("dialog").get_by_role("button", name="Empty trash").click()
    expect(page.get_by_text("The trash is empty.")).to_be_visible()
    assert _trash(server, "tara") == []

    # Home: the restored memo is there, the purged ones are not.
    page.get_by_role("link", name="Home").click()
    expect(card(page, "Tomato seedlings")).to_have_count(1)
    expect(card(page, "Old draft")).to_have_count(0)
    assert page.js_errors == []


def _uid(server: Server, user: str, content: str) -> str:
    memos = server.api(user, "GET", "/memos", params={"filter": f'creator == "users/{user}"'})
    return next(m["name"] for m in memos["memos"] if m["content"] == content).split("/")[1]


def test_export_then_import_into_another_account(
    new_page: Any, server: Server, tmp_path: Any
) -> None:
    ensure_admin(server)
    for user in ("ed", "ida"):
        if user not in server.tokens:
            server.create_user("alice", user)
    for text in ("Export me #garden", "And me too"):
        server.api("ed", "POST", "/memos", json={"content": text})

    page = new_page()
    sign_in(page, "ed")
    page.get_by_role("link", name="Settings").click()
    data = page.get_by_role("region", name="Your data")
    with page.expect_download() as info:
        data.get_by_role("link", name="Export memos").click()
    archive = tmp_path / "export.zip"
    info.value.save_as(archive)
    assert archive.read_bytes()[:2] == b"PK"

    other = new_page()
    sign_in(other, "ida")
    other.get_by_role("link", name="Settings").click()
    data = other.get_by_role("region", name="Your data")
    expect(data.get_by_label("If a memo already exists")).to_have_value("SKIP")
    data.get_by_label("Import a ZIP").set_input_files(str(archive))
    # Validate-only first: the plan is shown and nothing is written yet.
    expect(data.locator(".import-plan")).to_contain_text("2 memos")
    expect(data.locator(".import-plan")).to_contain_text("2 to create")
    assert _contents(server, "ida") == set()
    data.get_by_role("button", name="Import", exact=True).click()
    expect(data.locator(".import-plan")).to_contain_text("Imported: 2 created")
    assert _contents(server, "ida") == {"Export me #garden", "And me too"}
    assert _contents(server, "ed") == {"Export me #garden", "And me too"}

    # The imported memos appear on Home; a second import of the same ZIP would skip both.
    other.get_by_role("link", name="Home").click()
    expect(card(other, "Export me")).to_have_count(1)
    expect(card(other, "And me too")).to_have_count(1)
    other.get_by_role("link", name="Settings").click()
    data = other.get_by_role("region", name="Your data")
    data.get_by_label("Import a ZIP").set_input_files(str(archive))
    expect(data.locator(".import-plan")).to_contain_text("0 to create, 2 to skip")

    # A file that is not an archive: the problems are shown, no Import button.
    bad = tmp_path / "notes.zip"
    bad.write_bytes(b"not a zip at all")
    data.get_by_label("Import a ZIP").set_input_files(str(bad))
    expect(data.locator(".import-plan")).to_contain_text("This archive cannot be imported")
    expect(data.get_by_role("button", name="Import", exact=True)).to_be_hidden()
    assert page.js_errors == [] and other.js_errors == []
