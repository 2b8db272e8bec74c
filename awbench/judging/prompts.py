"""Judge prompts: a system prompt per domain and a user-prompt template, under one of two protocols.

  awbench    DIR/{domain}.md and DIR/user_template.md (the built-in set `rubric` is `judges/rubric/`);
             `{{name}}` placeholders, replaced in one pass over the template only, so braces and `{{...}}`
             inside the inserted texts are left alone (judges/README.md lists them).
  reference  a checkout of the QwenLM/Qwen-AgentWorld repository: `prompts/{domain}/judge_system_prompt.txt`
             and the user template `JUDGE_USER_PROMPT` in `eval/lwm_eval_utils/task_configs.py`, read from
             the Python source without importing or running it. Messages are built byte for byte as the
             reference's judge stage builds them (`reference_messages`).

Both are read from disk at run time; the reference's texts are never shipped with awbench.
"""

from __future__ import annotations

import ast
import hashlib
import re
import string
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, computed_field

from awbench.domains import DOMAIN_LABELS, DOMAINS
from awbench.judging import prediction_request
from awbench.judging.reference_parsers import reference_clean, reference_generation
from awbench.records import BenchmarkRecord, JudgeRequest, PredictionRecord, Sample
from awbench.resources import bundled
from awbench.world_model.messages import judge_history
from awbench.world_model.parsing import strip_observation_marker

Protocol = Literal["awbench", "reference"]
BUILTIN_SETS = ("rubric",)
TEMPLATE_FILE = "user_template.md"
PLACEHOLDERS = ("domain_label", "turn", "history", "action", "prediction", "ground_truth")
REQUIRED_PLACEHOLDERS = ("action", "prediction", "ground_truth")
REFERENCE_SYSTEM_FILE = "judge_system_prompt.txt"
REFERENCE_CONFIG = Path("eval/lwm_eval_utils/task_configs.py")
REFERENCE_TEMPLATE_NAME = "JUDGE_USER_PROMPT"
REFERENCE_FIELDS = ("context", "world_model_input", "predicted_observation", "ground_truth")
# Part of every prompt set's hash (and so of the verdict cache key): bump when a renderer's output changes.
RENDERER_VERSIONS: dict[Protocol, str] = {"awbench": "2", "reference": "1"}

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")

Messages = list[dict[str, str]]


class PromptError(Exception):
    """A prompt set or template that cannot be used; the message names the path."""


