"""Python world models (`--model python:MODULE:NAME`, `python:NAME`; awbench.backends.python_model): a plain
function, an async class with --model-arg, a package that installs one by entry point, failures, a kill -9 and
resume, and specs that cannot be used. Each model is a real module written to a temporary directory, which the
`awbench` process imports from its current directory."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import fields
from pathlib import Path

import pytest
from reliability_helpers import REPO, cli, jsonl_lines, no_traceback

from awbench.backends import python_model
from awbench.config import DataSettings
from awbench.data.dataset import load_samples
from awbench.run.stages import sample_seed
from awbench.world_model.inputs import Turn, world_model_sample
from awbench.world_model.messages import world_model_messages

# Persistence with a twist: the previous real observation, else a line naming the seed. Every call is logged
# (key, generation's seed) before it answers; KILL_AT=N kills the process with SIGKILL at the Nth call.
PLAIN = """
import os
import signal

CALLS = os.environ["WM_CALLS"]


def predict(messages, *, sample, seed, max_tokens, temperature):
    with open(CALLS, "a") as log:
        log.write(f"{sample.key} {seed}\\n")
    with open(CALLS) as log:
        if str(sum(1 for _ in log)) == os.environ.get("KILL_AT"):
            os.kill(os.getpid(), signal.SIGKILL)
    if sample.history:
        return sample.history[-1].observation
    return f"first turn of {sample.trajectory_id}, seed {seed}, t={temperature}, max {max_tokens}"
"""

# An async class: its keyword arguments from --model-arg; it checks that `sample` and `messages` say the same,
# and counts the calls in flight.
ASYNC_CLASS = """
import asyncio


class Echo:
    in_flight = 0
    most = 0

    def __init__(self, prefix, delay=0.0):
        self.prefix = prefix
        self.delay = delay

    async def predict(self, messages, *, sample, seed, max_tokens, temperature):
        Echo.in_flight += 1
        Echo.most = max(Echo.most, Echo.in_flight)
        await asyncio.sleep(self.delay)
        Echo.in_flight -= 1
        told = [m["content"] for m in messages]
        history = [text for turn in sample.history for text in (turn.action, turn.observation)]
        assert told == [sample.system, *history, sample.action], "messages and sample disagree"
        return f"{self.prefix} {sample.key} turn {sample.turn} of {sample.total_turns}, most in flight {Echo.most}"
