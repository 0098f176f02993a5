"""Daybook against Memos' own OpenAPI document (usememos/memos 76a7629, Memos 0.31).

One seeded app per dialect runs a script that calls every operation Daybook
shares with Memos, the way a Memos client calls it (Memos' request shapes,
Memos' paths), and records each response. Each operation's responses are
then checked against Memos' response schema and against the gateway's
"every scalar, enum and list is written" rule (memos_schema.missing_defaults).

``SERVED`` and ``NOT_SERVED`` together must name every one of Memos' 73
operations; the README's table is written from them.
"""

from __future__ import annotations

import base64
import pathlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.server import create_app, openapi_json
from tests.conftest import Templates, _admin_exec
from tests.contract import memos_schema, pages
from tests.support import make_settings

Ctx = dict[str, Any]
Value = Any | Callable[[Ctx], Any]

# Operations Memos has and Daybook does not serve, and why.
NOT_SERVED: dict[str, str] = {
    "AIService_Transcribe": "no AI provider: Daybook sends nothing to third-party models",
    **{
        f"IdentityProviderService_{op}": "no SSO: Daybook signs in with passwords and tokens"
        for op in (
            "ListIdentityProviders",
            "CreateIdentityProvider",
            "GetIdentityProvider",
            "DeleteIdentityProvider",
            "UpdateIdentityProvider",
        )
    },
    **{
        f"UserService_{op}": "no SSO, so no identities linked to a provider"
        for op in (
            "ListLinkedIdentities",
            "CreateLinkedIdentity",
            "GetLinkedIdentity",
            "DeleteLinkedIdentity",
        )
    },
    **{
        f"UserService_{op}": "no inbox yet: Daybook records no comment/mention notifications"
        for op in ("ListUserNotifications", "DeleteUserNotification", "UpdateUserNotification")
    },
    "InstanceService_TestInstanceEmailSetting": "no email: Daybook sends no mail",
}
# Built on another branch (webhooks): validated here when the app serves them.
ELSEWHERE = {
    "UserService_ListUserWebhooks",
    "UserService_CreateUserWebhook",
    "UserService_DeleteUserWebhook",
    "UserService_UpdateUserWebhook",
    "UserService_GetUserWebhookSigningSecret",
}

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


@dataclass(frozen=True)
class Call:
    """One request as a Memos client sends it; ``save`` keeps names for later calls."""

    op: str
    method: str
    path: Value
    actor: str = "alice"
    json: Value = None
    params: Value = None
    status: int = 200
    save: Callable[[Ctx, Any], None] | None = None


def _v(value: Value, ctx: Ctx) -> Any:
    return value(ctx) if callable(value) else value


def _keep(key: str, field_name: str = "name") -> Callable[[Ctx, Any], None]:
    def save(ctx: Ctx, body: Any) -> None:
        ctx[key] = body[field_name]

    return save


def _keep_token(ctx: Ctx, body: Any) -> None:
    ctx["alice"] = body["accessToken"]


