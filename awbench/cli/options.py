"""The options of `run`, `infer`, `judge` and `score`, declared once, in groups that each set one settings model.

An option's default is its settings field's own (`awbench.config`); `command(*groups)` gives a command the
groups' options and hands it an `Options`: every value, and which were given (on the command line or in a
`--config` file; a flag overrides the file). Settings are built from the values given or from all of them
(`Group.settings`); rules that merge options into a run's existing settings are the config layer's.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, get_origin

import typer
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import PydanticUndefined

from awbench import plugins
from awbench.cli.common import fail, plain_message, retired_option
from awbench.cli.config_file import (
    ConfigFileError,
    config_document,
    key_line,
    read_toml,
    refuse_masked,
    unknown_key,
)
from awbench.config import (
    DEFAULT_JUDGE_MODEL,
    MAX_GENERATIONS,
    MAX_JUDGE_SAMPLES,
    MAX_PRICE,
    MAX_RULE_WORKERS,
    DataSettings,
    EngineSettings,
    JudgeSettings,
    ModelSettings,
    RunConfig,
    ScoringSettings,
)
from awbench.data.json_lines import TOO_DEEP, value_problems
from awbench.redact import quoted
from awbench.suggest import did_you_mean

# --- Converting an option's value to its settings field's ----------------------------------------------------


def _csv(values: list[str] | None, option: str) -> list[str] | None:
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _json(text: str, where: str) -> Any:
    """`text` as JSON (JSONDecodeError if it is not); JSON that Python's reader gives up on (nesting past its
    recursion limit, a whole number past its digit limit) is exit 2 naming `where`."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        fail(f"{where}: {TOO_DEEP}", key="bad_option")
    except ValueError:  # an integer of more than sys.get_int_max_str_digits() digits
        fail(f"{where}: a whole number of more than {sys.get_int_max_str_digits()} digits", key="bad_option")


def unrecordable(fields: Mapping[str, Any]) -> str | None:
    """What keeps a JSON option's value (its fields) from being recorded in run.json and read back equal, at
    any depth: NaN or an infinity (JSON has none, and Python's reader takes `NaN`, `Infinity`, `1e999`; written
    as null, a resumed run would differ from itself), text that is not Unicode, nesting past MAX_NESTING."""
    problems = value_problems(fields.items(), "", None, finite=True)
    if not problems:
        return None
    return f"{problems[0].field}: {problems[0].message}" if problems[0].field else problems[0].message


def _json_object(value: str | None, option: str) -> dict[str, Any]:
    if not value:
        return {}
    try:
        parsed = _json(value, option)
    except json.JSONDecodeError as error:
        fail(f"{option}: not valid JSON ({error.msg} at character {error.pos}): {value}", key="bad_option")
    if not isinstance(parsed, dict):
        fail(f"{option}: expected a JSON object, got {type(parsed).__name__}", key="bad_option")
    if problem := unrecordable(parsed):
        fail(f"{option}: {problem}", key="bad_option")
    return parsed


def engine_args(pairs: list[str] | None, option: str = "--engine-arg") -> dict[str, Any]:
    """KEY=VALUE pairs; values that parse as JSON (true, 4, {...}) are passed typed, others as strings."""
    args: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"{option} expects KEY=VALUE, got {pair!r}", key="bad_option")
        try:
            args[key.replace("-", "_")] = _json(value, f"{option} {key}")
        except json.JSONDecodeError:
            args[key.replace("-", "_")] = value
    if problem := unrecordable(args):
        fail(f"{option}: {problem}", key="bad_option")
    return args


def _registered(group: plugins.Group, value: str | None, option: str) -> str | None:
    """A backend's name, one the registry knows (awbench's own or an installed package's)."""
    known = plugins.names(group)
    if value is not None and value not in known:
        fail(
            f"{option}: {quoted(value)} is not one of {', '.join(map(repr, known))}{did_you_mean(value, known)}",
            key="bad_option",
        )
    return value


def _list(values: list[str] | None, option: str) -> list[str]:
    return list(values or [])


