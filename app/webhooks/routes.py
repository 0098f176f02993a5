"""Memos 0.31's user webhooks (``users/{u}/webhooks``), plus Daybook's delivery log.

Only the user themself manages their webhooks: Memos lets an admin create
one on another user's account, which would send that user's PRIVATE memos to
the admin's URL; Daybook refuses (403). Restricted keys are barred, as from
every management route. The secret is never in a List/Create/Update answer,
only in ``:getSigningSecret``.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Any

import msgspec
import sqlalchemy as sa
from litestar import Controller, delete, get, patch, post
from litestar.datastructures import State
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.bounds import Name, Title, Url
from app.api.paging import page_size as clamp_page_size
from app.api.params import PageSize
from app.api.responses import errors
from app.api.structs import In, Out, resource_id, rfc3339
from app.db.schema import webhook, webhook_delivery, webhook_event
from app.deps import management_plane, requires_user
from app.errors import InvalidArgument, NotFound, PermissionDenied
from app.settings import Settings
from app.webhooks import safe_http
from app.webhooks.signing import generate_secret, validate_secret

UserName = Annotated[str, Parameter(max_length=80)]
WebhookId = Annotated[str, Parameter(max_length=64)]
MASK_PATHS = {
    "url": "url",
    "displayname": "display_name",
    "signingsecret": "signing_secret",
}


class UserWebhook(Out):
    name: str
    url: str
    display_name: str
    create_time: str
    update_time: str
    signing_secret: str  # INPUT_ONLY in Memos: always "" here
    signing_secret_set: bool


class UserWebhookIn(In):
    name: Name | msgspec.UnsetType = msgspec.UNSET
    url: Url | msgspec.UnsetType = msgspec.UNSET
    display_name: Title | msgspec.UnsetType = msgspec.UNSET
    signing_secret: Title | msgspec.UnsetType = msgspec.UNSET


class ListUserWebhooksResponse(Out):
    webhooks: list[UserWebhook]


class SigningSecretResponse(Out):
    signing_secret: str


class WebhookDelivery(Out):
    """One attempt (Daybook extension). A WITHHELD attempt names no memo."""

    webhook_id: str  # the ``webhook-id`` header of the message
    activity_type: str
    attempt: int
    outcome: str  # DELIVERED | FAILED | REFUSED | WITHHELD
    status_code: int
    error: str
    start_time: str
    duration_ms: int
    event_state: str  # PENDING | DELIVERED | FAILED | WITHHELD
    next_attempt_time: str  # "" unless PENDING


class ListWebhookDeliveriesResponse(Out):
    deliveries: list[WebhookDelivery]
    next_page_token: str = ""


def _out(username: str, row: Any) -> UserWebhook:
    return UserWebhook(
        name=f"users/{username}/webhooks/{row.uid}",
        url=row.url,
        display_name=row.display_name,
        create_time=rfc3339(row.created_ts),
        update_time=rfc3339(row.updated_ts),
        signing_secret="",
        signing_secret_set=bool(row.secret),
    )


def _own(caller: Caller, user: str) -> str:
    username = resource_id(user, "users", field="parent")
    if username != caller.username:
        raise PermissionDenied("webhooks can only be managed by their own user")
    return username


def _hook_uid(value: str, username: str) -> str:
    prefix = f"users/{username}/webhooks/"
    uid = value[len(prefix) :] if value.startswith(prefix) else value
    if not uid or not all(c in "0123456789abcdef" for c in uid) or len(uid) > 32:
        raise InvalidArgument(f"name: {value!r} is not a webhook of users/{username}")
    return uid


async def checked_url(raw: str, settings: Settings) -> str:
    url = raw.strip()
    if not url:
        raise InvalidArgument("url: the webhook URL is required")
    try:
        parsed = safe_http.check_url(url)
    except ValueError as exc:
        raise InvalidArgument(f"url: {exc}") from None
    policy = safe_http.DestinationPolicy.parse(settings.webhook_allow_private)
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        await safe_http.checked_addresses(parsed.host, port, policy)
    except safe_http.RefusedDestination as exc:
        raise InvalidArgument(
            f"url: must not reach a private or loopback address ({exc})"
        ) from None
    except OSError as exc:
        raise InvalidArgument(f"url: the host could not be resolved ({exc})") from None
    return url


async def _load(db: AsyncConnection, caller: Caller, uid: str) -> Any:
    row = (
        await db.execute(
            sa.select(webhook).where(webhook.c.uid == uid, webhook.c.owner_id == caller.user_id)
        )
    ).first()
    if row is None:
        raise NotFound(f"webhook {uid!r} not found")
    return row


class WebhookController(Controller):
    path = "/api/v1/users/{user:str}/webhooks"
    tags = ("UserService",)
    guards = [requires_user, management_plane]  # noqa: RUF012 (Litestar's API)

    @get("", operation_id="UserService_ListUserWebhooks", responses=errors())
    async def list_webhooks(
        self, db: AsyncConnection, caller: Caller, user: UserName
    ) -> ListUserWebhooksResponse:
        username = _own(caller, user)
        rows = (
            await db.execute(
                sa.select(webhook)
                .where(webhook.c.owner_id == caller.user_id)
                .order_by(webhook.c.id)
            )
        ).all()
        return ListUserWebhooksResponse(webhooks=[_out(username, r) for r in rows])

    @post("", operation_id="UserService_CreateUserWebhook", status_code=200, responses=errors())
    async def create_webhook(
        self,
        db: AsyncConnection,
        state: State,
        caller: Caller,
        now: int,
        user: UserName,
        data: UserWebhookIn,
    ) -> UserWebhook:
        username = _own(caller, user)
        url = await checked_url(data.url if isinstance(data.url, str) else "", state.settings)
        raw_secret = data.signing_secret if isinstance(data.signing_secret, str) else ""
        secret = validate_secret(raw_secret) if raw_secret.strip() else generate_secret()
        uid = secrets.token_hex(8)
        await db.execute(
            webhook.insert().values(
                uid=uid,
                owner_id=caller.user_id,
                url=url,
                display_name=data.display_name if isinstance(data.display_name, str) else "",
                secret=secret,
                created_ts=now,
                updated_ts=now,
            )
        )
        return _out(username, await _load(db, caller, uid))

    @patch("/{hook:str}", operation_id="UserService_UpdateUserWebhook", responses=errors())
    async def update_webhook(
        self,
        db: AsyncConnection,
        state: State,
        caller: Caller,
        now: int,
        user: UserName,
        hook: WebhookId,
        data: UserWebhookIn,
        update_mask: Annotated[str | None, Parameter(query="updateMask", max_length=256)] = None,
    ) -> UserWebhook:
        username = _own(caller, user)
        row = await _load(db, caller, _hook_uid(hook, username))
        if update_mask is not None and update_mask.strip():
            # Memos ignores paths it does not know; so does Daybook.
            paths = {
                MASK_PATHS[k]
                for k in (p.strip().replace("_", "").lower() for p in update_mask.split(","))
                if k in MASK_PATHS
            }
        else:
            paths = {
                name
                for name in ("url", "display_name", "signing_secret")
                if not isinstance(getattr(data, name), msgspec.UnsetType)
            }
        values: dict[str, Any] = {}
        if "url" in paths and isinstance(data.url, str) and data.url.strip():
            values["url"] = await checked_url(data.url, state.settings)
        if "display_name" in paths:
            values["display_name"] = data.display_name if isinstance(data.display_name, str) else ""
        if "signing_secret" in paths:
            raw = data.signing_secret if isinstance(data.signing_secret, str) else ""
            # An empty secret rotates to a fresh one: deliveries are always signed.
            values["secret"] = validate_secret(raw) if raw.strip() else generate_secret()
        if values:
            values["updated_ts"] = now
            await db.execute(webhook.update().where(webhook.c.id == row.id).values(**values))
        return _out(username, await _load(db, caller, row.uid))

    @delete(
        "/{hook:str}",
        operation_id="UserService_DeleteUserWebhook",
        status_code=200,
        responses=errors(),
    )
    async def delete_webhook(
        self, db: AsyncConnection, caller: Caller, user: UserName, hook: WebhookId
    ) -> dict[str, Any]:
        username = _own(caller, user)
        row = await _load(db, caller, _hook_uid(hook, username))
        await db.execute(webhook.delete().where(webhook.c.id == row.id))
        return {}

    @get(
        "/{hook:str}/:getSigningSecret",
        operation_id="UserService_GetUserWebhookSigningSecret",
        responses=errors(),
    )
    async def signing_secret(
        self, db: AsyncConnection, caller: Caller, user: UserName, hook: WebhookId
    ) -> SigningSecretResponse:
        username = _own(caller, user)
        row = await _load(db, caller, _hook_uid(hook, username))
        return SigningSecretResponse(signing_secret=row.secret)

    @get(
        "/{hook:str}/deliveries",
        operation_id="UserService_ListUserWebhookDeliveries",
        responses=errors(),
    )
    async def deliveries(
        self,
        db: AsyncConnection,
        caller: Caller,
        user: UserName,
        hook: WebhookId,
        page_size: PageSize = None,
        page_token: Annotated[str | None, Parameter(query="pageToken", max_length=32)] = None,
    ) -> ListWebhookDeliveriesResponse:
        """The webhook's delivery attempts, newest first (owner only)."""
        username = _own(caller, user)
        row = await _load(db, caller, _hook_uid(hook, username))
        size = clamp_page_size(page_size)
        query = (
            sa.select(
                webhook_delivery,
                webhook_event.c.msg_id,
                webhook_event.c.activity,
                webhook_event.c.state.label("event_state"),
                webhook_event.c.next_attempt_ms,
            )
            .join(webhook_event, webhook_event.c.id == webhook_delivery.c.event_id)
            .where(webhook_delivery.c.webhook_id == row.id)
            .order_by(webhook_delivery.c.id.desc())
            .limit(size + 1)
        )
        if page_token:
            if not (page_token.isascii() and page_token.isdigit() and len(page_token) <= 18):
                raise InvalidArgument("pageToken: invalid page token")
            query = query.where(webhook_delivery.c.id < int(page_token))
        rows = (await db.execute(query)).all()
        page = rows[:size]
        return ListWebhookDeliveriesResponse(
            deliveries=[
                WebhookDelivery(
                    webhook_id=r.msg_id,
                    activity_type=r.activity,
                    attempt=r.attempt,
                    outcome=r.outcome,
                    status_code=r.status_code or 0,
                    error=r.error or "",
                    start_time=_ms_time(r.started_ms),
                    duration_ms=r.duration_ms,
                    event_state=r.event_state,
                    next_attempt_time=_ms_time(r.next_attempt_ms)
                    if r.event_state == "PENDING"
                    else "",
                )
                for r in page
            ],
            next_page_token=str(page[-1].id) if len(rows) > size else "",
        )


def _ms_time(ms: int) -> str:
    return rfc3339(ms // 1000)
