"""Password hashing with argon2id, off the event loop; bcrypt verified for imported users.

Users carried over from Memos (``daybook import-memos-db``) keep the bcrypt
hash Memos stored (``$2a$``/``$2b$``/``$2y$``, Go's ``x/crypto/bcrypt``), so
they sign in with the password they had; the first successful sign-in
replaces it with an argon2id hash (:func:`needs_rehash`). bcrypt only ever
reads the first 72 bytes of a password, as Go's implementation did when the
hash was made, so the same prefix is compared here. A hash the importer could
not carry is stored as :data:`RESET_REQUIRED`, which no password matches: an
admin sets a new password for that user.
"""

from __future__ import annotations

import anyio.to_thread
import bcrypt
from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError

BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")
BCRYPT_MAX_BYTES = 72
# Never a valid hash of any scheme: verification always fails, the user must be reset.
RESET_REQUIRED = "!reset-required"
MAX_PASSWORD_BYTES = 1024


class PasswordTooLong(ValueError):
    """More than MAX_PASSWORD_BYTES of UTF-8, or not encodable (a lone surrogate)."""


def password_bytes(password: str) -> int:
    """The password's UTF-8 length, refused past the cap before anything hashes it."""
    if len(password) > MAX_PASSWORD_BYTES:  # cheap pre-check: every character is >= 1 byte
        raise PasswordTooLong(f"password: longer than {MAX_PASSWORD_BYTES} bytes")
    try:
        size = len(password.encode("utf-8"))
    except UnicodeEncodeError:
        raise PasswordTooLong("password: not valid Unicode text") from None
    if size > MAX_PASSWORD_BYTES:
        raise PasswordTooLong(f"password: longer than {MAX_PASSWORD_BYTES} bytes")
    return size


def make_hasher(kind: str) -> PasswordHasher:
    """``argon2id`` (RFC 9106 low-memory profile) or ``cheap`` for tests."""
    if kind == "cheap":
        return PasswordHasher.from_parameters(profiles.CHEAPEST)
    return PasswordHasher()


async def hash_password(hasher: PasswordHasher, password: str) -> str:
    password_bytes(password)
    return await anyio.to_thread.run_sync(hasher.hash, password)


def is_bcrypt(stored: str) -> bool:
    return stored.startswith(BCRYPT_PREFIXES)


def needs_rehash(stored: str) -> bool:
    """Whether a hash that just verified should be replaced by an argon2id one."""
    return is_bcrypt(stored)


def _check_bcrypt(stored: str, password: str) -> bool:
    try:
        return bcrypt.checkpw(password.encode("utf-8")[:BCRYPT_MAX_BYTES], stored.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return False


async def verify_password(hasher: PasswordHasher, stored: str, password: str) -> bool:
    try:
        password_bytes(password)
    except PasswordTooLong:  # callers refuse these with a 400 first; never hashed
        return False

    def check() -> bool:
        if is_bcrypt(stored):
            return _check_bcrypt(stored, password)
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
