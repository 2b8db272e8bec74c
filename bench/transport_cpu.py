"""The client's CPU per chat request at benchmark-sized bodies: the openai SDK's AsyncOpenAI against awbench's own
transport (`awbench.transport.chat_client.ChatClient`), side by side on one delay server, and the JSON encoders alone.

    python bench/transport_cpu.py                  # 600 requests of about 150 KB each, 64 at a time
    python bench/transport_cpu.py --requests 100   # fewer (the CI smoke check)

The server (bench/delay_server.py, delay 0) runs in its own process, so the CPU time read here
(time.process_time of this process) is the client's alone: building and encoding the body, sending it,
reading and parsing the answer. Each client sends the same body; best of `--repeat` rounds. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import orjson
import pydantic_core
from _common import machine, table
from delay_server import DelayServer

from awbench.transport.chat_client import ChatClient

# About 150 KB, some of it outside ASCII, as a long trajectory's prompt is.
BODY = {
    "model": "bench",
    "messages": [
        {"role": "system", "content": "You simulate the environment."},
        {"role": "user", "content": ("x" * 50 + "é\n") * 3000},
        {"role": "user", "content": "ls -la"},
    ],
    "max_tokens": 64,
    "temperature": 0.6,
}


async def with_sdk(url: str, requests: int, concurrency: int) -> None:
    import openai  # only here: importing it costs about a second

    client = openai.AsyncOpenAI(base_url=url, api_key="bench-key", max_retries=0)
    limit = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with limit:
            await client.chat.completions.create(**BODY)

    await asyncio.gather(*(one() for _ in range(requests)))
    await client.close()


async def with_awbench(url: str, requests: int, concurrency: int) -> None:
    client = ChatClient(url, "bench-key", timeout=60)
    limit = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with limit:
            await client.chat(BODY)

    await asyncio.gather(*(one() for _ in range(requests)))
    await client.close()


def cpu_ms_per_request(client, url: str, requests: int, concurrency: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        asyncio.run(client(url, requests, concurrency))
        best = min(best, time.process_time() - started)
    return best / requests * 1000


def encoder_mb_per_s(encode, rounds: int) -> float:
    size = len(orjson.dumps(BODY))
    started = time.perf_counter()
    for _ in range(rounds):
        encode(BODY)
    return size * rounds / (time.perf_counter() - started) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with DelayServer(0.0, role="candidate", models=["bench"]) as server:
        url = server.url
        # One warm-up round each, so imports and the first connections are not counted.
        for client in (with_sdk, with_awbench):
            asyncio.run(client(url, min(args.requests, 64), args.concurrency))
        sdk = cpu_ms_per_request(with_sdk, url, args.requests, args.concurrency, args.repeat)
        own = cpu_ms_per_request(with_awbench, url, args.requests, args.concurrency, args.repeat)
    print(f"machine: {machine()}")
    print(
        f"{args.requests} requests of {len(orjson.dumps(BODY)) / 1000:.0f} KB, {args.concurrency} at a time, best of {args.repeat}"
    )
    print(
        table(
            ["client", "CPU ms / request", "ratio to awbench"],
            [["openai.AsyncOpenAI", sdk, sdk / own], ["awbench ChatClient (aiohttp, orjson, jiter)", own, 1.0]],
        )
    )
    print()
    rounds = max(args.requests, 100)
    print(
        table(
            ["encoder", "MB/s"],
            [
                ["json.dumps", encoder_mb_per_s(lambda b: json.dumps(b).encode(), rounds)],
                ["pydantic_core.to_json", encoder_mb_per_s(pydantic_core.to_json, rounds)],
                ["orjson.dumps", encoder_mb_per_s(orjson.dumps, rounds)],
            ],
        )
    )


if __name__ == "__main__":
    main()
