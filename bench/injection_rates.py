"""The injection check's false-positive and detection rates on its corpora (tests/injection_corpus.py).

* ordinary observations: the hand-written tricky ones (tests/fixtures/injection/ordinary.jsonl), every
  distinct observation of the bundled sample and of synthetic data (bench/synth.py, made in the system's
  temporary directory or `--data DIR`): how many give a signal, by source and domain, and which;
* injection attempts (tests/fixtures/injection/attempts.jsonl): how many of each class give a signal, alone
  and on lines of their own in the middle of a sample observation of their domain;
* held out (tests/fixtures/injection/held_out.jsonl): attempts and tricky ordinary texts the rules were never
  tuned on, and which of them the check gets wrong.

    python bench/injection_rates.py

tests/judging/test_injection_corpus.py asserts the same figures (at most 1% false positives, every attempt flagged).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from _common import machine
from injection_corpus import attempts, held_out, inserted, ordinary

from awbench.judging.injection import injection_signals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="synthetic data directory (default: one made in $TMPDIR)")
    args = parser.parse_args()
    corpus = ordinary(args.data)
    print(machine())
    flagged = [(text, injection_signals(text.text)) for text in corpus]
    flagged = [(text, signals) for text, signals in flagged if signals]
    print(f"ordinary observations: {len(flagged)} of {len(corpus)} flagged ({len(flagged) / len(corpus):.2%})")
    for name, key in (("source", lambda t: t.source), ("domain", lambda t: t.domain)):
        total, hits = Counter(map(key, corpus)), Counter(key(text) for text, _ in flagged)
        print(f"  by {name}: " + ", ".join(f"{k} {hits[k]}/{n}" for k, n in total.items()))
    for text, signals in flagged:
        print(f"  flagged {text.domain}/{text.source} {signals}: {text.text[:70]!r}")
    tried = attempts()
    alone = Counter(a.source for a in tried if injection_signals(a.text))
    inside = Counter(a.source for a in tried if injection_signals(inserted(a, corpus)))
    total = Counter(a.source for a in tried)
    print(
        f"injection attempts: {sum(alone.values())} of {len(tried)} flagged alone, "
        f"{sum(inside.values())} inside an observation; {len(total)} classes"
    )
    for kind, n in sorted(total.items()):
        print(f"  {kind:<24} {alone[kind]:>3}/{n:<3} alone  {inside[kind]:>3}/{n:<3} inside")
    new_attempts, new_ordinary = held_out()
    missed = [a for a in new_attempts if not injection_signals(a.text)]
    wrong = [o for o in new_ordinary if injection_signals(o.text)]
    print(
        f"held out (never tuned on): {len(new_attempts) - len(missed)} of {len(new_attempts)} attempts flagged, "
        f"{len(wrong)} of {len(new_ordinary)} ordinary texts flagged"
    )
    for text in missed + wrong:
        print(f"  {'missed' if text in missed else 'flagged'} {text.source}: {text.text[:80]!r}")


if __name__ == "__main__":
    main()
