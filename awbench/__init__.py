"""awbench: the evaluation harness for AgentWorldBench (language world models).

The packages follow a sample through a run, each importing only from those before it:

    data         the benchmark's files read, validated and selected (Samples)
    world_model  a Sample -> the candidate's messages; its generation -> the parsed prediction
    transport    HTTP to OpenAI-compatible endpoints
    backends     candidate models behind the Backend protocol (endpoint, in-process vLLM, baselines)
    judging      prediction -> judge request -> verdict, behind the Judge protocol (LLM, batch, vLLM, rules)
    run          the pipeline, its stages, the run directory, scores
    analysis     leaderboards, comparisons, growth along trajectories, reports (reads stored runs)
    interop      the reference script's files, the Hub's evaluation results
    cli          the typer commands over all of the above

Beside them, the vocabulary they share: domains, records, config, files, safe_text, redact, resources.
`from awbench.run import pipeline` is the Python API of a run (`awbench.pipeline` still names it).
"""

from __future__ import annotations

from typing import Any


def _version() -> str:
    """The version the build derived from git tags (hatch-vcs): the file it wrote into the package, else the
    installed distribution's metadata; a copy of the source that was never built has neither."""
    try:
        from awbench._version import __version__ as built
    except ImportError:
        pass
    else:
        return built
    from importlib import metadata

    try:
        return metadata.version("awbench")
    except metadata.PackageNotFoundError:
        return "0.0.0+unknown"


__version__ = _version()


def __getattr__(name: str) -> Any:
    # `from awbench import pipeline` predates the run/ package; loaded on use so that startup stays light.
    if name == "pipeline":
        from awbench.run import pipeline

        return pipeline
    raise AttributeError(f"module 'awbench' has no attribute {name!r}")