"""


def awbench(cwd: Path, *args: object, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([*env.pop("PATHS", "").split(os.pathsep), str(REPO)])}
    environment.update({"COLUMNS": "200", "AWBENCH_BROWSER": "none"}, **env)
    return subprocess.run(
        [sys.executable, "-c", "from awbench.cli import main; main()", *map(str, args)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def os_samples():
    return load_samples(DataSettings(source="sample", domains=["os"])).samples


def predictions(run_dir: Path) -> dict[tuple[str, int], dict]:
    return {(r["key"], r["generation"]): r for r in jsonl_lines(run_dir / "predictions.jsonl")}


def test_the_sample_holds_what_the_messages_hold_and_never_the_answer():
    sample = next(s for s in os_samples() if s.record.turn_idx == 3)
    given = world_model_sample(sample)
    record = sample.record
    assert (given.key, given.domain, given.id, given.turn, given.total_turns) == (
        sample.key,
        "os",
        record.id,
        3,
        record.total_turns,
    )
    assert given.trajectory_id == record.trajectory_id and given.action == record.prompt[2]
    assert given.history == (Turn(record.prompt[0], record.response[0]), Turn(record.prompt[1], record.response[1]))
    assert [m["content"] for m in world_model_messages(record)] == [
        given.system,
        *(t for turn in given.history for t in (turn.action, turn.observation)),
        given.action,
    ][0 if given.system else 1 :]
    assert [f.name for f in fields(given)] == [
        "key", "domain", "id", "trajectory_id", "turn", "total_turns", "system", "history", "action"
    ]  # fmt: skip
    texts = [given.system, given.action, *(t for turn in given.history for t in (turn.action, turn.observation))]
    assert all(later not in texts for later in record.response[2:])  # the answer, and later turns, are not given


def test_a_plain_function_with_generations_survives_kill_9_and_resumes(tmp_path: Path) -> None:
    """--generations 2: each generation gets its own seed; killed with SIGKILL at the 7th call, the same command
    asks the function only for the generations not on disk, and ends as an uninterrupted run."""
    (tmp_path / "wm_plain.py").write_text(PLAIN)
    args = ["run", "--model", "python:wm_plain:predict", "--generations", "2", "--concurrency", "1"]
    args += ["--judge", "rules", "--data", "sample", "--domains", "os", "--run-name", "r"]
    whole = awbench(tmp_path, *args, "--output", "whole", WM_CALLS=str(tmp_path / "whole.log"))
    assert whole.returncode == 0, whole.stderr
    samples = os_samples()
    wanted = {(s.key, g) for s in samples for g in (0, 1)}
    made = predictions(tmp_path / "whole" / "r")
    assert set(made) == wanted and all(r["status"] == "ok" for r in made.values())
    for sample in samples:
        for g in (0, 1):
            seed = sample_seed(0, sample.key, g)  # no --seed: generations still get distinct seeds from run seed 0
            expected = (
                sample.record.response[sample.record.turn_idx - 2]
                if sample.record.turn_idx > 1
                else f"first turn of {sample.record.trajectory_id}, seed {seed}, t=0.6, max 32768"
            )
            assert made[(sample.key, g)]["prediction"] == expected.strip()
    calls = (tmp_path / "whole.log").read_text().splitlines()
    assert sorted(calls) == sorted(f"{k} {sample_seed(0, k, g)}" for k, g in wanted)
    manifest = json.loads((tmp_path / "whole" / "r" / "run.json").read_text())
    assert manifest["model_described"] == {"import_path": "wm_plain:predict"}  # a local module: no package
    assert manifest["config"]["model"]["backend"] == "python"

    log = tmp_path / "resumed.log"
    killed = awbench(tmp_path, *args, "--output", "resumed", WM_CALLS=str(log), KILL_AT="7")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    on_disk = set(predictions(tmp_path / "resumed" / "r"))
    assert 5 <= len(on_disk) <= 6 and on_disk < wanted  # the 7th call died before answering
    before = len(log.read_text().splitlines())
    again = awbench(tmp_path, *args, "--output", "resumed", WM_CALLS=str(log))
    assert again.returncode == 0, again.stderr
    asked = log.read_text().splitlines()[before:]
    assert sorted(asked) == sorted(f"{k} {sample_seed(0, k, g)}" for k, g in wanted - on_disk)
    resumed = predictions(tmp_path / "resumed" / "r")
    assert {k: r["prediction"] for k, r in resumed.items()} == {k: r["prediction"] for k, r in made.items()}
    scores = [json.loads((tmp_path / d / "r" / "scores.json").read_text()) for d in ("whole", "resumed")]
    assert scores[0]["overall"] == scores[1]["overall"] and scores[0]["domains"] == scores[1]["domains"]


def test_an_async_class_gets_its_model_args_from_a_config_file_and_runs_concurrently(tmp_path: Path) -> None:
    (tmp_path / "wm_async.py").write_text(ASYNC_CLASS)
    (tmp_path / "echo.toml").write_text(
        'model = "python:wm_async:Echo"\nmodel_arg = ["prefix=echo", "delay=0.2"]\nconcurrency = 3\n'
        'judge = "rules"\ndata = "sample"\ndomains = ["os"]\nrun_name = "echo"\n'
    )
    result = awbench(tmp_path, "run", "--config", "echo.toml", "--temperature", "0", "--max-tokens", "64")
    assert result.returncode == 0, result.stderr
    made = predictions(tmp_path / "results" / "echo")
    samples = os_samples()
    assert {k: (r["status"], r["prediction"].rsplit(",", 1)[0]) for k, r in made.items()} == {
        (s.key, 0): ("ok", f"echo {s.key} turn {s.record.turn_idx} of {s.record.total_turns}") for s in samples
    }
    # --concurrency 3, and two trajectories: each one's turns go one after another (a later turn's history holds
    # the earlier turn's real observation), the two trajectories at once.
    assert len({s.record.trajectory_id for s in samples}) == 2
    assert max(int(r["prediction"].rsplit(" ", 1)[1]) for r in made.values()) == 2
    manifest = json.loads((tmp_path / "results" / "echo" / "run.json").read_text())
    assert manifest["config"]["model"]["model_args"] == {"prefix": "echo", "delay": 0.2}
    assert manifest["model_described"] == {"import_path": "wm_async:Echo"}
    printed = awbench(tmp_path, "run", "--config", "echo.toml", "--print-config")
    assert 'model_arg = ["prefix=echo", "delay=0.2"]' in printed.stdout
    # Another --model-arg is another model: the run refuses to mix their predictions.
    other = awbench(tmp_path, "run", "--config", "echo.toml", "--model-arg", "prefix=shout")
    assert (
        other.returncode == 2
        and "model.model_args: {'prefix': 'echo', 'delay': 0.2} -> {'prefix': 'shout'}" in other.stderr
    )


GRIDSIM = '''
"""An installed world model: a class whose state is the trajectory it has seen."""


class Simulator:
    def __init__(self, unknown="(unknown)"):
        self.unknown = unknown

    def predict(self, messages, *, sample, seed, max_tokens, temperature):
        seen = {turn.action: turn.observation for turn in sample.history}
        return seen.get(sample.action, self.unknown)
'''


@pytest.fixture
def gridsim(tmp_path: Path) -> Path:
    """A directory that, on sys.path, makes package `gridsim` 1.4.2 installed, naming its world model `gridsim`."""
    site = tmp_path / "site"
    (site / "gridsim").mkdir(parents=True)
    (site / "gridsim" / "__init__.py").write_text("")
    (site / "gridsim" / "model.py").write_text(GRIDSIM)
    info = site / "gridsim-1.4.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gridsim\nVersion: 1.4.2\n")
    (info / "top_level.txt").write_text("gridsim\n")
    (info / "entry_points.txt").write_text("[awbench.world_models]\ngridsim = gridsim.model:Simulator\n")
    return site


def test_an_installed_package_names_its_world_model(gridsim: Path, tmp_path: Path) -> None:
    common = ["--judge", "rules", "--data", "sample", "--domains", "os", "--limit", "3", "--model-arg", "unknown=?"]
    result = awbench(tmp_path, "run", "--model", "python:gridsim", *common, "--run-name", "g", PATHS=str(gridsim))
    assert result.returncode == 0, result.stderr
    assert {r["prediction"] for r in predictions(tmp_path / "results" / "g").values()} == {"?"}
    manifest = json.loads((tmp_path / "results" / "g" / "run.json").read_text())
    assert manifest["model_described"] == {
        "import_path": "gridsim.model:Simulator",
        "entry_point": "gridsim",
        "package": "gridsim",
        "version": "1.4.2",
    }
    by_path = awbench(
        tmp_path, "run", "--model", "python:gridsim.model:Simulator", *common, "--run-name", "p", PATHS=str(gridsim)
    )
    assert by_path.returncode == 0, by_path.stderr
    described = json.loads((tmp_path / "results" / "p" / "run.json").read_text())["model_described"]
    assert described == {"import_path": "gridsim.model:Simulator", "package": "gridsim", "version": "1.4.2"}
    # A run made with 1.4.2 is not resumed by 1.5.0: another version is another model.
    (gridsim / "gridsim-1.4.2.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: gridsim\nVersion: 1.5.0\n"
    )
    newer = awbench(tmp_path, "run", "--model", "python:gridsim", *common, "--run-name", "g", PATHS=str(gridsim))
    assert (
        newer.returncode == 2 and "'version': '1.4.2'} -> {" in newer.stderr and "'version': '1.5.0'}" in newer.stderr
    )
    missing = awbench(tmp_path, "run", "--model", "python:gridsm", *common, PATHS=str(gridsim))
    assert missing.returncode == 2
    assert missing.stderr == (
        "error: python:gridsm: no installed world model is named 'gridsm'; did you mean 'gridsim'? (installed, by "
        "entry point group awbench.world_models: gridsim); give python:MODULE:NAME for one that is not installed\n"
    )


FAILING = """
def predict(messages, *, sample, seed, max_tokens, temperature):
    with open("calls.log", "a") as log:
        log.write(sample.key + "\\n")
    if sample.turn == 3:
        raise RuntimeError(f"no state for {sample.key}")
    if sample.turn == 4:
        return 42
    return sample.action
