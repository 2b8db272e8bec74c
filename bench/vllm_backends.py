"""The offline vllm backend against the openai backend talking to vLLM's OpenAI-compatible server, on the same
tiny random model (tests/tiny_model.py), the same requests and the same engine settings, one after the other
so that they never share the CPU. Engine start-up is timed apart from the runs. Each backend makes two passes
over the requests after a one-request warm-up: the first meets new batch shapes and an empty prefix cache, the
second finds every prompt cached, for both alike.

    python bench/vllm_backends.py [--copies 2] [--max-tokens 64] [--concurrency 64] [--batch-size 256]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import _common
from tiny_model import ensure_tiny_model
from vllm_fixtures import KV_CACHE_BYTES, MAX_MODEL_LEN, running_server

from awbench.backends import GenerationRequest, openai_api, vllm_offline
from awbench.config import ModelSettings
from awbench.records import Generation


async def timed(backend: object, requests: list[GenerationRequest]) -> tuple[float, list[Generation]]:
    started = time.perf_counter()
    generations = [g async for g in backend.generate(requests)]  # type: ignore[attr-defined]
    return time.perf_counter() - started, generations


async def passes(backend: object, requests: list[GenerationRequest]) -> list[tuple[float, list[Generation]]]:
    await timed(backend, requests[:1])  # warm-up: the first request pays one-off costs
    return [await timed(backend, requests) for _ in range(2)]


async def run_openai(
    url: str, requests: list[GenerationRequest], max_tokens: int, concurrency: int
) -> list[tuple[float, list[Generation]]]:
    settings = ModelSettings(
        model="tiny", backend="openai", base_urls=[url], max_tokens=max_tokens, temperature=1.0, concurrency=concurrency
    )
    backend = openai_api.create(settings)
    try:
        return await passes(backend, requests)
    finally:
        await backend.aclose()


def rows_for(name: str, startup: float, runs: list[tuple[float, list[Generation]]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for number, (wall, generations) in enumerate(runs, start=1):
        failed = sum(1 for g in generations if g.error or g.overlength)
        prompt, completion, cached = _common.token_totals(generations)
        rate = f"{cached / max(prompt, 1):.0%}"
        rows.append(
            [name, startup, number, wall, len(generations) / wall, prompt / wall, completion / wall, rate, failed]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=2, help="times over the 65-record bundled sample")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=64, help="openai backend requests in flight")
    parser.add_argument("--batch-size", type=int, default=256, help="offline backend batch size")
    args = parser.parse_args()
    model = ensure_tiny_model()
    requests = _common.sample_requests(copies=args.copies)
    rows = []

    log = Path(tempfile.mkdtemp(prefix="awbench-bench-")) / "server.log"
    started = time.perf_counter()
    with running_server(model, log) as server:
        startup = time.perf_counter() - started
        runs = asyncio.run(run_openai(server.url, requests, args.max_tokens, args.concurrency))
    rows += rows_for(f"openai backend -> vLLM server (concurrency {args.concurrency})", startup, runs)

    settings = ModelSettings(
        model=str(model), backend="vllm", max_tokens=args.max_tokens, temperature=1.0,
        engine={"max_model_len": MAX_MODEL_LEN, "batch_size": args.batch_size,
                "engine_args": {"kv_cache_memory_bytes": KV_CACHE_BYTES}},
    )  # fmt: skip
    started = time.perf_counter()
    backend = vllm_offline.create(settings)
    startup = time.perf_counter() - started
    try:
        runs = asyncio.run(passes(backend, requests))
    finally:
        asyncio.run(backend.aclose())
    rows += rows_for(f"offline vllm backend (batch size {args.batch_size})", startup, runs)

    print(f"machine: {_common.machine()}")
    print(
        f"{len(requests)} requests (bundled sample x{args.copies}), max_tokens {args.max_tokens}, tiny random Qwen3 model\n"
    )
    header = [
        "backend",
        "engine start s",
        "pass",
        "wall s",
        "requests/s",
        "prompt tok/s",
        "completion tok/s",
        "cached prompt",
        "failed",
    ]
    print(_common.table(header, rows))
    ratios = ", ".join(f"pass {i + 1}: {rows[i][3] / rows[i + 2][3]:.2f}x" for i in range(2))
    print(f"\noffline throughput over the server's (server wall / offline wall): {ratios}")


if __name__ == "__main__":
    main()
