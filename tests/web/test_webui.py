"""Serving the web client: media types, security headers, the SPA fallback,
and the opt-in HTML rendering on the memo API."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from app.server import create_app
from app.webui import CSP
from tests.support import make_settings

PASSWORD = "password-1"


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient[Any]]:
    # One app for the module: every test but one only reads, and that one makes
    # the first user once. A fresh app (and migrated database) per test was
    # most of this module's time.
    tmp_path = tmp_path_factory.mktemp("webui")
    settings = make_settings(f"sqlite:///{tmp_path / 'web.db'}", tmp_path)
    with TestClient(app=create_app(settings)) as client:
        yield client


def test_index_is_html_with_a_strict_csp(web: TestClient[Any]) -> None:
    r = web.get("/")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert "attachment" not in r.headers.get("content-disposition", "")
    assert r.headers["content-security-policy"] == CSP
    assert "script-src 'self';" in CSP and "'unsafe-inline'" not in CSP
    assert r.headers["x-content-type-options"] == "nosniff"
    assert '<script type="module" src="/assets/app.js">' in r.text


@pytest.mark.parametrize(
    ("path", "media"),
    [
        ("/assets/app.js", "text/javascript"),
        ("/assets/app.css", "text/css"),
        ("/assets/i18n/en.js", "text/javascript"),
        ("/assets/icon.svg", "image/svg+xml"),
        ("/assets/manifest.webmanifest", "application/manifest+json"),
        ("/sw.js", "text/javascript"),  # at the root: its scope is the whole app (0034)
    ],
)
def test_assets_have_their_media_types(web: TestClient[Any], path: str, media: str) -> None:
    r = web.get(path)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith(media)
    assert r.headers["content-security-policy"] == CSP
    again = web.get(path, headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304


@pytest.mark.parametrize(
    "path", ["/assets/../app/server.py", "/assets/%2e%2e/pyproject.toml", "/assets/nope.js"]
)
def test_assets_never_leave_the_web_directory(web: TestClient[Any], path: str) -> None:
    r = web.get(path)
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/json")


@pytest.mark.parametrize("path", ["/settings", "/explore", "/space/abc/def"])
def test_client_routes_fall_back_to_the_index(web: TestClient[Any], path: str) -> None:
    r = web.get(path)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nope",
        "/api/v2/x",
        "/file/attachments/zzz",
        "/u/nobody/rss.xml",
        "/mcpx",
        "/robots.txt",
    ],
)
def test_fallback_never_shadows_server_paths(web: TestClient[Any], path: str) -> None:
    r = web.get(path)
    assert r.status_code in (401, 404, 405)
    assert not r.headers["content-type"].startswith("text/html")


def test_content_html_is_opt_in(web: TestClient[Any]) -> None:
    web.post("/api/v1/users", json={"username": "alice", "password": PASSWORD})
    r = web.post(
        "/api/v1/auth/signin",
        json={"passwordCredentials": {"username": "alice", "password": PASSWORD}},
    )
    web.cookies.clear()
    auth = {"Authorization": f"Bearer {r.json()['accessToken']}"}
    made = web.post("/api/v1/memos", json={"content": "hi <b>x</b> #t"}, headers=auth).json()
    assert "contentHtml" not in made

    plain = (web.get("/api/v1/memos", headers=auth)).json()["memos"][0]
    assert "contentHtml" not in plain
    one = (web.get(f"/api/v1/{made['name']}", headers=auth)).json()
    assert "contentHtml" not in one

    listed = (web.get("/api/v1/memos?view=html", headers=auth)).json()["memos"][0]
    assert listed["contentHtml"].startswith('<p>hi &lt;b&gt;x&lt;/b&gt; <span class="tag"')
    got = (web.get(f"/api/v1/{made['name']}?view=html", headers=auth)).json()
    assert got["contentHtml"] == listed["contentHtml"]


def test_manifest_names_the_share_target_the_worker_takes(web: TestClient[Any]) -> None:
    manifest = web.get("/assets/manifest.webmanifest").json()
    assert manifest["start_url"] == "/" and manifest["display"] == "standalone"
    target = manifest["share_target"]
    assert target["action"] == "/share-target" and target["method"] == "POST"
    assert set(target["params"]) == {"title", "text", "url", "files"}
    assert '"/share-target"' in web.get("/sw.js").text
    assert 'rel="manifest"' in web.get("/").text


def test_the_clients_password_rule_is_the_servers() -> None:
    """The sign-up and password forms check, and say, the rule the server enforces."""
    from app.users.service import MAX_PASSWORD, MIN_PASSWORD

    web_dir = pathlib.Path(__file__).resolve().parents[2] / "web"
    rule = (web_dir / "assets" / "passwords.js").read_text()
    assert f"export const MIN_PASSWORD = {MIN_PASSWORD};" in rule
    assert f"export const MAX_PASSWORD_BYTES = {MAX_PASSWORD};" in rule
    said = f"At least {MIN_PASSWORD} characters, at most {MAX_PASSWORD} bytes."
    assert f'passwordRule: "{said}"' in (web_dir / "assets" / "i18n" / "en.js").read_text()
    assert said in (web_dir / "reset-password.html").read_text()
