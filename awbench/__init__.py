"""awbench: the evaluation harness for AgentWorldBench (language world models)."""

__version__ = "0.1.0"