SCRIPT: tuple[Call, ...] = (
    Call("InstanceService_GetInstanceProfile", "GET", "/api/v1/instance/profile", actor="anon"),
    Call(
        "UserService_CreateUser",
        "POST",
        "/api/v1/users",
        actor="anon",
        json={"username": "alice", "password": "password-1", "role": "USER"},
    ),
    Call(
        "AuthService_SignIn",
        "POST",
        "/api/v1/auth/signin",
        actor="anon",
        json={"passwordCredentials": {"username": "alice", "password": "password-1"}},
        save=_keep_token,
    ),
    Call(
        "InstanceService_UpdateInstanceSetting",
        "PATCH",
        "/api/v1/instance/settings/ACCESS",
        json={
            "name": "instance/settings/ACCESS",
            "accessSetting": {"accessMode": "INSTANCE_ACCESS_MODE_PUBLIC"},
        },
    ),
    Call(
        "UserService_CreateUser",
        "POST",
        "/api/v1/users",
        json={"username": "bob", "password": "password-2", "displayName": "Bob"},
    ),
    Call("AuthService_GetCurrentUser", "GET", "/api/v1/auth/me"),
    Call("UserService_GetUser", "GET", "/api/v1/users/alice"),
    Call("UserService_GetUser", "GET", "/api/v1/users/bob", actor="bob"),
    Call("UserService_ListUsers", "GET", "/api/v1/users"),
    Call(
        "UserService_UpdateUser",
        "PATCH",
        "/api/v1/users/alice",
        params={"updateMask": "displayName,description"},
        json={"name": "users/alice", "displayName": "Alice", "description": "hi"},
    ),
    Call(
        "UserService_BatchGetUsers",
        "POST",
        "/api/v1/users:batchGet",
        json={"usernames": ["alice", "bob"]},
    ),
    Call("InstanceService_GetInstanceProfile", "GET", "/api/v1/instance/profile", actor="anon"),
    Call(
        "AttachmentService_CreateAttachment",
        "POST",
        "/api/v1/attachments",
        json={"filename": "dot.png", "type": "image/png", "content": PNG},
        save=_keep("att"),
    ),
    Call(
        "AttachmentService_CreateAttachment",
        "POST",
        "/api/v1/attachments",
        json={"filename": "site", "type": "text/html", "externalLink": "https://example.com/x"},
        save=_keep("link_att"),
    ),
    Call(
        "AttachmentService_CreateAttachment",
        "POST",
        "/api/v1/attachments",
        json={"filename": "spare.txt", "type": "text/plain", "content": "aGk="},
        save=_keep("spare_att"),
    ),
    Call(
        "MemoService_CreateMemo",
        "POST",
        "/api/v1/memos",
        json={"content": "first #tag", "visibility": "PUBLIC"},
        save=_keep("m1"),
    ),
    Call(
        "MemoService_CreateMemo",
        "POST",
        "/api/v1/memos",
        json=lambda c: {
            "content": "second with [a link](https://example.com) and - [ ] a task",
            "visibility": "PROTECTED",
            "attachments": [{"name": c["att"]}],
            "relations": [{"relatedMemo": {"name": c["m1"]}, "type": "REFERENCE"}],
            "location": {"placeholder": "here", "latitude": 1.5, "longitude": 2.5},
        },
        save=_keep("m2"),
    ),
    Call(
        "MemoService_CreateMemo",
        "POST",
        "/api/v1/memos",
        params={"memoId": "private-one"},
        json={"content": "third", "visibility": "VISIBILITY_UNSPECIFIED"},
        save=_keep("m3"),
    ),
    Call("MemoService_GetMemo", "GET", lambda c: f"/api/v1/{c['m2']}"),
    Call("MemoService_GetMemo", "GET", lambda c: f"/api/v1/{c['m1']}", actor="anon"),
    Call("MemoService_GetMemo", "GET", "/api/v1/memos/no-such-memo", status=404),
    Call(
        "MemoService_CreateMemo",
        "POST",
        "/api/v1/memos",
        json={"content": "x", "visibility": "NOT_A_VISIBILITY"},
        status=400,
    ),
    Call("MemoService_ListMemos", "GET", "/api/v1/memos"),
    Call("MemoService_ListMemos", "GET", "/api/v1/memos", params={"pageSize": 1}),
    Call("MemoService_ListMemos", "GET", "/api/v1/memos", actor="bob"),
    Call(
        "MemoService_UpdateMemo",
        "PATCH",
        lambda c: f"/api/v1/{c['m3']}",
        params={"updateMask": "content,pinned"},
        json=lambda c: {"name": c["m3"], "content": "third, edited", "pinned": True},
    ),
    Call(
        "MemoService_UpdateMemo",
        "PATCH",
        lambda c: f"/api/v1/{c['m3']}",
        params={"updateMask": "attachments,relations"},
        json=lambda c: {
            "name": c["m3"],
            "attachments": [{"name": c["link_att"]}],
            "relations": [{"relatedMemo": {"name": c["m1"]}, "type": "REFERENCE"}],
        },
    ),
    Call("MemoService_ListMemoAttachments", "GET", lambda c: f"/api/v1/{c['m2']}/attachments"),
    Call(
        "MemoService_SetMemoAttachments",
        "PATCH",
        lambda c: f"/api/v1/{c['m2']}/attachments",
        json=lambda c: {"name": c["m2"], "attachments": [{"name": c["att"]}]},
    ),
    Call("MemoService_ListMemoRelations", "GET", lambda c: f"/api/v1/{c['m2']}/relations"),
    Call(
        "MemoService_SetMemoRelations",
        "PATCH",
        lambda c: f"/api/v1/{c['m2']}/relations",
        json=lambda c: {
            "name": c["m2"],
            "relations": [
                {"memo": {"name": c["m2"]}, "relatedMemo": {"name": c["m1"]}, "type": "REFERENCE"}
            ],
        },
    ),
    Call(
        "MemoService_CreateMemoComment",
        "POST",
        lambda c: f"/api/v1/{c['m1']}/comments",
        actor="bob",
        json={"content": "a comment", "visibility": "PUBLIC"},
        save=_keep("comment"),
    ),
    Call("MemoService_ListMemoComments", "GET", lambda c: f"/api/v1/{c['m1']}/comments"),
    Call(
        "MemoService_UpsertMemoReaction",
        "POST",
        lambda c: f"/api/v1/{c['m1']}/reactions",
        actor="bob",
        json=lambda c: {"name": c["m1"], "reaction": {"contentId": c["m1"], "reactionType": "👍"}},
        save=_keep("reaction"),
    ),
    Call("MemoService_ListMemoReactions", "GET", lambda c: f"/api/v1/{c['m1']}/reactions"),
    Call(
        "MemoService_DeleteMemoReaction",
        "DELETE",
        lambda c: f"/api/v1/{c['reaction']}",
        actor="bob",
    ),
    Call(
        "MemoService_CreateMemoShare",
        "POST",
        lambda c: f"/api/v1/{c['m3']}/shares",
        json={},
        save=_keep("share"),
    ),
    Call("MemoService_ListMemoShares", "GET", lambda c: f"/api/v1/{c['m3']}/shares"),
    Call(
        "MemoService_GetSharedMemo",
        "GET",
        lambda c: f"/api/v1/shares/{c['share'].rsplit('/', 1)[1]}/memo",
        actor="anon",
    ),
    Call("MemoService_DeleteMemoShare", "DELETE", lambda c: f"/api/v1/{c['share']}"),
    Call(
        "MemoViewService_CreateMemoView",
        "POST",
        "/api/v1/users/alice/views",
        json={"title": "Tagged", "filter": 'tag in ["tag"]'},
        save=_keep("view"),
    ),
    Call("MemoViewService_ListMemoViews", "GET", "/api/v1/users/alice/views"),
    Call("MemoViewService_GetMemoView", "GET", lambda c: f"/api/v1/{c['view']}"),
    Call(
        "MemoViewService_UpdateMemoView",
        "PATCH",
        lambda c: f"/api/v1/{c['view']}",
        params={"updateMask": "title"},
        json=lambda c: {"name": c["view"], "title": "Tagged, renamed", "filter": ""},
    ),
    Call("MemoViewService_DeleteMemoView", "DELETE", lambda c: f"/api/v1/{c['view']}"),
    Call(
        "UserService_CreatePersonalAccessToken",
        "POST",
        "/api/v1/users/alice/personalAccessTokens",
        json={"parent": "users/alice", "description": "cli", "expiresInDays": 30},
        save=lambda c, b: c.update(pat=b["personalAccessToken"]["name"]),
    ),
    Call(
        "UserService_CreatePersonalAccessToken",
        "POST",
        "/api/v1/users/alice/personalAccessTokens",
        json={"parent": "users/alice", "description": "forever"},
    ),
    Call("UserService_ListPersonalAccessTokens", "GET", "/api/v1/users/alice/personalAccessTokens"),
    Call("UserService_DeletePersonalAccessToken", "DELETE", lambda c: f"/api/v1/{c['pat']}"),
    Call("UserService_ListUserSettings", "GET", "/api/v1/users/alice/settings"),
    Call("UserService_GetUserSetting", "GET", "/api/v1/users/alice/settings/GENERAL"),
    Call(
        "UserService_UpdateUserSetting",
        "PATCH",
        "/api/v1/users/alice/settings/GENERAL",
        params={"updateMask": "locale,theme,memoVisibility"},
        json={
            "name": "users/alice/settings/GENERAL",
            "generalSetting": {"locale": "fr", "theme": "dark", "memoVisibility": "PROTECTED"},
        },
    ),
    Call("UserService_GetUserStats", "GET", "/api/v1/users/alice:getStats"),
    Call("UserService_GetUserStats", "GET", "/api/v1/users/alice:getStats", actor="anon"),
    Call("UserService_ListAllUserStats", "GET", "/api/v1/users:stats"),
    Call("InstanceService_GetInstanceStats", "GET", "/api/v1/instance/stats"),
    Call("InstanceService_GetInstanceSetting", "GET", "/api/v1/instance/settings/GENERAL"),
    Call("InstanceService_GetInstanceSetting", "GET", "/api/v1/instance/settings/MEMO_RELATED"),
    Call("InstanceService_GetInstanceSetting", "GET", "/api/v1/instance/settings/ACCESS"),
    Call("InstanceService_GetInstanceSetting", "GET", "/api/v1/instance/settings/STORAGE"),
    Call("InstanceService_GetInstanceSetting", "GET", "/api/v1/instance/settings/TAGS"),
    Call("InstanceService_GetInstanceSetting", "GET", "/api/v1/instance/settings/NOTIFICATION"),
    Call(
        "InstanceService_UpdateInstanceSetting",
        "PATCH",
        "/api/v1/instance/settings/MEMO_RELATED",
        params={"updateMask": "contentLengthLimit"},
        json={
            "name": "instance/settings/MEMO_RELATED",
            "memoRelatedSetting": {"contentLengthLimit": 16384},
        },
    ),
    Call(
        "InstanceService_BatchGetInstanceSettings",
        "POST",
        "/api/v1/instance/settings:batchGet",
        json={"names": ["instance/settings/GENERAL", "instance/settings/ACCESS"]},
    ),
    Call(
        "MemoService_GetLinkMetadata",
        "GET",
        "/api/v1/memos/-/linkMetadata",
        params=lambda c: {"url": f"http://localhost:{c['port']}/page"},
    ),
    Call(
        "MemoService_BatchGetLinkMetadata",
        "POST",
        "/api/v1/memos/-/linkMetadata:batchGet",
        json=lambda c: {"urls": [f"http://localhost:{c['port']}/page", "http://10.0.0.1/"]},
    ),
    Call("AttachmentService_ListAttachments", "GET", "/api/v1/attachments"),
    Call("AttachmentService_GetAttachment", "GET", lambda c: f"/api/v1/{c['att']}"),
    Call(
        "AttachmentService_UpdateAttachment",
        "PATCH",
        lambda c: f"/api/v1/{c['att']}",
        params={"updateMask": "filename"},
        json=lambda c: {"name": c["att"], "filename": "renamed.png", "type": "image/png"},
    ),
    Call(
        "AttachmentService_BatchDeleteAttachments",
        "POST",
        "/api/v1/attachments:batchDelete",
        json=lambda c: {"names": [c["spare_att"]]},
    ),
    Call("AttachmentService_DeleteAttachment", "DELETE", lambda c: f"/api/v1/{c['link_att']}"),
    Call("MemoService_DeleteMemo", "DELETE", lambda c: f"/api/v1/{c['m3']}"),
    Call("UserService_DeleteUser", "DELETE", "/api/v1/users/bob"),
    Call("AuthService_RefreshToken", "POST", "/api/v1/auth/refresh", json={}, save=_keep_token),
    Call("AuthService_GetCurrentUser", "GET", "/api/v1/auth/me"),
    Call("AuthService_SignOut", "POST", "/api/v1/auth/signout"),
)

