#!/usr/bin/env python3
"""Generate the Terminal and SWE parts of the bundled AgentWorldBench *sample*.

Nothing in the two files this script writes is invented: every observation is the
real output of the action, executed in a throw-away sandbox.

* A scratch directory (``tempfile.mkdtemp``) plays the root of a small container.
  Terminal trajectories get ``HOME=<sandbox>/root`` with a few pre-existing files
  (web-server logs with fixed contents and fixed modification times); SWE
  trajectories get a git repository at ``<sandbox>/testbed`` with a tiny Python
  package, its tests and a history of three commits made with fixed dates.
* Shell actions are fed, one after the other, to ONE persistent ``bash`` process
  per trajectory (so ``cd`` and variables carry over between turns).  After each
  action a sentinel line carrying the exit status is printed; everything before it
  is the action's output (stdout and stderr merged, in the order they were written).
* SWE editor actions (``str_replace_editor``: view / create / str_replace) are
  carried out by this script on the real files of the sandbox.
* The environment is fixed (LANG/LC_ALL=C.UTF-8, TZ=UTC, fixed PATH, no rc files,
  PYTHONHASHSEED=0, fixed git identity, no system/global git config).  The sandbox
  lives at a temporary location, so the container paths are mapped both ways: an
  action's absolute ``/testbed`` or ``/root`` paths are pointed into the sandbox
  before it runs, and the sandbox's location is removed from the output, so
  ``<sandbox>/root`` prints as ``/root`` and ``<sandbox>/testbed`` as ``/testbed``.
  That is the only post-processing of the recorded output.

What still differs from run to run is genuine runtime metadata: clock times,
modification dates of files created during the run, PIDs, durations, hashes of
content that embeds a timestamp, commit SHAs of commits made during the run.

Observation text convention (shared by both domains): the command's output as
printed; if the command exits with a non-zero status a final line
``[exit code: N]`` is appended; a command that prints nothing and succeeds yields
``(no output)``.

Usage:  python3 data/sample/generate_sandbox.py [--out DIR]   (default DIR: this folder)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

OBSERVATION_MARKER = "**Environment Observation:**"
TASK_PREFIX = "agentworld"

# A fixed point in time used for everything that "existed before" the agent arrived.
PREEXISTING_EPOCH = 1714723200  # 2024-05-03 08:00:00 UTC
HISTORY_DATES = (
    "2024-04-22T09:12:44+00:00",
    "2024-04-29T16:03:10+00:00",
    "2024-05-02T11:47:31+00:00",
)


# --------------------------------------------------------------------------- records


def format_prompt(turn: int, action: str) -> str:
    return f"### Turn {turn}\n**Action:**\n{action}"


def format_response(observation: str) -> str:
    return f"{OBSERVATION_MARKER}\n{observation}"


def build_records(domain: str, traj: dict, turns: list[tuple[str, str]]) -> list[dict]:
    """One record per evaluated turn; each carries the full history up to that turn."""
    prompts = [format_prompt(i, action) for i, (action, _) in enumerate(turns, 1)]
    responses = [format_response(obs) for _, obs in turns]
    system = SYSTEM_PROMPTS[domain].format(goal=traj["goal"])
    records = []
    for t in traj["evaluate"]:
        if not 1 <= t <= len(turns):
            raise ValueError(f"{domain} trajectory {traj['id']}: bad evaluated turn {t}")
        records.append(
            {
                "task": f"{TASK_PREFIX}/{domain}",
                "id": traj["id"],
                "prompt": prompts[:t],
                "response": responses[:t],
                "current_prompt": prompts[t - 1],
                "system_str": system,
                "turn_idx": t,
                "total_turns": len(turns),
            }
        )
    return records


def write_jsonl(path: Path, records: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


# --------------------------------------------------------------------------- sandbox


# An absolute container path at the start of a word: `/testbed`, `/root/x`, `'/testbed'` ...
CONTAINER_PATH_RE = re.compile(r"(?<![\w./~-])/(?:testbed|root)(?=/|\b)")


class Sandbox:
    """A temporary directory standing in for the root of a container."""

    def __init__(self, home: str = "root") -> None:
        self.root = tempfile.mkdtemp(prefix="awb-sandbox-")
        os.chmod(self.root, 0o755)  # it plays "/", not a private temp dir
        self.home = os.path.join(self.root, home)
        os.makedirs(self.home)
        os.makedirs(os.path.join(self.root, "tmp"))
        self.env = self._environment()

    def _environment(self) -> dict[str, str]:
        python_dir = os.path.dirname(os.path.realpath(sys.executable))
        path = ":".join(
            dict.fromkeys([python_dir, "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"])
        )
        return {
            "PATH": path,
            "HOME": self.home,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "TZ": "UTC",
            "TERM": "dumb",
            "SHELL": "/bin/bash",
            "TMPDIR": os.path.join(self.root, "tmp"),
            "PAGER": "cat",
            "GIT_PAGER": "cat",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Sample Agent",
            "GIT_AUTHOR_EMAIL": "agent@example.com",
            "GIT_COMMITTER_NAME": "Sample Agent",
            "GIT_COMMITTER_EMAIL": "agent@example.com",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }

    def path(self, container_path: str) -> str:
        """Map an absolute in-container path (e.g. /testbed/x.py) to the real one."""
        return os.path.join(self.root, container_path.lstrip("/"))

    def normalize(self, text: str) -> str:
        """Real sandbox paths -> container paths (applied to every recorded output)."""
        return text.replace(self.root, "")

    def localize(self, command: str) -> str:
        """Container paths in an action (``/testbed``, ``/root``) -> real sandbox paths."""
        return CONTAINER_PATH_RE.sub(lambda m: self.root + m.group(0), command)

    def write(self, container_path: str, text: str, mtime: int | None = None) -> None:
        real = self.path(container_path)
        os.makedirs(os.path.dirname(real), exist_ok=True)
        with open(real, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        if mtime is not None:
            os.utime(real, (mtime, mtime))

    def freeze_dirs(self, container_dir: str, mtime: int) -> None:
        """Give a pre-existing directory tree (and its parents up to the sandbox root) a fixed mtime."""
        real = self.path(container_dir)
        for dirpath, _dirs, _files in os.walk(real):
            os.utime(dirpath, (mtime, mtime))
        parent = os.path.dirname(real)
        while parent.startswith(self.root):
            os.utime(parent, (mtime, mtime))
            parent = os.path.dirname(parent)

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class BashSession:
    """One long-lived bash process; commands go in through stdin, output is cut at a sentinel."""

    def __init__(self, sandbox: Sandbox, cwd: str) -> None:
        self.sandbox = sandbox
        self.sentinel = f"__AWB_DONE_{uuid.uuid4().hex}__"
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=sandbox.env,
            start_new_session=True,
        )
        self._buffer = b""

    def run(self, command: str, timeout: float = 60.0) -> tuple[str, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        script = self.sandbox.localize(command).rstrip("\n") + "\n" + f"printf '\\n{self.sentinel} %s\\n' \"$?\"\n"
        self.proc.stdin.write(script.encode("utf-8"))
        self.proc.stdin.flush()
        marker = ("\n" + self.sentinel + " ").encode()
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            idx = self._buffer.find(marker)
            if idx >= 0:
                end = self._buffer.find(b"\n", idx + len(marker))
                if end >= 0:
                    output = self._buffer[:idx]
                    status = int(self._buffer[idx + len(marker) : end])
                    self._buffer = self._buffer[end + 1 :]
                    text = output.decode("utf-8", errors="replace")
                    return self.sandbox.normalize(text), status
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"command did not finish in {timeout}s: {command!r}")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise RuntimeError(f"bash exited while running {command!r}")
                self._buffer += chunk

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.write(b"exit\n")
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        finally:
            if self.proc.stdout:
                self.proc.stdout.close()


def observation_text(output: str, status: int) -> str:
    text = output
    if status != 0:
        if text and not text.endswith("\n"):
            text += "\n"
        text += f"[exit code: {status}]"
    text = text.rstrip("\n")
    return text if text else "(no output)"


# --------------------------------------------------------------------------- str_replace_editor


class Editor:
    """The file-editing tool of the SWE trajectories, acting on the sandbox's real files."""

    SNIPPET_CONTEXT = 4

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    @staticmethod
    def _numbered(lines: list[str], start: int) -> str:
        return "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines, start))

    def __call__(self, action: dict) -> str:
        command = action["command"]
        path = action["path"]
        real = self.sandbox.path(path)
        if command == "view":
            if os.path.isdir(real):
                return self._view_dir(path, real)
            if not os.path.exists(real):
                return f"Error: the path {path} does not exist. Please provide a valid path."
            with open(real, encoding="utf-8") as fh:
                lines = fh.read().split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            return f"Here's the result of running `cat -n` on {path}:\n" + self._numbered(lines, 1)
        if command == "create":
            if os.path.exists(real):
                return f"Error: file already exists at {path}; `create` cannot overwrite it."
            os.makedirs(os.path.dirname(real), exist_ok=True)
            with open(real, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(action["file_text"])
            return f"File created successfully at: {path}"
        if command == "str_replace":
            return self._str_replace(path, real, action["old_str"], action.get("new_str", ""))
        return f"Error: unknown command '{command}'. Allowed commands are: view, create, str_replace."

    def _view_dir(self, path: str, real: str) -> str:
        entries = [path]
        for dirpath, dirs, files in os.walk(real):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            depth = os.path.relpath(dirpath, real).count(os.sep) + (0 if dirpath == real else 1)
            if depth >= 2:
                dirs[:] = []
            for name in sorted(dirs + [f for f in files if not f.startswith(".")]):
                entries.append(self.sandbox.normalize(os.path.join(dirpath, name)))
        head = f"Here are the files and directories up to 2 levels deep in {path}, excluding hidden items:"
        return head + "\n" + "\n".join(sorted(entries))

    def _str_replace(self, path: str, real: str, old: str, new: str) -> str:
        if not os.path.isfile(real):
            return f"Error: the path {path} does not exist or is not a file."
        with open(real, encoding="utf-8") as fh:
            content = fh.read()
        count = content.count(old)
        if count == 0:
            return f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
        if count > 1:
            lines = [i for i, line in enumerate(content.split("\n"), 1) if old.split("\n")[0] in line]
            return (
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines {lines}. "
                "Please ensure it is unique."
            )
        start_line = content[: content.index(old)].count("\n")
        content = content.replace(old, new, 1)
        with open(real, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(content)
        lines = content.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        first = max(0, start_line - self.SNIPPET_CONTEXT)
        last = min(len(lines), start_line + new.count("\n") + 1 + self.SNIPPET_CONTEXT)
        snippet = self._numbered(lines[first:last], first + 1)
        return (
            f"The file {path} has been edited. Here's the result of running `cat -n` on a snippet of {path}:\n"
            f"{snippet}\nReview the changes and make sure they are as expected. Edit the file again if necessary."
        )


# --------------------------------------------------------------------------- system prompts

SYSTEM_PROMPTS = {
    "terminal": """You are a world model acting as a Linux terminal: a bash shell running as root (home /root) in a Debian container with GNU coreutils, git and python3. An AI agent uses this shell to complete a task, and you play the shell faithfully.

The agent's task: {goal}

You receive the session so far as numbered turns: the agent's action (a shell command, possibly several lines, e.g. a heredoc) and, for all but the last turn, what the shell printed. The session is persistent: working directory, variables and all files created or changed earlier carry over. Produce the output of the last command only: stdout and stderr as the terminal shows them, no prompt, no command echo; a final line "[exit code: N]" when the exit status is not 0; "(no output)" when nothing is printed. Stay consistent with everything shown earlier, and make what you cannot know (timestamps, PIDs, checksums, sizes, timings) plausible.

You may think first. Then output only the observation inside <predicted_observation>...</predicted_observation>, without the "**Environment Observation:**" heading.""",
    "swe": """You are a world model acting as the sandbox of a software-engineering agent working on a Python repository at /testbed (Debian container, root, git and python3). The agent has two tools: `bash` (a persistent shell) and `str_replace_editor` (`view` a file with line numbers or a directory two levels deep, `create` a file, `str_replace` one exact, unique snippet).

The agent's task (an issue filed against the repository): {goal}

You receive the session so far as numbered turns: the agent's action (a JSON tool call) and, for all but the last turn, the tool's output. Produce the output of the last call only, exactly as the real tool prints it: for bash, stdout and stderr, a final "[exit code: N]" line when the status is not 0, or "(no output)"; for the editor, the numbered view, the creation notice, the edited snippet, or the reason no replacement was made. Earlier edits persist, tests pass or fail according to the current code, git knows every earlier change and commit; only unknowable details (hashes, dates, timings) are invented, plausibly.

You may think first. Then output only the observation inside <predicted_observation>...</predicted_observation>, without the "**Environment Observation:**" heading.""",
}


# --------------------------------------------------------------------------- terminal

ACCESS_PATHS = [
    "/", "/index.html", "/api/orders", "/api/orders/1042", "/api/cart", "/static/app.js",
    "/static/style.css", "/login", "/api/search?q=tent", "/favicon.ico",
]
ACCESS_AGENTS = ["curl/8.4.0", "Mozilla/5.0 (X11; Linux x86_64)", "python-requests/2.31.0", "kube-probe/1.29"]
ACCESS_CLIENTS = ["203.0.113.7", "203.0.113.24", "198.51.100.3", "198.51.100.77", "192.0.2.15"]


def access_log(day: int, lines: int, rng: random.Random) -> str:
    statuses = [200] * 14 + [201, 204, 301, 304, 304, 404, 404, 500]
    out = []
    seconds = 8 * 3600
    for _ in range(lines):
        seconds += rng.randint(20, 900)
        hh, mm, ss = seconds // 3600 % 24, seconds // 60 % 60, seconds % 60
        path = rng.choice(ACCESS_PATHS)
        method = "POST" if path in ("/api/cart", "/login") and rng.random() < 0.6 else "GET"
        status = rng.choice(statuses)
        size = 0 if status in (204, 304) else rng.randint(180, 24000)
        out.append(
            f'{rng.choice(ACCESS_CLIENTS)} - - [{day:02d}/May/2024:{hh:02d}:{mm:02d}:{ss:02d} +0000] '
            f'"{method} {path} HTTP/1.1" {status} {size} "-" "{rng.choice(ACCESS_AGENTS)}"'
        )
    return "\n".join(out) + "\n"


def setup_terminal_logs(sb: Sandbox) -> None:
    rng = random.Random(20240503)
    for day, n in ((1, 34), (2, 41), (3, 27)):
        sb.write(f"/root/logs/access-2024-05-{day:02d}.log", access_log(day, n, rng), PREEXISTING_EPOCH - (3 - day) * 86400)
    sb.write("/root/.bashrc", "# ~/.bashrc: executed by bash(1) for non-login shells.\nexport HISTCONTROL=ignoredups\nalias ll='ls -alF'\n", PREEXISTING_EPOCH - 90 * 86400)
    sb.write("/root/.profile", "# ~/.profile: executed by the command interpreter for login shells.\nif [ -f ~/.bashrc ]; then . ~/.bashrc; fi\n", PREEXISTING_EPOCH - 90 * 86400)
    sb.write("/root/notes.txt", "rotate logs weekly; keep 3 days on this box\n", PREEXISTING_EPOCH - 5 * 86400)
    sb.freeze_dirs("/root", PREEXISTING_EPOCH)


WORDCOUNT_SCRIPT = """cat > wc.py <<'EOF'
import collections
import sys


def main(path):
    with open(path, encoding="utf-8") as fh:
        words = fh.read().lower().split()
    for word, count in collections.Counter(words).most_common(3):
        print(f"{count:>3} {word}")
    print(f"total words: {len(words)}")


if __name__ == "__main__":
    main(sys.argv[1])
EOF"""

TERMINAL_TRAJECTORIES = [
    {
        "id": 17,
        "goal": (
            "The directory ~/logs holds three days of web-server access logs. Write ~/reports/summary.txt with a "
            "generation timestamp followed by the number of requests per HTTP status code (all days combined, most "
            "frequent first), record its SHA-256 checksum in ~/reports/SHA256SUMS, and list which paths returned 500."
        ),
        "setup": setup_terminal_logs,
        "actions": [
            "pwd && ls -la",
            "ls -l logs/ && wc -l logs/*.log",
            "head -n 3 logs/access-2024-05-01.log",
            "awk '{print $9}' logs/*.log | sort | uniq -c | sort -k1,1nr -k2,2n",
            "mkdir -p reports && { echo \"# status summary generated $(date -u +%Y-%m-%dT%H:%M:%SZ)\"; "
            "awk '{print $9}' logs/*.log | sort | uniq -c | sort -k1,1nr -k2,2n; } > reports/summary.txt",
            "cat reports/summary.txt",
            "cat reports/sumary.txt",
            "cd reports && sha256sum summary.txt | tee SHA256SUMS && ls -l",
            "sha256sum -c SHA256SUMS && echo \"verified at $(date -u +%H:%M:%S)\"",
            "grep -h '\" 500 ' ../logs/*.log | awk '{print $7}' | sort | uniq -c | sort -k1,1nr -k2",
        ],
        "evaluate": [1, 4, 6, 7, 8, 10],
    },
    {
        "id": 42,
        "goal": (
            "Create a small word-frequency tool in ~/wordcount: a Python script wc.py that prints the three most "
            "common words of a text file and the total word count. Test it on a sample input, check how it behaves "
            "on a missing file, measure how long it runs and how much disk space the folder uses."
        ),
        "setup": None,
        "actions": [
            "mkdir -p ~/wordcount && cd ~/wordcount && printf 'The quick brown fox\\njumps over the lazy dog\\nthe dog sleeps\\n' > input.txt && cat input.txt",
            WORDCOUNT_SCRIPT,
            "python3 wc.py input.txt",
            "python3 wc.py notes.txt; echo \"exit status: $?\"",
            "echo \"shell pid: $$\"; python3 -c 'import os; print(\"child pid:\", os.getpid(), \"parent:\", os.getppid())'; ps -o pid,etime,comm -p $$",
            "time python3 wc.py input.txt",
            "ls -l && du -b input.txt wc.py && du -sh .",
            "sed -i 's/most_common(3)/most_common(2)/' wc.py && grep -n most_common wc.py && python3 wc.py input.txt && date -u +'finished %Y-%m-%d %H:%M:%S UTC'",
        ],
        "evaluate": [1, 3, 4, 5, 6, 8],
    },
]


def run_terminal() -> list[dict]:
    records: list[dict] = []
    for traj in TERMINAL_TRAJECTORIES:
        sb = Sandbox(home="root")
        try:
            if traj["setup"]:
                traj["setup"](sb)
            shell = BashSession(sb, cwd=sb.home)
            try:
                turns = []
                for action in traj["actions"]:
                    output, status = shell.run(action)
                    turns.append((action, observation_text(output, status)))
            finally:
                shell.close()
        finally:
            sb.cleanup()
        records.extend(build_records("terminal", traj, turns))
    return records


# --------------------------------------------------------------------------- swe

REPO_FILES_V1 = {
    "README.md": """# shipcalc

Parcel price quotes for the Acme parcel service.

Tariff: letters up to and including 1 kg, standard parcels up to and including
5 kg, heavy parcels up to and including 20 kg. Zone surcharges apply on top.

    python3 -m shipcalc.cli 2.5 --zone EU
""",
    ".gitignore": "__pycache__/\n*.pyc\n.venv/\n",
    "pyproject.toml": """[project]
name = "shipcalc"
version = "0.3.1"
requires-python = ">=3.9"
description = "Parcel price quotes"
""",
    "shipcalc/__init__.py": '"""Parcel price quotes."""\n\nfrom .pricing import Quote, quote, tier_for\n\n__version__ = "0.3.1"\n__all__ = ["Quote", "quote", "tier_for"]\n',
    "shipcalc/pricing.py": '''"""Parcel pricing rules."""

from dataclasses import dataclass

# (upper weight limit in kg, tier name, base price in EUR)
TIERS = [
    (1.0, "letter", 2.50),
    (5.0, "standard", 6.90),
    (20.0, "heavy", 14.50),
]


@dataclass(frozen=True)
class Quote:
    tier: str
    zone: str
    price: float


def tier_for(weight_kg: float) -> tuple[str, float]:
    """Return (tier name, base price) for a parcel weight."""
    if weight_kg <= 0:
        raise ValueError(f"weight must be positive, got {weight_kg}")
    for limit, name, base in TIERS:
        if weight_kg < limit:
            return name, base
    raise ValueError(f"parcel too heavy: {weight_kg} kg (max {TIERS[-1][0]} kg)")


def quote(weight_kg: float, zone: str = "DOMESTIC") -> Quote:
    name, base = tier_for(weight_kg)
    return Quote(tier=name, zone=zone.upper(), price=base)
''',
    "tests/__init__.py": "",
    "tests/test_pricing.py": '''import unittest

from shipcalc.pricing import quote, tier_for


class TierTests(unittest.TestCase):
    def test_light_letter(self):
        self.assertEqual(tier_for(0.4), ("letter", 2.50))

    def test_standard_parcel(self):
        self.assertEqual(tier_for(3.2)[0], "standard")

    def test_non_positive_weight(self):
        with self.assertRaises(ValueError):
            tier_for(0)

    def test_too_heavy(self):
        with self.assertRaises(ValueError):
            tier_for(25)


if __name__ == "__main__":
    unittest.main()
''',
}

REPO_ZONES_PATCH = {
    "shipcalc/pricing.py": ("""def quote(weight_kg: float, zone: str = "DOMESTIC") -> Quote:
    name, base = tier_for(weight_kg)
    return Quote(tier=name, zone=zone.upper(), price=base)
""", """ZONE_SURCHARGE = {"DOMESTIC": 0.0, "EU": 3.20, "WORLD": 9.80}


def quote(weight_kg: float, zone: str = "DOMESTIC") -> Quote:
    zone = zone.upper()
    if zone not in ZONE_SURCHARGE:
        raise KeyError(f"unknown zone: {zone}")
    name, base = tier_for(weight_kg)
    return Quote(tier=name, zone=zone, price=round(base + ZONE_SURCHARGE[zone], 2))
"""),
    "tests/test_pricing.py": ("""

if __name__ == "__main__":""", """

class QuoteTests(unittest.TestCase):
    def test_zone_surcharge(self):
        self.assertEqual(quote(2.0, "eu").price, 10.10)

    def test_unknown_zone(self):
        with self.assertRaises(KeyError):
            quote(2.0, "MARS")

    def test_tier_upper_limits_are_inclusive(self):
        # The tariff says "up to and including" (see README).
        self.assertEqual(tier_for(1.0)[0], "letter")
        self.assertEqual(tier_for(5.0)[0], "standard")
        self.assertEqual(tier_for(20.0)[0], "heavy")


if __name__ == "__main__":"""),
}

REPO_CLI = {
    "shipcalc/cli.py": '''"""Command-line interface: python3 -m shipcalc.cli WEIGHT [--zone ZONE]."""

import argparse

from .pricing import quote


def main(argv=None):
    parser = argparse.ArgumentParser(prog="shipcalc", description="Quote the price of a parcel.")
    parser.add_argument("weight", type=float, help="parcel weight in kg")
    parser.add_argument("--zone", default="DOMESTIC", help="DOMESTIC, EU or WORLD (default: DOMESTIC)")
    args = parser.parse_args(argv)
    q = quote(args.weight, args.zone)
    print(f"{q.tier} parcel to {q.zone}: EUR {q.price:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
''',
}


def _git(sb: Sandbox, *args: str, date: str | None = None) -> None:
    env = dict(sb.env)
    if date:
        env["GIT_AUTHOR_DATE"] = date
        env["GIT_COMMITTER_DATE"] = date
    subprocess.run(["git", *args], cwd=sb.path("/testbed"), env=env, check=True, capture_output=True)


def setup_swe_repo(sb: Sandbox) -> None:
    """The pre-existing repository: three commits with fixed dates (so their SHAs are stable)."""
    os.makedirs(sb.path("/testbed"))
    _git(sb, "init", "-q", "-b", "main")
    for rel, text in REPO_FILES_V1.items():
        sb.write(f"/testbed/{rel}", text)
    _git(sb, "add", "-A")
    _git(sb, "commit", "-q", "-m", "Initial package layout with weight tiers", date=HISTORY_DATES[0])
    for rel, (old, new) in REPO_ZONES_PATCH.items():
        real = sb.path(f"/testbed/{rel}")
        with open(real, encoding="utf-8") as fh:
            content = fh.read()
        assert content.count(old) == 1, rel
        sb.write(f"/testbed/{rel}", content.replace(old, new))
    _git(sb, "commit", "-q", "-am", "Add zone surcharges to quotes", date=HISTORY_DATES[1])
    for rel, text in REPO_CLI.items():
        sb.write(f"/testbed/{rel}", text)
    _git(sb, "add", "-A")
    _git(sb, "commit", "-q", "-m", "Add command-line entry point", date=HISTORY_DATES[2])


def bash(command: str) -> dict:
    return {"tool": "bash", "command": command}


def editor(command: str, path: str, **kwargs: str) -> dict:
    return {"tool": "str_replace_editor", "command": command, "path": path, **kwargs}


REPRODUCE_SCRIPT = """from shipcalc import tier_for

for weight in (1.0, 5.0, 20.0):
    try:
        print(f"{weight:>5} kg -> {tier_for(weight)}")
    except ValueError as exc:
        print(f"{weight:>5} kg -> ValueError: {exc}")
"""

TEST_CLI = '''import contextlib
import io
import json
import unittest

from shipcalc.cli import main


def run_cli(*argv):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(list(argv))
    return code, buf.getvalue()


class CliTests(unittest.TestCase):
    def test_text_output(self):
        code, out = run_cli("2.5", "--zone", "eu")
        self.assertEqual(code, 0)
        self.assertEqual(out, "standard parcel to EU: EUR 10.10\\n")

    def test_json_output(self):
        code, out = run_cli("2.5", "--zone", "eu", "--json")
        self.assertEqual(code, 0)
        self.assertEqual(json.loads(out), {"tier": "standard", "zone": "EU", "price": 10.1, "currency": "EUR"})


if __name__ == "__main__":
    unittest.main()
'''

SWE_TRAJECTORIES = [
    {
        "id": 5,
        "goal": (
            "Issue #31 \"Tier limits are exclusive\": a parcel of exactly 5.0 kg is quoted at the heavy rate "
            "although the tariff in the README says standard parcels go up to and including 5 kg; 1.0 kg and "
            "20.0 kg are wrong the same way (20.0 kg is even rejected). Make the upper limits inclusive so that "
            "tests/test_pricing.py passes, and commit the fix."
        ),
        "actions": [
            bash("cd /testbed && git log --oneline && git status"),
            editor("view", "/testbed"),
            editor("view", "/testbed/shipcalc/pricing.py"),
            bash("python3 -m unittest -v"),
            editor("create", "/testbed/reproduce_issue.py", file_text=REPRODUCE_SCRIPT),
            bash("python3 reproduce_issue.py"),
            editor("str_replace", "/testbed/shipcalc/pricing.py", old_str="        if weight_kg < limit:", new_str="        if weight_kg <= limit:"),
            bash("python3 reproduce_issue.py && python3 -m unittest -v"),
            bash("rm reproduce_issue.py && git status --short && git diff"),
            bash("git commit -am 'Make weight tier upper limits inclusive (fixes #31)' && git log -1 --format='commit %H%nAuthor: %an <%ae>%nDate:   %ad'"),
        ],
        "evaluate": [1, 4, 6, 8, 10],
    },
    {
        "id": 9,
        "goal": (
            "Issue #34 \"Machine-readable CLI output\": add a `--json` flag to `python3 -m shipcalc.cli` that prints "
            "the quote as a JSON object with the keys tier, zone, price and currency (always \"EUR\"), keep the "
            "current text output as the default, add unit tests for both modes in tests/test_cli.py, and commit."
        ),
        "actions": [
            bash("cd /testbed && cat shipcalc/cli.py && python3 -m shipcalc.cli 2.5 --zone eu"),
            bash("python3 -m shipcalc.cli --help"),
            editor(
                "str_replace",
                "/testbed/shipcalc/cli.py",
                old_str='    parser.add_argument("--zone", default="DOMESTIC", help="DOMESTIC, EU or WORLD")',
                new_str='    parser.add_argument("--zone", default="DOMESTIC", help="DOMESTIC, EU or WORLD")\n    parser.add_argument("--json", action="store_true", help="print the quote as JSON")',
            ),
            editor(
                "str_replace",
                "/testbed/shipcalc/cli.py",
                old_str='    parser.add_argument("--zone", default="DOMESTIC", help="DOMESTIC, EU or WORLD (default: DOMESTIC)")',
                new_str='    parser.add_argument("--zone", default="DOMESTIC", help="DOMESTIC, EU or WORLD (default: DOMESTIC)")\n    parser.add_argument("--json", action="store_true", help="print the quote as a JSON object")',
            ),
            editor(
                "str_replace",
                "/testbed/shipcalc/cli.py",
                old_str='    print(f"{q.tier} parcel to {q.zone}: EUR {q.price:.2f}")',
                new_str='    if args.json:\n        print(json.dumps({"tier": q.tier, "zone": q.zone, "price": q.price, "currency": "EUR"}))\n    else:\n        print(f"{q.tier} parcel to {q.zone}: EUR {q.price:.2f}")',
            ),
            bash("python3 -m shipcalc.cli 2.5 --zone eu --json"),
            editor("str_replace", "/testbed/shipcalc/cli.py", old_str="import argparse\n", new_str="import argparse\nimport json\n"),
            bash("python3 -m shipcalc.cli 2.5 --zone eu --json && python3 -m shipcalc.cli 12 --zone world"),
            editor("create", "/testbed/tests/test_cli.py", file_text=TEST_CLI),
            bash("python3 -m unittest tests.test_cli -v"),
            bash("git add -A && git commit -q -m 'cli: add --json output (closes #34)' && git log --stat -1 --format='commit %H%nDate: %ad%n%n    %s'"),
        ],
        "evaluate": [2, 3, 6, 8, 11],
    },
]


def run_swe() -> list[dict]:
    records: list[dict] = []
    for traj in SWE_TRAJECTORIES:
        sb = Sandbox(home="root")
        try:
            setup_swe_repo(sb)
            shell = BashSession(sb, cwd=sb.path("/testbed"))
            edit = Editor(sb)
            try:
                turns = []
                for action in traj["actions"]:
                    if action["tool"] == "bash":
                        output, status = shell.run(action["command"])
                        obs = observation_text(output, status)
                    else:
                        obs = edit(action)
                    turns.append((json.dumps(action, ensure_ascii=False), obs))
            finally:
                shell.close()
        finally:
            sb.cleanup()
        records.extend(build_records("swe", traj, turns))
    return records


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="output folder (default: this script's folder)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for domain, runner in (("terminal", run_terminal), ("swe", run_swe)):
        records = runner()
        write_jsonl(args.out / f"{domain}_test.jsonl", records)
        print(f"wrote {len(records)} records to {args.out / f'{domain}_test.jsonl'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