"""


def test_an_exception_fails_that_sample_with_its_message_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "wm_failing.py").write_text(FAILING)
    args = ["run", "--model", "python:wm_failing:predict", "--judge", "rules", "--data", "sample", "--run-name", "f"]
    result = awbench(tmp_path, *args)
    assert result.returncode == 1, result.stderr  # failures over --max-failure-rate: the run finished, scored
    made = predictions(tmp_path / "results" / "f")
    samples = load_samples(DataSettings(source="sample")).samples
    assert len(made) == len(samples)
    for sample in samples:
        record = made[(sample.key, 0)]
        turn = sample.record.turn_idx
        if turn == 3:
            assert (record["status"], record["error"]) == (
                "error",
                f"predict raised RuntimeError: no state for {sample.key}",
            )
        elif turn == 4:
            assert (record["status"], record["error"]) == ("error", "predict returned int, not str")
        else:
            assert record["status"] == "ok"
        assert record["transient"] is False
    failed = {k for k, r in made.items() if r["status"] == "error"}
    assert failed and len(failed) < len(samples)
    # issue 36: there is no server whose log would say why: the world model's own code raised it
    returned_int = [line for line in result.stderr.splitlines() if "predict returned int, not str" in line]
    assert len(returned_int) == 1 and returned_int[0].endswith(
        "so it is likely to recur: find out why in the world model's code: the example is what it raised, then run "
        "again with --retry-failed"
    )
    assert "server's log" not in result.stderr
    scores = json.loads((tmp_path / "results" / "f" / "scores.json").read_text())
    assert sum(d["failed"] for d in scores["domains"].values()) == len(failed)
    calls = tmp_path / "calls.log"
    assert len(calls.read_text().splitlines()) == len(samples)
    # Permanent failures: the same command asks nothing again; --retry-failed asks for exactly those.
    assert awbench(tmp_path, *args).returncode == 1
    assert len(calls.read_text().splitlines()) == len(samples)
    assert awbench(tmp_path, *args, "--retry-failed").returncode == 1
    assert sorted(calls.read_text().splitlines()[len(samples) :]) == sorted(k for k, _ in failed)


# sys.exit and os._exit in predict: the plain function in predict's threads, the async method on the event loop;
# os._exit bound by name when the module was imported too.
EXITING = """
import os
import sys
from os import _exit