# --- Declarations ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Opt:
    name: str  # the parameter: `--name-with-dashes` on the command line, `name` in a config file
    field: str  # the settings field it sets; `engine.<field>` for one of its EngineSettings
    type: Any  # its value's type on the command line (a list: the option repeats)
    help: str = ""
    min: float | None = None
    max: float | None = None
    flag: str | None = None  # a boolean's flags, when not just `--name`
    default_text: str | None = None  # what help says the default is, when the value alone does not say it
    convert: Callable[[Any, str], Any] | None = None  # value -> the settings field's value
    json_object: bool = False  # a JSON object: in a config file, an inline table (or the JSON as a string)
    required: bool = False  # for a settings field without a default: the option must be given
    panel: str | None = None  # the panel of `--help` it is listed in, when not its group's
    metavar: str | None = None  # its value in `--help`, when its type's (N, NUMBER, TEXT) says too little

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Group:
    title: str  # the panel of `--help` its options are listed in
    settings: type[BaseModel]
    options: tuple[Opt, ...]

    def only(self, *names: str) -> Group:
        return replace(self, options=tuple(o for o in self.options if o.name in names))

    def defaulting_to(self, text: str) -> Group:
        """The same options, their help saying that the default is `text` (a run's own setting)."""
        return replace(self, options=tuple(replace(o, default_text=text) for o in self.options))

    def default(self, opt: Opt) -> Any:
        """The option's default: its settings field's own, None for a field without one or a container."""
        model, name = self.settings, opt.field
        if "." in name:
            outer, name = name.split(".", 1)
            model = model.model_fields[outer].annotation  # type: ignore[assignment]
        value = model.model_fields[name].get_default(call_default_factory=True)
        return None if value is PydanticUndefined or isinstance(value, (dict, list)) else value

    def settings_values(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Settings fields from the values of this group's options found in `values` (engine fields nested)."""
        fields: dict[str, Any] = {}
        for opt in self.options:
            if opt.name in values:
                value = values[opt.name] if opt.convert is None else opt.convert(values[opt.name], opt.option)
                outer, _, inner = opt.field.rpartition(".")
                (fields.setdefault(outer, {}) if outer else fields)[inner] = value
        return fields


def with_default(help: str, shown: str) -> str:
    """A help text ending with its default, as typer shows a number's (a text's it puts in parentheses);
    escaped, or rich would take `[default: ...]` for markup and drop it."""
    return f"{help} \\[default: {shown}]".strip()


def _shown_default(opt: Opt, default: Any) -> str | Literal[False]:
    if opt.default_text is not None:
        return opt.default_text
    if default is None or (opt.type is bool and opt.flag is None):
        return False
    if opt.type is bool:
        on, off = opt.flag.split("/")  # type: ignore[union-attr]
        return (on if default else off).lstrip("-")
    return f"{default:g}" if isinstance(default, float) else str(default)


def _parameter(group: Group, opt: Opt) -> inspect.Parameter:
    default = group.default(opt)
    shown = _shown_default(opt, default)
    text = opt.help if shown is False else with_default(opt.help, shown)
    info = typer.Option(
        opt.flag or opt.option,
        help=text,
        show_default=False,
        metavar=opt.metavar or ("JSON" if opt.json_object else None),
        min=opt.min,
        max=opt.max,
        rich_help_panel=opt.panel or group.title,
    )
    if opt.required:
        return inspect.Parameter(opt.name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[opt.type, info])
    kind = opt.type if default is not None else Optional[opt.type]  # noqa: UP045 (any opt.type, even a typing form)
    return inspect.Parameter(
        opt.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, info]
    )


# --- The groups ------------------------------------------------------------------------------------------------

DATA = Group(
    "Data and selection",
    DataSettings,
    (
        Opt(
            "data",
            "source",
            str,
            "'sample' (bundled), a directory of *_test.jsonl, a JSONL file, or a Hugging Face dataset id.",
        ),
        Opt("domains", "domains", list[str], "Only these domains (repeat or comma-separate).", convert=_csv),
        Opt("limit", "limit", int, "At most N samples per domain.", min=1),
        Opt("ids", "ids", list[str], "Only these ids or sample keys (repeat or comma-separate).", convert=_csv),
        Opt("sample", "sample", int, "A stratified random subset of N samples.", min=1),
        Opt("seed", "seed", int, "Seed of --sample, and of sampling (each sample gets its own seed)."),
        Opt("skip_invalid", "skip_invalid", bool, "Leave invalid records out instead of refusing the data."),
    ),
)

