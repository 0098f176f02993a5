"""``/mcp``: an allowlist of REST operations as MCP tools, run with the caller's own token.

MCP has no policy of its own. ``allowlist`` says which operations are tools;
``tools`` derives their schemas from the app's OpenAPI document (pure);
``arguments`` validates a call and builds the REST request; ``invoke`` runs it
through the same ASGI app and normalises the answer; ``origin`` is the Origin
rule; ``endpoint`` is the route, which starts ``server`` (the SDK's stateless
transport, the only part that imports the SDK) on the first MCP request. See
``docs/decisions/0010-mcp.md`` and ``0054-lazy-imports.md``.
"""
