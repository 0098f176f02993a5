"""Personal access tokens."""
