"""The reference's own code, run from the user's checkout of QwenLM/Qwen-AgentWorld.

Under the reference protocol awbench reads what the reference reads with the reference's functions, not with a
restatement of them: `eval/lwm_eval_utils` of the checkout is imported at run time, as `eval.py` imports it,
and its parsers decide what the judge is shown (`parse_model_output`, `clean_response_marker`), how each judge
answer reads (`parse_judge_output`) and which response a two-choice answer picks (`extract_choice_answer`).
awbench ships none of that code; it calls it exactly as `eval.py` calls it.

The package is imported in isolation: under a private module name of its own (so it never meets another
`lwm_eval_utils`, nor a second checkout), without touching `sys.path`, without writing bytecode into the
checkout, and without `eval.py` itself (whose import configures logging and needs the OpenAI client). Its
loggers are silenced: `eval.py`'s warnings would interleave with awbench's progress.

    code = load_reference_code(checkout)      # ReferenceCodeError (exit 2) naming what is missing
    code.extract(generation, subtask)         # parse_model_output with the subtask's response tag
    code.clean(text, subtask)                 # clean_response_marker
    code.read_verdict(answer, subtask)        # parse_judge_output with the subtask's judge tag
    code.read_choice(answer)                  # extract_choice_answer: "A", "B" or None
    code.provenance()                         # the commit and the files' sha256, for run.json and judge.json
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import logging
import math
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from awbench.domains import DIMENSIONS
from awbench.judging import PromptError

PACKAGE = Path("eval/lwm_eval_utils")
# Where each function the reference protocol uses lives, and how `eval.py` calls it (positional arguments
# by name; `response_tag` of parse_judge_output is passed by keyword).
FUNCTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "parse_model_output": ("", ("raw_output", "response_tag")),
    "clean_response_marker": ("", ("text", "subtask")),
    "parse_judge_output": ("", ("raw_output", "response_tag")),
    "load_judge_system_prompts": ("", ()),
    "extract_choice_answer": ("judge_parser", ("raw_output",)),
}
CONSTANTS: dict[str, type] = {"TASK_CONFIGS": dict, "JUDGE_USER_PROMPT": str}
# `eval.py`: an unknown subtask takes the MCP configuration, and a configuration without the tags these.
FALLBACK_SUBTASK = "mcp"
PREDICTION_TAG = "predicted_observation"
JUDGE_TAG = "final_evaluation"
GIT_TIMEOUT_S = 10


class ReferenceCodeError(PromptError):
    """A checkout whose code cannot serve the reference protocol; the message names the file and what is wrong."""

    key = "bad_reference_code"


class ReferenceVerdict(NamedTuple):
    """`parse_judge_output`'s result as `eval.py` keeps it: `success`, each dimension's score (`scores.get(dim,
    0)`: the reference keeps 0 for missing, negatives, and booleans as the judge wrote them) and `total_score`."""

    success: bool
    scores: dict[str, int | float]
    total_score: int | float
    code: str  # the sha256 of the code that read it


# The reference's reading of one judge answer about a given sample (parse_judge_output for its subtask).
ReferenceReader = Callable[[str], ReferenceVerdict]


@dataclass(frozen=True)
class ReferenceCode:
    checkout: Path
    module: ModuleType
    sha256: str  # over the package's .py files, names and bytes
    files: dict[str, str]  # path relative to the checkout -> sha256

    def function(self, name: str) -> Callable[..., Any]:
        return getattr(self.part(FUNCTIONS[name][0]), name)

    def part(self, submodule: str) -> ModuleType:
        """The package itself (""), or one of its modules, imported under the package's private name."""
        if not submodule:
            return self.module
        name = f"{self.module.__name__}.{submodule}"
        try:
            with _no_bytecode():
                return importlib.import_module(name)
        except Exception as error:
            raise ReferenceCodeError(
                f"importing {self.checkout / PACKAGE / submodule}.py failed: {type(error).__name__}: {error}"
            ) from None

    @property
    def task_configs(self) -> dict[str, Any]:
        return self.module.TASK_CONFIGS

    def template(self, name: str = "JUDGE_USER_PROMPT") -> str:
        """A user-prompt template of the checkout's task_configs (JUDGE_USER_PROMPT, or the Turing test's and the
        pairwise judge's); ReferenceCodeError when it has none."""
        value = getattr(self.part("task_configs"), name, None)
        if not isinstance(value, str):
            raise ReferenceCodeError(f"{self.checkout / PACKAGE / 'task_configs.py'}: no string {name}")
        return value

    def config(self, subtask: str) -> dict[str, Any]:
        configs = self.task_configs
        return configs.get(subtask, configs.get(FALLBACK_SUBTASK, {}))

    def extract(self, generation: str, subtask: str) -> str:
        """What `eval.py`'s judge stage makes of a generation: `parse_model_output(gen, response_tag)`."""
        tag = self.config(subtask).get("response_tag", PREDICTION_TAG)
        return self._text("parse_model_output", generation, tag)

    def clean(self, text: str, subtask: str) -> str:
        """`clean_response_marker(text, subtask)`: a prediction or ground truth as the judge's prompt shows it."""
        return self._text("clean_response_marker", text, subtask)

    def read_verdict(self, answer: str, subtask: str) -> ReferenceVerdict:
        """`parse_judge_output(answer, response_tag=judge_response_tag)`, read as `eval.py` reads its result."""
        tag = self.config(subtask).get("judge_response_tag", JUDGE_TAG)
        parsed = self._call("parse_judge_output", answer, response_tag=tag)
        if not isinstance(parsed, dict):
            raise self._wrong("parse_judge_output", f"returned {type(parsed).__name__}, not a dict")
        if not parsed.get("success"):
            return ReferenceVerdict(False, {}, 0, self.sha256)
        scores = parsed.get("scores", {})
        if not isinstance(scores, dict):
            raise self._wrong("parse_judge_output", f"returned scores of type {type(scores).__name__}")
        read = {dim: self._number(scores.get(dim, 0)) for dim in DIMENSIONS}
        return ReferenceVerdict(True, read, self._number(parsed.get("total_score", 0.0)), self.sha256)

    def read_choice(self, answer: str) -> str | None:
        """`extract_choice_answer(answer)`'s choice, "A" or "B", when it succeeds."""
        result = self._call("extract_choice_answer", answer)
        if not isinstance(result, dict):
            raise self._wrong("extract_choice_answer", f"returned {type(result).__name__}, not a dict")
        choice = result.get("choice")
        return choice if result.get("success") and choice in ("A", "B") else None

    def judge_system_prompts(self) -> dict[str, str]:
        """`load_judge_system_prompts()`: subtask -> the judge's system prompt, read as the checkout reads it."""
        prompts = self._call("load_judge_system_prompts")
        if not isinstance(prompts, dict) or not all(isinstance(v, str) for v in prompts.values()):
            raise self._wrong("load_judge_system_prompts", "did not return a dict of strings")
        return prompts

    @cached_property
    def commit(self) -> str | None:
        """The checkout's commit, with `+modified` when its evaluation code or prompts differ from it; None
        outside a git work tree (or without git)."""
        try:
            head = _git(self.checkout, "rev-parse", "HEAD")
            changed = _git(self.checkout, "status", "--porcelain", "--", "eval", "prompts")
        except (OSError, subprocess.SubprocessError):
            return None
        return f"{head}+modified" if changed else head

    def provenance(self) -> dict[str, Any]:
        """What run.json and judge.json record of the code that read this evaluation."""
        return {"commit": self.commit, "sha256": self.sha256, "files": self.files}

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.function(name)(*args, **kwargs)
        except Exception as error:  # the reference's own code failed: eval.py would stop here too
            raise ReferenceCodeError(
                f"the checkout's {name} raised {type(error).__name__}: {str(error)[:200]} "
                f"({self.checkout / PACKAGE}); eval.py would stop on this input too"
            ) from None

    def _text(self, name: str, *args: Any) -> str:
        value = self._call(name, *args)
        if not isinstance(value, str):
            raise self._wrong(name, f"returned {type(value).__name__}, not a string")
        return value

    def _number(self, value: Any) -> int | float:
        """A score the reference keeps; anything `statistics.mean` could not average, or NaN and infinities that
        would make every number NaN, is the checkout's fault."""
        if not isinstance(value, (int, float)) or (isinstance(value, float) and not math.isfinite(value)):
            raise self._wrong("parse_judge_output", f"returned the score {value!r}, not a finite number")
        return value

    def _wrong(self, name: str, what: str) -> ReferenceCodeError:
        return ReferenceCodeError(f"the checkout's {name} {what} ({self.checkout / PACKAGE}): not the reference's code")


