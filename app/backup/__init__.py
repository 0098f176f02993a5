"""``daybook backup`` and ``daybook restore``: consistent online copies, and bringing them back.

A backup is a directory: ``manifest.json``, the database (SQLite: a copy made
with SQLite's online backup API; PostgreSQL: a ``pg_dump`` custom-format
archive) and the attachment files the database names (LOCAL storage). The
signing secret is in the database, so it travels with it. See the README's
"Backups" section.
"""
