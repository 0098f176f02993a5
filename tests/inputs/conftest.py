"""Fixtures for the input-hardening tests: the space fixtures (``team``, ``carol``)."""

from __future__ import annotations

from tests.spaces.conftest import carol, dave, team  # noqa: F401 (fixtures)
from tests.test_schemathesis import instance  # noqa: F401 (fixture of tests/inputs/test_fuzz.py)
