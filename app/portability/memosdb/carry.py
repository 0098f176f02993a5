"""Carrying a Memos database into Daybook, idempotently, in one transaction.

Order: instance settings, users, spaces and their members, memos (top-level,
then comments), ``REFERENCE`` relations, reactions, attachments. Everything
is keyed by what Memos and Daybook share, so a second run finds it all and
changes nothing: users by username (an existing Daybook user of that name
*is* that person: the tool is for moving an instance, and the report says
which users already existed), spaces, memos and attachments by uid, members
by (space, user), relations and reactions by their natural keys, settings
only when they differ.

Memos are written through the memo services as their creators (a
:class:`~app.portability.access.LocalCaller`, origin ``import-memos-db``),
so each gets its derived columns, tags, a CREATE event, its full-text row
and an embedding-queue entry. Two deliberate differences from an API create,
because this is the instance's own data moving, not a user's request: the
content limit is Memos' (up to 64 MiB), and PUBLIC is kept even where the
instance now disallows it. A SPACE memo stays in its space at the members'
``share`` path even where its creator has no seat left there (in Memos the
members read it; here too), and that is reported.

What cannot be carried is reported, never guessed: a username Daybook does
not accept, a password hash that is not bcrypt (the user is marked for a
reset), an S3 attachment, a local file outside the Memos data directory or
missing, a non-http(s) external link, a memo whose uid another Daybook user
holds. ``--dry-run`` does all of it and rolls back (no file is written).
"""

from __future__ import annotations

import time

from sqlalchemy.ext.asyncio import AsyncEngine

from app.attachments import storage
from app.db import statistics
from app.portability.memosdb.files import carry_attachments
from app.portability.memosdb.notes import carry_memos, carry_reactions, carry_references
from app.portability.memosdb.people import carry_settings, carry_spaces, carry_users
from app.portability.memosdb.source import MemosSource
from app.portability.memosdb.state import CarryOptions, Report, State
from app.portability.units import write_unit

__all__ = ["CarryOptions", "Report", "carry"]


class _DryRun(Exception):
    """Raised at the end of a dry run so that the transaction rolls back."""


async def carry(engine: AsyncEngine, source: MemosSource, opts: CarryOptions) -> Report:
    report = Report(version=source.schema.version_label, dry_run=opts.dry_run)
    st = State(opts, report, now=int(time.time()))
    try:
        async with write_unit(engine) as conn:
            await carry_settings(conn, source, st)
            await carry_users(conn, source, st)
            await carry_spaces(conn, source, st)
            await carry_memos(conn, source, st)
            await carry_references(conn, source, st)
            await carry_reactions(conn, source, st)
            await carry_attachments(conn, source, st)
            if opts.dry_run:
                raise _DryRun
    except _DryRun:
        return report
    except BaseException:
        for key in st.written_keys:
            await storage.remove(opts.data_dir, key)
        raise
    await statistics.refresh(engine)  # committed: the planner sees what was carried
    return report
