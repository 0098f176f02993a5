"""Hybrid search: a lexical arm and a semantic arm, fused by Reciprocal Rank Fusion.

How the parts combine (``docs/decisions/0006-search.md``):

- Both arms run under the same audience predicate and CEL filter, inside the
  SQL statement that picks their candidates, before any LIMIT. A hidden memo
  therefore never takes a candidate slot, and a caller with narrow access
  still gets full pools.
- The lexical arm (``lexical``) is FTS5 ``bm25()`` on SQLite and a
  ``tsvector`` GIN index with ``ts_rank_cd`` on PostgreSQL; queries with CJK
  text use a bigram substring match on both.
- The semantic arm (``semantic``) ranks stored vectors of the *current*
  embedding model only: pgvector HNSW on PostgreSQL, an exact numpy scan over
  the admitted ids elsewhere.
- Embeddings are written by a background worker (``worker``); a memo without
  one is still found lexically, and the response counts the pending ones.
"""
