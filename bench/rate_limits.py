"""How well awbench keeps a judge's rate limit busy without tripping it.

For each limit and each judge concurrency: a judge server of bench/delay_server.py that enforces the limit as
OpenAI counts it (prompt tokens + `max_tokens` per request, `x-ratelimit-*` headers on every answer, 429
`rate_limit_exceeded` without `Retry-After` when over, a burst allowance of `--burst` seconds), then

    awbench run --model baseline:oracle --data sample --judge-base-url SERVER --judge-model bench
        --judge-samples S --judge-concurrency C --judge-max-tokens M --output TMP

(S per limit, so that each run lasts several seconds: a shorter one is mostly its start and end)

as a subprocess running this checkout's awbench, with nothing told about the limit (it learns it from the
headers; `--no-headers`: from the 429s alone). Reported from the server's counters:

* used: what the server admitted over what the limit allowed from the first admission to the last (the burst
  allowance plus limit/60 per second), for the limit that binds (the larger share of the two);
* refused: refused requests over all requests;
* judged: verdicts `ok` in the run's judgments over the verdicts asked for (every sample x S), and the exit code.

Targets (issue 28): used >= 90% and refused <= 5% at every limit and concurrency, every sample judged.

    python bench/rate_limits.py [--scale 1] [--concurrency 16 64] [--delay 0.2] [--max-tokens 2000] [--no-headers]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, table  # noqa: E402
from delay_server import DelayServer  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
BOOTSTRAP = "import sys; from awbench.cli import main; sys.argv[0] = 'awbench'; sys.exit(main())"
SAMPLE_SIZE = 65  # the samples of `--data sample`
# (label, tokens per minute, requests per minute, verdicts per sample): each run takes 6-9 s at the defaults
LIMITS = [
    ("6M TPM", 6_000_000, None, 2),
    ("15M TPM", 15_000_000, None, 4),
    ("1,200 RPM", None, 1_200, 2),
    ("9M TPM + 1,500 RPM", 9_000_000, 1_500, 2),
]


def judged(run_dir: Path) -> int:
    """Verdicts `ok` in the run's judgments."""
    count = 0
    for path in run_dir.glob("judges/*/judgments.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            count += sum(v["status"] == "complete" for v in record["verdicts"]) if record["status"] == "ok" else 0
    return count


def used_share(stats: dict, tpm: int | None, rpm: int | None, burst_s: float) -> float:
    span = stats["admitted_span_s"]
    shares = [
        admitted / (limit / 60 * (burst_s + span))
        for admitted, limit in ((stats["admitted_tokens"], tpm), (stats["admitted_requests"], rpm))
        if limit
    ]
    return max(shares)


def measure(
    tpm: int | None, rpm: int | None, samples: int, concurrency: int, args: argparse.Namespace, output: Path
) -> dict:
    with DelayServer(
        args.delay, role="judge", tpm=tpm, rpm=rpm, burst_s=args.burst, rate_headers=not args.no_headers
    ) as server:
        command = [sys.executable, "-c", BOOTSTRAP, "run", "--model", "baseline:oracle", "--data", "sample",
                   "--judge-base-url", server.url, "--judge-model", "bench", "--judge-samples", str(samples),
                   "--judge-concurrency", str(concurrency), "--judge-max-tokens", str(args.max_tokens),
                   "--output", str(output), "--run-name", f"c{concurrency}-{tpm}-{rpm}"]  # fmt: skip
        env = os.environ | {"PYTHONPATH": str(REPO), "OPENAI_API_KEY": "bench-key", "AWBENCH_BROWSER": "none"}
        started = time.perf_counter()
        done = subprocess.run(
            command, env=env, cwd=REPO, capture_output=True, text=True, timeout=args.timeout, check=False
        )
        wall = time.perf_counter() - started
        stats = server.stats()
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
    return {
        "exit": done.returncode,
        "wall_s": wall,
        "stats": stats,
        "used": used_share(stats, tpm, rpm, args.burst),
        "refused": stats["refused"] / max(1, stats["requests"]),
        "judged": judged(output / f"c{concurrency}-{tpm}-{rpm}"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--scale", type=float, default=1.0, help="times each limit's verdicts per sample (--judge-samples)"
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--delay", type=float, default=0.2, help="the judge server's seconds per answer")
    parser.add_argument("--max-tokens", type=int, default=2000, help="--judge-max-tokens (counts against the limit)")
    parser.add_argument("--burst", type=float, default=1.0, help="seconds of the limit the server lets go at once")
    parser.add_argument("--no-headers", action="store_true", help="the server sends no x-ratelimit headers: 429s only")
    parser.add_argument("--limits", type=int, nargs="+", help="indexes into the limits to run (default: all)")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    limits = [LIMITS[i] for i in args.limits] if args.limits else LIMITS
    print(
        f"{machine()}; judge server delay {args.delay} s, burst {args.burst} s, "
        f"{'no headers (429s only)' if args.no_headers else 'x-ratelimit headers'}; "
        f"{SAMPLE_SIZE} samples, --judge-max-tokens {args.max_tokens}"
    )
    rows, met = [], True
    with tempfile.TemporaryDirectory(prefix="awbench-ratelimits-") as tmp:
        for label, tpm, rpm, samples in limits:
            samples = max(1, round(samples * args.scale))
            for concurrency in args.concurrency:
                m = measure(tpm, rpm, samples, concurrency, args, Path(tmp))
                asked = SAMPLE_SIZE * samples
                ok = m["used"] >= 0.9 and m["refused"] <= 0.05 and m["judged"] == asked and m["exit"] == 0
                met &= ok
                rows.append(
                    [
                        label,
                        concurrency,
                        f"{m['wall_s']:.1f}",
                        m["stats"]["requests"],
                        m["stats"]["refused"],
                        f"{m['used']:.1%}",
                        f"{m['refused']:.1%}",
                        f"{m['judged']}/{asked}",
                        m["exit"],
                        "yes" if ok else "NO",
                    ]
                )
                print(rows[-1], flush=True)
    print(
        table(
            [
                "limit",
                "concurrency",
                "wall s",
                "requests",
                "refused",
                "used",
                "refused %",
                "judged",
                "exit",
                "targets met",
            ],
            rows,
        )
    )
    print("every target met" if met else "some targets NOT met")


if __name__ == "__main__":
    main()
