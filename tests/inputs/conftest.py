"""Fixtures for the input-hardening tests: the space fixtures (``team``, ``carol``)."""

from __future__ import annotations

from tests.spaces.conftest import carol, dave, team  # noqa: F401 (fixtures)