def predict(messages, *, sample, seed, max_tokens, temperature):
    if sample.turn == 3:
        sys.exit(3)
    return sample.action


class Async:
    async def predict(self, messages, *, sample, seed, max_tokens, temperature):
        if sample.turn == 3:
            sys.exit("no more")
        return sample.action


def os_exit(messages, *, sample, seed, max_tokens, temperature):
    if sample.turn == 3:
        os._exit(0)
    return sample.action


class AsyncOsExit:
    async def predict(self, messages, *, sample, seed, max_tokens, temperature):
        if sample.turn == 3:
            os._exit(0)
        return sample.action


def bound_exit(messages, *, sample, seed, max_tokens, temperature):
    if sample.turn == 3:
        _exit(5)
    return sample.action
"""


@pytest.mark.parametrize(
    ("name", "called"),
    [
        ("predict", "sys.exit(3)"),
        ("Async", "sys.exit('no more')"),
        ("os_exit", "os._exit(0)"),
        ("AsyncOsExit", "os._exit(0)"),
        ("bound_exit", "os._exit(5)"),
    ],
)
def test_an_exit_in_predict_fails_that_sample_saying_so_and_the_run_goes_on(
    tmp_path: Path, name: str, called: str
) -> None:
    """`sys.exit` inside predict ended the run with exit 3 and no message, `os._exit(0)` with exit 0, no message
    and no scores (the run "not scored", the same command doing the same again): each fails that generation, as
    any exception there does, with a message that says what happened; the same command then asks nothing again."""
    (tmp_path / "wm_exiting.py").write_text(EXITING)
    args = ["run", "--model", f"python:wm_exiting:{name}", "--judge", "rules", "--data", "sample"]
    result = awbench(tmp_path, *args)
    no_traceback(result)
    assert result.returncode == 1, result.stderr  # failures over --max-failure-rate: the run finished, scored
    said = f"predict called {called}: a world model may not end awbench's process"
    assert said in result.stderr
    (run_dir,) = (tmp_path / "results").iterdir()
    made = predictions(run_dir)
    samples = load_samples(DataSettings(source="sample")).samples
    assert len(made) == len(samples)
    for sample in samples:
        record = made[(sample.key, 0)]
        if sample.record.turn_idx == 3:
            assert (record["status"], record["error"]) == ("error", said)
        else:
            assert record["status"] == "ok"
    assert (run_dir / "scores.json").is_file()
    kept = (run_dir / "predictions.jsonl").read_bytes()
    again = awbench(tmp_path, *args)
    assert again.returncode == 1 and said in again.stderr
    assert (run_dir / "predictions.jsonl").read_bytes() == kept  # nothing asked again


def test_a_process_the_model_forks_exits_as_it_asks(tmp_path: Path) -> None:
    """The guard on os._exit is awbench's process's alone: a child the model forks ends with the status it gives
    (as multiprocessing's children end), and predict goes on."""
    (tmp_path / "wm_forking.py").write_text(
        "import os\n\n\ndef predict(messages, *, sample, seed, max_tokens, temperature):\n"
        "    child = os.fork()\n    if child == 0:\n        os._exit(7)\n"
        "    return f'child ended {os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])}'\n"
    )
    args = ["run", "--model", "python:wm_forking:predict", "--judge", "rules", "--data", "sample", "--domains", "os"]
    result = awbench(tmp_path, *args, "--concurrency", "1")
    assert result.returncode == 0, result.stderr
    (run_dir,) = (tmp_path / "results").iterdir()
    assert {r["prediction"] for r in predictions(run_dir).values()} == {"child ended 7"}


BAD_MODULES = {
    "wm_bad": textwrap.dedent("""
        LIMIT = 3

        def positional(messages, sample):
            return ""

        class NoPredict:
            pass

        class Needs:
            def __init__(self, path, depth=2):
                raise FileNotFoundError(path)

            def predict(self, messages, *, sample, seed, max_tokens, temperature):
                return ""

        def predict(messages, *, sample, seed, max_tokens, temperature):
            return ""
        """),
    "wm_broken": "import torchz\n",
    "wm_exits": "import sys\n\nsys.exit(0)\n",
    "wm_quits": textwrap.dedent("""
        import os
        import sys

        class Quits:
            def __init__(self):
                sys.exit(4)

            def predict(self, messages, *, sample, seed, max_tokens, temperature):
                return ""

        class OsQuits(Quits):
            def __init__(self):
                os._exit(4)
        """),
    # Named only by a command in a process of its own: before the guard, it ended the test's process with exit 0.
    "wm_os_exits": "import os\n\nos._exit(0)\n",
}


@pytest.mark.parametrize(
    ("model", "extra", "message"),
    [
        ("python:wm_nowhere:predict", [], "python:wm_nowhere:predict: no module named 'wm_nowhere' (not installed, nor in the current directory)"),
        ("python:wm_broken:predict", [], "python:wm_broken:predict: importing 'wm_broken' failed: ModuleNotFoundError: No module named 'torchz'"),
        ("python:wm_bad:predikt", [], "python:wm_bad:predikt: 'wm_bad' has no 'predikt'; did you mean 'predict' or 'NoPredict'?"),
        ("python:wm_bad", [], "python:wm_bad: no installed world model is named 'wm_bad' (installed, by entry point group awbench.world_models: none); give python:MODULE:NAME for one that is not installed"),
        ("python:wm_bad:", [], "'python:wm_bad:': expected python:MODULE:NAME (e.g. python:my_models:predict)"),
        ("python:wm_bad:LIMIT", [], "python:wm_bad:LIMIT: wm_bad:LIMIT is a int, not a function or a class; it must be predict(messages, *, sample, seed, max_tokens, temperature) -> str, or a class with that method"),
        ("python:wm_bad:positional", [], "python:wm_bad:positional: positional(messages, sample) cannot be called as predict(messages, *, sample, seed, max_tokens, temperature) -> str: got an unexpected keyword argument 'seed'"),
        ("python:wm_bad:NoPredict", [], "python:wm_bad:NoPredict: class NoPredict has no predict method; it needs predict(messages, *, sample, seed, max_tokens, temperature) -> str"),
        ("python:wm_bad:Needs", [], "python:wm_bad:Needs: --model-arg: Needs(path, depth=2) cannot take no arguments: missing a required argument: 'path'"),
        ("python:wm_bad:Needs", ["--model-arg", "path=x", "--model-arg", "width=3"], "python:wm_bad:Needs: --model-arg: Needs(path, depth=2) cannot take path, width: got an unexpected keyword argument 'width'"),
        ("python:wm_bad:Needs", ["--model-arg", "path"], "--model-arg expects KEY=VALUE, got 'path'"),
        ("python:wm_bad:predict", ["--model-arg", "depth=1"], "python:wm_bad:predict: --model-arg is for a class, and wm_bad:predict is a function: leave it out"),
        ("python:wm_bad:Needs", ["--model-arg", "path=/nowhere"], "python:wm_bad:Needs: Needs(...) raised FileNotFoundError: /nowhere"),
        ("python:wm_exits:predict", [], "python:wm_exits:predict: importing 'wm_exits' called sys.exit(0): a world model may not end awbench's process"),
        ("python:wm_quits:Quits", [], "python:wm_quits:Quits: Quits(...) called sys.exit(4): a world model may not end awbench's process"),
        ("python:wm_bad:predict", ["--extra-body", "{}"], "--extra-body does not apply to the python backend (a Python world model is given only seed, max_tokens and temperature): leave it out"),
        ("baseline:oracle", ["--model-arg", "depth=1"], "--model-arg does not apply to the baseline backend (a baseline calls no model and samples nothing): leave it out"),
    ],
)  # fmt: skip
def test_a_spec_that_cannot_be_used_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, extra: list[str], message: str
) -> None:
    """In this process (fast): the modules are imported from the current directory, as the command does."""
    from reliability_helpers import cli

    for name, text in BAD_MODULES.items():
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        result = cli("run", "--model", model, *extra, "--judge", "rules", "--data", "sample", "--limit", "1")
    finally:
        for name in BAD_MODULES:  # each case imports them afresh, from its own directory
            sys.modules.pop(name, None)
    no_traceback(result)
    assert (result.exit_code, result.stderr) == (2, f"error: {message}\n")
    assert not (tmp_path / "results").exists()  # nothing is left behind


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("python:wm_os_exits:predict", "importing 'wm_os_exits' called os._exit(0)"),
        ("python:wm_quits:OsQuits", "OsQuits(...) called os._exit(4)"),
    ],
)
def test_os_exit_where_the_model_is_made_is_one_line_and_exit_2(tmp_path: Path, model: str, message: str) -> None:
    """os._exit in the model's module, and in its class's __init__ (in a process of its own: see BAD_MODULES)."""
    for name, text in BAD_MODULES.items():
        (tmp_path / f"{name}.py").write_text(text)
    result = awbench(tmp_path, "run", "--model", model, "--judge", "rules", "--data", "sample", "--limit", "1")
    no_traceback(result)
    assert (result.returncode, result.stderr) == (
        2, f"error: {model}: {message}: a world model may not end awbench's process\n"
    )  # fmt: skip
    assert not (tmp_path / "results").exists()


