"""Typed archive records, parsed once from JSON that passed its schema.

Parsing applies the format's documented fallbacks (unknown ``state`` →
NORMAL, unknown ``visibility`` → PRIVATE, unknown relation ``type`` →
skipped), each with a warning, and nothing else: what the schema allows is
kept, what it forbids never reaches here. Rendering (``*_json``) is the
writer's side; it emits only members the schema knows, omitting empty ones
as the proto3 JSON mapping does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.portability import format as fmt

__all__ = [
    "AttachmentItem",
    "DaybookExtra",
    "HistoryEvent",
    "Location",
    "Manifest",
    "MemoRecord",
    "ReactionItem",
    "SpaceRef",
    "extra_json",
    "manifest_json",
    "parse_extra",
    "parse_manifest",
    "parse_record",
    "record_json",
]


@dataclass(frozen=True, slots=True)
class Manifest:
    format: str
    format_version: str
    generator_name: str
    generator_version: str
    export_time: str
    scope_kind: str
    username: str
    display_name: str = ""
    count_memos: int | None = None
    count_attachments: int | None = None


@dataclass(frozen=True, slots=True)
class Location:
    placeholder: str
    latitude: float
    longitude: float


@dataclass(frozen=True, slots=True)
class SpaceRef:
    uid: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class AttachmentItem:
    uid: str
    filename: str
    type: str
    size: int
    create_time: str
    sha256: str = ""
    path: str = ""
    external_link: str = ""
    media_metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ReactionItem:
    reaction_type: str
    creator: str
    create_time: str = ""


@dataclass(frozen=True, slots=True)
class MemoRecord:
    uid: str
    creator: str
    create_time: str
    update_time: str
    state: str
    visibility: str
    pinned: bool
    content_path: str
    tags: tuple[str, ...] = ()
    location: Location | None = None
    space: SpaceRef | None = None
    parent: str = ""
    relations: tuple[str, ...] = ()  # REFERENCE targets (uids)
    attachments: tuple[AttachmentItem, ...] = ()
    reactions: tuple[ReactionItem, ...] = ()


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    kind: str
    version: int
    create_time: str
    actor: str
    prior_content: str | None = None
    prior: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class DaybookExtra:
    """Daybook's own members for one memo: where it lived and what it went through."""

    uid: str
    tree: str = ""  # as the exporter saw it: ``~`` for its own home
    space: SpaceRef | None = None
    history: tuple[HistoryEvent, ...] = ()
    history_truncated: bool = False
    warnings: tuple[str, ...] = field(default=())


# --- parsing (input already schema-valid) -------------------------------------


def parse_manifest(raw: dict[str, Any]) -> Manifest:
    scope = raw["scope"]
    user = scope.get("user") or {}
    counts = raw.get("counts") or {}
    return Manifest(
        format=raw["format"],
        format_version=raw["formatVersion"],
        generator_name=raw["generator"]["name"],
        generator_version=raw["generator"]["version"],
        export_time=raw["exportTime"],
        scope_kind=scope["kind"],
        username=str(user.get("username", "")),
        display_name=str(user.get("displayName", "")),
        count_memos=counts.get("memos"),
        count_attachments=counts.get("attachments"),
    )


def _location(raw: Any) -> Location | None:
    if not isinstance(raw, dict):
        return None
    return Location(
        placeholder=str(raw.get("placeholder", "")),
        latitude=float(raw.get("latitude", 0.0)),
        longitude=float(raw.get("longitude", 0.0)),
    )


def _space(raw: Any) -> SpaceRef | None:
    if not isinstance(raw, dict):
        return None
    return SpaceRef(uid=raw["uid"], title=str(raw.get("title", "")))


def _attachment(raw: dict[str, Any]) -> AttachmentItem:
    metadata = raw.get("mediaMetadata")
    return AttachmentItem(
        uid=raw["uid"],
        filename=raw["filename"],
        type=raw["type"],
        size=int(raw["size"]),
        create_time=raw["createTime"],
        sha256=str(raw.get("sha256", "")),
        path=str(raw.get("path", "")),
        external_link=str(raw.get("externalLink", "")),
        media_metadata=metadata if isinstance(metadata, dict) else None,
    )


