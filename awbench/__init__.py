"""awbench: the evaluation harness for AgentWorldBench (language world models)."""

from __future__ import annotations


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
