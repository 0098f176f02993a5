"""What MCP adds to a REST call: ``python -m bench.mcp_latency [--requests 300]``.

Starts ``daybook serve`` (SQLite, the hashing embedder, no embedding worker)
in a subprocess, seeds memos through the API, then times, interleaved in one
run with one keep-alive HTTP client and a bearer token:

- ``rest``: ``GET /api/v1/memos?pageSize=20`` and ``GET /api/v1/memos:search``;
- ``mcp``: the same operations as a raw JSON-RPC ``tools/call`` POSTed to
  ``/mcp`` (``memo_list_memos``, ``memo_search_memos``): the server-side cost
  of MCP (transport, validation, the in-process call, normalisation);
- ``sdk``: the same tool calls through the SDK's ``ClientSession``, for the
  end-to-end figure an agent sees (it adds client-side schema validation).

Prints p50/p95 per series and the MCP − REST difference at p50 (target: under
5 ms), and writes ``bench/results/mcp_latency.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.harness import add_options, start_server, stop_server
from bench.timing import percentile

RESULTS = Path(__file__).parent / "results" / "mcp_latency.json"
WORDS = [
    "deploy",
    "review",
    "budget",
    "garden",
    "travel",
    "recipe",
    "meeting",
    "invoice",
    "backup",
    "release",
]


async def _seed(http: httpx.AsyncClient, memos: int) -> dict[str, str]:
    creds = {"username": "bench", "password": "password-1"}
    (await http.post("/api/v1/users", json=creds)).raise_for_status()
    r = await http.post("/api/v1/auth/signin", json={"passwordCredentials": creds})
    r.raise_for_status()
    http.cookies.clear()
    auth = {"Authorization": f"Bearer {r.json()['accessToken']}"}
    for i in range(memos):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 7) % len(WORDS)]
        content = f"memo {i}: {a} notes about {b} #{a} #work"
        r = await http.post("/api/v1/memos", json={"content": content}, headers=auth)
        r.raise_for_status()
    return auth


def _rpc(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def _timed(fn: Callable[[], Awaitable[None]], out: list[float]) -> None:
    start = time.perf_counter()
    await fn()
    out.append(time.perf_counter() - start)


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(s * 1000 for s in samples)
    return {
        "n": len(ordered),
        "p50_ms": round(percentile(ordered, 50), 3),
        "p95_ms": round(percentile(ordered, 95), 3),
    }


async def run(requests: int, warmup: int, memos: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="daybook-mcp-bench-") as tmp:
        proc, base = start_server(
            None, Path(tmp) / "data", ready_s=60, env={"DAYBOOK_EMBEDDING_MODEL": "hash"}
        )
        try:
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                auth = await _seed(http, memos)
                rest_calls = {
                    "memo_list_memos": ("/api/v1/memos", {"pageSize": 20}),
                    "memo_search_memos": (
                        "/api/v1/memos:search",
                        {"query": "deploy notes", "mode": "lexical", "pageSize": 20},
                    ),
                }
                mcp_headers = {**auth, "Accept": "application/json, text/event-stream"}
                series: dict[str, list[float]] = {}
                async with (
                    httpx2.AsyncClient(headers=auth, timeout=30) as sdk_http,
                    streamable_http_client(f"{base}/mcp", http_client=sdk_http) as (rd, wr),
                    ClientSession(rd, wr) as session,
                ):
                    await session.initialize()
                    for i in range(warmup + requests):
                        for tool, (path, params) in rest_calls.items():

                            async def rest(path: str = path, params: Any = params) -> None:
                                r = await http.get(path, params=params, headers=auth)
                                r.raise_for_status()

                            async def mcp(tool: str = tool, params: Any = params) -> None:
                                r = await http.post(
                                    "/mcp", json=_rpc(tool, params), headers=mcp_headers
                                )
                                r.raise_for_status()
                                assert not r.json()["result"].get("isError"), r.text[:300]

                            async def sdk(tool: str = tool, params: Any = params) -> None:
                                res = await session.call_tool(tool, params)
                                assert not res.is_error, res.content

                            for kind, fn in (("rest", rest), ("mcp", mcp), ("sdk", sdk)):
                                sink = series.setdefault(f"{tool} {kind}", [])
                                await _timed(fn, sink if i >= warmup else [])
        finally:
            stop_server(proc)
    table = {name: _summary(samples) for name, samples in series.items()}
    report: dict[str, Any] = {
        "memos": memos,
        "requests": requests,
        "series": table,
        "added_p50_ms": {},
    }
    for tool in ("memo_list_memos", "memo_search_memos"):
        rest_p50 = table[f"{tool} rest"]["p50_ms"]
        report["added_p50_ms"][tool] = {
            "mcp": round(table[f"{tool} mcp"]["p50_ms"] - rest_p50, 3),
            "sdk": round(table[f"{tool} sdk"]["p50_ms"] - rest_p50, 3),
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_options(parser, dialect=False, requests=300, warmup=30, memos=500)
    args = parser.parse_args()
    report = asyncio.run(run(args.requests, args.warmup, args.memos))
    print("| series | n | p50 ms | p95 ms |\n|---|---|---|---|")
    for name, s in report["series"].items():
        print(f"| {name} | {s['n']} | {s['p50_ms']:.2f} | {s['p95_ms']:.2f} |")
    for tool, added in report["added_p50_ms"].items():
        print(
            f"{tool}: MCP adds {added['mcp']:+.2f} ms at p50 "
            f"(SDK client end to end {added['sdk']:+.2f} ms)"
        )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
