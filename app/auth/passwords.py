"""Password hashing with argon2id, off the event loop."""

from __future__ import annotations

import anyio.to_thread
from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError


def make_hasher(kind: str) -> PasswordHasher:
    """``argon2id`` (RFC 9106 low-memory profile) or ``cheap`` for tests."""
    if kind == "cheap":
        return PasswordHasher.from_parameters(profiles.CHEAPEST)
    return PasswordHasher()


async def hash_password(hasher: PasswordHasher, password: str) -> str:
    return await anyio.to_thread.run_sync(hasher.hash, password)


async def verify_password(hasher: PasswordHasher, stored: str, password: str) -> bool:
    def check() -> bool:
        try:
            return hasher.verify(stored, password)
        except (VerificationError, InvalidHashError):
            return False

    return await anyio.to_thread.run_sync(check)


_dummy_hashes: dict[int, str] = {}


async def verify_dummy(hasher: PasswordHasher, password: str) -> None:
    """Spend the time of a real verification when the username does not exist,
    so that sign-in timing does not reveal which usernames exist."""
    key = id(hasher)
    if key not in _dummy_hashes:
        _dummy_hashes[key] = await hash_password(hasher, "dummy password for timing")
    await verify_password(hasher, _dummy_hashes[key], password)
