"""`awbench leaderboard --ci` and `awbench report` over ten copies of one finished full-size run: wall, CPU, peak
memory, and how many times each file of the runs and of the data was opened for reading.

    python bench/analysis_scale.py --run DIR        # DIR: a finished run, e.g. from full_run.py --keep
    python bench/analysis_scale.py                  # makes one first: full_run.py --delay 0.05 (LLM judge)
    python bench/analysis_scale.py --scale 0.02     # a small one (the CI smoke check)

The run is copied `--copies` times (default 10) into a temporary results directory; every copy points at the
same synthetic data, as runs of one benchmark do. Each command runs as a subprocess of the awbench of this
checkout; os.wait4 gives its CPU and peak RSS, and an audit hook inside it counts the opens for reading of
every file under the results and the data directories. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import machine, table
from full_run import REPO, run_measured

# The audit hook counts opens for reading (a mode without w/a/x/+, or os.open flags O_RDONLY) under the roots.
BOOTSTRAP = """
import atexit, collections, json, os, sys
roots = tuple(json.loads(os.environ["AWBENCH_BENCH_ROOTS"]))
reads = collections.Counter()
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, os.PathLike)):
        mode, flags = args[1], args[2]
        reading = (flags & 3 == 0) if mode is None else not any(c in mode for c in "wax+")
        path = os.path.abspath(os.fspath(args[0]))
        if reading and path.startswith(roots):
            reads[path] += 1
sys.addaudithook(hook)
atexit.register(lambda: open(os.environ["AWBENCH_BENCH_OPENS"], "w").write(json.dumps(reads)))
from awbench.cli import main
sys.argv[0] = "awbench"
sys.exit(main())
"""


def make_run(scale: float, keep: Path, data: Path | None) -> Path:
    command = [
        sys.executable,
        str(REPO / "bench" / "full_run.py"),
        "--delay",
        "0.05",
        "--scale",
        str(scale),
        "--keep",
        str(keep),
    ] + (["--data", str(data)] if data else [])
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return keep / "bench"


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, help="a finished run directory (default: made with full_run.py)")
    parser.add_argument("--scale", type=float, default=1.0, help="of the synthetic data, when the run is made here")
    parser.add_argument(
        "--data", type=Path, help="synthetic data directory for the run made here (default: full_run's)"
    )
    parser.add_argument("--copies", type=int, default=10)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="awbench-analysis-"))
    try:
        run = args.run.resolve() if args.run else make_run(args.scale, work / "made", args.data)
        data = Path(json.loads((run / "run.json").read_text())["config"]["data"]["source"]).resolve()
        results = work / "results"
        for i in range(args.copies):
            shutil.copytree(run, results / f"copy-{i:02d}", ignore=shutil.ignore_patterns(".lock", "logs"))
        opens = work / "opens.json"
        env = dict(
            os.environ,
            AWBENCH_BENCH_ROOTS=json.dumps([str(results.resolve()), str(data)]),
            AWBENCH_BENCH_OPENS=str(opens),
            COLUMNS="160",
            PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        )
        commands = {
            "leaderboard --ci": ["leaderboard", str(results), "--ci"],
            "report": ["report", str(results), "-o", str(work / "report.html")],
        }
        rows = []
        for label, arguments in commands.items():
            measured = run_measured(
                label.split()[0], [sys.executable, "-c", BOOTSTRAP, *arguments], env, work, 3600, {}
            )
            reads = json.loads(opens.read_text()) if opens.exists() else {}
            opens.unlink(missing_ok=True)
            if measured.exit_code != 0:
                print(f"{label}: exit {measured.exit_code}\n{measured.stderr_tail}")
            rows.append(
                [
                    f"awbench {label}",
                    str(measured.exit_code),
                    measured.wall_s,
                    measured.cpu_s,
                    measured.peak_rss_bytes / 1e6,
                    len(reads),
                    max(reads.values(), default=0),
                    sum(1 for n in reads.values() if n > 1),
                ]
            )
        print(f"machine: {machine()}")
        print(
            f"runs: {args.copies} copies of {run} ({size(run) / 1e6:,.1f} MB each); data {data} ({size(data) / 1e6:,.1f} MB)"
        )
        print(
            table(
                [
                    "command",
                    "exit",
                    "wall s",
                    "CPU s",
                    "peak RSS MB",
                    "files read",
                    "most reads of one file",
                    "files read more than once",
                ],
                rows,
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
