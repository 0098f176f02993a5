"""Spaces: shared areas with a roster (``access.md`` section 4).

``schemas`` is the JSON edge, ``roster`` the pure rules about who may change
the roster, ``service`` the reads and writes in the caller's transaction,
``routes`` the SpaceService endpoints. Which memos a member reads is not
decided here: that is the audience predicate (:mod:`app.access`).
"""
