"""Multipart attachment uploads stream to disk as they arrive (issue 12, decision 0035).

An upload near the attachment limit leaves the process's peak memory far
below the upload's size (the old path held the body and the parsed part in
memory, twice the size); one byte over the limit is 413 with nothing kept:
no row, no stored file, no spool file. SQLite only: the dialect does not
touch the upload path.
"""

from __future__ import annotations

import contextlib
import pathlib
import shutil
from collections.abc import AsyncIterator

import httpx
import pytest

from app.api import uploads
from app.db.engine import create_engine
from app.db.migrate import upgrade
from app.server import create_app
from app.settings import Settings

MIB = 1024 * 1024
LIMIT = 8 * MIB
CHUNK = 64 * 1024
BOUNDARY = "daybook-test-boundary"


def _peak_kib() -> int:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _reset_peak() -> None:
    # Linux: writing 5 resets the peak resident set size to the current one.
    pathlib.Path("/proc/self/clear_refs").write_text("5")


async def _multipart(size: int, memo: str = "") -> AsyncIterator[bytes]:
    """A multipart body generated chunk by chunk (the client holds no copy either)."""
    head = f"--{BOUNDARY}\r\n"
    if memo:
        head += f'Content-Disposition: form-data; name="memo"\r\n\r\n{memo}\r\n--{BOUNDARY}\r\n'
    head += (
        'Content-Disposition: form-data; name="file"; filename="big.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    )
    yield head.encode()
    block = b"\xab" * CHUNK
    sent = 0
    while sent < size:
        n = min(CHUNK, size - sent)
        yield block[:n]
        sent += n
    yield f"\r\n--{BOUNDARY}--\r\n".encode()


@pytest.fixture(scope="module")
async def migrated(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("uploads-template") / "daybook.db"
    engine = create_engine(f"sqlite:///{path}")
    await upgrade(engine)
    async with engine.connect() as conn:
        await conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    await engine.dispose()
    return path


@contextlib.asynccontextmanager
async def serving(
    migrated: pathlib.Path, tmp_path: pathlib.Path
) -> AsyncIterator[tuple[httpx.AsyncClient, Settings]]:
    """The app in this process (its lifespan entered in the test's own task)."""
    target = tmp_path / "daybook.db"
    shutil.copyfile(migrated, target)
    small = Settings(
        data_dir=tmp_path / "data",
        database_url=f"sqlite:///{target}",
        password_hasher="cheap",
        secret="test-secret",
        log_format="json",
        attachment_size_limit=LIMIT,
    )
    app = create_app(small)
    async with app.lifespan():  # type: ignore[attr-defined]
        transport = httpx.ASGITransport(app=app)  # streams the request body to the app
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client, small


async def _token(client: httpx.AsyncClient) -> dict[str, str]:
    r = await client.post("/api/v1/users", json={"username": "alice", "password": "password-1"})
    assert r.status_code == 200, r.text
    r = await client.post(
        "/api/v1/auth/signin",
        json={"passwordCredentials": {"username": "alice", "password": "password-1"}},
    )
    client.cookies.clear()
    return {
        "Authorization": f"Bearer {r.json()['accessToken']}",
        "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
    }


def _stored(settings: Settings) -> list[pathlib.Path]:
    files = settings.data_dir / "attachments"
    return sorted(files.iterdir()) if files.exists() else []


def _spooled(settings: Settings) -> list[pathlib.Path]:
    spool = settings.data_dir / "incoming"
    return sorted(spool.iterdir()) if spool.exists() else []


async def test_uploads_stream_to_disk_bounded_and_refused_whole(
    migrated: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """One app for the three cases (an app's start is most of a test's time)."""
    async with serving(migrated, tmp_path) as (client, settings):
        headers = await _token(client)
        await _over_the_limit(client, settings, headers)
        await _malformed(client, settings, headers)
        await _near_the_limit(client, settings, headers)


async def _near_the_limit(
    client: httpx.AsyncClient, settings: Settings, headers: dict[str, str]
) -> None:
    size = LIMIT - 1024
    _reset_peak()
    before = _peak_kib()
    r = await client.post("/api/v1/attachments", content=_multipart(size), headers=headers)
    grown_mib = (_peak_kib() - before) / 1024
    assert r.status_code == 200, r.text
    assert r.json()["size"] == str(size) and r.json()["filename"] == "big.bin"
    # The old path held the body and the part (2 x 8 MiB); streamed, a few chunks.
    assert grown_mib < 4, f"peak RSS grew {grown_mib:.1f} MiB for a {size / MIB:.0f} MiB upload"
    (stored,) = _stored(settings)
    assert stored.stat().st_size == size
    with stored.open("rb") as fh:
        assert fh.read(CHUNK) == b"\xab" * CHUNK
    assert _spooled(settings) == []  # the spool file was linked into the store, then closed


async def _over_the_limit(
    client: httpx.AsyncClient, settings: Settings, headers: dict[str, str]
) -> None:
    r = await client.post("/api/v1/attachments", content=_multipart(LIMIT + 1), headers=headers)
    assert r.status_code == 413, r.text
    assert str(LIMIT) in r.json()["message"]
    listed = await client.get(
        "/api/v1/attachments", headers={"Authorization": headers["Authorization"]}
    )
    assert listed.json().get("attachments", []) == []
    assert _stored(settings) == [] and _spooled(settings) == []


async def _malformed(
    client: httpx.AsyncClient, settings: Settings, headers: dict[str, str]
) -> None:
    cut = b"--" + BOUNDARY.encode() + b'\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc'
    r = await client.post("/api/v1/attachments", content=cut, headers=headers)
    assert r.status_code == 400 and "multipart" in r.json()["message"], r.text
    no_file = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="memo"\r\n\r\nx\r\n--{BOUNDARY}--\r\n'
    r = await client.post("/api/v1/attachments", content=no_file.encode(), headers=headers)
    assert r.status_code == 400 and "'file'" in r.json()["message"], r.text
    assert _stored(settings) == [] and _spooled(settings) == []


def test_text_parts_are_bounded(tmp_path: pathlib.Path) -> None:
    form = uploads.StreamingForm(BOUNDARY.encode(), LIMIT, tmp_path)
    body = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="memo"\r\n\r\n'.encode()
    with pytest.raises(uploads.FormError, match="longer than"):
        form.write(body + b"m" * (uploads.MAX_FIELD + 1))
