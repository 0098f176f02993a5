"""Attachment storage that every process reaches: the database, a shared directory, S3.

``app.attachments.storage`` and ``app.attachments.s3``. Each test runs two
app instances with separate data directories on one database, uploads through
one and reads and deletes through the other. S3 is a real S3-compatible
server (moto's standalone server, a separate process) spoken to over HTTP by
the real boto3 client; nothing is mocked.
"""

from __future__ import annotations

import base64
import pathlib
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient

from app.db import schema
from app.db.engine import create_engine
from app.server import create_app
from app.settings import Settings
from tests.conftest import Actor, sign_up
from tests.support import free_port

BUCKET = "daybook-test"
PAYLOAD = bytes(range(256)) * 64  # 16 KiB, every byte value


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server in its own process, with an empty bucket."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, "moto server exited"
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "moto server did not start"
                time.sleep(0.1)  # polling a port: there is no event to wait on
        client(url).create_bucket(Bucket=BUCKET)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def client(endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test-key",
        aws_secret_access_key="test-secret-key",
    )


def s3_settings(base: Settings, data: pathlib.Path, endpoint: str, prefix: str) -> Settings:
    return replace(
        base,
        data_dir=data,
        storage="s3",
        s3_endpoint=endpoint,
        s3_region="us-east-1",
        s3_bucket=BUCKET,
        s3_access_key_id="test-key",
        s3_secret_access_key="test-secret-key",
        s3_use_path_style=True,
        s3_prefix=prefix,
    )


async def upload(actor: Actor, name: str = "blob.bin", data: bytes = PAYLOAD) -> dict[str, Any]:
    r = await actor.post(
        "/api/v1/attachments",
        json={
            "filename": name,
            "type": "application/octet-stream",
            "content": base64.b64encode(data).decode(),
        },
    )
    assert r.status_code == 200, r.text
    return dict(r.json())


async def row(settings: Settings, uid: str) -> Any:
    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as conn:
            return (
                await conn.execute(
                    sa.select(schema.attachment).where(schema.attachment.c.uid == uid)
                )
            ).first()
    finally:
        await engine.dispose()


async def bearer(client_: AsyncTestClient[Any], username: str) -> Actor:
    r = await client_.post(
        "/api/v1/auth/signin",
        json={"passwordCredentials": {"username": username, "password": "password-1"}},
    )
    assert r.status_code == 200, r.text
    client_.cookies.clear()
    return Actor(client_, username, r.json()["accessToken"], r.json()["user"])


def files(directory: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file()) if directory.exists() else []


async def test_s3_attachments_are_shared_by_processes(
    settings: Settings, tmp_path: pathlib.Path, s3_endpoint: str, request: pytest.FixtureRequest
) -> None:
    prefix = f"{request.node.callspec.id}/"
    one = s3_settings(settings, tmp_path / "one", s3_endpoint, prefix)
    two = s3_settings(settings, tmp_path / "two", s3_endpoint, prefix)
    async with AsyncTestClient(app=create_app(one)) as a, AsyncTestClient(app=create_app(two)) as b:
        alice_a = await sign_up(a, "alice")
        alice_b = await bearer(b, "alice")
        created = await upload(alice_a)
        uid = created["name"].split("/")[1]
        stored = await row(one, uid)
        assert stored.storage_type == "S3" and stored.blob is None
        objects = client(s3_endpoint).list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]
        assert [o["Key"] for o in objects] == [prefix + stored.storage_key]
        assert files(tmp_path / "one") == [] and files(tmp_path / "two") == []

        r = await alice_b.get(f"/file/attachments/{uid}/blob.bin")
        assert r.status_code == 200 and r.content == PAYLOAD

        r = await alice_b.delete(f"/api/v1/attachments/{uid}")
        assert r.status_code == 200, r.text
        listed = client(s3_endpoint).list_objects_v2(Bucket=BUCKET, Prefix=prefix)
        assert listed.get("KeyCount", 0) == 0
        assert (await alice_a.get(f"/file/attachments/{uid}")).status_code == 404


async def test_database_storage_is_shared_by_processes(
    settings: Settings, tmp_path: pathlib.Path
) -> None:
    one = replace(settings, data_dir=tmp_path / "one", storage="database")
    two = replace(settings, data_dir=tmp_path / "two", storage="database")
    async with AsyncTestClient(app=create_app(one)) as a, AsyncTestClient(app=create_app(two)) as b:
        alice_a = await sign_up(a, "alice")
        alice_b = await bearer(b, "alice")
        uid = (await upload(alice_a))["name"].split("/")[1]
        stored = await row(one, uid)
        assert stored.storage_type == "DATABASE" and stored.storage_key is None
        assert stored.blob == PAYLOAD
        assert files(tmp_path / "one") == [] and files(tmp_path / "two") == []
        r = await alice_b.get(f"/file/attachments/{uid}")
        assert r.status_code == 200 and r.content == PAYLOAD
        assert (await alice_b.delete(f"/api/v1/attachments/{uid}")).status_code == 200
        assert await row(one, uid) is None


