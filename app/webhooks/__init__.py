"""Webhooks: Memos' per-user webhooks, signed per Standard Webhooks, delivered
from a durable outbox (decision 0026)."""
