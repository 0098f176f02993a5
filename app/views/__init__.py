"""Saved views: named CEL filters a user keeps (``users/{u}/views``)."""