MODEL_ENDPOINT = "Model endpoint (--base-url)"
# Options for the candidate's requests and the judge's alike (ModelSettings' and JudgeSettings' field, config.
# SHARED_FIELDS): in a command with both groups each is listed once and sets both.
PROMPT_CACHE_KEY = Opt(
    "prompt_cache_key",
    "prompt_cache_key",
    bool,
    "Send each request (the candidate's and the judge's) a prompt_cache_key, a hash of its trajectory, so that the provider keeps a trajectory's requests on one prompt cache; some servers refuse fields they do not know.",
    flag="--prompt-cache-key/--no-prompt-cache-key",
    default_text="on for OpenAI's API only",
    panel=MODEL_ENDPOINT,
)
CHECK_TIMEOUT = Opt(
    "check_timeout",
    "check_timeout",
    float,
    "Seconds each endpoint's first check (GET /models; the candidate's and the judge's) may take before the command stops, nothing sent.",
    min=0.001,
    metavar="SECONDS",
    default_text="60 for a server on this machine or network, else 10",
    panel=MODEL_ENDPOINT,
)
MODEL_ENGINE = "Model engine (--backend vllm: in this process)"


def engine_arg_opt(name: str, whose: str, panel: str = MODEL_ENGINE) -> Opt:
    """The KEY=VALUE option of an in-process engine (`config.EngineSettings`): the candidate's, the judge's."""
    return Opt(
        name,
        "engine.engine_args",
        list[str],
        f"KEY=VALUE for {whose} vLLM engine, repeatable: batch_size (prompts per LLM.chat call, 256), "
        "max_model_len, tensor_parallel_size, gpu_memory_utilization, or any other vllm.LLM argument "
        "(dtype=bfloat16, trust_remote_code=true...); JSON values are typed.",
        default_text="none",
        convert=engine_args,
        panel=panel,
        metavar="KEY=VALUE",
    )