class PromptSet(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    protocol: Protocol = "awbench"
    system: dict[str, str]  # domain -> system prompt
    user_template: str
    source: str | None = None  # the directory read (None for a built-in set)

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def sha256(self) -> str:
        """Over the protocol and every prompt text with its name, in sorted order: any edit changes it."""
        named = [(f"system/{domain}", text) for domain, text in self.system.items()]
        named = sorted([*named, ("user_template", self.user_template)])
        named.insert(0, ("protocol", f"{self.protocol}/{RENDERER_VERSIONS[self.protocol]}"))
        digest = hashlib.sha256()
        for name, text in named:
            for part in (name, text):
                encoded = part.encode()
                digest.update(len(encoded).to_bytes(8, "big") + encoded)  # length-prefixed: no ambiguous joins
        return digest.hexdigest()


def load_prompt_set(prompts: str, template: str | None = None) -> PromptSet:
    """`prompts` is a built-in set name or a directory (ours, or a reference checkout); `template` overrides
    the user template of our layout."""
    if prompts in BUILTIN_SETS:
        return load_domain_layout(prompts, bundled(f"judges/{prompts}"), template, source=None)
    directory = Path(prompts).expanduser()
    if not directory.is_dir():
        raise PromptError(
            f"judge prompts {prompts!r}: neither a built-in set ({', '.join(BUILTIN_SETS)}) nor a directory"
        )
    checkout = reference_checkout(directory)
    if checkout is not None:
        if template:
            raise PromptError(
                "--judge-template cannot be combined with the reference protocol: its template is "
                f"read from {checkout / REFERENCE_CONFIG}"
            )
        return _load_reference(prompts, checkout)
    if any((directory / domain / REFERENCE_SYSTEM_FILE).is_file() for domain in DOMAINS):
        raise PromptError(
            f"{directory} holds the reference's judge system prompts but not its user prompt template: give the "
            f"root of a Qwen-AgentWorld checkout (with prompts/ and {REFERENCE_CONFIG})"
        )
    if any((directory / f"{domain}.md").is_file() for domain in DOMAINS):
        return load_domain_layout(prompts, directory, template, source=str(directory.resolve()))
    raise PromptError(
        f"no judge prompts in {directory}: expected {{domain}}.md files (with {TEMPLATE_FILE}), or a "
        f"Qwen-AgentWorld checkout (prompts/{{domain}}/{REFERENCE_SYSTEM_FILE} and {REFERENCE_CONFIG})"
    )


def load_domain_layout(
    name: str,
    directory: Path,
    template: str | None,
    source: str | None,
    known: tuple[str, ...] = PLACEHOLDERS,
    required: tuple[str, ...] = REQUIRED_PLACEHOLDERS,
) -> PromptSet:
    """Our layout with a system prompt per domain: `{domain}.md` and the user template (`template`, else
    `user_template.md` of `directory`), whose placeholders must be among `known` and include `required`."""
    system = {domain: read_prompt(directory / f"{domain}.md") for domain in DOMAINS}
    user_template = load_user_template(directory, template, known, required)
    return PromptSet(name=name, system=system, user_template=user_template, source=source)


def load_user_template(directory: Path, template: str | None, known: tuple[str, ...], required: tuple[str, ...]) -> str:
    """The user template `template`, else `user_template.md` of `directory`, its placeholders checked."""
    template_path = Path(template).expanduser() if template else directory / TEMPLATE_FILE
    user_template = read_prompt(template_path)
    check_placeholders(user_template, template_path, known, required)
    return user_template


def reference_checkout(directory: Path) -> Path | None:
    """The checkout root for DIR given as the root or as its `prompts/` folder."""
    for root in (directory, directory.parent):
        if (root / REFERENCE_CONFIG).is_file() and (root / "prompts").is_dir():
            return root
    return None


def _load_reference(name: str, checkout: Path) -> PromptSet:
    system = {}
    for domain in DOMAINS:
        path = checkout / "prompts" / domain / REFERENCE_SYSTEM_FILE
        if not path.is_file():
            raise PromptError(f"judge prompt file not found: {path}")
        system[domain] = path.read_text(encoding="utf-8")  # as the reference reads it: whole, unstripped
    template = reference_template(checkout / REFERENCE_CONFIG)
    return PromptSet(
        name=name, protocol="reference", system=system, user_template=template, source=str(checkout.resolve())
    )


def reference_template(
    path: Path, name: str = REFERENCE_TEMPLATE_NAME, fields: tuple[str, ...] = REFERENCE_FIELDS
) -> str:
    """The string constant `name` (JUDGE_USER_PROMPT, or the Turing test's) of the reference's task_configs.py,
    from its syntax tree; its format fields must be `fields`."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError) as error:
        raise PromptError(f"{path}: cannot read it as Python source: {error}") from None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                template = node.value.value
                _check_reference_fields(template, path, name, fields)
                return template
            raise PromptError(f"{path}:{node.lineno}: {name} is not a string literal")
    raise PromptError(f'{path}: no top-level {name} = "..." assignment')


def _check_reference_fields(template: str, path: Path, name: str, expected: tuple[str, ...]) -> None:
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as error:
        raise PromptError(f"{path}: {name} is not a format string: {error}") from None
    if fields != set(expected):
        raise PromptError(f"{path}: {name} has the fields {sorted(fields)}; awbench fills {list(expected)}")


def protocol_request(protocol: Protocol, sample: Sample, prediction: PredictionRecord) -> JudgeRequest | None:
    """What a judge under this protocol is asked about a stored generation; None when it judges none.

    awbench's protocol judges as every awbench judge does (`prediction_request`). The reference protocol asks
    what the reference's judge stage asks: every generation with any text, empty, thinking-only and cut-off
    ones included, extracted as its parser extracts it, so that its numbers can be reproduced."""
    if protocol != "reference":
        return prediction_request(sample, prediction)
    content = prediction.content
    if not content:
        return None
    text = reference_generation(content, sample.domain).extracted
    return JudgeRequest(sample=sample, prediction=text, generation=prediction.generation)


def render_messages(prompt_set: PromptSet, request: JudgeRequest) -> Messages:
    """The judge's chat for one prediction, under the prompt set's protocol."""
    if prompt_set.protocol == "reference":
        return reference_messages(prompt_set, request)
    return awbench_messages(prompt_set, request)


def awbench_messages(prompt_set: PromptSet, request: JudgeRequest) -> Messages:
    """The domain's system prompt, then the filled-in user template.

    The whole history goes in however long it is: consistency is judged against everything the trajectory
    established, so cutting turns would make the judge blind to the state it must check. A judge whose context
    window cannot hold a long trajectory fails that request with the server's error instead.
    """
    record = request.sample.record
    values = {
        **turn_values(request.domain, record),
        "prediction": fence(shown_prediction("awbench", request.prediction)),
        "ground_truth": fence(strip_observation_marker(record.ground_truth)),
    }
    user = fill(prompt_set.user_template, values)
    return judge_chat(prompt_set, request.domain, user)


def reference_messages(prompt_set: PromptSet, request: JudgeRequest) -> Messages:
    """What the reference's judge stage sends (eval.py `build_judge_messages`): the context is every earlier
    turn's action and raw observation, each followed by a newline and a blank line; the current action is
    `current_prompt` when given, else the turn's prompt entry; the prediction and the ground truth lose their
    observation marker and surrounding whitespace and go in plain triple-backtick fences; the filled template
    is stripped."""
    context, current, truth = reference_turn(request.sample.record)
    user = prompt_set.user_template.format(
        context=context,
        world_model_input=current,
        predicted_observation=f"**World Model Output (Simulated):**\n```\n{shown_prediction('reference', request.prediction)}\n```",
        ground_truth=f"**Ground Truth (Real Output):**\n```\n{reference_clean(truth)}\n```",
    ).strip()
    return judge_chat(prompt_set, request.domain, user)


def judge_chat(prompt_set: PromptSet, domain: str, user: str) -> Messages:
    """The chat every judge sends: the domain's system prompt, then the filled user template."""
    return [{"role": "system", "content": prompt_set.system[domain]}, {"role": "user", "content": user}]


def turn_values(domain: str, record: BenchmarkRecord) -> dict[str, str]:
    """The placeholders every judge's template of our layout shares: which domain and turn, the history before it
    and the action taken."""
    return {
        "domain_label": DOMAIN_LABELS.get(domain, domain),
        "turn": str(record.turn_idx),
        "history": render_history(judge_history(record)),
        "action": fence(record.action),
    }


def reference_turn(record: BenchmarkRecord) -> tuple[str, str, str]:
    """(context, world-model input, raw real observation) of a turn, as the reference's judge stage makes
    them for its template's `{context}` and `{world_model_input}`."""
    turn = max(record.turn_idx - 1, 0)
    context = "".join(
        record.prompt[i] + "\n" + record.response[i] + "\n\n"
        for i in range(turn)
        if i < len(record.prompt) and i < len(record.response)
    )
    if context:
        context = f"# Context (Historical Interactions):\n\n{context}"
    current = record.current_prompt or (record.prompt[turn] if turn < len(record.prompt) else "")
    truth = record.response[turn] if turn < len(record.response) else ""
    return context, f"# Current Turn:\n\n{current}", truth


def shown_prediction(protocol: Protocol, prediction: str) -> str:
    """The prediction's text exactly as the protocol's messages show it to the judge (inside their fence). The
    verdict parser compares the judge's answer with this text to tell quotes from the judge's own verdict.
    Only the protocol matters, not the prompt texts, so that a re-parse needs only what judge.json records."""
    if protocol == "reference":
        return reference_clean(prediction)
    return strip_observation_marker(prediction)


def fill(template: str, values: dict[str, str]) -> str:
    """`{{name}}` placeholders replaced in one pass over the template only."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def render_history(history: list[str]) -> str:
    """Numbered turns, each an action and the observation it received (the last may lack one)."""
    if not history:
        return "(none: this is the first turn of the trajectory)"
    parts = []
    for index in range(0, len(history), 2):
        turn = index // 2 + 1
        parts.append(f"### Turn {turn}: action\n\n{fenced(history[index])}")
        if index + 1 < len(history):
            parts.append(f"### Turn {turn}: observation\n\n{fenced(history[index + 1])}")
    return "\n\n".join(parts)


@lru_cache(maxsize=1024)
def fenced(text: str) -> str:
    """`fence`, remembered: a trajectory's turns are rendered again for each of its later samples."""
    return fence(text)


def fence(text: str) -> str:
    """A code fence longer than any backtick run in `text`, so nothing inside can close it. The shortest
    run of at least three that does not occur in the text is longer than every run that does."""
    marks = "```"
    while marks in text:
        marks += "`"
    return f"{marks}\n{text}\n{marks}"


def read_prompt(path: Path) -> str:
    if not path.is_file():
        raise PromptError(f"judge prompt file not found: {path}")
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        raise PromptError(f"judge prompt file is empty: {path}")
    return text


def check_placeholders(
    template: str, path: Path, known: tuple[str, ...] = PLACEHOLDERS, required: tuple[str, ...] = REQUIRED_PLACEHOLDERS
) -> None:
    found = set(_PLACEHOLDER.findall(template))
    unknown = sorted(found - set(known))
    missing = [name for name in required if name not in found]
    if unknown:
        names = ", ".join("{{%s}}" % n for n in unknown)
        raise PromptError(f"{path}: unknown placeholder(s) {names}; known: {', '.join(known)}")
    if missing:
        raise PromptError(f"{path}: missing placeholder(s) {', '.join('{{%s}}' % n for n in missing)}")
