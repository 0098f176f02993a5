"""Reactions: follow their memo (readable memo to list or react; only the reactor deletes)."""