def test_the_readme_example_runs_as_written(tmp_path: Path) -> None:
    """README "A world model in Python": its module and its two commands, as they are written there."""
    section = (REPO / "README.md").read_text().split("### A world model in Python\n", 1)[1].split("\n### ", 1)[0]
    module = section.split("```python\n", 1)[1].split("```", 1)[0]
    commands = section.split("```bash\n", 1)[1].split("```", 1)[0].replace("\\\n", " ").splitlines()
    (tmp_path / "my_world_model.py").write_text(module)
    for command in commands:
        words = shlex.split(command)
        assert words[:2] == ["awbench", "run"]
        result = awbench(tmp_path, *words[1:])
        assert result.returncode == 0, (command, result.stderr)
    replay = tmp_path / "results" / "python-my_world_model-Replay__rules"
    assert json.loads((replay / "run.json").read_text())["model_described"] == {"import_path": "my_world_model:Replay"}
    made = predictions(replay)
    assert len(made) == len(load_samples(DataSettings(source="sample")).samples)
    assert {r["prediction"] for r in made.values()} >= {"(no output)"}
    last = predictions(tmp_path / "results" / "python-my_world_model-last_observation__rules")
    assert {g for _, g in last} == {0, 1} and all(r["status"] == "ok" for r in last.values())