_LOADED: dict[tuple[Path, str], ReferenceCode] = {}


def load_reference_code(checkout: Path) -> ReferenceCode:
    """The checkout's `eval/lwm_eval_utils`, imported once per process and per content; ReferenceCodeError when
    it is missing, fails to import, or lacks a function or constant the reference protocol uses."""
    root = checkout.resolve()
    package = root / PACKAGE
    init = package / "__init__.py"
    if not init.is_file():
        raise ReferenceCodeError(f"{init} not found: the reference protocol runs the checkout's {PACKAGE} package")
    files = {str(path.relative_to(root)): _sha256(path.read_bytes()) for path in sorted(package.glob("*.py"))}
    digest = _sha256("".join(f"{name}\0{sha}\0" for name, sha in files.items()).encode())
    if (root, digest) not in _LOADED:
        # Named by place and content: the package reads its prompts relative to where it lies.
        name = "_awbench_reference_" + _sha256(f"{root}:{digest}".encode())[:16]
        code = ReferenceCode(root, _import(package, name), digest, files)
        try:
            _check(code)
        except ReferenceCodeError:
            _forget(name)
            raise
        _LOADED[root, digest] = code
    return _LOADED[root, digest]


def loaded_reference_code(checkout: Path, sha256: str) -> ReferenceCode:
    """The code of `checkout` already loaded with this content (without reading its files again: this is on every
    request's path), else loaded now; ReferenceCodeError when the files no longer hold it."""
    code = _LOADED.get((checkout, sha256))  # `checkout` as a prompt set records it: resolved
    if code is not None:
        return code
    code = load_reference_code(checkout)
    if code.sha256 != sha256:
        raise ReferenceCodeError(
            f"the code in {code.checkout / PACKAGE} changed since its prompts were loaded; run the command again"
        )
    return code


