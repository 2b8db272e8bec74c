"""The one registry of candidate backends and judges: awbench's own, and those installed packages add.

A package adds one by an entry point in group `awbench.backends` (what `--backend NAME` names) or
`awbench.judges` (what `--judge-backend NAME` names): its value is a module (or any object) with
`create(settings, endpoints)` returning a `Backend` or a `Judge`, and optionally `preflight(settings)`,
the checks that need nothing read nor sent (a missing key, an unknown model name), and (a backend)
`describe(settings)`, what run.json records of the model beyond its settings. Nothing is imported
until a name is used, so a backend's heavy dependencies load only when it runs. awbench's own names come
first: an entry point of the same name is not used.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, Literal

from awbench.errors import AwbenchError

Group = Literal["awbench.backends", "awbench.judges"]

BUILTIN: dict[Group, dict[str, str]] = {
    "awbench.backends": {
        "baseline": "awbench.backends.baseline",
        "openai": "awbench.backends.openai_api",
        "vllm": "awbench.backends.vllm_offline",
        "python": "awbench.backends.python_model",
    },
    "awbench.judges": {"openai": "awbench.judging.llm.openai_judge", "vllm": "awbench.judging.llm.vllm_judge"},
}
_WHAT = {"awbench.backends": "backend", "awbench.judges": "judge backend"}


class UnknownPlugin(AwbenchError, ValueError):
    """A backend or judge name that neither awbench nor an installed package provides."""

    key = "unknown_plugin"


def names(group: Group) -> list[str]:
    """Every name of the group: awbench's own, then the installed packages', in alphabetical order."""
    builtin = BUILTIN[group]
    return [*builtin, *sorted({e.name for e in entry_points(group=group)} - set(builtin))]


def load(group: Group, name: str) -> Any:
    """The module (or object) registered as `name`: has `create`, may have `preflight`."""
    if name in BUILTIN[group]:
        return importlib.import_module(BUILTIN[group][name])
    found = [e for e in entry_points(group=group) if e.name == name]
    if not found:
        raise UnknownPlugin(f"unknown {_WHAT[group]} {name!r}; known: {', '.join(names(group))}")
    return found[0].load()


def preflight(group: Group, name: str, settings: Any) -> None:
    """Run the registered entry's checks that need nothing read nor sent, when it has any."""
    check = getattr(load(group, name), "preflight", None)
    if check is not None:
        check(settings)


def describe(group: Group, name: str, settings: Any) -> dict[str, Any]:
    """What the registered entry says of what `settings` name (a Python model's import path and version);
    {} when it has no `describe`."""
    describer = getattr(load(group, name), "describe", None)
    return {} if describer is None else dict(describer(settings))