PEEK = '''
import asyncio


class Peek:
    """Remembers every real observation a history shows it, and holds each turn back a while, waiting to be shown
    that turn's real observation with a later turn of its trajectory."""

    def __init__(self):
        self.seen = {}

    async def predict(self, messages, *, sample, seed, max_tokens, temperature):
        for number, turn in enumerate(sample.history, start=1):
            self.seen[(sample.trajectory_id, number)] = turn.observation
        for _ in range(20):
            if (sample.trajectory_id, sample.turn) in self.seen:
                return "PEEKED " + self.seen[(sample.trajectory_id, sample.turn)]
            await asyncio.sleep(0.05)
        return "(no idea)"
'''


def test_a_model_never_sees_a_turns_real_observation_before_it_answered_that_turn(tmp_path: Path) -> None:
    """A later turn's history holds the earlier turn's real observation: the later turn is only asked once the
    earlier one is answered, however long the model holds it (here each turn is held a second, with 64 requests
    allowed at once), so a model cannot copy the answer (the adversarial trial's finding 4: 6 of 8 copied)."""
    (tmp_path / "wm_peek.py").write_text(PEEK)
    result = awbench(
        tmp_path, "run", "--model", "python:wm_peek:Peek", "--judge", "rules", "--data", "sample",
        "--domains", "os", "--concurrency", "64", "--run-name", "peek", "--max-failure-rate", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    made = predictions(tmp_path / "results" / "peek")
    assert len(made) == len(os_samples()) and not any(r["prediction"].startswith("PEEKED") for r in made.values())


# --- Models that would hang the run (issue 35's trial, finding 6) ------------------------------------------------

# Each fails at turn 3 in its own way; the others answer. A BaseException of its own, GeneratorExit, and an async
# predict's own CancelledError (not the run's cancellation) are failures of that generation like any exception.
RAISING = """
import asyncio


class Boom(BaseException):
    pass


def boom(messages, *, sample, seed, max_tokens, temperature):
    if sample.turn == 3:
        raise Boom("x")
    return sample.action


def generator_exit(messages, *, sample, seed, max_tokens, temperature):
    if sample.turn == 3:
        raise GeneratorExit
    return sample.action


async def cancelled(messages, *, sample, seed, max_tokens, temperature):
    if sample.turn == 3:
        raise asyncio.CancelledError()
    return sample.action


async def async_generator_exit(messages, *, sample, seed, max_tokens, temperature):
    if sample.turn == 3:
        raise GeneratorExit
    await asyncio.sleep(0)
    return sample.action
"""


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("boom", "predict raised Boom: x"),
        ("generator_exit", "predict raised GeneratorExit"),
        ("cancelled", "predict raised CancelledError"),
        ("async_generator_exit", "predict raised GeneratorExit"),
    ],
)
def test_base_exceptions_of_predict_fail_that_sample_and_the_run_ends(tmp_path: Path, name: str, error: str) -> None:
    """The trial's GeneratorExit and CancelledError left their samples without a record (or the run hanging)."""
    (tmp_path / "wm_raising.py").write_text(RAISING)
    args = ["run", "--model", f"python:wm_raising:{name}", "--judge", "rules", "--data", "sample", "--domains", "os"]
    result = awbench(tmp_path, *args, "--run-name", "r")
    no_traceback(result)
    assert result.returncode == 1, result.stderr  # failures over --max-failure-rate: the run finished, scored
    made = predictions(tmp_path / "results" / "r")
    samples = os_samples()
    assert len(made) == len(samples)
    for sample in samples:
        record = made[(sample.key, 0)]
        wanted = ("error", error) if sample.record.turn_idx == 3 else ("ok", None)
        assert (record["status"], record["error"]) == wanted, sample.key
    assert (tmp_path / "results" / "r" / "scores.json").is_file()


