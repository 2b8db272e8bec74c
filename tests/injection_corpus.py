"""The injection check's corpora: ordinary observations, which should give no signal, and injection attempts,
which should all give one (tests/judging/test_injection_corpus.py asserts both; bench/injection_rates.py prints them).

* ordinary: the hand-written tricky observations (`fixtures/injection/ordinary.jsonl`: code greps, pages about
  prompt injection, reviews rated 5/5, tool results with `quality` keys, ML text about the ground truth, test
  logs ...; the few the check flags carry their `signals` and a `note`), every distinct observation of the
  bundled sample, and every distinct observation of synthetic data (bench/synth.py);
* attempts: `fixtures/injection/attempts.jsonl`, each with its domain and class, checked alone and put in the
  middle of an ordinary observation of its domain;
* held out: `fixtures/injection/held_out.jsonl`, attempts (with a class) and ordinary texts (with a kind)
  written after the rules were tuned and never tuned on, to measure what new wording does (no test asserts
  on them: tuning on them would spoil the measure).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from awbench.domains import DOMAINS, OBSERVATION_MARKER

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "injection"
sys.path.insert(0, str(ROOT / "bench"))

import synth  # noqa: E402

SYNTH_SCALE = 0.04  # 354 distinct synthetic observations, 18K characters on average


@dataclass(frozen=True)
class Text:
    domain: str
    source: str  # "hand-written", "sample", "synthetic"; for attempts their class
    text: str
    signals: tuple[str, ...] = ()  # what the check finds in a hand-written ordinary text (known false positive)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _observations(directory: Path) -> dict[str, str]:
    """Distinct observation bodies (marker removed) of every record in `directory`, with their domain."""
    found: dict[str, str] = {}
    for domain in DOMAINS:
        for record in _jsonl(directory / f"{domain}_test.jsonl"):  # split on "\n" only: texts hold U+2028
            for observation in record["response"]:
                found.setdefault(observation.removeprefix(OBSERVATION_MARKER).strip(), domain)
    return found


def ordinary(synthetic_dir: Path | None) -> list[Text]:
    """The ordinary corpus; `synthetic_dir` (default: one in the system's temporary directory) receives the
    synthetic data (SYNTH_SCALE, seed 0) if it lacks it."""
    texts = [
        Text(entry["domain"], "hand-written", entry["text"], tuple(entry.get("signals", ())))
        for entry in _jsonl(FIXTURES / "ordinary.jsonl")
    ]
    texts += [Text(domain, "sample", text) for text, domain in _observations(ROOT / "data" / "sample").items()]
    synthetic = _observations(synth.ensure(synthetic_dir, scale=SYNTH_SCALE))
    return texts + [Text(domain, "synthetic", text) for text, domain in synthetic.items()]


def attempts() -> list[Text]:
    return [Text(entry["domain"], entry["class"], entry["text"]) for entry in _jsonl(FIXTURES / "attempts.jsonl")]


def held_out() -> tuple[list[Text], list[Text]]:
    """The held-out attempts and ordinary texts."""
    entries = _jsonl(FIXTURES / "held_out.jsonl")
    return (
        [Text(entry["domain"], entry["class"], entry["text"]) for entry in entries if "class" in entry],
        [Text(entry["domain"], entry["kind"], entry["text"]) for entry in entries if "kind" in entry],
    )


def inserted(attempt: Text, hosts: list[Text]) -> str:
    """`attempt` on lines of its own in the middle of the longest sample observation of its domain."""
    host = max((h.text for h in hosts if h.domain == attempt.domain and h.source == "sample"), key=len)
    cut = host.find("\n", len(host) // 2)
    cut = len(host) if cut < 0 else cut
    return f"{host[:cut]}\n{attempt.text}\n{host[cut:]}"
