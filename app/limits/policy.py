"""The rate-limit policy table and the pure rules around it (decision 0029).

Which budgets a request spends, how much, and how the answer is written in
headers are decided here with no I/O: :func:`charges` classifies a request,
:func:`render` writes the IETF ``RateLimit``/``RateLimit-Policy`` fields
(draft-ietf-httpapi-ratelimit-headers, structured-field form: ``"name";q=;w=``
and ``"name";r=;t=``).

Memos 0.31 has no rate limiter (its Echo limiter, 30 req/s per IP in
memory, went with the legacy API in 0.22); the numbers are issue 17's table.
Sign-in is not counted here: ``app.auth.throttle`` owns it (decision 0022's
back-off keys, with this table's numbers), so one attempt is counted once.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "DEFAULT_POLICIES",
    "Charge",
    "Outcome",
    "Per",
    "Policy",
    "charges",
    "parse_overrides",
    "render",
    "window_start",
]


class Per(enum.Enum):
    """Whose budget: the client address (anonymous) or the signed-in user."""

    CLIENT = "client"
    USER = "user"


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    quota: int  # requests (or batch items) per window; 0: this policy is off
    window: int  # seconds
    per: Per
    leased: bool = False  # counted in leases of several hits (reads; see app.limits.store)


DEFAULT_POLICIES: Mapping[str, Policy] = {
    p.name: p
    for p in (
        Policy("anonymous", 300, 60, Per.CLIENT, leased=True),
        Policy("user", 600, 60, Per.USER, leased=True),
        Policy("write", 120, 60, Per.USER),
        Policy("upload", 120, 60, Per.USER),
        Policy("signup", 10, 3600, Per.CLIENT),
        Policy("portability", 10, 3600, Per.USER),
        # Served by app.auth.throttle (listed for the headers and the overrides).
        Policy("signin-client", 30, 900, Per.CLIENT),
        Policy("signin-user", 10, 900, Per.CLIENT),
    )
}

_OVERRIDE = re.compile(r"\s*([a-z-]+)\s*=\s*(\d+)(?:\s*/\s*(\d+))?\s*")


def parse_overrides(text: str, base: Mapping[str, Policy] = DEFAULT_POLICIES) -> dict[str, Policy]:
    """``"write=60/60,upload=0"`` applied to ``base``; ValueError naming a bad entry."""
    policies = dict(base)
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _OVERRIDE.fullmatch(item)
        if match is None or match.group(1) not in policies:
            known = ", ".join(sorted(policies))
            raise ValueError(
                f"rate limit policy {item!r}: expected NAME=QUOTA[/SECONDS], NAME one of {known}"
            )
        old = policies[match.group(1)]
        window = int(match.group(3)) if match.group(3) else old.window
        if window <= 0:
            raise ValueError(f"rate limit policy {item!r}: the window must be positive")
        policies[old.name] = Policy(old.name, int(match.group(2)), window, old.per, old.leased)
    return policies


@dataclass(frozen=True, slots=True)
class Charge:
    policy: Policy
    cost: int


_WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_PORTABILITY = re.compile(r"^/api/v1/users/[^/]+/:(exportMemos|importMemos)\Z")
_UPLOAD = re.compile(r"^/api/v1/attachments\Z")
_SIGNUP = re.compile(r"^/api/v1/users\Z")
_SIGNIN = re.compile(r"^/api/v1/auth/signin\Z")
_BATCH = re.compile(r"/:batch[A-Za-z]+\Z")
# Not counted at all: probes, the SPA's static files, CORS preflights.
_EXEMPT = re.compile(r"^(/healthz|/readyz|/assets/.*|/favicon\.ico)\Z", re.DOTALL)


def is_batch(path: str) -> bool:
    return _BATCH.search(path) is not None


def charges(
    method: str,
    path: str,
    *,
    signed_in: bool,
    items: int,
    policies: Mapping[str, Policy],
) -> tuple[Charge, ...]:
    """The budgets a request spends (pure). ``items``: a batch call's item count.

    Every request spends its base budget (``anonymous`` per client or ``user``
    per user) and at most one kind budget: export/import, an upload, an
    anonymous sign-up, or any other write by a signed-in caller. A batch call
    costs its item count on both.
    """
    if method == "OPTIONS" or _EXEMPT.match(path):
        return ()
    cost = max(1, items) if is_batch(path) else 1
    base = policies["user" if signed_in else "anonymous"]
    kind: Policy | None = None
    if _PORTABILITY.match(path):
        kind = policies["portability"]
    elif method == "POST" and _UPLOAD.match(path):
        kind = policies["upload"]
    elif method == "POST" and _SIGNUP.match(path) and not signed_in:
        kind = policies["signup"]
    elif method in _WRITE_METHODS and signed_in and not _SIGNIN.match(path):
        kind = policies["write"]
    chosen = (base,) if kind is None else (base, kind)
    return tuple(Charge(p, cost) for p in chosen if p.quota > 0)


def window_start(now: int, window: int) -> int:
    """Windows are aligned to the epoch, so every process agrees on them."""
    return now - now % window


@dataclass(frozen=True, slots=True)
class Outcome:
    """One policy's answer: whether admitted, what remains, seconds to the reset."""

    policy: Policy
    allowed: bool
    remaining: int
    reset: int


def render(outcomes: tuple[Outcome, ...]) -> dict[str, str]:
    """The ``RateLimit-Policy`` and ``RateLimit`` fields for ``outcomes`` (and
    ``Retry-After`` when one refused)."""
    if not outcomes:
        return {}
    headers = {
        "RateLimit-Policy": ", ".join(
            f'"{o.policy.name}";q={o.policy.quota};w={o.policy.window}' for o in outcomes
        ),
        "RateLimit": ", ".join(
            f'"{o.policy.name}";r={max(0, o.remaining)};t={max(0, o.reset)}' for o in outcomes
        ),
    }
    refused = [o for o in outcomes if not o.allowed]
    if refused:
        headers["Retry-After"] = str(max(1, max(o.reset for o in refused)))
    return headers
