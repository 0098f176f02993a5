"""Storage: the table definitions, the engine factory and the request transaction."""
