"""The page a one-time reset link opens: the user sets its own password (decision 0022)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.web.conftest import PASSWORD, Server


def test_reset_link_page_sets_the_users_own_password(new_page: Any, server: Server) -> None:
    r = httpx.post(f"{server.url}/api/v1/users", json={"username": "root", "password": PASSWORD})
    assert r.status_code == 200, r.text
    server.sign_in("root")
    server.create_user("root", "dana")
    link = server.api("root", "POST", "/users/dana/passwordResets")["resetUrl"]
    assert link.startswith(server.url + "/reset-password#token=dbk_reset_")

    page = new_page()
    page.goto(link)
    assert "#token" not in page.url  # dropped from the address bar (and history)
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