MODEL = Group(
    "Model and sampling",
    ModelSettings,
    (
        Opt(
            "model",
            "model",
            str,
            "A model path or id, baseline:oracle|last-observation|empty, or a Python world model: python:MODULE:NAME, or python:NAME installed by a package (docs/extending.md).",
            required=True,
        ),
        Opt(
            "backend",
            "backend",
            str,
            "baseline, openai, vllm, python, or one an installed package adds (docs/extending.md). Default: from --model and --base-url.",
            convert=lambda value, option: _registered("awbench.backends", value, option),
        ),
        Opt(
            "base_url",
            "base_urls",
            list[str],
            "OpenAI-compatible endpoint; repeat to spread requests over several.",
            convert=_list,
            panel=MODEL_ENDPOINT,
        ),
        Opt(
            "api_key_env",
            "api_key_env",
            str,
            "Environment variable that holds the endpoint's API key.",
            panel=MODEL_ENDPOINT,
        ),
        Opt("temperature", "temperature", float, min=0.0),
        Opt("top_p", "top_p", float, min=0.0, max=1.0),
        Opt("max_tokens", "max_tokens", int, "Generation budget per sample, thinking included.", min=1),
        Opt(
            "generations",
            "generations",
            int,
            "Independent generations per sample (distinct seeds), each judged; a sample scores their mean.",
            min=1,
            max=MAX_GENERATIONS,
        ),
        Opt(
            "extra_body",
            "extra_body",
            str,
            'JSON merged into each request, e.g. \'{"chat_template_kwargs": {"enable_thinking": false}}\'.',
            convert=_json_object,
            json_object=True,
        ),
        Opt(
            "stop",
            "stop",
            list[str],
            "A string that ends a generation (repeatable), e.g. for a base model: '### Turn'.",
            convert=_list,
        ),
        Opt(
            "concurrency",
            "concurrency",
            int,
            "Requests in flight (openai backend); predictions in flight (python backend: tasks, or threads for a plain function).",
            min=1,
            panel=MODEL_ENDPOINT,
        ),
        Opt(
            "request_timeout",
            "request_timeout",
            float,
            "Seconds per request before it is retried.",
            min=0.001,
            metavar="SECONDS",
            panel=MODEL_ENDPOINT,
        ),
        Opt(
            "max_retries",
            "max_retries",
            int,
            "At most 1 + N calls per generation (transient errors only are retried; rate-limit refusals wait and do not count).",
            min=0,
            panel=MODEL_ENDPOINT,
        ),
        CHECK_TIMEOUT,
        Opt(
            "tpm",
            "tpm",
            int,
            "The endpoint's tokens per minute (prompt + --max-tokens per request), paced from the start.",
            min=1,
            default_text="learnt from its x-ratelimit headers",
            panel=MODEL_ENDPOINT,
        ),
        Opt(
            "rpm",
            "rpm",
            int,
            "The endpoint's requests per minute, paced from the start.",
            min=1,
            default_text="learnt from its x-ratelimit headers",
            panel=MODEL_ENDPOINT,
        ),
        PROMPT_CACHE_KEY,
        Opt("max_model_len", "engine.max_model_len", int, "Context window.", min=1, panel=MODEL_ENGINE),
        engine_arg_opt("engine_arg", "the model's"),
        Opt(
            "overlength",
            "overlength",
            Literal["skip", "truncate-history"],
            "For prompts over the context window.",
            panel=MODEL_ENGINE,
        ),
        Opt(
            "model_arg",
            "model_args",
            list[str],
            "KEY=VALUE passed to a Python world model's class (python backend), repeatable; JSON values are typed.",
            convert=engine_args,
            metavar="KEY=VALUE",
        ),
    ),
)

OUTPUT = Group(
    "Output",
    RunConfig,
    (
        Opt("run_name", "run_name", str, "Run directory name (default: from model and judge)."),
        Opt("output", "output", Path, "Directory that holds the runs."),
        Opt(
            "retry_failed",
            "retry_failed",
            bool,
            "Also redo permanent failures (overlength, refusals, unusable verdicts); transient ones are always redone.",
        ),
    ),
)

JUDGE_CALLS = "Judge endpoint and engine"
JUDGE_COST = "Judge cost and Batch API"

