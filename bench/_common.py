"""What the benchmark scripts share: the machine's description, the bundled sample as requests, tables.

Benchmarks measure and print; they never assert timings. The scripts find `tests/` (the fake server, the tiny
model builder) through sys.path, so run them from a source checkout: `python bench/NAME.py`.
"""

from __future__ import annotations

import os
import platform
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from awbench.backends import GenerationRequest  # noqa: E402
from awbench.config import DataSettings  # noqa: E402
from awbench.data.dataset import load_samples  # noqa: E402
from awbench.records import Generation, Sample  # noqa: E402


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    ram_kib = next(
        int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")
    )
    return f"{os.cpu_count()} cores ({cpu}), {ram_kib / 2**20:.1f} GiB RAM, Python {platform.python_version()}"


def sample_requests(copies: int = 1, shuffle_seed: int | None = None) -> list[GenerationRequest]:
    """The bundled sample as requests, `copies` times over (each copy with its own keys and seeds)."""
    samples = load_samples(DataSettings(source="sample")).samples
    requests = [
        GenerationRequest(
            sample=Sample(key=f"{s.key}@{copy}", record=s.record, origin=s.origin),
            seed=copy * len(samples) + i,
        )
        for copy in range(copies)
        for i, s in enumerate(samples)
    ]
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(requests)
    return requests


def token_totals(generations: list[Generation]) -> tuple[int, int, int]:
    """(prompt, completion, cached prompt) tokens over the generations."""
    prompt = sum(g.usage.prompt_tokens or 0 for g in generations)
    completion = sum(g.usage.completion_tokens or 0 for g in generations)
    cached = sum(g.usage.cached_tokens or 0 for g in generations)
    return prompt, completion, cached


def table(header: list[str], rows: list[list[object]]) -> str:
    def cell(value: object) -> str:
        return f"{value:,.2f}" if isinstance(value, float) else f"{value:,}" if isinstance(value, int) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
