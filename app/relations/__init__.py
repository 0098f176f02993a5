"""Memo relations (REFERENCE and COMMENT), shown only when both ends are readable."""