JUDGE = Group(
    "Judge",
    JudgeSettings,
    (
        Opt("judge", "kind", Literal["llm", "rules", "both"], "llm, rules (offline, free) or both."),
        Opt(
            "judge_model",
            "model",
            str,
            "The judge model.",
            default_text=f"{DEFAULT_JUDGE_MODEL}, the published setting",
        ),
        Opt(
            "judge_backend",
            "backend",
            str,
            "openai: an OpenAI-compatible endpoint; vllm: --judge-model (a path or id) in this process, with vLLM's offline engine; or one an installed package adds (docs/extending.md).",
            convert=lambda value, option: _registered("awbench.judges", value, option),
        ),
        Opt(
            "judge_base_url",
            "base_url",
            str,
            "OpenAI-compatible judge endpoint.",
            default_text="OPENAI_BASE_URL, else OpenAI",
            panel=JUDGE_CALLS,
        ),
        Opt(
            "judge_api_key_env",
            "api_key_env",
            str,
            "Variable holding the judge's API key; when given, it must be set.",
            default_text="OPENAI_API_KEY",
            panel=JUDGE_CALLS,
        ),
        Opt("judge_temperature", "temperature", float, "Judge sampling temperature.", min=0.0),
        Opt(
            "judge_max_tokens",
            "max_tokens",
            int,
            "Completion budget per verdict; counts against the endpoint's tokens per minute on every request.",
            min=1,
        ),
        Opt("judge_reasoning_effort", "reasoning_effort", str, "e.g. low, medium, high.", default_text="the model's"),
        Opt(
            "judge_extra_body",
            "extra_body",
            str,
            "JSON merged into each judge request.",
            default_text="none",
            convert=_json_object,
            json_object=True,
        ),
        Opt(
            "judge_stop",
            "stop",
            list[str],
            "A string that ends a verdict (repeatable).",
            default_text="none",
            convert=_list,
        ),
        Opt("judge_concurrency", "concurrency", int, "Judge requests in flight.", min=1, panel=JUDGE_CALLS),
        Opt(
            "judge_max_retries",
            "max_retries",
            int,
            "At most 1 + N calls per verdict, shared by transport retries and re-asks of unusable verdicts (rate-limit refusals wait and do not count).",
            min=0,
            panel=JUDGE_CALLS,
        ),
        replace(CHECK_TIMEOUT, panel=JUDGE_CALLS),
        Opt(
            "judge_tpm",
            "tpm",
            int,
            "The judge endpoint's tokens per minute (prompt + --judge-max-tokens per request), paced from the start.",
            min=1,
            default_text="learnt from its x-ratelimit headers",
            panel=JUDGE_CALLS,
        ),
        Opt(
            "judge_rpm",
            "rpm",
            int,
            "The judge endpoint's requests per minute, paced from the start.",
            min=1,
            default_text="learnt from its x-ratelimit headers",
            panel=JUDGE_CALLS,
        ),
        replace(PROMPT_CACHE_KEY, panel=JUDGE_CALLS),
        Opt(
            "rule_workers",
            "rule_workers",
            int,
            "Worker processes for a large run's rule scoring (--judge rules or both); 0: all in this process, which holds less memory.",
            min=0,
            max=MAX_RULE_WORKERS,
            default_text="one per CPU, at most 4",
        ),
        Opt(
            "judge_request_timeout",
            "request_timeout",
            float,
            "Seconds per judge request before it is retried.",
            min=0.001,
            metavar="SECONDS",
            panel=JUDGE_CALLS,
        ),
        Opt(
            "judge_structured",
            "structured",
            bool,
            "Ask for a JSON-schema verdict.",
            flag="--judge-structured/--no-judge-structured",
        ),
        Opt("judge_samples", "samples", int, "Independent verdicts per prediction.", min=1, max=MAX_JUDGE_SAMPLES),
        Opt(
            "judge_price_in",
            "price_in",
            float,
            "USD per million prompt tokens.",
            min=0.0,
            max=MAX_PRICE,
            metavar="USD",
            default_text="known models' list price",
            panel=JUDGE_COST,
        ),
        Opt(
            "judge_price_out",
            "price_out",
            float,
            "USD per million completion tokens.",
            min=0.0,
            max=MAX_PRICE,
            metavar="USD",
            default_text="known models' list price",
            panel=JUDGE_COST,
        ),
        Opt(
            "judge_prompts",
            "prompts",
            str,
            "'rubric', a directory of our layout, or a Qwen-AgentWorld checkout (the published protocol, byte for byte).",
        ),
        Opt(
            "judge_template",
            "template",
            str,
            "User-prompt template file (our layout only).",
            default_text="the prompt set's",
        ),
        engine_arg_opt("judge_engine_arg", "the judge's (--judge-backend vllm)", JUDGE_CALLS),
        # The OpenAI Batch API (awbench.judging.llm.batch_judge): how the judge calls travel; the judge id stays the same.
        Opt(
            "judge_batch",
            "batch",
            bool,
            "Send the judge calls through the OpenAI Batch API: half the price, results within 24 h. Same judge id and verdicts as direct calls; interrupting is safe, the same command resumes the batches.",
            flag="--judge-batch/--no-judge-batch",
            panel=JUDGE_COST,
        ),
        Opt(
            "judge_batch_fallback",
            "batch_fallback",
            Literal["batch", "direct"],
            "How verdicts a batch left unanswered or unusable are asked again (within --judge-max-retries): in a new batch, or by direct calls at the full price.",
            panel=JUDGE_COST,
        ),
        Opt(
            "judge_batch_poll_interval",
            "batch_poll_interval",
            float,
            "Seconds between looks at the batches in flight.",
            min=0.001,
            metavar="SECONDS",
            panel=JUDGE_COST,
        ),
        Opt(
            "judge_batch_tokens",
            "batch_tokens",
            int,
            "The Batch API's enqueued-token limit for the judge model (prompt + --judge-max-tokens per request, over the batches in flight): batches are split under it.",
            min=1,
            default_text="learnt from the first batch refused for it",
            panel=JUDGE_COST,
        ),
        Opt(
            "max_cost",
            "max_cost",
            float,
            "Stop (resumably) before judge spend would pass this many USD.",
            min=0.0,
            metavar="USD",
            default_text="no limit",
            panel=JUDGE_COST,
        ),
    ),
)

