"""Trajectory-ordered against shuffled submission with the offline vllm backend: prefix-cache hit rate (cached
prompt tokens over prompt tokens, from vLLM's per-request `num_cached_tokens`) and wall time.

The KV cache is kept small on purpose (--kv-cache-mib), as a real benchmark run's prompts (2,170 samples, tens
of thousands of tokens each) overflow any KV cache many times: what stays cached is what was used recently.
The prefix cache is emptied before each run; runs alternate to spread the machine's noise over both orders.

    python bench/prefix_order.py [--copies 1] [--batch-size 16] [--kv-cache-mib 8] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

import _common
from tiny_model import ensure_tiny_model
from vllm_fixtures import MAX_MODEL_LEN

from awbench.backends import GenerationRequest
from awbench.backends.vllm_offline import VLLMBackend, chunks, create
from awbench.config import ModelSettings
from awbench.records import Generation


def ordered(backend: VLLMBackend, requests: list[GenerationRequest]) -> list[Generation]:
    async def go() -> list[Generation]:
        return [g async for g in backend.generate(requests)]

    return asyncio.run(go())


def shuffled(backend: VLLMBackend, requests: list[GenerationRequest]) -> list[Generation]:
    """The backend's own batch path, fed in a random order instead of trajectory order."""
    mixed = random.Random(0).sample(requests, len(requests))
    return [g for batch in chunks(mixed, backend.settings.engine.batch_size) for g in backend.run_batch(batch)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=1, help="times over the 65-record bundled sample")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--kv-cache-mib", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    settings = ModelSettings(
        model=str(ensure_tiny_model()), backend="vllm", max_tokens=args.max_tokens, temperature=1.0,
        engine={"max_model_len": MAX_MODEL_LEN, "batch_size": args.batch_size,
                "engine_args": {"kv_cache_memory_bytes": args.kv_cache_mib * 2**20}},
    )  # fmt: skip
    requests = _common.sample_requests(copies=args.copies)
    backend = create(settings)
    results: dict[str, list[tuple[float, list[Generation]]]] = {"trajectory order": [], "shuffled": []}
    try:
        ordered(backend, requests[:1])  # warm-up
        for _ in range(args.rounds):
            for name, run in (("trajectory order", ordered), ("shuffled", shuffled)):
                backend.llm.reset_prefix_cache()
                started = time.perf_counter()
                generations = run(backend, requests)
                results[name].append((time.perf_counter() - started, generations))
    finally:
        asyncio.run(backend.aclose())

    rows = []
    for name, runs in results.items():
        prompt, completion, cached = _common.token_totals(runs[-1][1])
        walls = [wall for wall, _ in runs]
        rows.append(
            [name, prompt, cached, f"{cached / prompt:.1%}", min(walls), sum(walls) / len(walls), prompt / min(walls)]
        )
    print(f"machine: {_common.machine()}")
    print(
        f"{len(requests)} requests (bundled sample x{args.copies}), batch size {args.batch_size}, KV cache "
        f"{args.kv_cache_mib} MiB (~{args.kv_cache_mib * 2**20 // 512:,} tokens of the tiny model), max_tokens "
        f"{args.max_tokens}, {args.rounds} rounds\n"
    )
    header = ["submission", "prompt tokens", "cached tokens", "hit rate", "best wall s", "mean wall s", "prompt tok/s"]
    print(_common.table(header, rows))
    print(f"\nshuffled / trajectory-order wall time (best): {rows[1][4] / rows[0][4]:.2f}x")


if __name__ == "__main__":
    main()