SERVED = sorted({call.op for call in SCRIPT})


@dataclass
class Recorded:
    calls: dict[str, list[tuple[Call, int, Any]]] = field(default_factory=dict)
    daybook_operations: set[str] = field(default_factory=set)


async def _run_script(client: AsyncTestClient[Any], port: int) -> Recorded:
    recorded = Recorded()
    recorded.daybook_operations = {
        op["operationId"]
        for item in openapi_json(client.app)["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    }
    ctx: Ctx = {"port": port}
    for call in SCRIPT:
        headers = {}
        if call.actor != "anon" and call.actor in ctx:
            headers["Authorization"] = f"Bearer {ctx[call.actor]}"
        try:
            url, body_in, params = _v(call.path, ctx), _v(call.json, ctx), _v(call.params, ctx)
        except KeyError as exc:  # an earlier call that this one builds on failed
            recorded.calls.setdefault(call.op, []).append((call, -1, f"needs {exc}"))
            continue
        r = await client.request(call.method, url, json=body_in, params=params, headers=headers)
        client.cookies.clear()
        body = r.json() if r.content else None
        recorded.calls.setdefault(call.op, []).append((call, r.status_code, body))
        if r.status_code == call.status and call.save is not None:
            call.save(ctx, body)
        if (
            r.status_code == 200
            and call.op == "UserService_CreateUser"
            and body["username"] == "bob"
        ):
            signin = await client.post(
                "/api/v1/auth/signin",
                json={"passwordCredentials": {"username": "bob", "password": "password-2"}},
            )
            client.cookies.clear()
            ctx["bob"] = signin.json()["accessToken"]
    return recorded


@pytest.fixture(scope="module")
async def recorded(dialect: str, templates: Templates) -> AsyncIterator[Recorded]:
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="daybook-contract-"))
    if dialect == "sqlite":
        target = tmp / "daybook.db"
        shutil.copyfile(templates.sqlite_file, target)
        url = f"sqlite:///{target}"
    else:
        assert templates.pg_root is not None
        await _admin_exec(
            templates.pg_root, "CREATE DATABASE contract_memos TEMPLATE daybook_template"
        )
        url = templates.pg_root.format(db="contract_memos")
    settings = make_settings(url, tmp, link_preview_allow_private="localhost")
    try:
        with pages.serve() as port:
            async with AsyncTestClient(app=create_app(settings)) as client:
                yield await _run_script(client, port)
    finally:
        if dialect != "sqlite":
            assert templates.pg_root is not None
            await _admin_exec(
                templates.pg_root, "DROP DATABASE IF EXISTS contract_memos WITH (FORCE)"
            )
        shutil.rmtree(tmp, ignore_errors=True)


