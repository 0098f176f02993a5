"""The database schema as SQLAlchemy Core tables.

Core tables rather than ORM classes: every query in Daybook is a composable
``select()`` (the audience predicate and the CEL filter are expressions ANDed
into it), and rows never cross the HTTP boundary, so there is nothing for an
ORM's identity map to do.

Conventions that hold on both dialects:

- Timestamps are integer epoch seconds (``BigInteger``), as in Memos: they
  compare, index and page identically on SQLite and PostgreSQL, and CEL
  timestamp comparisons compile to plain integer comparisons.
- Enumerations are short upper-case strings, validated at the edge; the read
  rule treats any unknown value as a denial, so a corrupt row fails closed.
- Derived Markdown properties are real boolean columns (never JSON), so
  "missing is false" holds and they index.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

Timestamp = sa.BigInteger

user_account = sa.Table(
    "user_account",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("username", sa.String(64), nullable=False, unique=True),
    sa.Column("role", sa.String(16), nullable=False),  # ADMIN | USER
    sa.Column("state", sa.String(16), nullable=False),  # NORMAL | ARCHIVED
    sa.Column("nickname", sa.String(128), nullable=False, server_default=""),
    sa.Column("email", sa.String(256), nullable=False, server_default=""),
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    sa.Column("avatar_url", sa.Text, nullable=False, server_default=""),
    sa.Column("password_hash", sa.Text, nullable=False),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Column("updated_ts", Timestamp, nullable=False),
)

# A browser session and a sign-in access token are the same server-side row:
# the cookie and the bearer token carry the same secret, stored as a SHA-256
# digest. Revoking the row (sign-out, password change) ends both.
auth_session = sa.Table(
    "auth_session",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "user_id", sa.Integer, sa.ForeignKey("user_account.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("csrf_token", sa.String(64), nullable=False),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Column("expires_ts", Timestamp, nullable=False),
    sa.Column("last_seen_ts", Timestamp, nullable=False),
    sa.Index(None, "user_id"),
)

access_token = sa.Table(
    "access_token",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "user_id", sa.Integer, sa.ForeignKey("user_account.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("description", sa.String(256), nullable=False, server_default=""),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("token_hint", sa.String(16), nullable=False),  # last characters, for the UI
    sa.Column("restriction", sa.JSON, nullable=True),  # None: unrestricted
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Column("expires_ts", Timestamp, nullable=True),
    sa.Column("last_used_ts", Timestamp, nullable=True),
    sa.Index(None, "user_id"),
)

memo = sa.Table(
    "memo",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uid", sa.String(36), nullable=False, unique=True),
    sa.Column(
        "creator_id", sa.Integer, nullable=False
    ),  # no FK: a dangling row must deny, not break
    sa.Column("content", sa.Text, nullable=False, server_default=""),
    sa.Column("visibility", sa.String(16), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("pinned", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Column("updated_ts", Timestamp, nullable=False),
    # Derived from the Markdown on every write (app.memos.markdown).
    sa.Column("title", sa.Text, nullable=False, server_default=""),
    sa.Column("snippet", sa.Text, nullable=False, server_default=""),
    sa.Column("has_link", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("has_task_list", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("has_code", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("has_incomplete_tasks", sa.Boolean, nullable=False, server_default=sa.false()),
    # Location (absent when the placeholder is NULL).
    sa.Column("location_placeholder", sa.Text, nullable=True),
    sa.Column("location_latitude", sa.Float, nullable=True),
    sa.Column("location_longitude", sa.Float, nullable=True),
    # A comment points at its parent memo.
    sa.Column("parent_id", sa.Integer, nullable=True),
    # Spaces and tree paths (filled by the spaces issue).
    sa.Column("space_id", sa.Integer, nullable=True),
    sa.Column("tree", sa.Text, nullable=True),
    # The credential that last wrote the memo: {"kind": "session"} or
    # {"kind": "pat", "id": 3, "description": "..."}. Observability only.
    sa.Column("origin", sa.JSON, nullable=False),
    sa.Column("version", sa.Integer, nullable=False, server_default="1"),
    # The list shapes: own memos, memos by audience, the whole timeline.
    sa.Index("ix_memo_creator_timeline", "creator_id", "state", "created_ts", "id"),
    sa.Index("ix_memo_visibility_timeline", "visibility", "state", "created_ts", "id"),
    sa.Index("ix_memo_timeline", "state", "created_ts", "id"),
    sa.Index("ix_memo_pinned_timeline", "state", "pinned", "created_ts", "id"),
    sa.Index("ix_memo_updated_timeline", "state", "updated_ts", "id"),
    sa.Index("ix_memo_parent", "parent_id", "created_ts"),
    # A space's timeline (migration 0003); the trailing tree lets a walk test
    # a key's tree ceiling on the index entry (migration 0006).
    sa.Index("ix_memo_space_timeline", "space_id", "state", "created_ts", "id", "tree"),
    # Tree coverage on SQLite is a range scan (app.access.scope.path_covers);
    # PostgreSQL also has a GiST index on the ltree form (migration 0005).
    sa.Index("ix_memo_space_tree", "space_id", "tree"),
)

# A space: a shared area with a roster and a tree of paths (access.md section
# 4). ``sqlite_autoincrement`` so an id is never reused: a memo still naming a
# deleted space must never fall into a newer one.
space = sa.Table(
    "space",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uid", sa.String(36), nullable=False, unique=True),
    sa.Column("title", sa.String(256), nullable=False),
    sa.Column("description", sa.Text, nullable=False, server_default=""),
    sa.Column("creator_id", sa.Integer, nullable=False),
    # What a member gets on accepting an invitation, besides owner of its home.
    sa.Column(
        "default_member_grants",
        sa.JSON,
        nullable=False,
        server_default=sa.text("""'[{"path": "share", "level": "WRITE"}]'"""),
    ),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Column("updated_ts", Timestamp, nullable=False),
    sqlite_autoincrement=True,
)

space_member = sa.Table(
    "space_member",
    metadata,
    sa.Column(
        "space_id", sa.Integer, sa.ForeignKey("space.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "user_id", sa.Integer, sa.ForeignKey("user_account.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("role", sa.String(16), nullable=False),  # ADMIN | USER (structural only)
    sa.Column("state", sa.String(16), nullable=False),  # INVITED | ACTIVE
    sa.Column("invited_by", sa.Integer, nullable=True),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Column("updated_ts", Timestamp, nullable=False),
    sa.PrimaryKeyConstraint("space_id", "user_id"),
    # "the caller's ACTIVE spaces": the audience predicate's subquery.
    sa.Index("ix_space_member_user_state", "user_id", "state"),
)

# Append-only log of structural actions. No foreign key to space: the log of
# a deleted space survives it.
space_event = sa.Table(
    "space_event",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("space_id", sa.Integer, nullable=False),
    sa.Column("actor_id", sa.Integer, nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("detail", sa.JSON, nullable=False),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Index("ix_space_event_space", "space_id", "id"),
)

# Groups of a space (access.md section 4): a grant to a group counts for its
# ACTIVE members only. ``sqlite_autoincrement`` so a deleted group's id is
# never reused by a newer group (a stale grant must never fall into it).
space_group = sa.Table(
    "space_group",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "space_id", sa.Integer, sa.ForeignKey("space.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("title", sa.String(256), nullable=False),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Index("ix_space_group_space_id", "space_id"),
    sqlite_autoincrement=True,
)

space_group_member = sa.Table(
    "space_group_member",
    metadata,
    sa.Column(
        "group_id",
        sa.Integer,
        sa.ForeignKey("space_group.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column(
        "user_id", sa.Integer, sa.ForeignKey("user_account.id", ondelete="CASCADE"), nullable=False
    ),
    sa.PrimaryKeyConstraint("group_id", "user_id"),
    # "the caller's groups": the scope query starts from the user.
    sa.Index("ix_space_group_member_user_id", "user_id"),
)

# Tree grants: ``level`` (READ 1 < WRITE 2 < OWNER 3) at ``path`` (canonical
# dotted, "" is the root) and below, to exactly one principal (a user or a
# group of the space). Additive; there are no deny rows.
space_grant = sa.Table(
    "space_grant",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "space_id", sa.Integer, sa.ForeignKey("space.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "user_id", sa.Integer, sa.ForeignKey("user_account.id", ondelete="CASCADE"), nullable=True
    ),
    sa.Column(
        "group_id", sa.Integer, sa.ForeignKey("space_group.id", ondelete="CASCADE"), nullable=True
    ),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("level", sa.Integer, nullable=False),
    sa.Column("created_by", sa.Integer, nullable=False),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.CheckConstraint("(user_id IS NULL) <> (group_id IS NULL)", name="one_principal"),
    sa.CheckConstraint("level >= 1 AND level <= 3", name="level"),
    sa.Index("ix_space_grant_space_id_user_id", "space_id", "user_id"),
    sa.Index("ix_space_grant_space_id_group_id", "space_id", "group_id"),
    # The scope query of one caller across all its spaces.
    sa.Index("ix_space_grant_user_id", "user_id"),
    sqlite_autoincrement=True,
)

# Tags are stored with their ancestors (#a/b stores "a" and "a/b"), so that
# `"a" in tags` is one index probe.
memo_tag = sa.Table(
    "memo_tag",
    metadata,
    sa.Column("memo_id", sa.Integer, sa.ForeignKey("memo.id", ondelete="CASCADE"), nullable=False),
    sa.Column("tag", sa.String(256), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),  # order of first appearance
    sa.PrimaryKeyConstraint("memo_id", "tag"),
    sa.Index("ix_memo_tag_tag", "tag", "memo_id"),
)

# A memo's rendered HTML (app.memos.html_cache), written in the transaction
# that writes its content, so ``?view=html`` never parses on a read. Valid only
# while ``content_hash`` is the hash of the memo's content and ``renderer`` is
# the running renderer's version; anything else is re-rendered (migration 0009).
memo_html = sa.Table(
    "memo_html",
    metadata,
    sa.Column(
        "memo_id",
        sa.Integer,
        sa.ForeignKey("memo.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    sa.Column("renderer", sa.Integer, nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("html", sa.Text, nullable=False),
)

memo_relation = sa.Table(
    "memo_relation",
    metadata,
    sa.Column("memo_id", sa.Integer, sa.ForeignKey("memo.id", ondelete="CASCADE"), nullable=False),
    sa.Column(
        "related_memo_id", sa.Integer, sa.ForeignKey("memo.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("type", sa.String(16), nullable=False),  # REFERENCE | COMMENT
    sa.PrimaryKeyConstraint("memo_id", "related_memo_id", "type"),
    sa.Index("ix_memo_relation_related", "related_memo_id"),
)

reaction = sa.Table(
    "reaction",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("memo_id", sa.Integer, sa.ForeignKey("memo.id", ondelete="CASCADE"), nullable=False),
    sa.Column("creator_id", sa.Integer, nullable=False),
    sa.Column("reaction_type", sa.String(64), nullable=False),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.UniqueConstraint("memo_id", "creator_id", "reaction_type"),
)

attachment = sa.Table(
    "attachment",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uid", sa.String(36), nullable=False, unique=True),
    sa.Column("creator_id", sa.Integer, nullable=False),
    sa.Column("memo_id", sa.Integer, sa.ForeignKey("memo.id", ondelete="SET NULL"), nullable=True),
    sa.Column("filename", sa.String(256), nullable=False),
    sa.Column("mime_type", sa.String(128), nullable=False),
    sa.Column("size", sa.BigInteger, nullable=False),
    # Server-chosen storage key (a file name or an object key); never client input.
    sa.Column("storage_key", sa.String(128), nullable=True),
    sa.Column("blob", sa.LargeBinary, nullable=True),
    # An external attachment (a link, Memos' EXTERNAL storage) has no bytes:
    # neither a storage key nor a blob, only this http(s) URL (migration 0008).
    sa.Column("external_link", sa.Text, nullable=True),
    sa.Column("created_ts", Timestamp, nullable=False),
    # Where the bytes are (app.attachments.storage.StorageType), per row as in Memos.
    sa.Column("storage_type", sa.String(16), nullable=False, server_default="LOCAL"),
    # Hex SHA-256 of the uploaded bytes (migration 0018): a repeated upload with
    # the same client-chosen id is answered with this row only when it matches.
    # NULL for a link and for rows older than 0018.
    sa.Column("sha256", sa.String(64), nullable=True),
    sa.Index(None, "creator_id", "created_ts"),
    sa.Index(None, "memo_id"),
)

memo_share = sa.Table(
    "memo_share",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("memo_id", sa.Integer, sa.ForeignKey("memo.id", ondelete="CASCADE"), nullable=False),
    sa.Column("token", sa.String(64), nullable=False, unique=True),
    sa.Column("creator_id", sa.Integer, nullable=False),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Column("expires_ts", Timestamp, nullable=True),
    sa.Index(None, "memo_id"),
)

saved_view = sa.Table(
    "saved_view",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "user_id", sa.Integer, sa.ForeignKey("user_account.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("title", sa.String(256), nullable=False),
    sa.Column("filter", sa.Text, nullable=False),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Column("updated_ts", Timestamp, nullable=False),
    sa.Index(None, "user_id"),
)

instance_setting = sa.Table(
    "instance_setting",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.JSON, nullable=False),
)

# Append-only history. No foreign key to memo: the history of a deleted memo
# survives its row.
memo_event = sa.Table(
    "memo_event",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("memo_id", sa.Integer, nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),  # CREATE|UPDATE|ARCHIVE|RESTORE|DELETE
    sa.Column("actor_id", sa.Integer, nullable=False),
    sa.Column("credential", sa.JSON, nullable=False),
    sa.Column("prior_content", sa.Text, nullable=True),
    sa.Column("prior", sa.JSON, nullable=True),  # the other fields before the write
    sa.Column("version", sa.Integer, nullable=False),  # the memo's version after the write
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Index(None, "memo_id", "id"),
)

# The trash (migration 0014): one row per memo in state TRASHED. A DELETE
# moves a memo and its comments here together; ``root_id`` is the memo the
# DELETE named, so a restore or a purge acts on exactly that group.
# ``prior_state`` is what a restore puts back (NORMAL or ARCHIVED). The
# retention job claims expired roots by writing ``claim_token`` and
# ``claimed_ts`` (a lease), so several processes on one database never purge
# the same group twice and a crashed claim is taken over after the lease.
memo_trash = sa.Table(
    "memo_trash",
    metadata,
    sa.Column(
        "memo_id",
        sa.Integer,
        sa.ForeignKey("memo.id", ondelete="CASCADE"),
        primary_key=True,
        autoincrement=False,
    ),
    sa.Column("root_id", sa.Integer, nullable=False),
    sa.Column("prior_state", sa.String(16), nullable=False),
    sa.Column("trashed_ts", Timestamp, nullable=False),
    sa.Column("trashed_by", sa.Integer, nullable=False),
    sa.Column("claim_token", sa.String(32), nullable=True),
    sa.Column("claimed_ts", Timestamp, nullable=True),
    sa.Index("ix_memo_trash_root_id", "root_id"),
    # The retention scan: expired roots, oldest first.
    sa.Index("ix_memo_trash_trashed_ts", "trashed_ts"),
)

# Throttling (app.auth.throttle), in the database so that every process on one
# database shares it. One row per key: a SHA-256 digest of ("user", username,
# client), ("client", client) for sign-in, or ("memo-id", user id) for taken
# memo ids (decision 0023); never the raw values.
throttle = sa.Table(
    "throttle",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("last_ts", Timestamp, nullable=False),
    sa.Column("blocked_until", Timestamp, nullable=False),
)

# Rate limit counters (app.limits, decision 0029): one row per (policy, subject)
# key, a SHA-256 digest like ``throttle``'s; ``hits`` counted in the fixed window
# starting at ``window_start`` (epoch seconds), bumped by one UPSERT per check.
rate_limit = sa.Table(
    "rate_limit",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("window_start", Timestamp, nullable=False),
    sa.Column("hits", sa.Integer, nullable=False),
    sa.Index("ix_rate_limit_window_start", "window_start"),
)

# One-time password reset links (app.auth.reset): only the SHA-256 digest of the
# secret is stored, so several processes agree and a database dump reveals none.
password_reset = sa.Table(
    "password_reset",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "user_id", sa.Integer, sa.ForeignKey("user_account.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("issued_by", sa.String(64), nullable=False),  # users/<admin> or "cli"
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Column("expires_ts", Timestamp, nullable=False),
    sa.Column("used_ts", Timestamp, nullable=True),
    sa.Index(None, "user_id"),
)

# Security events about accounts (reset links issued and used, password
# changes). No foreign keys: an event outlives the users it names.
audit_event = sa.Table(
    "audit_event",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("actor", sa.String(80), nullable=False),  # users/<name>, "cli" or "reset-link"
    sa.Column("target_user_id", sa.Integer, nullable=True),
    sa.Column("detail", sa.JSON, nullable=False),
    sa.Index(None, "target_user_id", "id"),
)


# Webhooks (migration 0015, app.webhooks): a user's endpoints, the durable
# outbox (one row per event and webhook, inserted in the memo write's own
# transaction) and the delivery log its owner reads. Times in the outbox are
# epoch milliseconds: retries back off from fractions of a second in tests.
webhook = sa.Table(
    "webhook",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uid", sa.String(32), nullable=False, unique=True),
    sa.Column(
        "owner_id", sa.Integer, sa.ForeignKey("user_account.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("display_name", sa.String(256), nullable=False, server_default=""),
    sa.Column("secret", sa.String(256), nullable=False),  # whsec_<base64>, or a Memos raw secret
    sa.Column("created_ts", Timestamp, nullable=False),
    sa.Column("updated_ts", Timestamp, nullable=False),
    sa.Index(None, "owner_id"),
)

webhook_event = sa.Table(
    "webhook_event",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("msg_id", sa.String(64), nullable=False, unique=True),  # the webhook-id header
    sa.Column(
        "webhook_id", sa.Integer, sa.ForeignKey("webhook.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("activity", sa.String(48), nullable=False),  # memos.memo.created ...
    sa.Column("memo_id", sa.Integer, nullable=False),  # no FK: a deleted memo's event stays
    sa.Column("parent_id", sa.Integer, nullable=True),  # a comment's parent, checked too
    # memos.memo.deleted only: the memo as its owner read it, and the facts the
    # read rule looks at, taken before the row went.
    sa.Column("snapshot", sa.JSON, nullable=True),
    sa.Column("state", sa.String(16), nullable=False),  # PENDING|DELIVERED|FAILED|WITHHELD
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("next_attempt_ms", sa.BigInteger, nullable=False),
    sa.Column("claimed_until_ms", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("claim_token", sa.String(32), nullable=True),
    sa.Column("created_ms", sa.BigInteger, nullable=False),
    sa.Column("finished_ms", sa.BigInteger, nullable=True),
    sa.Column("last_error", sa.Text, nullable=True),
    sa.Index(None, "state", "next_attempt_ms"),
    sa.Index(None, "webhook_id", "id"),
)

webhook_delivery = sa.Table(
    "webhook_delivery",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "event_id",
        sa.Integer,
        sa.ForeignKey("webhook_event.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column(
        "webhook_id", sa.Integer, sa.ForeignKey("webhook.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),  # DELIVERED|FAILED|REFUSED|WITHHELD
    sa.Column("status_code", sa.Integer, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("started_ms", sa.BigInteger, nullable=False),
    sa.Column("duration_ms", sa.Integer, nullable=False),
    sa.Index(None, "webhook_id", "id"),
    sa.Index(None, "event_id"),
)


# Integer ids are never reused on SQLite (AUTOINCREMENT), as on PostgreSQL
# (sequences): history rows, tree paths (``home.<user id>``) and resource
# names outlive their rows, and must not attach to a newcomer that happens
# to get the same id.
for _table in metadata.tables.values():
    if "id" in _table.c and _table.c.id.primary_key and _table.c.id.autoincrement is True:
        _table.dialect_options["sqlite"]["autoincrement"] = True

# Which process runs each background job (migration 0016, app.jobs.lease).
job_lease = sa.Table(
    "job_lease",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("holder", sa.String(128), nullable=False),
    sa.Column("expires_ms", sa.BigInteger, nullable=False),
)
