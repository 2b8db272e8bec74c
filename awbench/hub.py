"""Hugging Face Hub datasets: load a dataset reference's splits with the benchmark's record schema, and say
what to do instead when the Hub cannot be reached. Validating the rows is `awbench.dataset`'s job."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from awbench.data_problems import DataError
from awbench.domains import FILE_SUFFIX


def load_hub_dataset(ref: str) -> Mapping[str, Any]:
    """Split name -> rows (each a dict of column -> value)."""
    import datasets  # heavy; only Hub sources need it

    try:
        try:
            return datasets.load_dataset(ref, features=_hub_features(datasets))
        except (datasets.exceptions.DatasetGenerationError, ValueError):
            # Columns beyond the known ones, or values that do not fit the schema: let datasets infer types.
            return datasets.load_dataset(ref)
    except (ConnectionError, datasets.exceptions.DatasetNotFoundError, FileNotFoundError) as e:
        if os.path.exists(ref):
            raise DataError(f"cannot load dataset {ref}: {e}") from None
        raise DataError(_unreachable_message(ref, e)) from None
    except (datasets.exceptions.DatasetsError, ValueError, OSError) as e:
        raise DataError(f"cannot load dataset {ref}: {_reason(e)}") from None


def _hub_features(datasets: Any) -> Any:
    """The record schema for Arrow. Left to itself, datasets infers each column's type from the first file
    and fails on a later file that differs (`id` is an int in some files and a string in others), so `id`
    is read as JSON, which keeps each value's own type (except a string that is itself valid JSON, such as
    "42", which comes back parsed; the key does not change)."""
    text = datasets.Value("string")
    return datasets.Features(
        {
            "task": text,
            "id": datasets.Json(),
            "prompt": datasets.List(text),
            "response": datasets.List(text),
            "current_prompt": text,
            "system_str": text,
            "turn_idx": datasets.Value("int64"),
            "total_turns": datasets.Value("int64"),
        }
    )


def _reason(error: Exception) -> str:
    """datasets wraps the useful part ("because column names don't match") in the cause's last line."""
    lines = str(error.__cause__ or "").strip().splitlines()
    return f"{error} ({lines[-1]})" if lines else str(error)


def _unreachable_message(ref: str, error: Exception) -> str:
    return (
        f"Cannot load the dataset {ref!r} from the Hugging Face Hub: the Hub could not be reached or has no "
        f"such dataset, and no copy is cached under HF_HOME ({error}). To run without the Hub, pass "
        f"--data PATH with a local directory of {{domain}}{FILE_SUFFIX} files, or --data sample for the "
        f"small sample bundled with awbench."
    )
