"""Standard Webhooks signatures: ``webhook-id``, ``webhook-timestamp``, ``webhook-signature``.

The signature is computed by the ``standardwebhooks`` package (the spec's own
reference library), so a receiver using any Standard Webhooks verifier accepts
it. Secrets are ``whsec_<base64>`` (generated: 32 random bytes, as Memos does);
a Memos-era secret without the prefix is used as raw bytes, as Memos uses it.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from datetime import UTC, datetime

from standardwebhooks import Webhook

from app.errors import InvalidArgument

PREFIX = "whsec_"
MAX_SECRET = 256


def generate_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def signing_key(secret: str) -> bytes:
    """The HMAC key of a stored secret; ``ValueError`` if a ``whsec_`` body is not base64."""
    if secret.startswith(PREFIX):
        try:
            key = base64.b64decode(secret[len(PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the whsec_ secret is not valid base64") from None
        if not key:
            raise ValueError("the whsec_ secret is empty")
        return key
    return secret.encode()


def validate_secret(raw: str) -> str:
    """A client-supplied secret: printable ASCII, bounded, decodable (400 otherwise)."""
    secret = raw.strip()
    if not secret:
        raise InvalidArgument("signingSecret: empty")
    if len(secret) > MAX_SECRET:
        raise InvalidArgument(f"signingSecret: longer than {MAX_SECRET} characters")
    if any(not 0x20 <= ord(c) <= 0x7E for c in secret):
        raise InvalidArgument("signingSecret: only printable ASCII characters are allowed")
    try:
        signing_key(secret)
    except ValueError as exc:
        raise InvalidArgument(f"signingSecret: {exc}") from None
    return secret


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers for one attempt of one message."""
    signature = Webhook(signing_key(secret)).sign(
        msg_id, datetime.fromtimestamp(timestamp, tz=UTC), body.decode()
    )
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature,
    }