def parse_record(raw: dict[str, Any]) -> tuple[MemoRecord, list[str]]:
    """The record and the warnings its fallbacks produced."""
    warnings: list[str] = []
    state = raw["state"]
    if state not in fmt.STATES:
        warnings.append(f"unknown state {state!r}, using NORMAL")
        state = "NORMAL"
    visibility = raw["visibility"]
    if visibility not in fmt.VISIBILITIES:
        warnings.append(f"unknown visibility {visibility!r}, using PRIVATE")
        visibility = "PRIVATE"
    relations: list[str] = []
    for relation in raw.get("relations") or []:
        if relation["type"] != fmt.REFERENCE:
            warnings.append(f"unknown relation type {relation['type']!r}, skipping the relation")
            continue
        if relation["memo"] not in relations:
            relations.append(relation["memo"])
    record = MemoRecord(
        uid=raw["uid"],
        creator=raw["creator"],
        create_time=raw["createTime"],
        update_time=raw["updateTime"],
        state=state,
        visibility=visibility,
        pinned=bool(raw["pinned"]),
        content_path=raw["contentPath"],
        tags=tuple(raw.get("tags") or ()),
        location=_location(raw.get("location")),
        space=_space(raw.get("space")),
        parent=str(raw.get("parent", "")),
        relations=tuple(relations),
        attachments=tuple(_attachment(a) for a in raw.get("attachments") or ()),
        reactions=tuple(
            ReactionItem(
                reaction_type=r["reactionType"],
                creator=r["creator"],
                create_time=str(r.get("createTime", "")),
            )
            for r in raw.get("reactions") or ()
        ),
    )
    return record, warnings


def parse_extra(raw: dict[str, Any]) -> DaybookExtra:
    history = tuple(
        HistoryEvent(
            kind=e["kind"],
            version=int(e["version"]),
            create_time=e["createTime"],
            actor=str(e.get("actor", "")),
            prior_content=e.get("priorContent"),
            prior=e.get("prior") if isinstance(e.get("prior"), dict) else None,
        )
        for e in raw.get("history") or ()
    )
    return DaybookExtra(
        uid=raw["uid"],
        tree=str(raw.get("tree", "")),
        space=_space(raw.get("space")),
        history=history,
        history_truncated=bool(raw.get("historyTruncated", False)),
        warnings=tuple(str(w) for w in raw.get("warnings") or ()),
    )


# --- rendering ----------------------------------------------------------------


def manifest_json(m: Manifest) -> dict[str, Any]:
    user: dict[str, Any] = {"username": m.username}
    if m.display_name:
        user["displayName"] = m.display_name
    out: dict[str, Any] = {
        "format": m.format,
        "formatVersion": m.format_version,
        "generator": {"name": m.generator_name, "version": m.generator_version},
        "exportTime": m.export_time,
        "scope": {"kind": m.scope_kind, "user": user},
    }
    if m.count_memos is not None:
        out["counts"] = {"memos": m.count_memos, "attachments": m.count_attachments or 0}
    return out


def _location_json(loc: Location) -> dict[str, Any]:
    out: dict[str, Any] = {"latitude": loc.latitude, "longitude": loc.longitude}
    if loc.placeholder:
        out = {"placeholder": loc.placeholder, **out}
    return out


def _space_json(ref: SpaceRef) -> dict[str, Any]:
    return {"uid": ref.uid, "title": ref.title} if ref.title else {"uid": ref.uid}


def _attachment_json(a: AttachmentItem) -> dict[str, Any]:
    out: dict[str, Any] = {"uid": a.uid, "filename": a.filename, "type": a.type, "size": a.size}
    if a.path:
        out["sha256"] = a.sha256
        out["path"] = a.path
    else:
        out["externalLink"] = a.external_link
    out["createTime"] = a.create_time
    if a.media_metadata:
        out["mediaMetadata"] = a.media_metadata
    return out


def record_json(r: MemoRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "uid": r.uid,
        "creator": r.creator,
        "createTime": r.create_time,
        "updateTime": r.update_time,
        "state": r.state,
        "visibility": r.visibility,
        "pinned": r.pinned,
        "contentPath": r.content_path,
    }
    if r.tags:
        out["tags"] = list(r.tags)
    if r.location is not None:
        out["location"] = _location_json(r.location)
    if r.space is not None:
        out["space"] = _space_json(r.space)
    if r.parent:
        out["parent"] = r.parent
    if r.relations:
        out["relations"] = [{"type": fmt.REFERENCE, "memo": uid} for uid in r.relations]
    if r.attachments:
        out["attachments"] = [_attachment_json(a) for a in r.attachments]
    if r.reactions:
        out["reactions"] = [
            {"reactionType": x.reaction_type, "creator": x.creator}
            | ({"createTime": x.create_time} if x.create_time else {})
            for x in r.reactions
        ]
    return out


def extra_json(e: DaybookExtra) -> dict[str, Any]:
    out: dict[str, Any] = {"uid": e.uid}
    if e.tree:
        out["tree"] = e.tree
    if e.space is not None:
        out["space"] = _space_json(e.space)
    if e.history:
        out["history"] = [
            {
                "kind": h.kind,
                "version": h.version,
                "createTime": h.create_time,
                "actor": h.actor,
            }
            | ({"priorContent": h.prior_content} if h.prior_content is not None else {})
            | ({"prior": h.prior} if h.prior is not None else {})
            for h in e.history
        ]
    if e.history_truncated:
        out["historyTruncated"] = True
    if e.warnings:
        out["warnings"] = list(e.warnings)
    return out