def _import(package: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        name, package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    logger = logging.getLogger(name)  # every module of the package logs below this name
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    sys.modules[name] = module
    try:
        with _no_bytecode():
            spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:  # its own code, failing as it would under eval.py
        _forget(name)
        raise ReferenceCodeError(
            f"importing {package} failed: {type(error).__name__}: {str(error)[:200]}; the reference protocol "
            "runs the checkout's own code, as eval.py does"
        ) from None
    return module


def _forget(name: str) -> None:
    """The package and its modules out of sys.modules: a checkout that cannot serve leaves nothing behind."""
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]


@contextmanager
def _no_bytecode() -> Iterator[None]:
    """Nothing written into the user's checkout (no __pycache__)."""
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        yield
    finally:
        sys.dont_write_bytecode = writes


def _check(code: ReferenceCode) -> None:
    """Every function with a signature that takes `eval.py`'s call, and every constant of its type."""
    problems = []
    for name, (where, parameters) in FUNCTIONS.items():
        place = f"{PACKAGE}/{where}.py" if where else str(PACKAGE)
        try:
            function = getattr(code.part(where), name, None)
        except ReferenceCodeError:
            function = None
        if not callable(function):
            problems.append(f"no function {name}({', '.join(parameters)}) in {place}")
            continue
        try:
            signature = inspect.signature(function)
            if name == "parse_judge_output":
                signature.bind("", response_tag="")
            else:
                signature.bind(*parameters)
        except (TypeError, ValueError):
            problems.append(f"{place}: {name} does not take ({', '.join(parameters)}), as eval.py calls it")
    for name, kind in CONSTANTS.items():
        if not isinstance(getattr(code.module, name, None), kind):
            problems.append(f"no {kind.__name__} {name} in {PACKAGE}")
    if problems:
        raise ReferenceCodeError(
            f"{code.checkout} cannot serve the reference protocol: " + "; ".join(problems) + " (a checkout of "
            "QwenLM/Qwen-AgentWorld has them)"
        )


def _git(checkout: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(checkout), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=True
    )
    return done.stdout.strip()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
