"""Length bounds of the strings and lists a request body may carry.

Every string and list field of every request body (the ``In`` structs) is one
of these types, so msgspec refuses an over-long value with a 400 naming the
field before any handler runs, and the OpenAPI document states each bound
(``maxLength``, ``maxItems``) for clients. ``tests/inputs/test_field_bounds.py``
walks every body and fails on a field without a bound.

The bounds are generous ceilings, not the rules: services still apply their
own, narrower checks with friendlier messages (a username's pattern, a
space title's 256 characters), and a bound never exceeds the column that
stores the value (PostgreSQL's ``varchar(n)`` would refuse it with a 500).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

__all__ = [
    "Content",
    "Description",
    "Enum",
    "FilterText",
    "Label",
    "Name",
    "Password",
    "PathText",
    "Placeholder",
    "Timestamp",
    "Title",
    "Url",
]

# An enumeration value or a short code (visibility, state, role, level, type).
Enum = Annotated[str, msgspec.Meta(max_length=64)]
# A resource name or id ("users/alice", "memos/abc", "spaces/x/groups/7").
Name = Annotated[str, msgspec.Meta(max_length=256)]
# An RFC 3339 timestamp.
Timestamp = Annotated[str, msgspec.Meta(max_length=64)]
# A tree path: 32 labels of 64 characters and their separators fit.
PathText = Annotated[str, msgspec.Meta(max_length=2100)]
# Titles and short descriptions: varchar(256) columns.
Title = Annotated[str, msgspec.Meta(max_length=256)]
# A short label (a reaction type: varchar(64)).
Label = Annotated[str, msgspec.Meta(max_length=64)]
# Longer free text (a space's or a user's description).
Description = Annotated[str, msgspec.Meta(max_length=4096)]
# A CEL filter (the compiler refuses more than 4 KiB; see filter.md).
FilterText = Annotated[str, msgspec.Meta(max_length=8192)]
# A location's place name.
Placeholder = Annotated[str, msgspec.Meta(max_length=512)]
Url = Annotated[str, msgspec.Meta(max_length=2048)]
# A password, refused before it is hashed (argon2 of 40 MiB took 160 MiB).
Password = Annotated[str, msgspec.Meta(max_length=1024)]
# Memo content: the instance's byte limit (at most 1 MiB) is checked by the
# service; this is the ceiling on characters, which can never be more.
Content = Annotated[str, msgspec.Meta(max_length=1024 * 1024)]
