"""How long loading and validating the benchmark takes, next to a plain `json.loads` loop over the same lines.

The input is made from the bundled sample at the real benchmark's size: 2,170 records (the published count
per domain), each a whole trajectory (prompt and response lists of about 23 turns on average) of strings
made long by repeating the sample's own text, about 400 MB of JSONL in all. It is written once under
`--dir` (default: a folder in the system's temporary directory) and reused by later runs.

    python bench/load_speed.py                # make the input if missing, then time both
    python bench/load_speed.py --repeat 5     # best of 5 (default 3)
    python bench/load_speed.py --size-mb 100  # a smaller input (its own folder)

"awbench load" is `load_samples` as a run calls it: read, parse, validate, check the text, give keys,
hash every sample and fingerprint the selection; "hash read again" adds reading each sample's `.hash`
once more, as a run's predictions do. Prints wall and CPU times (CPU time is steadier on a busy machine)
and their ratios to the plain loop; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from pathlib import Path

from _common import machine

from awbench.config import DataSettings
from awbench.data.dataset import load_samples
from awbench.domains import DOMAINS, FILE_SUFFIX, PUBLISHED_STATS
from awbench.resources import sample_dir


def make_input(directory: Path, size_mb: int) -> None:
    """`{domain}_test.jsonl` files of the published counts, about `size_mb` MB together."""
    directory.mkdir(parents=True, exist_ok=True)
    trajectories = {d: _trajectories(d) for d in DOMAINS}

    def size(scale: float) -> int:
        return sum(
            len(_line(d, i, scale, trajectories[d]).encode()) + 1 for d in DOMAINS for i in range(PUBLISHED_STATS[d][0])
        )

    one, two = size(1), size(2)  # the size grows (about) linearly with the scale
    scale = max(1.0, (size_mb * 1_000_000 - (2 * one - two)) / (two - one))
    for domain in DOMAINS:
        lines = (_line(domain, i, scale, trajectories[domain]) for i in range(PUBLISHED_STATS[domain][0]))
        tmp = directory / f"{domain}{FILE_SUFFIX}.part"
        with tmp.open("w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in lines)
        tmp.rename(directory / f"{domain}{FILE_SUFFIX}")


def _trajectories(domain: str) -> list[dict]:
    """The longest record of each sample trajectory (it holds all of that trajectory's turns)."""
    text = (sample_dir() / f"{domain}{FILE_SUFFIX}").read_text(encoding="utf-8")
    longest: dict[object, dict] = {}
    for line in text.split("\n"):
        if line.strip():
            record = json.loads(line)
            if len(record["prompt"]) > len(longest.get(record["id"], {"prompt": []})["prompt"]):
                longest[record["id"]] = record
    return list(longest.values())


def _line(domain: str, i: int, scale: float, trajectories: list[dict]) -> str:
    """Record `i`: a trajectory's turns repeated to 1..45 turns (23 on average), each observation `scale`
    times as long (an action grows by its last 200 characters). Unique ids, so no key repeats."""
    source = trajectories[i % len(trajectories)]
    turns = 1 + (i * 7) % 45
    n = len(source["prompt"])
    prompt = [source["prompt"][t % n] + _stretch(source["prompt"][t % n][-200:], scale - 1) for t in range(turns)]
    response = [_stretch(source["response"][t % n], scale) for t in range(turns)]
    record = {
        "task": source["task"],
        "id": 100_000 + i,
        "prompt": prompt,
        "response": response,
        "current_prompt": prompt[-1],
        "system_str": source["system_str"],
        "turn_idx": turns,
        "total_turns": turns,
    }
    return json.dumps(record, ensure_ascii=False)


def _stretch(text: str, factor: float) -> str:
    """`text` repeated `factor` times, the fraction as a prefix."""
    return text * int(factor) + text[: round(len(text) * (factor % 1))]


def plain_loop(directory: Path) -> None:
    for path in sorted(directory.glob(f"*{FILE_SUFFIX}")):
        for raw in path.read_bytes().split(b"\n"):
            if raw.strip():
                json.loads(raw)


def awbench_load(directory: Path) -> int:
    return len(load_samples(DataSettings(source=str(directory))).samples)


def awbench_load_and_hash_again(directory: Path) -> int:
    """As a run does: its predictions record each sample's hash once more."""
    samples = load_samples(DataSettings(source=str(directory))).samples
    return sum(len(s.hash) for s in samples)


def timed(function, directory: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of one call."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    function(directory)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=None, help="where the input is made and kept")
    parser.add_argument("--size-mb", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    directory = args.dir or Path(tempfile.gettempdir()) / f"awbench-load-speed-{args.size_mb}mb"
    if not all((directory / f"{d}{FILE_SUFFIX}").exists() for d in DOMAINS):
        print(f"making the input in {directory} ...", flush=True)
        make_input(directory, args.size_mb)
    size = sum((directory / f"{d}{FILE_SUFFIX}").stat().st_size for d in DOMAINS)
    print(machine())
    print(f"input: {directory}, {size / 1e6:,.0f} MB, {awbench_load(directory):,} samples")
    cases = {
        "plain json.loads loop": plain_loop,
        "awbench load": awbench_load,
        "awbench load, .hash read again": awbench_load_and_hash_again,
    }
    best = {name: (float("inf"), float("inf")) for name in cases}
    for _ in range(args.repeat):  # interleaved, so that a busy moment of the machine hits every case alike
        for name, function in cases.items():
            wall, cpu = timed(function, directory)
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    plain_wall, plain_cpu = best["plain json.loads loop"]
    print(f"best of {args.repeat}:")
    for name, (wall, cpu) in best.items():
        print(f"  {name:32s} {wall:6.2f} s wall ({wall / plain_wall:.2f}x)   {cpu:6.2f} s CPU ({cpu / plain_cpu:.2f}x)")


if __name__ == "__main__":
    main()