def test_every_memos_operation_is_classified() -> None:
    memos = set(memos_schema.operations())
    assert len(memos) == 73
    classified = set(SERVED) | set(NOT_SERVED) | ELSEWHERE
    assert memos - classified == set()
    assert classified - memos == set()
    assert set(SERVED) & set(NOT_SERVED) == set()


async def test_served_means_routed(recorded: Recorded) -> None:
    """Daybook's own OpenAPI names exactly the Memos operations the script calls."""
    memos = set(memos_schema.operations())
    shared = recorded.daybook_operations & memos
    assert shared - ELSEWHERE == set(SERVED)


@pytest.mark.parametrize("op", SERVED)
async def test_operation_matches_memos(recorded: Recorded, op: str) -> None:
    schema = memos_schema.response_schema(op)
    problems = []
    for call, status, body in recorded.calls[op]:
        label = f"{call.method} {call.actor}"
        if status != call.status:
            problems.append(f"{label}: status {status} (expected {call.status}): {body}")
            continue
        if call.status != 200:
            schema_name = "Status"
            problems += [f"{label}: {e}" for e in memos_schema.schema_errors(body, schema_name)]
            problems += [
                f"{label}: missing {p}" for p in memos_schema.missing_defaults(body, schema_name)
            ]
            continue
        if schema is None:
            if not isinstance(body, dict):
                problems.append(f"{label}: not a JSON object: {body!r}")
            continue
        problems += [f"{label}: schema: {e}" for e in memos_schema.schema_errors(body, schema)]
        problems += [f"{label}: missing {p}" for p in memos_schema.missing_defaults(body, schema)]
    assert not problems, "\n".join(problems)
