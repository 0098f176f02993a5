"""Fixtures for grant tests: the space fixtures, plus one-line helpers per action.

``team`` is alice's space (alice ADMIN: OWNER at her home and ``share``), bob
an ACTIVE USER (OWNER at his home, WRITE at ``share``), carol only INVITED.
"""

from __future__ import annotations

from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import Actor
from tests.spaces.conftest import carol, dave, team  # noqa: F401 (fixtures)
from tests.support import mint_key


async def grant(
    actor: Actor, space: str, principal: str, path: str, level: str, status: int = 200
) -> dict[str, Any]:
    r = await actor.post(
        f"/api/v1/{space}/grants", json={"principal": principal, "path": path, "level": level}
    )
    assert r.status_code == status, r.text
    return dict(r.json())


async def revoke_grants(actor: Actor, space: str, principal: str, path: str) -> None:
    """Delete every grant of ``principal`` at exactly ``path``."""
    grants = (await actor.get(f"/api/v1/{space}/grants")).json()["grants"]
    for g in grants:
        if g["principal"] == principal and g["path"] == path:
            r = await actor.delete(f"/api/v1/{g['name']}")
            assert r.status_code == 200, r.text


async def access(client: AsyncTestClient[Any], headers: dict[str, str], space: str) -> Any:
    r = await client.get(f"/api/v1/{space}/access", headers=headers)
    assert r.status_code == 200, r.text
    return {(g["path"], g["level"]) for g in r.json()["grants"]}


async def key(actor: Actor, **restriction: Any) -> dict[str, str]:
    r = await mint_key(actor, **restriction)
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['token']}"}


async def home(actor: Actor, space: str) -> str:
    """The actor's home path (``home.<id>``), as its access shows it."""
    r = await actor.get(f"/api/v1/{space}/access")
    paths = [g["path"] for g in r.json()["grants"] if g["path"].startswith("home.")]
    assert paths, r.text
    return str(paths[0])
