"""Comments: memos with a parent, each with its own audience (``access.md`` §3)."""