SCORING = Group(
    "Scoring",
    ScoringSettings,
    (
        Opt(
            "failure_policy",
            "failure_policy",
            Literal["minimum", "exclude"],
            "minimum: failed generations score 0; exclude: left out, as the reference script.",
        ),
        Opt("max_failure_rate", "max_failure_rate", float, "Exit 1 when failures exceed this share.", min=0.0, max=1.0),
    ),
)

# Settings field -> its option, for messages about values that fail validation (other fields: --field-name).
# An engine setting without an option of its own is named as its KEY=VALUE is given: `--engine-arg batch_size`.
OPTION_NAMES = {
    **{
        f"{settings}.engine.{name}": f"{option} {name}"
        for settings, option in (("ModelSettings", "--engine-arg"), ("JudgeSettings", "--judge-engine-arg"))
        for name in EngineSettings.model_fields
    },
    **{
        f"{group.settings.__name__}.{opt.field}": opt.option
        for group in (DATA, MODEL, OUTPUT, JUDGE, SCORING)
        for opt in group.options
    },
}


# --- Commands with option groups -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    values: dict[str, Any]  # every option's value: the one given, else its default
    given: dict[str, Any] = field(default_factory=dict)  # those given, in a config file or on the command line

    def settings(self, group: Group, given_only: bool = False) -> dict[str, Any]:
        return group.settings_values(self.given if given_only else self.values)


_GIVEN = ("COMMANDLINE", "DEFAULT_MAP")  # the names of typer's click's ParameterSource


