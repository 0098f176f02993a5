"""The webhook API's Structs (Memos 0.31's ``UserWebhook``, plus Daybook's delivery log)."""

from __future__ import annotations

import msgspec

from app.api.bounds import Name, Title, Url
from app.api.structs import In, Out

__all__ = [
    "ListUserWebhooksResponse",
    "ListWebhookDeliveriesResponse",
    "SigningSecretResponse",
    "UserWebhook",
    "UserWebhookIn",
    "WebhookDelivery",
]


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