HANGING = """
import os
import time


def predict(messages, *, sample, seed, max_tokens, temperature):
    if sample.turn > 1 and os.environ.get("WM_HANG"):
        time.sleep(3600)
    return sample.action
"""


def test_one_ctrl_c_stops_a_run_whose_predict_hangs_and_the_same_command_resumes_it(tmp_path: Path) -> None:
    """The trial's Ctrl-C waited for the hung predict's thread (a ThreadPoolExecutor's, joined at the exit); a
    second Ctrl-C printed a traceback. One Ctrl-C ends the run at once, with its first-turn predictions kept."""
    (tmp_path / "wm_hanging.py").write_text(HANGING)
    args = ["run", "--model", "python:wm_hanging:predict", "--judge", "rules", "--data", "sample", "--domains", "os"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "WM_HANG": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", "from awbench.cli import main; main()", *args, "--run-name", "h"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    made = tmp_path / "results" / "h" / "predictions.jsonl"
    first_turns = sum(s.record.turn_idx == 1 for s in os_samples())
    deadline = time.monotonic() + 60
    while not (made.exists() and len(made.read_text().splitlines()) == first_turns) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # the later turns' calls are hanging now
    process.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    try:
        err = process.communicate(timeout=30)[1]
    finally:
        process.kill()  # a run that does not stop is not left behind
    assert time.monotonic() - stopped < 10
    assert process.returncode == 130, err
    assert "Traceback" not in err and err.endswith("error: interrupted; run the same command again to resume\n")
    assert len(made.read_text().splitlines()) == first_turns

    resumed = awbench(tmp_path, *args, "--run-name", "h")  # without WM_HANG: the model answers
    assert resumed.returncode == 0, resumed.stderr
    assert {r["status"] for r in predictions(tmp_path / "results" / "h").values()} == {"ok"}
    assert len(made.read_text().splitlines()) == len(os_samples())


NOT_CLOSING = """
import asyncio
import time


class Sync:
    def predict(self, messages, *, sample, seed, max_tokens, temperature):
        return sample.action

    def close(self):
        time.sleep(3600)


class Async(Sync):
    async def aclose(self):
        await asyncio.sleep(3600)
"""


@pytest.mark.parametrize(("name", "closing"), [("Sync", "close"), ("Async", "aclose")])
def test_a_close_that_never_returns_is_left_after_a_timeout_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, closing: str
) -> None:
    """The trial's aclose() that never returns kept the command running for ever."""
    (tmp_path / "wm_not_closing.py").write_text(NOT_CLOSING)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(python_model, "CLOSE_TIMEOUT_S", 0.5)
    started = time.monotonic()
    result = cli("run", "--model", f"python:wm_not_closing:{name}", "--judge", "rules", "--data", "sample",
                 "--domains", "os", "--run-name", "c", "--output", tmp_path / "results")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 20
    assert (
        f"the world model was not closed: python:wm_not_closing:{name}: {closing}() did not return within 0.5 s; "
        "its predictions are kept\n"
    ) in result.stderr
    assert (tmp_path / "results" / "c" / "scores.json").is_file()


