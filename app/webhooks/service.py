"""A user's webhooks and their delivery log: the rules and the SQL behind the routes.

Only the user themself manages their webhooks (``own``): Memos lets an admin
create one on another user's account, which would send that user's PRIVATE
memos to the admin's URL. Every statement is keyed by the owner as well as
the uid, so a guessed uid of someone else's hook is a 404. The URL is checked
against the outbound policy (``app.net.guarded``) when it is set, not only
when a delivery is attempted.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import msgspec
import sqlalchemy as sa
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection

from app.access.caller import Caller
from app.api.structs import resource_id, rfc3339
from app.db.schema import webhook, webhook_delivery, webhook_event
from app.errors import InvalidArgument, NotFound, PermissionDenied
from app.net import guarded
from app.settings import Settings
from app.webhooks.schemas import UserWebhook, UserWebhookIn, WebhookDelivery
from app.webhooks.signing import generate_secret, validate_secret

__all__ = [
    "checked_url",
    "create_hook",
    "delete_hook",
    "delivery_page",
    "hook_out",
    "hook_uid",
    "list_hooks",
    "load_hook",
    "own",
    "update_hook",
]

MASK_PATHS = {
    "url": "url",
    "displayname": "display_name",
    "signingsecret": "signing_secret",
}


def hook_out(username: str, row: Row[Any]) -> UserWebhook:
    return UserWebhook(
        name=f"users/{username}/webhooks/{row.uid}",
        url=row.url,
        display_name=row.display_name,
        create_time=rfc3339(row.created_ts),
        update_time=rfc3339(row.updated_ts),
        signing_secret="",
        signing_secret_set=bool(row.secret),
    )


def own(caller: Caller, user: str) -> str:
    """The caller's username when ``user`` names the caller; 403 for anyone else's."""
    username = resource_id(user, "users", field="parent")
    if username != caller.username:
        raise PermissionDenied("webhooks can only be managed by their own user")
    return username


def hook_uid(value: str, username: str) -> str:
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
        parsed = guarded.check_url(url)
    except guarded.BadUrl as exc:
        raise InvalidArgument(f"url: {exc}") from None
    policy = guarded.Policy.parse(
        settings.webhook_allow_private, setting="DAYBOOK_WEBHOOK_ALLOW_PRIVATE"
    )
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        await guarded.checked(parsed.host, port, policy)
    except guarded.Refused as exc:
        raise InvalidArgument(
            f"url: must not reach a private or loopback address ({exc})"
        ) from None
    except OSError as exc:
        raise InvalidArgument(f"url: the host could not be resolved ({exc})") from None
    return url


async def load_hook(db: AsyncConnection, caller: Caller, uid: str) -> Row[Any]:
    row = (
        await db.execute(
            sa.select(webhook).where(webhook.c.uid == uid, webhook.c.owner_id == caller.user_id)
        )
    ).first()
    if row is None:
        raise NotFound(f"webhook {uid!r} not found")
    return row


async def list_hooks(db: AsyncConnection, caller: Caller) -> Sequence[Row[Any]]:
    stmt = sa.select(webhook).where(webhook.c.owner_id == caller.user_id).order_by(webhook.c.id)
    return (await db.execute(stmt)).all()


async def create_hook(
    db: AsyncConnection, settings: Settings, caller: Caller, now: int, data: UserWebhookIn
) -> Row[Any]:
    url = await checked_url(data.url if isinstance(data.url, str) else "", settings)
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
    return await load_hook(db, caller, uid)


async def update_hook(
    db: AsyncConnection,
    settings: Settings,
    caller: Caller,
    now: int,
    row: Row[Any],
    data: UserWebhookIn,
    update_mask: str | None,
) -> Row[Any]:
    """Apply the masked fields (every field present in the body when there is no mask)."""
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
        values["url"] = await checked_url(data.url, settings)
    if "display_name" in paths:
        values["display_name"] = data.display_name if isinstance(data.display_name, str) else ""
    if "signing_secret" in paths:
        raw = data.signing_secret if isinstance(data.signing_secret, str) else ""
        # An empty secret rotates to a fresh one: deliveries are always signed.
        values["secret"] = validate_secret(raw) if raw.strip() else generate_secret()
    if values:
        values["updated_ts"] = now
        await db.execute(webhook.update().where(webhook.c.id == row.id).values(**values))
    return await load_hook(db, caller, row.uid)


async def delete_hook(db: AsyncConnection, row: Row[Any]) -> None:
    await db.execute(webhook.delete().where(webhook.c.id == row.id))


def _ms_time(ms: int) -> str:
    return rfc3339(ms // 1000)


async def delivery_page(
    db: AsyncConnection, hook_id: int, size: int, page_token: str | None
) -> tuple[list[WebhookDelivery], str]:
    """A page of the hook's attempts, newest first; the token is the last attempt's id."""
    query = (
        sa.select(
            webhook_delivery,
            webhook_event.c.msg_id,
            webhook_event.c.activity,
            webhook_event.c.state.label("event_state"),
            webhook_event.c.next_attempt_ms,
        )
        .join(webhook_event, webhook_event.c.id == webhook_delivery.c.event_id)
        .where(webhook_delivery.c.webhook_id == hook_id)
        .order_by(webhook_delivery.c.id.desc())
        .limit(size + 1)
    )
    if page_token:
        if not (page_token.isascii() and page_token.isdigit() and len(page_token) <= 18):
            raise InvalidArgument("pageToken: invalid page token")
        query = query.where(webhook_delivery.c.id < int(page_token))
    rows = (await db.execute(query)).all()
    page = rows[:size]
    deliveries = [
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
            next_attempt_time=_ms_time(r.next_attempt_ms) if r.event_state == "PENDING" else "",
        )
        for r in page
    ]
    return deliveries, str(page[-1].id) if len(rows) > size else ""
