"""Background jobs shared by every process on one database."""
