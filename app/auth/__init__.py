"""Authentication: who the caller is, from its credential alone."""
