"""The injection check's cost per prediction at full size, two ways side by side in one run.

Every prediction a run judges is checked for text addressed to the judge (`awbench.judging.injection`), in the
run's own process, so the check is part of the client's CPU per request. The predictions are the synthetic
benchmark's real observations (bench/synth.py; `--data DIR` or one made in the system's temporary directory),
and every fifth of them again with an injection attempt of tests/fixtures/injection/attempts.jsonl put in its middle.

* `injection_signals`: each text rule's pattern tried only where one of its start words is;
* whole-text search: the same rules with each pattern searched for over the whole text (the check before
  2026-12-02), for comparison.

    python bench/injection_speed.py --data DIR            # best of 3 rounds
    python bench/injection_speed.py --scale 0.02 --rounds 1   # small, in $TMPDIR

Both ways must find the same signals for every prediction (checked); prints the time per prediction and the
ratio; asserts no timing.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from _common import machine

import synth
from awbench.config import DataSettings
from awbench.data.dataset import load_samples
from awbench.judging import injection
from injection_corpus import attempts

ATTEMPTS = [attempt.text for attempt in attempts()]


def predictions(data: Path) -> tuple[list[str], list[str]]:
    """The ground truths, and every fifth of them with an attempt in its middle."""
    truths = [s.record.ground_truth for s in load_samples(DataSettings(source=str(data))).samples]
    rng = random.Random(1)
    return truths, [t[: len(t) // 2] + f"\n{rng.choice(ATTEMPTS)}\n" + t[len(t) // 2 :] for t in truths[::5]]


def whole_text_search(rule, text, masked, words) -> bool:  # type: ignore[no-untyped-def]
    """In place of injection._search: the pattern searched for over the whole text."""
    return injection._search_all(rule, text)


def best_time(check, texts: list[str], rounds: int) -> tuple[float, list[list[str]]]:
    best, results = float("inf"), []
    for _ in range(rounds):
        start = time.process_time()
        results = [check(t) for t in texts]
        best = min(best, time.process_time() - start)
    return best, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="synthetic data directory (default: one made in $TMPDIR)")
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="of the synthetic data (DIR is reused when it holds this scale, else written again)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    truths, attacked = predictions(synth.ensure(args.data, scale=args.scale))
    texts = truths + attacked
    print(machine())
    print(f"{len(texts):,} predictions, mean {sum(map(len, texts)) / len(texts):,.0f} characters")
    now, found = best_time(injection.injection_signals, texts, args.rounds)
    start_words = injection._search
    injection._search = whole_text_search
    try:
        before, expected = best_time(injection.injection_signals, texts, args.rounds)
    finally:
        injection._search = start_words
    if found != expected:
        raise SystemExit("the two ways disagree: a start word is missing from a text rule")
    flagged = sum(bool(signals) for signals in found)
    print(f"same signals both ways; {flagged:,} predictions flagged, {len(attacked):,} hold an attempt")
    print("CPU µs per prediction, best of", args.rounds)
    print(f"  injection_signals (start words)   {now / len(texts) * 1e6:8.0f}")
    print(f"  whole-text search                 {before / len(texts) * 1e6:8.0f}   ({before / now:.2f}x)")


if __name__ == "__main__":
    main()