def command(*groups: Group, config_file: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A command with the options of `groups` after its own parameters; its last parameter, `options`, gets
    their `Options`. With `config_file`, `--config FILE.toml` sets any of them (flags override the file) and
    `--print-config` prints the ones given as such a file and exits."""
    declared: dict[str, tuple[Group, Opt]] = {}  # an option of several groups (SHARED_FIELDS) once, the first
    for group in groups:
        for opt in group.options:
            declared.setdefault(opt.name, (group, opt))
    opts = [opt for _, opt in declared.values()]

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        own = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in inspect.signature(function, eval_str=True).parameters.values()
            if p.name != "options"
        ]
        own.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context))
        if config_file:
            own += _config_parameters(function.__name__, groups)

        @functools.wraps(function)
        def with_options(**kwargs: Any) -> Any:
            ctx = kwargs.pop("ctx")
            values = {opt.name: kwargs.pop(opt.name) for opt in opts}
            options = Options(values, {n: v for n, v in values.items() if ctx.get_parameter_source(n).name in _GIVEN})
            kwargs.pop("config", None)
            if kwargs.pop("print_config", False):
                typer.echo(
                    config_document(
                        {o.name: _printable(o, options.given[o.name]) for o in opts if o.name in options.given}
                    ),
                    nl=False,
                )
                raise typer.Exit(0)
            return function(**kwargs, options=options)

        with_options.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [*own, *(_parameter(group, opt) for group, opt in declared.values())]
        )
        return with_options

    return decorate


def _config_parameters(command_name: str, groups: tuple[Group, ...]) -> list[inspect.Parameter]:
    def read(ctx: typer.Context, path: Path | None) -> Path | None:
        if path is not None:
            flags = [opt for param in ctx.command.params for opt in param.opts]
            ctx.default_map = {**(ctx.default_map or {}), **config_values(path, groups, command_name, flags)}
        return path

    config = typer.Option(
        "--config",
        is_eager=True,
        callback=read,
        metavar="FILE.toml",
        help="Options from a TOML file: keys are the option names with underscores "
        '(judge_model = "..."), lists where an option repeats; flags given override it.',
    )
    printed = typer.Option(
        "--print-config", help="Print the options given (file and flags) as a config file, and exit."
    )
    return [
        inspect.Parameter(
            "config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[Path | None, config]
        ),
        inspect.Parameter(
            "print_config", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=Annotated[bool, printed]
        ),
    ]


def _toml_form(opt: Opt, value: Any) -> Any:
    """A given value as a config file has it: a JSON option's object as a table."""
    if opt.json_object and isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        return parsed if isinstance(parsed, dict) else value
    return value


def _printable(opt: Opt, value: Any) -> Any:
    """A given value as `--print-config` prints it, refused (exit 2) where a config file could not hold it: an
    infinity or NaN, which TOML writes but a config file may not give (`_file_type`)."""
    if isinstance(value, float) and not math.isfinite(value):
        fail(f"{opt.option}: must be a finite number, got {value:g}", key="bad_option")
    return _toml_form(opt, value)


_STRICT = ConfigDict(strict=True, allow_inf_nan=False)  # TOML has nan and inf


def _file_type(opt: Opt) -> TypeAdapter[Any]:
    """What a config file's value for `opt` must be: its command-line type, strictly (no "4" for 4), and
    finite."""
    if opt.json_object:
        return TypeAdapter(dict[str, Any], config=_STRICT)
    base = str if opt.type is Path else opt.type
    if get_origin(base) is list:
        return TypeAdapter(list[str], config=_STRICT)
    if opt.min is None and opt.max is None:
        return TypeAdapter(base, config=_STRICT)
    bounded = Annotated[base, Field(ge=opt.min, le=opt.max)]  # type: ignore[valid-type]  # a type made at run time
    return TypeAdapter(bounded, config=_STRICT)


def config_values(path: Path, groups: tuple[Group, ...], command_name: str, flags: list[str]) -> dict[str, Any]:
    """The option values in a config file, checked against the options' types (ConfigFileError if not);
    `flags`: all the command's, for a message about one a config file does not hold."""
    opts = {opt.name: opt for group in groups for opt in group.options}
    values: dict[str, Any] = {}
    for key, value in read_toml(path).items():
        opt = opts.get(key)
        if opt is None:
            flag = ("--no-" if value is False else "--") + key.replace("_", "-")  # `prefix_caching = false`
            if retired := retired_option(flag, value if isinstance(value, str) else json.dumps(value), flags):
                option, pair = retired
                raise ConfigFileError(
                    f"{path}{key_line(path, key)}: {key}: no such option: did you mean "
                    f"{option[2:].replace('-', '_')} = [{json.dumps(pair)}]?"
                )
            raise unknown_key(path, key, list(opts), command_name, flags)
        refuse_masked(path, key, value)
        where = f"{path}{key_line(path, key)}: {key}"
        if opt.json_object and isinstance(value, str):  # the JSON as on the command line
            try:
                value = _json(value, where)
            except json.JSONDecodeError as error:
                raise ConfigFileError(f"{where}: not valid JSON ({error.msg} at character {error.pos})") from None
        if get_origin(opt.type) is list and isinstance(value, str):
            value = [value]
        try:
            checked = _file_type(opt).validate_python(value)
        except ValidationError as error:
            raise ConfigFileError(f"{where}: {_file_message(error)}") from None
        if opt.json_object and (problem := unrecordable(checked)):  # TOML has nan and inf too
            raise ConfigFileError(f"{where}: {problem}")
        values[key] = json.dumps(checked) if opt.json_object else checked
    return values


def _file_message(error: ValidationError) -> str:
    first = error.errors()[0]
    wanted = {"string_type": "a string", "list_type": "a list", "dict_type": "a table"}.get(first["type"])
    return f"expected {wanted}, got {first['input']!r}" if wanted else plain_message(first)
