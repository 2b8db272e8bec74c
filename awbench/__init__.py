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

Beside them, the vocabulary they share: domains, records, config, files, safe_text, redact, resources, and
the one worker pool (workers).
`from awbench.run import pipeline` is the Python API of a run (`awbench.pipeline` still names it).
"""

from __future__ import annotations

from typing import Any

# The release this code belongs to: the build reads it from here (pyproject.toml, [tool.hatch.version]), so a
# wheel, an sdist, a checkout and a vendored copy all report it, tag or no tag. A release raises it, with its
# section in CHANGELOG.md; run.json records it beside the git commit.
__version__ = "0.3.0"


def __getattr__(name: str) -> Any:
    # `from awbench import pipeline` predates the run/ package; loaded on use so that startup stays light.
    if name == "pipeline":
        from awbench.run import pipeline

        return pipeline
    raise AttributeError(f"module 'awbench' has no attribute {name!r}")
