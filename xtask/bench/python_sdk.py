"""The three calls of BENCHMARKS.md's result-size table through the official MCP Python SDK.

Runs a memory server over stdio with `mcp.ClientSession` (which checks every structured
result against the tool's output schema), creates 1,000 entities of 3 observations in batches
of 100 (the names and texts of the `bench` example), and prints one JSON line: p50 ms of
`create_entities` (100), `open_nodes` (one name) and `search_nodes` (limit 10), and the bytes
of each result (content and structured content, compact JSON).

    python3 xtask/bench/python_sdk.py --samples 100 -- target/release/engram --database-url \
        /tmp/sdk.db serve --stdio --workspace bench --create-workspace bench --embedder none

`pip install mcp` first. Arguments use the reference server's names, so every peer gets the
same calls; `--engram` asks engram for text mode, as the `bench` example does.
"""

import argparse
import asyncio
import json
import os
import statistics
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]


def entity(i):
    observations = [f"entity {i} fact {j} mentions {WORDS[(i * 7 + j) % 16]} and the number "
                    f"{i * 31 + j}" for j in range(3)]
    return {"name": f"entity-{i:06}", "entityType": "thing", "observations": observations}


def size(result):
    content = json.dumps([c.model_dump(exclude_none=True) for c in result.content],
                         separators=(",", ":"), ensure_ascii=False)
    structured = result.structured_content
    extra = json.dumps(structured, separators=(",", ":"), ensure_ascii=False) if structured else ""
    return len(content.encode()) + len(extra.encode())


async def timed(session, tool, arguments):
    started = time.perf_counter()
    result = await session.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - started) * 1e3
    assert not result.is_error, (tool, result)
    return elapsed, result


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--engram", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = [c for c in args.command if c != "--"]
    server = StdioServerParameters(command=command[0], args=command[1:])
    report = {"p50_ms": {}, "result_bytes": {}}
    async with stdio_client(server, errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            creates = []
            for batch in range(10):
                elapsed, result = await timed(
                    session, "create_entities",
                    {"entities": [entity(i) for i in range(batch * 100, batch * 100 + 100)]})
                creates.append(elapsed)
                if batch == 0:
                    report["result_bytes"]["create_entities 100"] = size(result)
            # More batches of fresh names, for a p50 over `samples` creates.
            for k in range(max(0, args.samples // 10 - 10)):
                base = 100_000 + k * 100
                elapsed, _ = await timed(
                    session, "create_entities",
                    {"entities": [entity(i) for i in range(base, base + 100)]})
                creates.append(elapsed)
            report["p50_ms"]["create_entities 100"] = statistics.median(creates)
            opens, searches = [], []
            for k in range(args.samples):
                name = f"entity-{(k * 7919 + 13) % 1000:06}"
                elapsed, result = await timed(session, "open_nodes", {"names": [name]})
                opens.append(elapsed)
                query = {"query": WORDS[k % 16], "limit": 10}
                if args.engram:
                    query["mode"] = "text"
                elapsed, result = await timed(session, "search_nodes", query)
                searches.append(elapsed)
            _, one = await timed(session, "open_nodes", {"names": ["entity-000042"]})
            query = {"query": "alpha", "limit": 10, **({"mode": "text"} if args.engram else {})}
            _, found = await timed(session, "search_nodes", query)
            report["result_bytes"]["open_nodes 1"] = size(one)
            report["result_bytes"]["search_nodes 10"] = size(found)
            report["p50_ms"]["open_nodes 1"] = statistics.median(opens)
            report["p50_ms"]["search_nodes 10"] = statistics.median(searches)
    print(json.dumps(report))


asyncio.run(main())