THREADED = """
import threading
import time

threading.Thread(target=time.sleep, args=(600,), name="wm-sleeper").start()


def predict(messages, *, sample, seed, max_tokens, temperature):
    return sample.action
"""


def test_the_command_does_not_wait_for_a_thread_the_model_left_running(tmp_path: Path) -> None:
    """The trial's model started a thread (not a daemon) at import: the command never ended."""
    (tmp_path / "wm_threaded.py").write_text(THREADED)
    result = awbench(tmp_path, "run", "--model", "python:wm_threaded:predict", "--judge", "rules", "--data", "sample",
                     "--domains", "os", "--run-name", "t")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr.endswith(
        "1 thread that awbench did not start still running (wm-sleeper): exiting without waiting for them\n"
    )
    assert result.stdout.endswith("run saved in results/t\n")  # everything printed before the exit
    assert {r["status"] for r in predictions(tmp_path / "results" / "t").values()} == {"ok"}


CLOSING_STDOUT = """
import os
import sys


def closes_sys_stdout(messages, *, sample, seed, max_tokens, temperature):
    sys.stdout.close()
    return sample.action


def closes_descriptor_1(messages, *, sample, seed, max_tokens, temperature):
    global CLOSED  # once: a second os.close(1) would close whatever file of awbench's took the number since
    if not CLOSED:
        os.close(1)
        CLOSED = True
    return sample.action


CLOSED = False
"""


@pytest.mark.parametrize(
    ("name", "reason"), [("closes_sys_stdout", "it was closed"), ("closes_descriptor_1", "Bad file descriptor")]
)
def test_a_model_that_closes_stdout_is_one_line_and_exit_2(tmp_path: Path, name: str, reason: str) -> None:
    (tmp_path / "wm_closing_stdout.py").write_text(CLOSING_STDOUT)
    result = awbench(tmp_path, "run", "--model", f"python:wm_closing_stdout:{name}", "--judge", "rules", "--data",
                     "sample", "--domains", "os", "--run-name", "s")  # fmt: skip
    no_traceback(result)
    assert result.returncode == 2
    assert result.stderr.endswith(f"\nerror: cannot write to standard output: {reason}\n")
    assert (tmp_path / "results" / "s" / "scores.json").is_file()  # the run was done before its summary


def test_a_model_that_stops_threads_from_starting_fails_its_samples_not_the_run(tmp_path: Path) -> None:
    """`sys.excepthook = None` at import: no thread can start for predict (nor for close)."""
    (tmp_path / "wm_no_threads.py").write_text(
        "import sys\n\nsys.excepthook = None\n\n\ndef predict(messages, *, sample, seed, max_tokens, temperature):\n"
        "    return sample.action\n"
    )
    result = awbench(tmp_path, "run", "--model", "python:wm_no_threads:predict", "--judge", "rules", "--data",
                     "sample", "--domains", "os", "--run-name", "n")  # fmt: skip
    no_traceback(result)
    assert result.returncode == 1, result.stderr
    errors = {r["error"] for r in predictions(tmp_path / "results" / "n").values()}
    assert errors == {"predict raised RuntimeError: sys.excepthook is None"}


WANDERER = """
import os


def predict(messages, *, sample, seed, max_tokens, temperature):
    os.makedirs(os.environ["ELSEWHERE"], exist_ok=True)
    os.chdir(os.environ["ELSEWHERE"])  # the process's working directory, mid-run
    return "ok"
"""


def test_a_model_that_changes_the_working_directory_leaves_the_run_where_it_was(tmp_path: Path) -> None:
    """`--output results` (relative) stays where it pointed when the command began: every file of the run lands
    there, none under the directory the model moved the process to."""
    (tmp_path / "wm_wanderer.py").write_text(WANDERER)
    elsewhere = tmp_path / "elsewhere"
    result = awbench(
        tmp_path, "run", "--model", "python:wm_wanderer:predict", "--judge", "rules", "--data", "sample",
        "--domains", "os", "--run-name", "w", "--output", "results", ELSEWHERE=str(elsewhere),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(predictions(tmp_path / "results" / "w")) == len(os_samples())
    assert (tmp_path / "results" / "w" / "scores.json").is_file() and not (elsewhere / "results").exists()
