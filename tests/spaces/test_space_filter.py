"""``space == "spaces/x"`` in CEL (issue 17): a filter on placement that only narrows."""

from __future__ import annotations

from typing import Any

from tests.conftest import Actor
from tests.spaces.conftest import Team, create_space, space_memo


async def _names(actor: Actor, text: str) -> set[str]:
    r = await actor.get("/api/v1/memos", params={"filter": text})
    assert r.status_code == 200, r.text
    return {m["name"] for m in r.json()["memos"]}


async def _made(r: Any) -> str:
    assert r.status_code == 200, r.text
    return str(r.json()["name"])


async def test_space_equality_narrows_to_the_space(
    alice: Actor, bob: Actor, dave: Actor, team: Team
) -> None:
    other = await create_space(alice, "Other")
    in_team = await _made(await space_memo(bob, team.name, "share"))
    in_other = await _made(await space_memo(alice, other["name"], "share"))
    personal = (await alice.memo("personal", visibility="PROTECTED"))["name"]
    assert await _names(alice, f'space == "{team.name}"') == {in_team}
    assert await _names(alice, f'space == "{other["name"]}"') == {in_other}
    assert await _names(alice, f'space != "{team.name}"') == {in_other, personal}
    assert await _names(alice, f'space == "{team.name}" || space == null') == {in_team, personal}
    # Bob is not in "Other": naming it finds nothing he could not already read.
    assert await _names(bob, f'space == "{other["name"]}"') == set()
    assert await _names(dave, f'space == "{team.name}"') == set()
    assert await _names(dave, f'space != "{team.name}"') == {personal}
    assert await _names(alice, 'space == "spaces/nosuchspace"') == set()
    r = await alice.get("/api/v1/memos", params={"filter": 'space == "team"'})
    assert r.status_code == 400 and "spaces/{id}" in r.text
