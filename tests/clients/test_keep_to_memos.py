"""A real Memos client from PyPI against a live Daybook: ``keep-to-memos`` 1.0.0.

It imports a Google Keep Takeout through Memos' HTTP API with a personal
access token: create a memo with ``memoId`` and ``createTime``, upload
attachments, SetMemoAttachments, then PATCH content/state/visibility/
update_time/pinned with snake_case mask paths. Run through its console
script, unchanged, as a user would; a second run must skip every note
(its idempotency check reads the memos back by id).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import httpx

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
CREATED_USEC = 1_600_000_000 * 1_000_000


def _takeout(root: pathlib.Path) -> pathlib.Path:
    keep = root / "Takeout" / "Keep"
    keep.mkdir(parents=True)
    (keep / "Groceries.json").write_text(
        json.dumps(
            {
                "title": "Groceries",
                "textContent": "milk and bread",
                "labels": [{"name": "home life"}],
                "isPinned": True,
                "isArchived": False,
                "isTrashed": False,
                "createdTimestampUsec": CREATED_USEC,
                "userEditedTimestampUsec": CREATED_USEC + 3_600_000_000,
                "attachments": [{"filePath": "dot.png", "mimetype": "image/png"}],
            }
        )
    )
    (keep / "dot.png").write_bytes(PNG)
    (keep / "Old.json").write_text(
        json.dumps(
            {
                "title": "",
                "textContent": "an archived thought",
                "isArchived": True,
                "createdTimestampUsec": CREATED_USEC,
                "userEditedTimestampUsec": CREATED_USEC,
            }
        )
    )
    (keep / "Gone.json").write_text(
        json.dumps({"textContent": "trashed", "isTrashed": True, "createdTimestampUsec": 1})
    )
    return root / "Takeout"


def _run(base: str, token: str, source: pathlib.Path) -> subprocess.CompletedProcess[str]:
    script = pathlib.Path(sys.executable).parent / "keep-to-memos"
    return subprocess.run(
        [str(script), "--url", base, "--token", token, "--no-throttle", str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_keep_takeout_imports_unchanged(server: str, tmp_path: pathlib.Path) -> None:
    with httpx.Client(base_url=server, timeout=30) as http:
        http.post("/api/v1/users", json={"username": "keeper", "password": "password-1"})
        signin = http.post(
            "/api/v1/auth/signin",
            json={"passwordCredentials": {"username": "keeper", "password": "password-1"}},
        ).json()
        session = {"Authorization": f"Bearer {signin['accessToken']}"}
        pat = http.post(
            "/api/v1/users/keeper/personalAccessTokens",
            json={"description": "keep"},
            headers=session,
        ).json()["token"]

        source = _takeout(tmp_path)
        first = _run(server, pat, source)
        assert first.returncode == 0, first.stdout + first.stderr
        assert "imported=2 skipped=1 failed=0" in first.stdout, first.stdout

        memos = http.get("/api/v1/memos", params={"pageSize": 50}, headers=session).json()["memos"]
        archived = http.get("/api/v1/memos", params={"state": "ARCHIVED"}, headers=session).json()[
            "memos"
        ]
        (grocery,) = memos
        assert "milk and bread" in grocery["content"] and grocery["pinned"] is True
        assert grocery["tags"] == ["home-life"]
        assert grocery["createTime"] == "2020-09-13T12:26:40Z"
        assert grocery["updateTime"] == "2020-09-13T13:26:40Z"
        assert [a["filename"] for a in grocery["attachments"]] == ["dot.png"]
        file = http.get(f"/file/{grocery['attachments'][0]['name']}/dot.png", headers=session)
        assert file.content == PNG
        (old,) = archived
        assert "an archived thought" in old["content"] and old["visibility"] == "PRIVATE"

        again = _run(server, pat, source)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "imported=0 skipped=3 failed=0" in again.stdout, again.stdout
