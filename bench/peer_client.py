#!/usr/bin/python3
"""A streaming client built the way `vllm bench serve`'s request function works, as a peer for
bench/client_peer.sh: asyncio + aiohttp, one POST per request with at most C in flight, the body
read with iter_any(), the bytes split into SSE events on blank lines, each event's `data:` parsed
with json.loads, a timestamp taken per token-carrying event. It keeps the generated text and the
timestamps in memory (as that client does) and stores nothing on disk.

Written from the description of how that client works, not from its code.

Usage: peer_client.py URL BODY_JSON REQUESTS CONCURRENCY
Prints one JSON line: requests, completed, tokens (events that carried text), cpu_s (this
process, user + system), wall_s.
"""
import asyncio
import json
import resource
import sys
import time

import aiohttp


async def one_request(session, url, body, results):
    sent = time.perf_counter()
    stamps = []
    text = []
    buffer = b""
    async with session.post(url, json=body) as response:
        if response.status != 200:
            results.append((False, 0))
            return
        async for chunk in response.content.iter_any():
            buffer += chunk
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                for line in event.split(b"\n"):
                    if not line.startswith(b"data:"):
                        continue
                    data = line[5:].strip()
                    if data == b"[DONE]":
                        continue
                    parsed = json.loads(data)
                    for choice in parsed.get("choices") or []:
                        delta = choice.get("text")
                        if delta is None:
                            delta = (choice.get("delta") or {}).get("content")
                        if delta:
                            stamps.append(time.perf_counter() - sent)
                            text.append(delta)
    results.append((True, len(stamps)))


async def main():
    url, body_text, requests, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    body = json.loads(body_text)
    results = []
    limit = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=6 * 60 * 60)

    async def limited(session):
        async with limit:
            await one_request(session, url, body, results)

    started_cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await asyncio.gather(*(limited(session) for _ in range(requests)))
    wall = time.perf_counter() - started
    ended_cpu = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ended_cpu.ru_utime - started_cpu.ru_utime) + (ended_cpu.ru_stime - started_cpu.ru_stime)
    print(json.dumps({"requests": requests, "completed": sum(1 for ok, _ in results if ok),
                      "tokens": sum(n for _, n in results), "cpu_s": round(cpu, 4),
                      "wall_s": round(wall, 4)}))


asyncio.run(main())
