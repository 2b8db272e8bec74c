"""One settings model per run. The CLI and the Python API both build a `RunConfig`; `run.json` stores it.

Fields marked `operational` change how a run executes (endpoints, concurrency, timeouts, prices) but not
what it computes, so they may differ when a run is resumed. Every other field is part of the run's identity:
resuming a run with a different value is refused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticUndefined

from awbench.errors import SettingsError
from awbench.files import StoreError, read_json
from awbench.redact import (
    looks_like_key,
    register_named_secrets,
    register_secret,
    secrets_masked,
    url_has_credentials,
    url_secrets_masked,
)

SCHEMA_VERSION = 1
DEFAULT_DATA = "Qwen/AgentWorldBench"
DEFAULT_JUDGE_MODEL = "gpt-5.2-2025-12-11"


def operational(default: Any = PydanticUndefined, **kwargs: Any) -> Any:
    return Field(default, json_schema_extra={"operational": True}, **kwargs)


def refuse_credentials(url: str | None, key_option: str) -> str | None:
    """A base URL's user name or password would be written wherever the URL is (run.json, messages): the key
    goes in an environment variable instead."""
    if url is not None and url_has_credentials(url):
        raise ValueError(
            f"a URL with a user name or password (user:key@host) is refused, so that the key is "
            f"never recorded: give the URL without it, and the key in an environment variable "
            f"named with {key_option}"
        )
    return url


def refuse_key_as_name(name: str | None) -> str | None:
    """The NAME of the environment variable that holds a key is wanted, not the key: one that looks like a key
    is refused without being repeated (and masked wherever it would be)."""
    if name is not None and looks_like_key(name):
        register_secret(name)
        raise ValueError("looks like a key itself; give the NAME of the environment variable that holds it")
    return name


def _registered(value: dict[str, Any]) -> dict[str, Any]:
    register_named_secrets(value)
    return value


def _masked(value: dict[str, Any]) -> Any:
    return secrets_masked(value)


# Settings sent or given as they are (extra request fields and headers, model and engine arguments): the secrets
# named in them are registered when the settings are made, so that an endpoint echoing one is masked, and are
# masked where the settings are written (run.json, judge.json, turing.json, pair.json: `secrets_masked`).
WithSecrets = Annotated[dict[str, Any], AfterValidator(_registered), PlainSerializer(_masked, when_used="json")]


# Bounds of the settings that size what a run holds (its requests, its verdicts, its worker processes), far above
# any use of the benchmark: a typo (`--generations 1000000000`) is refused in our words, not a MemoryError.
MAX_GENERATIONS = 100
MAX_JUDGE_SAMPLES = 100
MAX_RULE_WORKERS = 64
MAX_PRICE = 1e6  # USD per million tokens, a dollar a token: a price above it would make a cost of infinity


class _Settings(BaseModel):
    # Numbers are finite: JSON has no NaN or infinity, and run.json would record them as null.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class DataSettings(_Settings):
    source: str = DEFAULT_DATA
    domains: list[str] | None = None
    limit: int | None = None  # per domain
    ids: list[str] | None = None
    sample: int | None = None  # stratified by domain
    seed: int = 0
    skip_invalid: bool = operational(False)


# Engine settings older runs recorded as fields of their own, with the value awbench then gave vllm.LLM by default:
# `vllm.LLM` arguments now (`engine_args`), kept there when they differ from it.
RETIRED_ENGINE_FIELDS = {
    "dtype": "auto",
    "trust_remote_code": False,
    "enable_prefix_caching": True,
    "distributed_executor_backend": None,
    "data_parallel_size": 1,
}


class EngineSettings(_Settings):
    """vLLM's offline engine in this process: the candidate's (`--backend vllm`, ModelSettings.engine) and the
    judge's (`--judge-backend vllm`, JudgeSettings.engine). awbench's own settings are fields; any other
    `vllm.LLM` argument is in `engine_args`, which holds these fields' names too on the way in (`--engine-arg
    batch_size=64`): a field is given either way, and kept in one place.

    What a candidate's run computes depends on its context window and its other arguments; not on how many GPUs
    it takes, how much of their memory, nor its batches. The judge's engine is operational as a whole: its
    verdicts are the same on any deployment (the judge id leaves it out)."""

    max_model_len: int | None = Field(None, ge=1)
    tensor_parallel_size: int = operational(1, ge=1)
    gpu_memory_utilization: float = operational(0.9, gt=0, le=1)
    batch_size: int = operational(256, ge=1)  # prompts per LLM.chat call; each batch's results are saved at once
    engine_args: WithSecrets = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _one_place_each(cls, values: Any) -> Any:
        return engine_values(values) if isinstance(values, dict) else values


def engine_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """EngineSettings' values, each in its one place: fields named in `engine_args` become the fields (the
    argument wins, as vllm.LLM got it before), retired fields of an older run.json become arguments."""
    values, args = dict(values), values.get("engine_args") or {}
    if not isinstance(args, dict):  # left to the field's validation, which names it
        return values
    args = dict(args)
    for name, default in RETIRED_ENGINE_FIELDS.items():
        if name in values and (value := values.pop(name)) != default:
            args.setdefault(name, value)
    for name in EngineSettings.model_fields.keys() & args.keys():
        values[name] = args.pop(name)
    return values | {"engine_args": args}


# ModelSettings' fields before EngineSettings (the retired ones included), moved into its `engine` when read.
LEGACY_ENGINE_FIELDS = {*EngineSettings.model_fields, *RETIRED_ENGINE_FIELDS}


class ModelSettings(_Settings):
    model: str
    # A name in the registry (awbench.plugins: baseline, openai, vllm, or an installed package's), or
    # imported: predictions came from a file.
    backend: str
    # Sampling
    temperature: float = 0.6
    top_p: float | None = None
    max_tokens: int = Field(32768, ge=1)
    seed: int | None = None  # the run seed; each sample gets its own seed derived from it
    generations: int = Field(1, ge=1, le=MAX_GENERATIONS)  # independent generations per sample, each judged
    extra_body: WithSecrets = Field(default_factory=dict)
    stop: list[str] = Field(default_factory=list)  # strings that end a generation (a base model runs on without)
    # OpenAI-compatible endpoints
    base_urls: list[str] = operational(default_factory=list)
    api_key_env: str | None = operational(None)
    concurrency: int = operational(64, ge=1)
    request_timeout: float = operational(600.0, gt=0)
    max_retries: int = operational(6, ge=0)  # at most 1 + max_retries calls per generation
    check_timeout: float | None = operational(None, gt=0)  # the endpoint check's patience; None: by the server's place
    # The endpoint's rate limits when known up front (else learnt from its x-ratelimit-* headers and 429s)
    tpm: int | None = operational(None, ge=1)
    rpm: int | None = operational(None, ge=1)
    # A `prompt_cache_key` per trajectory on each request (prompt cache routing); None: on OpenAI's API only
    prompt_cache_key: bool | None = operational(None)
    # In-process vLLM
    engine: EngineSettings = Field(default_factory=EngineSettings)
    overlength: Literal["skip", "truncate-history"] = "skip"
    # A Python world model (`--model python:...`, awbench.backends.python_model): its class's keyword arguments
    model_args: WithSecrets = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _engine_nested(cls, values: Any) -> Any:
        """A run.json of awbench 0.3 and before holds the engine's settings beside the others."""
        if not isinstance(values, dict) or not (flat := LEGACY_ENGINE_FIELDS & values.keys()):
            return values
        nested = {name: value for name, value in values.items() if name not in flat}
        return nested | {"engine": {**{name: values[name] for name in flat}, **dict(values.get("engine") or {})}}

    @field_validator("base_urls")
    @classmethod
    def _no_credentials(cls, urls: list[str]) -> list[str]:
        for url in urls:
            refuse_credentials(url, "--api-key-env")
        return urls

    @field_validator("api_key_env")
    @classmethod
    def _a_name(cls, name: str | None) -> str | None:
        return refuse_key_as_name(name)

    @field_serializer("base_urls", when_used="json")
    def _masked(self, urls: list[str]) -> list[str]:  # in run.json: a key in a query parameter is not kept
        return [url_secrets_masked(url) for url in urls]


# Settings that one option gives the candidate and the judge alike (--prompt-cache-key, --check-timeout): refused
# only when neither party would use them.
SHARED_FIELDS = ("prompt_cache_key", "check_timeout")
ENDPOINT_FIELDS = ("base_urls", "api_key_env", "concurrency", "request_timeout", "max_retries", *SHARED_FIELDS)
ENGINE_FIELDS = ("engine", "overlength")
PYTHON_FIELDS = ("model_args",)
SAMPLING_FIELDS = ("temperature", "top_p", "max_tokens", "stop", "extra_body")
# The one rule for what a party does not use, the candidate's backends here and the judges' below: a setting given
# that its backend has no use for is refused, named, with why; recorded in run.json it would claim a setting
# that was never applied. A backend an installed package adds is not second-guessed.
UNUSED_MODEL_FIELDS = {
    "openai": (
        ENGINE_FIELDS + PYTHON_FIELDS,
        "the endpoint's server runs the model with its own engine settings and context window",
    ),
    "vllm": (ENDPOINT_FIELDS + PYTHON_FIELDS, "they are for an OpenAI-compatible endpoint, --base-url"),
    "baseline": (
        ENDPOINT_FIELDS + ENGINE_FIELDS + PYTHON_FIELDS + SAMPLING_FIELDS,
        "a baseline calls no model and samples nothing",
    ),
    # --concurrency stays: predictions in flight, on the event loop or in a thread pool.
    "python": (
        tuple(f for f in ENDPOINT_FIELDS if f != "concurrency") + ENGINE_FIELDS + ("top_p", "extra_body", "stop"),
        "a Python world model runs in this process and is given only seed, max_tokens and temperature",
    ),
}


def unused_model_fields(backend: str, given: Iterable[str]) -> tuple[list[str], str]:
    """The given ModelSettings fields that `backend` would ignore, and why (for a message)."""
    unused, why = UNUSED_MODEL_FIELDS.get(backend, ((), ""))
    return [name for name in given if name in unused], why


class JudgeSettings(_Settings):
    kind: Literal["llm", "rules", "both"] = "llm"
    model: str = DEFAULT_JUDGE_MODEL
    # openai: an OpenAI-compatible endpoint; vllm: in this process, with vLLM's offline engine (`engine`).
    # Not part of the judge id: the same model, sampling and prompts give the same kind of verdicts either way.
    backend: str = operational("openai")  # a judge backend in the registry (awbench.plugins)
    temperature: float = Field(0.6, ge=0)
    max_tokens: int = Field(32768, ge=1)
    reasoning_effort: str | None = None
    extra_body: WithSecrets = Field(default_factory=dict)
    stop: list[str] = Field(default_factory=list)
    structured: bool = False
    samples: int = Field(1, ge=1, le=MAX_JUDGE_SAMPLES)  # independent verdicts per prediction
    prompts: str = "rubric"  # a built-in prompt set name or a directory
    template: str | None = None  # a user-prompt template file
    base_url: str | None = operational(None)
    api_key_env: str | None = operational(None)  # None: OPENAI_API_KEY, needed only by the OpenAI API itself
    concurrency: int = operational(32, ge=1)
    # The rule judge's worker processes for a large run (awbench.judging.rules.judge); None: one per CPU, at most 4.
    rule_workers: int | None = operational(None, ge=0, le=MAX_RULE_WORKERS)
    max_retries: int = operational(5, ge=0)  # at most 1 + max_retries calls per verdict: transport retries and re-asks
    tpm: int | None = operational(None, ge=1)  # the endpoint's rate limits known up front, as the candidate's
    rpm: int | None = operational(None, ge=1)
    prompt_cache_key: bool | None = operational(None)  # as the candidate's
    request_timeout: float = operational(600.0, gt=0)
    check_timeout: float | None = operational(None, gt=0)  # the endpoint check's patience, as the candidate's
    price_in: float | None = operational(None, ge=0, le=MAX_PRICE)  # USD per million prompt tokens
    price_out: float | None = operational(None, ge=0, le=MAX_PRICE)
    max_cost: float | None = operational(None, ge=0)
    engine: EngineSettings = operational(default_factory=EngineSettings)
    # The OpenAI Batch API (awbench.judging.llm.batch_judge): how the calls travel, not what they are, so none of these
    # is part of the judge's identity (its id and verdict cache keys).
    batch: bool = operational(False)
    batch_fallback: Literal["batch", "direct"] = operational("batch")  # how a batch's re-asks are sent
    batch_poll_interval: float = operational(30.0, gt=0)  # seconds between looks at the batches in flight
    # The organisation's enqueued-token limit for the judge model (else learnt from the first refusal)
    batch_tokens: int | None = operational(None, ge=1)

    @field_validator("base_url")
    @classmethod
    def _no_credentials(cls, url: str | None) -> str | None:
        return refuse_credentials(url, "--judge-api-key-env")

    @field_validator("api_key_env")
    @classmethod
    def _a_name(cls, name: str | None) -> str | None:
        return refuse_key_as_name(name)

    @field_serializer("base_url", when_used="json")
    def _masked(self, url: str | None) -> str | None:  # in run.json and judge.json
        return None if url is None else url_secrets_masked(url)

    @model_validator(mode="after")
    def _batch_needs_the_api(self) -> JudgeSettings:
        if self.batch and self.backend == "vllm":
            raise ValueError("the Batch API (batch) is for an OpenAI endpoint; the vllm judge batches in this process")
        return self

    @property
    def uses_llm(self) -> bool:
        return self.kind in ("llm", "both")

    @property
    def uses_rules(self) -> bool:
        return self.kind in ("rules", "both")


JUDGE_ENDPOINT_FIELDS = ("base_url", "api_key_env", "concurrency", "request_timeout", "tpm", "rpm", *SHARED_FIELDS)
BATCH_FIELDS = ("batch_fallback", "batch_poll_interval", "batch_tokens")
COST_FIELDS = ("price_in", "price_out", "max_cost")


def unused_judge_fields(settings: JudgeSettings, given: Iterable[str]) -> list[tuple[list[str], str]]:
    """The given JudgeSettings fields the judge of `settings` would ignore, each group with what ignores them and
    why (the same rule as `unused_model_fields`). LLM judge settings on a rule judge are `judge_settings`'s: they
    ask for an LLM judge."""
    rules = [
        (not settings.uses_rules, ("rule_workers",), "an LLM judge alone (rule scoring only: --judge rules or both)"),
        (not settings.uses_llm, SHARED_FIELDS, "the rule judge (it calls no endpoint)"),
        (
            settings.backend == "vllm",
            JUDGE_ENDPOINT_FIELDS + BATCH_FIELDS + ("batch",) + COST_FIELDS,
            "the vllm judge backend (it runs in this process: no endpoint, no price)",
        ),
        (
            settings.backend == "openai",
            ("engine",),
            "the openai judge backend (the in-process judge's: --judge-backend vllm)",
        ),
        (
            settings.backend == "openai" and not settings.batch,
            BATCH_FIELDS,
            "direct judge calls (the Batch API's: --judge-batch)",
        ),
    ]
    given = list(given)
    found = []
    for applies, fields, whom in rules:
        if applies and (unused := [name for name in given if name in fields]):
            found.append((unused, whom))
    return found


# JudgeSettings fields that mean something to the rule judge too, or that one option gives the candidate too
# (SHARED_FIELDS); giving any other asks for an LLM judge.
RULE_JUDGE_FIELDS = ("kind", "rule_workers", *SHARED_FIELDS)


def judge_settings(
    base: JudgeSettings | None, changes: Mapping[str, Any], names: Mapping[str, str] = {}
) -> JudgeSettings:
    """The judge asked for: `changes` (JudgeSettings fields; `engine` a dict of some of its engine's fields) over
    `base` (a run's primary judge; None: the defaults). What the CLI's judge options and the Python API both mean:
    - a `base_url` means the HTTP judge (`backend` openai), as an endpoint means the openai candidate backend;
    - LLM judge settings on a rule judge ask for an LLM judge beside it (`kind` llm), unless `kind` rules is
      itself asked for, which is refused.
    SettingsError names the settings as `names` does (`JudgeSettings.<field>` -> the caller's word; default: the
    field's name); ValidationError when a value is out of range."""

    def name(field: str) -> str:
        return names.get(f"JudgeSettings.{field}", field)

    given = dict(changes)
    if "base_url" in given and given.setdefault("backend", "openai") == "vllm":
        raise SettingsError(f"{name('base_url')} is for {name('backend')} openai: the vllm judge runs in this process")
    base = base or JudgeSettings()
    llm_fields = [field for field in changes if field not in RULE_JUDGE_FIELDS]
    if llm_fields and given.get("kind", base.kind) == "rules":
        if "kind" in given:
            listed = ", ".join(
                name(f"engine.{e}") if f == "engine" else name(f)
                for f in llm_fields
                for e in (changes["engine"] if f == "engine" else [f])
            )
            verb, pronoun = ("does", "it") if len(listed.split(", ")) == 1 else ("do", "them")
            raise SettingsError(
                f"{listed} {verb} not apply to {name('kind')} rules (an LLM judge's settings; the rule judge is "
                f"offline and free): leave {pronoun} out, or use {name('kind')} llm or both"
            )
        given["kind"] = "llm"
    values = base.model_dump()
    engine = engine_values(given.pop("engine", {}))
    args = {**values["engine"]["engine_args"], **engine.pop("engine_args")}  # each argument given changes one
    return JudgeSettings.model_validate(
        {**values, **given, "engine": {**values["engine"], **engine, "engine_args": args}}
    )


class ScoringSettings(_Settings):
    failure_policy: Literal["minimum", "exclude"] = operational("minimum")
    max_failure_rate: float = operational(0.05, ge=0, le=1)


# The folders awbench makes under --output beside the runs (awbench.run.pairwise's comparisons): no run takes their
# names, in any case (a file system may not tell `Pairwise` from `pairwise`).
PAIRWISE_DIR = "pairwise"
OWN_FOLDERS = (PAIRWISE_DIR,)
PAIR_FILE = "pair.json"  # in each pair's folder under PAIRWISE_DIR: which runs, which judge


def check_run_name(name: str) -> str:
    """A run's name, or ValueError saying what is wrong with it. The run directory is `output/run_name`, which
    awbench writes, empties on --overwrite and removes when a run fails before its first record: a directory of
    its own right under `output`, never `..` or a path elsewhere, nor a folder awbench makes there. Printable
    (str.isprintable: no control, format or line-separator character), since the name reaches terminals, logs and
    reports; without a space at either end, which no listing shows."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise ValueError(
            f"must be a plain name (no '/', not starting with '.'): the run's directory under --output; got {name!r}"
        )
    if not name.isprintable():
        bad = next(c for c in name if not c.isprintable())
        raise ValueError(
            f"must be printable (no control characters such as a newline or tab): U+{ord(bad):04X} "
            f"at position {name.index(bad)}; got {name!r}"
        )
    if name != name.strip():
        position = 0 if name[0].isspace() else len(name) - 1
        raise ValueError(
            f"must not start or end with a space: U+{ord(name[position]):04X} at position {position}; got {name!r}"
        )
    if name.casefold() in OWN_FOLDERS:
        raise ValueError(f"{name!r} is the folder of awbench's pairwise comparisons under --output: choose another")
    return name


class RunConfig(_Settings):
    schema_version: int = SCHEMA_VERSION
    run_name: str
    output: Path = operational(Path("results"))
    data: DataSettings = Field(default_factory=DataSettings)
    model: ModelSettings
    judge: JudgeSettings | None = None  # None until the run is judged (`awbench infer`)
    scoring: ScoringSettings = Field(default_factory=ScoringSettings)
    retry_failed: bool = operational(False)  # also redo permanent failures (overlength, refusals, unparsed verdicts)

    @field_validator("run_name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        return check_run_name(name)

    @property
    def run_dir(self) -> Path:
        return self.output / self.run_name


def identity(settings: BaseModel) -> dict[str, Any]:
    """The settings that define what a run computes, flattened to dotted names."""
    flat: dict[str, Any] = {}
    for name, field in type(settings).model_fields.items():
        extra = field.json_schema_extra
        if isinstance(extra, dict) and extra.get("operational"):
            continue
        value = getattr(settings, name)
        if isinstance(value, BaseModel):
            flat.update({f"{name}.{k}": v for k, v in identity(value).items()})
        else:
            flat[name] = value
    return flat


def differing_settings(old: BaseModel, new: BaseModel, ignore: tuple[str, ...] = ()) -> list[str]:
    """Names of identity settings whose values differ, as 'name: old -> new'. Secrets are compared masked, as
    run.json records them: a key is not what a run computes, and is never shown."""
    a, b = secrets_masked(identity(old)), secrets_masked(identity(new))
    return [
        f"{name}: {a.get(name)!r} -> {b.get(name)!r}"
        for name in sorted(a.keys() | b.keys())
        if a.get(name) != b.get(name) and not name.startswith(ignore)
    ]


def default_run_name(model: str, judge: JudgeSettings | None, output: Path | None = None) -> str:
    """`MODEL__JUDGE` with each character a directory name should not hold as `-`. Two models or judges may give
    one name (`j/x` and `j:x`): when the run of that name under `output` was made for another, the name is made
    distinct with a short hash of what it was made from, so that neither run is resumed as the other's."""
    raw = _default_name_source(model, judge.kind if judge else None, judge.model if judge else None)
    name = _plain(raw)
    made_for = _default_name_source_of(output / name) if output is not None else None
    if made_for is not None and made_for != raw and _plain(made_for) == name:
        return f"{name}-{hashlib.sha256(raw.encode()).hexdigest()[:6]}"
    return name


def _default_name_source(model: str, judge_kind: str | None, judge_model: str | None) -> str:
    judge_part = {"llm": judge_model, "rules": "rules", "both": f"{judge_model}+rules"}.get(judge_kind or "")
    return f"{model}__{judge_part or 'unjudged'}"


def _plain(raw: str) -> str:
    # `./my-model` gives `my-model__...`: a run name never starts with "." (a hidden directory, or "..").
    return "".join(c if c.isalnum() or c in "-._+" else "-" for c in raw).lstrip(".-").rstrip("-")


def _default_name_source_of(run_dir: Path) -> str | None:
    """What the run at `run_dir` was made from, as `default_run_name` spells it; None when there is no run to read."""
    try:
        config = read_json(run_dir / "run.json")["config"]
        judge = config["judge"] or {}
        return _default_name_source(config["model"]["model"], judge.get("kind"), judge.get("model"))
    except (StoreError, KeyError, TypeError, AttributeError):
        return None
