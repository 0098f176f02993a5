"""Building Memos Export Format archives in tests, by Memos' own rules or broken on purpose."""

from __future__ import annotations

import hashlib
import io
import json
import warnings
import zipfile
from typing import Any

JPEG = b"\xff\xd8\xff\xe0" + b"whiteboard photo bytes" * 50 + b"\xff\xd9"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest(memos: int | None, attachments: int | None = 0, **over: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "format": "memos-export",
        "formatVersion": "1.0",
        "generator": {"name": "memos", "version": "0.31.0"},
        "exportTime": "2026-09-16T08:30:00Z",
        "scope": {"kind": "USER", "user": {"username": "steven", "displayName": "Steven"}},
    }
    if memos is not None:
        out["counts"] = {"memos": memos, "attachments": attachments}
    out.update(over)
    return out


def record(uid: str, **over: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "uid": uid,
        "creator": "steven",
        "createTime": "2026-03-02T14:05:11Z",
        "updateTime": "2026-03-02T14:20:47Z",
        "state": "NORMAL",
        "visibility": "PRIVATE",
        "pinned": False,
        "contentPath": f"memos/{uid}.md",
    }
    out.update(over)
    return out


def build(entries: list[tuple[str, bytes]], *, method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A ZIP with exactly these entries, in this order (duplicates and bad names allowed)."""
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w", method) as z:
        warnings.simplefilter("ignore", UserWarning)  # duplicate names, on purpose
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 9, 16, 8, 30, 0))
            info.compress_type = method
            z.writestr(info, data)
    return buf.getvalue()


def jsonb(value: Any) -> bytes:
    # Go's json.Encoder output: compact, no HTML escaping, one trailing newline.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def archive(
    memos: dict[str, tuple[dict[str, Any], bytes]],
    *,
    extra: list[tuple[str, bytes]] = (),
    attachments: dict[str, bytes] | None = None,
    counts: bool = True,
) -> bytes:
    """An archive written the way Memos' writer writes: manifest, then per memo its
    attachment entries, its record, its content."""
    attachments = attachments or {}
    n_att = sum(1 for r, _ in memos.values() for a in r.get("attachments", []) if "path" in a)
    entries = [("manifest.json", jsonb(manifest(len(memos) if counts else None, n_att)))]
    for uid, (rec, content) in memos.items():
        for a in rec.get("attachments", []):
            if "path" in a:
                entries.append((a["path"], attachments[a["path"]]))
        entries.append((f"memos/{uid}.json", jsonb(rec)))
        entries.append((f"memos/{uid}.md", content))
    entries.extend(extra)
    return build(entries)


def spec_example() -> tuple[bytes, dict[str, Any]]:
    """The format document's example record (and the parent it comments on), as Memos writes it."""
    parent = record(
        "Xy7LmN01", createTime="2026-03-01T09:00:00Z", updateTime="2026-03-01T09:00:00Z"
    )
    example = {
        "uid": "Ab3kZ9q2",
        "creator": "steven",
        "createTime": "2026-03-02T14:05:11Z",
        "updateTime": "2026-03-02T14:20:47Z",
        "state": "NORMAL",
        "visibility": "SPACE",
        "pinned": True,
        "contentPath": "memos/Ab3kZ9q2.md",
        "tags": ["work", "work/q3"],
        "location": {"placeholder": "Office", "latitude": 52.52, "longitude": 13.405},
        "space": {"uid": "team-notes", "title": "Team Notes"},
        "parent": "Xy7LmN01",
        "relations": [{"type": "REFERENCE", "memo": "Qr5TuV88"}],
        "attachments": [
            {
                "uid": "att1c9d",
                "filename": "whiteboard photo.jpg",
                "type": "image/jpeg",
                "size": len(JPEG),
                "sha256": sha256(JPEG),
                "path": "attachments/att1c9d/whiteboard photo.jpg",
                "createTime": "2026-03-02T14:05:30Z",
                "mediaMetadata": {"width": 4032, "height": 3024},
            },
            {
                "uid": "att77e0",
                "filename": "spec.pdf",
                "type": "application/pdf",
                "size": 120400,
                "externalLink": "https://files.example.com/spec.pdf",
                "createTime": "2026-03-02T14:06:02Z",
            },
        ],
        "reactions": [
            {"reactionType": "👍", "creator": "alice", "createTime": "2026-03-03T09:00:00Z"}
        ],
    }
    referenced = record("Qr5TuV88", createTime="2026-03-01T10:00:00Z")
    data = archive(
        {
            "Xy7LmN01": (parent, b"the parent #work"),
            "Qr5TuV88": (referenced, b"referenced"),
            "Ab3kZ9q2": (example, b"Whiteboard from the Q3 planning #work/q3\n"),
        },
        attachments={"attachments/att1c9d/whiteboard photo.jpg": JPEG},
    )
    return data, example
