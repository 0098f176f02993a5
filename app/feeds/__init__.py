"""RSS feeds of PUBLIC memos, on PUBLIC instances only."""
