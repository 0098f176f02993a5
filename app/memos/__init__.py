"""Memos: the notes themselves, and everything a write or a read of one does.

- ``routes`` / ``*_routes``: the MemoService handlers (Memos-compatible API);
  they call the modules below and return Structs from ``schemas``.
- ``service``: create and update (one transaction, version CAS);
  ``trash``, ``revert``, ``history``, ``batch``: the other writes and the
  memo's event log.
- ``listing`` (keyset pages), ``lookup`` (a ``memos/{id}`` segment to a row the caller may use),
  ``present`` (rows to Structs, loaded in the request's snapshot),
  ``query_filter`` (the ``filter=`` parameter, through ``app.filter``),
  ``rows`` (``MemoRow``: the typed shape of a ``memo`` row).
- ``markdown`` (what a memo's Markdown yields: tags, flags, title),
  ``parse`` / ``parse_pool`` (that parse off the event loop),
  ``safe_html`` (Markdown to safe HTML) and ``html_cache``.
- ``placement`` (space and tree of a memo), ``bindings`` (attachments and
  relations of a write), ``chosen_ids`` (client-chosen ids).

Who may read or write a memo is decided in ``app.access``, never here.
"""
