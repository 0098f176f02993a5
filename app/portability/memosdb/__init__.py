"""Reading a Memos database (SQLite or PostgreSQL, versions 0.22 to 0.31) and carrying it over.

- :mod:`.schema`: which Memos schema a database has, from its tables and
  columns (the per-version differences of ``store/migration/``);
- :mod:`.rows`: typed Memos rows, as Daybook needs them;
- :mod:`.source`: opening the database read-only and reading it page by page;
- :mod:`.state`, :mod:`.people`, :mod:`.notes`, :mod:`.files`: what a carry knows;
  settings, users and spaces; memos, references and reactions; attachments;
- :mod:`.carry`: the whole carry in order, idempotently, with a report.
"""
