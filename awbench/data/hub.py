"""Hugging Face Hub datasets: load a dataset reference's splits with the benchmark's record schema, and say
what to do instead when the Hub cannot be reached. Validating the rows is `awbench.data.dataset`'s job.

Failing fast without the Hub: left to themselves, `datasets` and `huggingface_hub` retry a Hub that does
not answer (a file with no cached copy is asked for again with a backoff of 1, 2, 4, 8, 8 s: about 25 s for
a dataset, about a minute for a tokenizer's several files) before they give up. So unless HF_HUB_OFFLINE is
set, `hub_unreachable` first asks the Hub once, without retries; when that gets no answer the load runs as
with HF_HUB_OFFLINE=1, which uses a copy cached under HF_HOME if there is one and fails at once if not.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any

from awbench.data.problems import DataError
from awbench.domains import FILE_SUFFIX


def load_hub_dataset(ref: str) -> Mapping[str, Any]:
    """Split name -> rows (each a dict of column -> value)."""
    import datasets  # heavy; only Hub sources need it

    local = os.path.exists(ref)
    offline = hub_offline()
    unreachable = None if local or offline else hub_unreachable()
    try:
        with _offline_mode() if unreachable else nullcontext():
            try:
                return datasets.load_dataset(ref, features=_hub_features(datasets))
            except (datasets.exceptions.DatasetGenerationError, ValueError):
                # Columns beyond the known ones, or values that do not fit the schema: let datasets infer types.
                return datasets.load_dataset(ref)
    except (ConnectionError, datasets.exceptions.DatasetNotFoundError, FileNotFoundError) as e:
        if local:
            raise DataError(f"cannot load dataset {ref}: {e}") from None
        raise DataError(_unavailable_message(ref, e, offline, unreachable)) from None
    except (datasets.exceptions.DatasetsError, ValueError, OSError) as e:
        raise DataError(f"cannot load dataset {ref}: {_reason(e)}") from None


def hub_offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set: use cached copies only, never ask the Hub."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def hub_unreachable() -> str | None:
    """None when one request to the Hub (HF_ENDPOINT) gets any answer at all; otherwise why it did not. One
    try, no retries, within HF_HUB_ETAG_TIMEOUT (10 s unless set)."""
    from huggingface_hub import constants, get_session

    try:
        get_session().head(constants.ENDPOINT, timeout=constants.HF_HUB_ETAG_TIMEOUT)
    except Exception as e:
        return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    return None


@contextmanager
def _offline_mode() -> Iterator[None]:
    """As if HF_HUB_OFFLINE=1 had been set before the libraries were imported (they read it at import)."""
    import datasets
    from huggingface_hub import constants

    saved = constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE = saved


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


def no_hub(offline: bool, unreachable: str | None) -> str:
    """Why nothing could come from the Hub, and what to do about it: for messages that go on from here."""
    from huggingface_hub import constants

    cached = f"no copy is cached under HF_HOME ({constants.HF_HOME})"
    if offline:
        return (
            f"HF_HUB_OFFLINE is set and {cached}. Unset HF_HUB_OFFLINE to download it, set HF_HOME to "
            f"where a copy is cached"
        )
    return (
        f"the Hugging Face Hub ({constants.ENDPOINT}) cannot be reached ({unreachable}) and {cached}. Set "
        f"HF_HOME to where a copy is cached (HF_HUB_OFFLINE=1 then skips asking the Hub)"
    )


def _unavailable_message(ref: str, error: Exception, offline: bool, unreachable: str | None) -> str:
    # Worded for both `run --data` and the SOURCE argument of `awbench data`.
    local = (
        f"give instead a local directory of {{domain}}{FILE_SUFFIX} files, or `sample` for the small sample "
        f"bundled with awbench"
    )
    if offline or unreachable:
        return f"Cannot load the dataset {ref!r}: {no_hub(offline, unreachable)}, or {local}."
    return (
        f"Cannot load the dataset {ref!r} from the Hugging Face Hub: {_short(error)}. Check the name (owner/name), "
        f"or log in (`hf auth login`) for a private or gated dataset; to run without the Hub, {local}."
    )


def _short(error: Exception) -> str:
    """The library's own words, on one line."""
    text = " ".join(str(error).split())
    return text if len(text) <= 300 else text[:297] + "..."
