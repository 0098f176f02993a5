"""Real Memos clients from PyPI, run by their own entry points against a live Daybook."""

# A live Daybook (uvicorn on loopback), one per module and dialect.
from tests.mcp.conftest import module_db, server  # noqa: F401
