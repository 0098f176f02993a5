"""Attachment bytes in an S3-compatible bucket (AWS, MinIO, R2, Garage, ...), via boto3.

boto3 is synchronous: each call runs in a worker thread. One client per
configuration, built on first use (clients are thread-safe and keep their
connection pool). Connection failures and server errors become
``StorageUnavailable`` (503), so an outage never surfaces as a 500; a
missing object reads as None (404 to the client).
"""

from __future__ import annotations

import secrets
from functools import lru_cache
from pathlib import Path
from typing import Any

import anyio

from app.attachments.storage import S3Config, StorageUnavailable

_MISSING = {"NoSuchKey", "404", "NotFound"}


@lru_cache(maxsize=8)
def _client(config: S3Config) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=config.endpoint or None,
        region_name=config.region or None,
        aws_access_key_id=config.access_key_id or None,
        aws_secret_access_key=config.secret_access_key or None,
        config=Config(
            s3={"addressing_style": "path" if config.use_path_style else "auto"},
            retries={"max_attempts": 3, "mode": "standard"},
            connect_timeout=5,
            read_timeout=30,
        ),
    )


def _unavailable(exc: Exception) -> StorageUnavailable:
    return StorageUnavailable(f"attachment storage (S3) is unavailable: {type(exc).__name__}")


async def put(config: S3Config, data: bytes) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    key = secrets.token_hex(16)

    def run() -> None:
        _client(config).put_object(Bucket=config.bucket, Key=config.prefix + key, Body=data)

    try:
        await anyio.to_thread.run_sync(run)
    except (BotoCoreError, ClientError) as exc:
        raise _unavailable(exc) from None
    return key


async def put_file(config: S3Config, source: Path) -> str:
    """Stream the file ``source`` to a new object (multipart for large files)."""
    from botocore.exceptions import BotoCoreError, ClientError

    key = secrets.token_hex(16)

    def run() -> None:
        _client(config).upload_file(str(source), config.bucket, config.prefix + key)

    try:
        await anyio.to_thread.run_sync(run)
    except (BotoCoreError, ClientError) as exc:
        raise _unavailable(exc) from None
    return key


async def get(config: S3Config, key: str) -> bytes | None:
    from botocore.exceptions import BotoCoreError, ClientError

    def run() -> bytes | None:
        try:
            body = _client(config).get_object(Bucket=config.bucket, Key=config.prefix + key)
        except ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code")) in _MISSING:
                return None
            raise
        data: bytes = body["Body"].read()
        return data

    try:
        return await anyio.to_thread.run_sync(run)
    except (BotoCoreError, ClientError) as exc:
        raise _unavailable(exc) from None


async def delete(config: S3Config, key: str) -> None:
    from botocore.exceptions import BotoCoreError, ClientError

    def run() -> None:
        _client(config).delete_object(Bucket=config.bucket, Key=config.prefix + key)

    try:
        await anyio.to_thread.run_sync(run)
    except (BotoCoreError, ClientError) as exc:
        raise _unavailable(exc) from None
