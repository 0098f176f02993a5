"""A real Memos client library from PyPI against a live Daybook: ``grabmymemos`` 26.9.0.

A read-only wrapper for Memos 0.31 that feeds static sites: it lists the
token owner's spaces (paged), resolves a space by title, uid or name, builds
a CEL filter of visibilities, spaces and tags (``visibility == 'PUBLIC'``,
``space == 'spaces/x'``, ``"t" in tags``), pages with ``pageToken``, and
turns attachments into ``/file/{name}/{filename}`` URLs. It needs Python
3.12, so it runs in its own venv (``requirements/``) through its public API
(``config``, ``fetch``, ``fetch_all``), driven by a script in that venv.
"""

from __future__ import annotations

import base64
import json
import pathlib
import subprocess
from typing import Any

import pytest

from tests.clients.conftest import Account, account
from tests.clients.venvs import client_venv, find_python

DRIVER = """
import json, sys
import grabmymemos as gmm

args = json.loads(sys.argv[1])
gmm.config(base_url=args["base"], token=args["token"], space=args["space"],
           visibility=args["visibility"])
gmm.always_force_a_title()
out = {}
try:
    if args.get("page"):
        pages = []
        while True:
            pages.append(gmm.fetch(limit=args["page"], tags=args.get("tags")))
            if not gmm.get_config().last_fetched_page:
                break
        out["pages"] = pages
    else:
        out["memos"] = gmm.fetch_all(tags=args.get("tags"))
except RuntimeError as exc:
    out["error"] = str(exc)
print(json.dumps(out, default=str))
"""
PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a")).decode()


@pytest.fixture(scope="module")
def python() -> pathlib.Path:
    interpreter = find_python((3, 12))
    if interpreter is None:
        pytest.skip("grabmymemos needs Python >= 3.12; none found (PATH, pyenv)")
    return client_venv("grabmymemos", interpreter) / "python"


@pytest.fixture(scope="module")
def site(server: str) -> dict[str, Any]:
    """alice's public, private and space memos; bob's public and private ones."""
    alice = account(server, "alice")
    bob = account(server, "bob", admin=alice)
    hello = alice.post(
        "/api/v1/memos", {"content": "# Hello world\nfirst #blog post", "visibility": "PUBLIC"}
    )
    alice.post(
        "/api/v1/attachments",
        {"filename": "cover.png", "type": "image/png", "content": PNG, "memo": hello["name"]},
    )
    second = alice.post(
        "/api/v1/memos", {"content": "second #blog post, no title", "visibility": "PUBLIC"}
    )
    aside = alice.post("/api/v1/memos", {"content": "an #aside", "visibility": "PUBLIC"})
    diary = alice.post("/api/v1/memos", {"content": "my own #blog draft"})  # PRIVATE
    bobs = bob.post("/api/v1/memos", {"content": "bob's #blog", "visibility": "PUBLIC"})
    bob.post("/api/v1/memos", {"content": "bob's secret #blog"})  # PRIVATE
    team = alice.post("/api/v1/spaces", {"title": "Team Notes"})
    alice.post("/api/v1/spaces", {"title": "Other"})
    inside = alice.post(
        "/api/v1/memos",
        {
            "content": "# Standup\nin the #blog space",
            "visibility": "SPACE",
            "space": team["name"],
            "tree": "share",
        },
    )
    return {
        "alice": alice,
        "hello": hello["name"],
        "second": second["name"],
        "aside": aside["name"],
        "diary": diary["name"],
        "bobs": bobs["name"],
        "team": team["name"],
        "inside": inside["name"],
    }


def grab(python: pathlib.Path, who: Account, **args: Any) -> dict[str, Any]:
    done = subprocess.run(
        [str(python), "-c", DRIVER, json.dumps({"base": who.base, "token": who.pat, **args})],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def names(memos: list[dict[str, Any]]) -> list[str]:
    return [f"memos/{m['name']}" for m in memos]


def test_public_posts_by_tag_paged_with_attachments(
    python: pathlib.Path, site: dict[str, Any]
) -> None:
    alice: Account = site["alice"]
    out = grab(python, alice, space="*", visibility="PUBLIC", tags=["blog"], page=1)
    pages = out["pages"]
    assert [len(p) for p in pages] == [1, 1, 1]  # pageToken followed to the end
    posts = [m for page in pages for m in page]
    assert set(names(posts)) == {site["hello"], site["second"], site["bobs"]}  # PUBLIC only
    hello = next(m for m in posts if f"memos/{m['name']}" == site["hello"])
    assert hello["title"] == "Hello world" and hello["tags"] == ["blog"]
    cover = f"{alice.base}/file/"
    assert hello["image"].startswith(cover) and hello["image"].endswith("/cover.png")
    assert hello["attachments"] == [hello["image"]]
    assert alice.raw(hello["image"].removeprefix(alice.base)) == base64.b64decode(PNG)
    second = next(m for m in posts if f"memos/{m['name']}" == site["second"])
    assert second["title"] == "second #blog post, no title"  # forced from the content
    assert second["display_time"] and second["url"] == f"{alice.base}/{site['second']}"


def test_private_and_space_memos_reach_only_their_readers(
    python: pathlib.Path, site: dict[str, Any]
) -> None:
    alice: Account = site["alice"]
    mine = grab(python, alice, space="*", visibility="PRIVATE")["memos"]
    assert names(mine) == [site["diary"]]  # never bob's PRIVATE memo
    # A space by its title (Memos >= 0.31 spaces); the filter names it as space == '...'.
    team = grab(python, alice, space="team notes", visibility=["SPACE", "PUBLIC"])["memos"]
    assert names(team) == [site["inside"]]
    assert team[0]["title"] == "Standup" and team[0]["space"] == site["team"]
    by_uid = grab(python, alice, space=site["team"].removeprefix("spaces/"), visibility="SPACE")
    assert names(by_uid["memos"]) == [site["inside"]]
    unknown = grab(python, alice, space="Nowhere", visibility="SPACE")
    assert "Space 'Nowhere' not found" in unknown["error"]
    assert "'Team Notes'" in unknown["error"] and "'Other'" in unknown["error"]


def test_public_posts_of_a_space(python: pathlib.Path, site: dict[str, Any]) -> None:
    alice: Account = site["alice"]
    post = alice.post(
        "/api/v1/memos",
        {
            "content": "public #blog post",
            "visibility": "PUBLIC",
            "space": site["team"],
            "tree": "share",
        },
    )
    public = grab(python, alice, space="Team Notes", visibility="PUBLIC")["memos"]
    assert names(public) == [post["name"]]
