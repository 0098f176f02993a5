"""Fixtures for the web client's tests.

Browser tests drive Debian's ``chromium`` through Playwright against a real
``daybook serve`` subprocess (temporary data directory, SQLite). Without a
browser they skip with a message saying how to get one, unless
``DAYBOOK_REQUIRE_BROWSER=1`` (set by CI), which turns the skip into a failure.
The non-browser tests here (rendering, routes, headers) always run.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support import free_port, wait_ready

CHROMIUM = os.environ.get("DAYBOOK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
PASSWORD = "correct-horse-1"
ROOT = pathlib.Path(__file__).resolve().parents[2]


def _browser_missing() -> str | None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if not os.path.exists(CHROMIUM):
        return f"no browser at {CHROMIUM} (apt-get install chromium, or set DAYBOOK_CHROMIUM)"
    return None


class Server:
    """A running ``daybook serve`` and a bearer-token API helper per user."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.tokens: dict[str, str] = {}

    def api(self, user: str, method: str, path: str, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.tokens[user]}"}
        r = httpx.request(method, f"{self.url}/api/v1{path}", headers=headers, timeout=30, **kw)
        assert r.status_code == 200, r.text
        return r.json()

    def sign_in(self, user: str, password: str = PASSWORD) -> None:
        r = httpx.post(
            f"{self.url}/api/v1/auth/signin",
            json={"passwordCredentials": {"username": user, "password": password}},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        self.tokens[user] = r.json()["accessToken"]

    def create_user(self, admin: str, user: str) -> None:
        self.api(admin, "POST", "/users", json={"username": user, "password": PASSWORD})
        self.sign_in(user)


def start_server(
    data_dir: pathlib.Path, ready_within: float = 60
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        "DAYBOOK_EMBED_WORKER": "0",
        "DAYBOOK_RATE_LIMITS": "0",  # one client address drives every test (decision 0029)
        "DAYBOOK_EMBEDDING_MODEL": "hash",
        "DAYBOOK_LOG_FORMAT": "json",
    }
    code = "from app.cli import main; main()"
    cmd = [sys.executable, "-c", code, "serve", "--data", str(data_dir), "--port", str(port)]
    # stderr goes to a file, not a pipe nobody reads: once the server had
    # logged ~64 KB the pipe filled and every request hung, /healthz included.
    log_path = data_dir / "server.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
    log.close()
    url = f"http://127.0.0.1:{port}"
    if wait_ready(url, ready_within, proc=proc, interval=0.2):
        return proc, url
    if proc.poll() is not None:
        tail = log_path.read_bytes().decode(errors="replace")[-2000:]
        raise RuntimeError(f"daybook serve exited: {tail}")
    proc.kill()
    raise RuntimeError(f"daybook serve did not become ready in {ready_within:.0f} s")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # Module-scoped: the sync Playwright API runs an event loop in this thread,
    # which must be gone before any async test (pytest-asyncio) runs.
    reason = _browser_missing()
    if reason:
        if os.environ.get("DAYBOOK_REQUIRE_BROWSER") == "1":
            pytest.fail(f"DAYBOOK_REQUIRE_BROWSER=1 but {reason}")
        pytest.skip(f"browser tests skipped: {reason}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def server(browser: Any) -> Iterator[Server]:
    data = pathlib.Path(tempfile.mkdtemp(prefix="daybook-web-"))
    proc, url = start_server(data)
    try:
        yield Server(url)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def new_page(browser: Any, server: Server) -> Iterator[Any]:
    """``new_page(**context_options)``: a page in a fresh browser context."""
    contexts: list[Any] = []

    def make(**options: Any) -> Any:
        options.setdefault("viewport", {"width": 1280, "height": 800})
        ctx = browser.new_context(base_url=server.url, **options)
        ctx.set_default_timeout(10_000)
        contexts.append(ctx)
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.js_errors = errors
        return page

    yield make
    for ctx in contexts:
        ctx.close()


@pytest.fixture(scope="module")
def _kept_pages(browser: Any, server: Server) -> Iterator[dict[str, Any]]:
    pages: dict[str, Any] = {}
    yield pages
    for page in pages.values():
        page.context.close()


@pytest.fixture
def signed_in(browser: Any, server: Server, _kept_pages: dict[str, Any]) -> Any:
    """``signed_in(user)``: that user's page, signed in once per module.

    Most tests of a module act as the same user; a context and a sign-in each
    was a large part of the web tests' time. Each call starts the page afresh
    on Home (a full load, desktop viewport, light scheme, no JS errors
    recorded yet), so a test sees the server's current state, not the last
    test's screen. Tests that need a fresh browser state use ``new_page``.
    """
    from tests.web.pages import EDITOR, ensure_admin, sign_in

    def get(user: str) -> Any:
        page = _kept_pages.get(user)
        if page is None:
            ensure_admin(server)
            ctx = browser.new_context(base_url=server.url, viewport={"width": 1280, "height": 800})
            ctx.set_default_timeout(10_000)
            page = ctx.new_page()
            errors: list[str] = []
            console: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
            page.js_errors = errors
            page.console_errors = console
            sign_in(page, user)
            _kept_pages[user] = page
            return page
        page.set_viewport_size({"width": 1280, "height": 800})
        page.emulate_media(color_scheme="light")
        page.goto("about:blank")
        page.js_errors.clear()  # from here on, this test's errors only
        page.console_errors.clear()
        page.goto("/")
        page.get_by_label(EDITOR).wait_for()
        return page

    return get
