"""The request body Memos sends, byte-shape for byte-shape.

Memos (``internal/webhook/webhook.go``) marshals ``WebhookRequestPayload``
with Go's ``encoding/json``: ``url``, ``activityType``, ``creator`` and the
``memo`` as the generated protobuf struct, whose JSON tags are snake_case with
``omitempty``. So enums are numbers (``visibility: 3`` is PUBLIC),
timestamps are ``{"seconds": N}``, int64 sizes are numbers, and every zero
value is left out. Receivers written for Memos parse exactly this, so Daybook
writes the same; Daybook's extensions (``space``, ``tree``) are extra keys.
"""

from __future__ import annotations

import json
from typing import Any

from app.memos import schemas

VISIBILITY = {"PRIVATE": 1, "PROTECTED": 2, "PUBLIC": 3, "SPACE": 4}  # SPACE: Daybook's
STATE = {"NORMAL": 1, "ARCHIVED": 2}
RELATION_TYPE = {"REFERENCE": 1, "COMMENT": 2}


def _ts(text: str) -> dict[str, int]:
    from app.api.structs import parse_time

    seconds = parse_time(text, "time")
    return {"seconds": seconds} if seconds else {}


def _clean(value: dict[str, Any]) -> dict[str, Any]:
    """``omitempty``: drop zero scalars, empty strings and lists, absent objects."""
    return {k: v for k, v in value.items() if v not in (None, "", 0, False, [], 0.0)}


def go_memo(m: schemas.Memo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": m.name,
        "state": STATE.get(m.state, 0),
        "creator": m.creator,
        "create_time": _ts(m.create_time),
        "update_time": _ts(m.update_time),
        "content": m.content,
        "visibility": VISIBILITY.get(m.visibility, 0),
        "tags": list(m.tags),
        "pinned": m.pinned,
        "attachments": [
            _clean(
                {
                    "name": a.name,
                    "create_time": _ts(a.create_time),
                    "filename": a.filename,
                    "external_link": a.external_link,
                    "type": a.type,
                    "size": int(a.size or 0),
                    "memo": a.memo if isinstance(a.memo, str) else None,
                }
            )
            for a in m.attachments
        ],
        "relations": [
            _clean(
                {
                    "memo": _clean({"name": r.memo.name, "snippet": r.memo.snippet}),
                    "related_memo": _clean(
                        {"name": r.related_memo.name, "snippet": r.related_memo.snippet}
                    ),
                    "type": RELATION_TYPE.get(r.type, 0),
                }
            )
            for r in m.relations
        ],
        "reactions": [
            _clean(
                {
                    "name": x.name,
                    "creator": x.creator,
                    "reaction_type": x.reaction_type,
                    "create_time": _ts(x.create_time),
                }
            )
            for x in m.reactions
        ],
        "property": _clean(
            {
                "has_link": m.property.has_link,
                "has_task_list": m.property.has_task_list,
                "has_code": m.property.has_code,
                "has_incomplete_tasks": m.property.has_incomplete_tasks,
                "title": m.property.title,
            }
        ),
        "parent": m.parent if isinstance(m.parent, str) else None,
        "snippet": m.snippet,
        "space": m.space if isinstance(m.space, str) else None,
        "tree": m.tree if isinstance(m.tree, str) else None,
    }
    if not isinstance(m.location, type(None)) and isinstance(m.location, schemas.Location):
        out["location"] = _clean(
            {
                "placeholder": m.location.placeholder,
                "latitude": m.location.latitude,
                "longitude": m.location.longitude,
            }
        )
    cleaned = _clean(out)
    cleaned["property"] = out["property"]  # a set pointer: Go writes {} even when empty
    return cleaned


def body(url: str, activity: str, creator: str, memo: dict[str, Any]) -> bytes:
    """The exact bytes sent and signed (compact JSON, UTF-8, as Go writes it)."""
    return json.dumps(
        {"url": url, "activityType": activity, "creator": creator, "memo": memo},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode()
