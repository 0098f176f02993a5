"""Daybook: a self-hosted note service with a Memos-compatible API."""

__version__ = "0.1.0"
