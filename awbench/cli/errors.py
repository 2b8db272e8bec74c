"""Every error a user can cause or fix, turned into a message and an exit code instead of a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import ValidationError

from awbench.backends.baseline import UnknownBaseline
from awbench.backends.python_model import WorldModelError
from awbench.backends.vllm_offline import BackendUnavailable
from awbench.cli.common import (
    EXIT_FAILURES,
    EXIT_USAGE,
    err_console,
    fail,
    validation_lines,
)
from awbench.data.problems import DataError
from awbench.judging import BudgetExhausted
from awbench.judging.llm.openai_judge import CostUnknown
from awbench.judging.llm.prompts import PromptError
from awbench.judging.rules.workers import RuleWorkerFailed
from awbench.plugins import UnknownPlugin
from awbench.run.pipeline import PipelineError
from awbench.run.store import StoreError
from awbench.transport.endpoints import EndpointDown, FatalAPIError, MissingAPIKey

MAX_PROBLEMS_SHOWN = 50
SETTINGS = {"RunConfig", "DataSettings", "ModelSettings", "JudgeSettings", "ScoringSettings"}


@contextmanager
def pipeline_errors() -> Iterator[None]:
    try:
        yield
    except ValidationError as error:
        if error.title not in SETTINGS:
            raise
        fail("\n".join(validation_lines(error)))  # settings a command builds from its options (--run-name, ...)
    except DataError as error:
        # Not markup: the data's own text ("hf:ref[test]", a field named "[/]"); `fail` escapes its message.
        for problem in error.problems[:MAX_PROBLEMS_SHOWN]:
            err_console.print(str(problem), markup=False, highlight=False, soft_wrap=True)
        if len(error.problems) > MAX_PROBLEMS_SHOWN:
            err_console.print(
                f"... and {len(error.problems) - MAX_PROBLEMS_SHOWN} more (awbench data validate lists all)"
            )
        fail(str(error))
    except MissingAPIKey as error:
        fail(str(error))
    except FatalAPIError as error:
        fail(f"{error}; retrying cannot help")
    except BudgetExhausted as error:
        fail(
            f"{error}. The run is resumable: run the same command again with a higher --max-cost; until then its "
            "evaluation is incomplete, and never ranked nor exported.",
            EXIT_FAILURES,
        )
    except EndpointDown as error:
        fail(str(error))
    except RuleWorkerFailed as error:
        fail(f"{error}\nThe run is resumable: run the same command again.", EXIT_FAILURES)
    except (
        PipelineError,
        StoreError,
        BackendUnavailable,
        UnknownBaseline,
        WorldModelError,
        UnknownPlugin,
        PromptError,
        CostUnknown,
    ) as error:
        fail(str(error), EXIT_USAGE)
    except OSError as error:  # an output that cannot be written: a file where a directory goes, a full disk...
        if error.filename is None:
            raise
        fail(f"cannot write {error.filename}: {error.strerror or error}")
    except KeyboardInterrupt:
        fail("interrupted; run the same command again to resume", 130)
