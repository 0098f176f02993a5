"""Which REST operations an agent may call through ``/mcp``, and what they are called there.

The allowlist is the whole of MCP's policy: a tool is one REST operation, so
an agent holds exactly the rights of its token. Nothing on the management
plane (sign-in, users, tokens, webhooks, settings, shares, grants, membership)
is listed, and a test pins the exact tool list.
"""

from __future__ import annotations

import re

__all__ = [
    "ALLOWLIST",
    "BODY_FALLBACKS",
    "DESTRUCTIVE",
    "HINTS",
    "IDEMPOTENT",
    "tool_name",
]

# In the order of ``mcp.md``: Memos' tools first, then ours.
ALLOWLIST: tuple[str, ...] = (
    "MemoService_ListMemos",
    "MemoService_CreateMemo",
    "MemoService_GetMemo",
    "MemoService_UpdateMemo",
    "MemoService_DeleteMemo",
    "MemoService_ListMemoComments",
    "MemoService_CreateMemoComment",
    "MemoService_ListMemoAttachments",
    "MemoService_SetMemoAttachments",
    "MemoService_ListMemoReactions",
    "MemoService_UpsertMemoReaction",
    "MemoService_DeleteMemoReaction",
    "MemoService_ListMemoRelations",
    "MemoService_SetMemoRelations",
    "AttachmentService_ListAttachments",
    "AttachmentService_CreateAttachment",
    "AttachmentService_GetAttachment",
    "AttachmentService_DeleteAttachment",
    "MemoViewService_ListMemoViews",
    "AuthService_GetCurrentUser",
    "MemoService_SearchMemos",
    "MemoService_BatchCreateMemos",
    "MemoService_ListMemoHistory",
    "SpaceService_ListSpaces",
    "SpaceService_GetAccess",
)

# Beyond the HTTP method's default (GET read-only, DELETE destructive): writes
# that replace what was there. The set-operations replace a whole set with the
# one given, so repeating them changes nothing: they are also idempotent.
DESTRUCTIVE = frozenset(
    {"MemoService_UpdateMemo", "MemoService_SetMemoAttachments", "MemoService_SetMemoRelations"}
)
IDEMPOTENT = frozenset({"MemoService_SetMemoAttachments", "MemoService_SetMemoRelations"})

# One line an agent reads in the tool list, ahead of the operation's summary.
HINTS: dict[str, str] = {
    "MemoService_ListMemos": (
        "List top-level memos (comments are not included) visible to your token, newest first. "
        "filter is CEL: tags are a list, so write '\"work\" in tags', not 'tag == \"work\"'."
    ),
    "MemoService_CreateMemo": (
        "Create a memo. visibility defaults to PRIVATE; a SPACE memo needs body.space "
        "(spaces/{id}) and an explicit body.tree path (e.g. 'share' or '~')."
    ),
    "MemoService_UpdateMemo": (
        "Update the fields named in updateMask (e.g. 'content,visibility'). Moving a memo into "
        "a space needs an explicit body.tree."
    ),
    "MemoService_SearchMemos": (
        "Search memos by meaning and words (mode: hybrid, lexical or semantic); filter is the "
        "same CEL as memo_list_memos."
    ),
    "AuthService_GetCurrentUser": (
        "Who this token belongs to, and for a restricted key its ceiling. Call this first."
    ),
    "SpaceService_GetAccess": (
        "Your effective tree grants in a space (after your key's ceiling). Call this before "
        "writing SPACE memos."
    ),
    "AttachmentService_CreateAttachment": (
        "Upload a file: body {filename, type, content (base64), memo?}."
    ),
}

# The attachment upload reads its body by hand (JSON or multipart), so its
# OpenAPI operation documents no request body. This is the JSON form it accepts.
BODY_FALLBACKS: dict[str, dict[str, object]] = {
    "AttachmentService_CreateAttachment": {
        "type": "object",
        "properties": {
            "filename": {"type": "string", "description": "the file's name"},
            "type": {"type": "string", "description": "MIME type, e.g. image/png"},
            "content": {"type": "string", "description": "the file's bytes, base64"},
            "memo": {"type": "string", "description": "bind to this memo (memos/{id})"},
        },
        "required": ["filename", "content"],
    },
}

_WORD = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _snake(camel: str) -> str:
    return _WORD.sub("_", camel).lower()


def tool_name(operation_id: str) -> str:
    """``MemoViewService_ListMemoViews`` → ``memo_view_list_memo_views`` (Memos' tool names)."""
    service, sep, method = operation_id.partition("_")
    if not sep or not service.endswith("Service") or not method:
        raise ValueError(f"operationId {operation_id!r} is not of the form XService_Method")
    return f"{_snake(service.removesuffix('Service'))}_{_snake(method)}"