async def test_a_shared_directory_is_shared_by_processes(
    settings: Settings, tmp_path: pathlib.Path
) -> None:
    shared = tmp_path / "shared"
    one = replace(settings, data_dir=tmp_path / "one", storage_dir=str(shared))
    two = replace(settings, data_dir=tmp_path / "two", storage_dir=str(shared))
    async with AsyncTestClient(app=create_app(one)) as a, AsyncTestClient(app=create_app(two)) as b:
        alice_a = await sign_up(a, "alice")
        alice_b = await bearer(b, "alice")
        uid = (await upload(alice_a))["name"].split("/")[1]
        stored = await row(one, uid)
        assert stored.storage_type == "LOCAL"
        assert files(shared) == [shared / stored.storage_key]
        assert (shared / stored.storage_key).read_bytes() == PAYLOAD
        r = await alice_b.get(f"/file/attachments/{uid}")
        assert r.status_code == 200 and r.content == PAYLOAD
        assert (await alice_b.delete(f"/api/v1/attachments/{uid}")).status_code == 200
        assert files(shared) == []


async def test_local_attachments_stay_readable_after_switching_to_s3(
    settings: Settings, tmp_path: pathlib.Path, s3_endpoint: str, request: pytest.FixtureRequest
) -> None:
    """Each row says where its bytes are: a file written before the switch still serves."""
    data = tmp_path / "data"
    before = replace(settings, data_dir=data)
    async with AsyncTestClient(app=create_app(before)) as c:
        alice = await sign_up(c, "alice")
        old = (await upload(alice, "old.bin", b"old bytes"))["name"].split("/")[1]
    after = s3_settings(settings, data, s3_endpoint, f"{request.node.callspec.id}-switch/")
    async with AsyncTestClient(app=create_app(after)) as c:
        alice = await bearer(c, "alice")
        new = (await upload(alice, "new.bin", b"new bytes"))["name"].split("/")[1]
        assert (await alice.get(f"/file/attachments/{old}")).content == b"old bytes"
        assert (await alice.get(f"/file/attachments/{new}")).content == b"new bytes"
    assert (await row(after, old)).storage_type == "LOCAL"
    assert (await row(after, new)).storage_type == "S3"


async def test_s3_unreachable_is_503_and_writes_nothing(
    settings: Settings, tmp_path: pathlib.Path
) -> None:
    dead = s3_settings(settings, tmp_path / "d", f"http://127.0.0.1:{free_port()}", "x/")
    async with AsyncTestClient(app=create_app(dead)) as c:
        alice = await sign_up(c, "alice")
        r = await alice.post(
            "/api/v1/attachments",
            json={"filename": "a.bin", "content": base64.b64encode(b"abc").decode()},
        )
        assert r.status_code == 503, r.text
        assert "S3" in r.json()["message"]
        listed = await alice.get("/api/v1/attachments")
        assert listed.json()["attachments"] == []


def test_incomplete_storage_settings_fail_at_start(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="bucket"):
        create_app(Settings(data_dir=tmp_path, storage="s3", secret="x"))
    with pytest.raises(ValueError, match="local, database or s3"):
        create_app(Settings(data_dir=tmp_path, storage="ftp", secret="x"))


@pytest.mark.parametrize("kind", ["local", "database", "s3"])
async def test_a_spooled_upload_goes_to_every_store(
    kind: str, tmp_path: pathlib.Path, s3_endpoint: str
) -> None:
    """``put_file``: an upload already spooled to disk (the streamed upload path) lands in
    each store, reads back, and leaves its spool file for the caller to discard."""
    from types import SimpleNamespace

    from app.attachments import storage

    base = Settings(data_dir=tmp_path / "data", storage=kind)
    if kind == "s3":
        base = s3_settings(base, tmp_path / "data", s3_endpoint, f"spool-{kind}/")
    store = storage.store_from_settings(base)
    spool = tmp_path / "spool.bin"
    spool.write_bytes(PAYLOAD)
    stored = await storage.put_file(store, spool)
    assert spool.read_bytes() == PAYLOAD  # still the caller's
    assert stored.storage_type == kind.upper()
    row = SimpleNamespace(
        storage_type=stored.storage_type.value, storage_key=stored.storage_key, blob=stored.blob
    )
    assert await storage.read(store, row) == PAYLOAD
    await storage.discard(store, row.storage_type, row.storage_key)
    if kind != "database":
        assert await storage.read(store, row) is None
