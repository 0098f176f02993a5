"""Opaque bearer secrets: 256 random bits, stored only as a SHA-256 digest.

A fast digest is right here: the secret cannot be guessed, and a digest
allows an indexed lookup (a salted slow hash would force a scan).
"""

from __future__ import annotations

import hashlib
import secrets

SESSION_PREFIX = "dbk_s_"
PAT_PREFIX = "dbk_pat_"


def new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()
