"""A memo up to the largest allowed content saves and is searchable (issue 13 item 16).

PostgreSQL refuses a tsvector over 1 MiB, and the lexical index is an
expression index over the content, so creating a memo of about half a
mebibyte of distinct words (well within the 1 MiB content limit an admin may
set) was a 500. The index now covers the first 65,536 characters
(``app.search.ddl.PG_TSVECTOR``, migration 0009), whatever the content.
"""

from __future__ import annotations

import random
import string

import pytest

from tests.conftest import Actor

LIMIT = 1024 * 1024
_rng = random.Random(13)


def _words(alphabet: str, length: int, total: int, sep: str = " ") -> str:
    out, size = [], 0
    while size < total:
        word = "".join(_rng.choice(alphabet) for _ in range(length))
        out.append(word)
        size += len(word.encode()) + 1
    return sep.join(out)


def _hyphenated_cjk(total: int) -> str:
    """The densest text measured: one-letter compounds of 4-byte letters, ~9 bytes/char."""
    letters = [chr(c) for c in range(0x20000, 0x2A6DF)]
    out, size = [], 0
    while size < total:
        out.append(_rng.choice(letters) + "-" + _rng.choice(letters))
        size += 10
    return " ".join(out)


def _fit(text: str, budget: int) -> str:
    data = text.encode()[:budget]
    return data.decode("utf-8", "ignore")


BODIES = {
    "distinct ascii words": lambda n: _words(string.ascii_lowercase + string.digits, 5, n),
    "urls": lambda n: " ".join(
        f"http://h{_rng.randint(0, 10**9)}.example/{_rng.randint(0, 10**9)}" for _ in range(n // 30)
    ),
    "hyphenated 4-byte letters": _hyphenated_cjk,
}


# SQLite's FTS5 and trigram tables have no size limit: one body (the densest)
# shows a near-limit memo saves and is found there; PostgreSQL's tsvector limit
# is what every kind of body probes.
SQLITE_KIND = "hyphenated 4-byte letters"


@pytest.mark.parametrize("kind", sorted(BODIES))
async def test_near_limit_memo_saves_and_is_found(alice: Actor, dialect: str, kind: str) -> None:
    if dialect == "sqlite" and kind != SQLITE_KIND:
        pytest.skip("one body suffices on SQLite (no index size limit)")
    r = await alice.patch("/api/v1/instance/settings/ACCESS", json={"contentLengthLimit": LIMIT})
    assert r.status_code == 200, r.text
    head = "lighthouse keeper notes "
    content = head + _fit(BODIES[kind](LIMIT), LIMIT - len(head) - 64)
    assert LIMIT - 4096 < len(content.encode()) <= LIMIT
    r = await alice.post("/api/v1/memos", json={"content": content}, timeout=120)
    assert r.status_code == 200, r.text[:300]
    name = r.json()["name"]
    r = await alice.get("/api/v1/memos:search", params={"query": "lighthouse", "mode": "lexical"})
    assert r.status_code == 200, r.text[:300]
    assert [x["memo"]["name"] for x in r.json()["results"]] == [name]
    # An edit re-indexes the same bounded expression.
    edited = "harbour " + content[len(head) :]
    r = await alice.patch(f"/api/v1/{name}", json={"content": edited}, timeout=120)
    assert r.status_code == 200, r.text[:300]
    r = await alice.get("/api/v1/memos:search", params={"query": "harbour", "mode": "lexical"})
    assert [x["memo"]["name"] for x in r.json()["results"]] == [name]
