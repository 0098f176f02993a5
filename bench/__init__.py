"""Daybook's benchmarks: seeded corpora, timed through HTTP and raw SQL.

Performance is measured here, not in timed tests. See ``bench/README.md``.
"""
