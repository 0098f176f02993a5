"""Page helpers shared by the browser tests (selectors by role and label)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.web.conftest import PASSWORD, Server

EDITOR = "Write a memo (Markdown)"


def ensure_admin(server: Server, username: str = "alice") -> None:
    """The first user exists (signed up through the API when a test runs alone)."""
    profile = httpx.get(f"{server.url}/api/v1/instance/profile", timeout=10).json()
    if not profile["initialized"]:
        r = httpx.post(
            f"{server.url}/api/v1/users",
            json={"username": username, "password": PASSWORD},
            timeout=30,
        )
        assert r.status_code == 200, r.text
    if username not in server.tokens:
        server.sign_in(username)


def sign_in(page: Any, username: str, password: str = PASSWORD) -> None:
    page.goto("/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_label(EDITOR).wait_for()


def card(page: Any, text: str) -> Any:
    return page.locator("article.memo-card", has_text=text)


def memo_action(page: Any, text: str, action: str) -> None:
    c = card(page, text)
    c.get_by_label("Actions").click()
    c.get_by_role("menuitem", name=action).click()


def write_memo(page: Any, content: str) -> None:
    editor = page.get_by_label(EDITOR)
    editor.fill(content)
    editor.press("Control+Enter")
    first_line = content.splitlines()[0].split("#")[0].strip()
    card(page, first_line).first.wait_for()
