"""How long loading and validating the benchmark takes, next to a plain `json.loads` loop over the same lines.

The input is made from the bundled sample at the real benchmark's size: 2,170 records (the published count
per domain), each a whole trajectory (prompt and response lists of about 23 turns on average) of strings
made long by repeating the sample's own text, about 400 MB of JSONL in all. It is written once under
`--dir` (default: a folder in the system's temporary directory) and reused by later runs.

    python bench/load_speed.py                # make the input if missing, then time both
    python bench/load_speed.py --repeat 5     # best of 5 (default 3)
    python bench/load_speed.py --size-mb 100  # a smaller input (its own folder)

"awbench load" is `load_samples` as a run calls it: read, parse, validate, check the text, give keys,
hash every sample and fingerprint the selection. Prints the times and their ratio; asserts nothing.
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
from awbench.dataset import load_samples
from awbench.domains import DOMAINS, FILE_SUFFIX, PUBLISHED_STATS
from awbench.resources import sample_dir


def make_input(directory: Path, size_mb: int) -> None:
    """`{domain}_test.jsonl` files of the published counts, about `size_mb` MB together."""
    directory.mkdir(parents=True, exist_ok=True)
    trajectories = {d: _trajectories(d) for d in DOMAINS}
    base = sum(len(_line(d, i, 1, trajectories[d])) for d in DOMAINS for i in range(PUBLISHED_STATS[d][0]))
    scale = max(1, round(size_mb * 1_000_000 / base))
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


def _line(domain: str, i: int, scale: int, trajectories: list[dict]) -> str:
    """Record `i`: a trajectory's turns repeated to 1..45 turns (23 on average), each string `scale` times
    as long. Unique ids, so no key repeats."""
    source = trajectories[i % len(trajectories)]
    turns = 1 + (i * 7) % 45
    n = len(source["prompt"])
    prompt = [source["prompt"][t % n] + source["prompt"][t % n][-200:] * (scale - 1) for t in range(turns)]
    response = [source["response"][t % n] * scale for t in range(turns)]
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


def plain_loop(directory: Path) -> float:
    start = time.perf_counter()
    for path in sorted(directory.glob(f"*{FILE_SUFFIX}")):
        for raw in path.read_bytes().split(b"\n"):
            if raw.strip():
                json.loads(raw)
    return time.perf_counter() - start


def awbench_load(directory: Path) -> tuple[float, int]:
    start = time.perf_counter()
    loaded = load_samples(DataSettings(source=str(directory)))
    return time.perf_counter() - start, len(loaded.samples)


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
    print(f"input: {directory}, {size / 1e6:,.0f} MB")
    plain, ours, samples = [], [], 0
    for _ in range(args.repeat):
        gc.collect()
        plain.append(plain_loop(directory))
        gc.collect()
        seconds, samples = awbench_load(directory)
        ours.append(seconds)
    print(f"samples: {samples}")
    print(f"plain json.loads loop: {min(plain):.2f} s (best of {args.repeat})")
    print(f"awbench load:          {min(ours):.2f} s (best of {args.repeat})")
    print(f"ratio:                 {min(ours) / min(plain):.2f}x")


if __name__ == "__main__":
    main()
