"""Throughput of the openai backend against a local server (bench/delay_server.py, in its own process) that
answers every request after a fixed delay,
at several concurrency levels, beside a one-request-at-a-time loop (plain sequential `await create(...)`,
as the reference evaluation script does). The ideal wall time is n x delay / concurrency.

    python bench/openai_concurrency.py [--n 256] [--delay 0.2] [--concurrency 1 8 32 64]
"""

from __future__ import annotations

import argparse
import asyncio
import time

import _common
import httpx2
import openai
from openai.types.chat import ChatCompletion
from delay_server import DelayServer

from awbench.backends import GenerationRequest
from awbench.backends.openai_api import create
from awbench.config import ModelSettings


async def awbench_wall(url: str, requests: list[GenerationRequest], concurrency: int) -> float:
    settings = ModelSettings(
        model="fake",
        backend="openai",
        base_urls=[url],
        concurrency=concurrency,
        max_tokens=16,
        max_retries=0,
        request_timeout=60,
    )
    backend = create(settings)
    started = time.perf_counter()
    try:
        failed = [g.key async for g in backend.generate(requests) if g.error]
    finally:
        await backend.aclose()
    if failed:
        raise RuntimeError(f"{len(failed)} requests failed, e.g. {failed[0]}")
    return time.perf_counter() - started


async def sequential_wall(url: str, requests: list[GenerationRequest]) -> float:
    client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=0)
    started = time.perf_counter()
    for request in requests:
        await client.chat.completions.create(model="fake", messages=request.messages, max_tokens=16)  # type: ignore[arg-type]
    await client.close()
    return time.perf_counter() - started


async def raw_httpx_wall(url: str, requests: list[GenerationRequest], concurrency: int) -> float:
    """A reference floor: the same requests over plain httpx2 (the SDK's transport), no SDK, no parsing."""
    gate = asyncio.Semaphore(concurrency)

    async def one(client: httpx2.AsyncClient, request: GenerationRequest) -> None:
        async with gate:
            response = await client.post(
                f"{url}/chat/completions", json={"model": "fake", "messages": request.messages}
            )
            response.raise_for_status()

    async with httpx2.AsyncClient(limits=httpx2.Limits(max_connections=concurrency), timeout=60) as client:
        started = time.perf_counter()
        await asyncio.gather(*(one(client, r) for r in requests))
        return time.perf_counter() - started


async def aiohttp_sdk_wall(url: str, requests: list[GenerationRequest], concurrency: int) -> float:
    """The openai SDK over its aiohttp transport (`DefaultAioHttpClient`), sending as awbench does: a candidate
    for a cheaper transport than httpx2 (awbench itself sends with its own ChatClient, the rows above)."""
    client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=0, http_client=openai.DefaultAioHttpClient())
    gate = asyncio.Semaphore(concurrency)

    async def one(request: GenerationRequest) -> None:
        async with gate:
            body = {"model": "fake", "messages": request.messages, "max_tokens": 16}
            await client.post("/chat/completions", cast_to=ChatCompletion, body=body)

    started = time.perf_counter()
    await asyncio.gather(*(one(r) for r in requests))
    wall = time.perf_counter() - started
    await client.close()
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    args = parser.parse_args()
    requests = _common.sample_requests(copies=-(-args.n // 65))[: args.n]

    rows = []
    with DelayServer(delay_s=args.delay) as server:
        wall = asyncio.run(sequential_wall(server.url, requests))
        ideal = args.n * args.delay
        in_flight = server.stats(reset=True)["in_flight_max"]
        rows.append(
            ["sequential loop (reference style)", 1, wall, args.n / wall, ideal, f"{ideal / wall:.0%}", in_flight]
        )
        for concurrency in args.concurrency:
            wall = asyncio.run(awbench_wall(server.url, requests, concurrency))
            ideal = args.n * args.delay / concurrency
            in_flight = server.stats(reset=True)["in_flight_max"]
            rows.append(
                ["awbench openai backend", concurrency, wall, args.n / wall, ideal, f"{ideal / wall:.0%}", in_flight]
            )
        top = max(args.concurrency)
        wall = asyncio.run(raw_httpx_wall(server.url, requests, top))
        ideal = args.n * args.delay / top
        in_flight = server.stats(reset=True)["in_flight_max"]
        rows.append(
            [
                "plain httpx2, no SDK (reference floor)",
                top,
                wall,
                args.n / wall,
                ideal,
                f"{ideal / wall:.0%}",
                in_flight,
            ]
        )
        wall = asyncio.run(aiohttp_sdk_wall(server.url, requests, top))
        in_flight = server.stats(reset=True)["in_flight_max"]
        rows.append(
            [
                "openai SDK over aiohttp (DefaultAioHttpClient)",
                top,
                wall,
                args.n / wall,
                ideal,
                f"{ideal / wall:.0%}",
                in_flight,
            ]
        )
    print(f"machine: {_common.machine()}")
    print(f"n={args.n} requests, server delay {args.delay * 1000:.0f} ms each\n")
    header = ["client", "concurrency", "wall s", "requests/s", "ideal s", "efficiency", "max in flight"]
    print(_common.table(header, rows))
    sequential = rows[0][2]
    awbench_rows = [r for r in rows if r[0] == "awbench openai backend"]
    print(
        "\nawbench's speed-up over the sequential loop: "
        + ", ".join(f"c={r[1]}: {sequential / r[2]:.1f}x" for r in awbench_rows)
    )


if __name__ == "__main__":
    main()
