"""Rate limits shared by every process on one database (decision 0029)."""
