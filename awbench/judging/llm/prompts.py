"""Judge prompts: a system prompt per domain and a user-prompt template, under one of two protocols.

  awbench    DIR/{domain}.md and DIR/user_template.md (the built-in set `rubric` is `judges/rubric/`);
             `{{name}}` placeholders, replaced in one pass over the template only, so braces and `{{...}}`
             inside the inserted texts are left alone (judges/README.md lists them).
  reference  a checkout of the QwenLM/Qwen-AgentWorld repository, whose own code is run
             (`awbench.judging.llm.reference_code`): the judge system prompts its `load_judge_system_prompts` reads,
             its template `JUDGE_USER_PROMPT`, its extraction and marker cleaning of what the judge is shown.
             Messages are laid out as the reference's judge stage lays them out (`reference_messages`).

Both are read from disk at run time; the reference's texts and code are never shipped with awbench.
"""

from __future__ import annotations

import hashlib
import re
import string
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, computed_field

from awbench.domains import DOMAIN_LABELS, DOMAINS
from awbench.judging import PromptError, prediction_request
from awbench.judging.llm.reference_code import (
    ReferenceCode,
    ReferenceReader,
    load_reference_code,
    loaded_reference_code,
)
from awbench.records import BenchmarkRecord, JudgeRequest, PredictionRecord, Sample
from awbench.resources import bundled
from awbench.world_model.messages import earlier_turns, judge_history
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
RENDERER_VERSIONS: dict[Protocol, str] = {"awbench": "2", "reference": "2"}

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")

Messages = list[dict[str, str]]


class PromptSet(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    protocol: Protocol = "awbench"
    system: dict[str, str]  # domain -> system prompt
    user_template: str
    source: str | None = None  # the directory read (None for a built-in set)
    code_sha256: str | None = None  # under the reference protocol: the checkout's code that renders and reads

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def sha256(self) -> str:
        """Over the protocol, every prompt text with its name, in sorted order, and the reference's code that
        renders the messages: any edit changes it."""
        named = [(f"system/{domain}", text) for domain, text in self.system.items()]
        named = sorted([*named, ("user_template", self.user_template)])
        named.insert(0, ("protocol", f"{self.protocol}/{RENDERER_VERSIONS[self.protocol]}"))
        if self.code_sha256 is not None:
            named.append(("code", self.code_sha256))
        digest = hashlib.sha256()
        for name, text in named:
            for part in (name, text):
                encoded = part.encode()
                digest.update(len(encoded).to_bytes(8, "big") + encoded)  # length-prefixed: no ambiguous joins
        return digest.hexdigest()

    def described(self) -> dict[str, Any]:
        """What judge.json (and run.json, for the primary judge) records of the prompts: under the reference
        protocol, the checkout's commit and the sha256 of its code files too."""
        described: dict[str, Any] = {
            "protocol": self.protocol,
            "prompt_set": self.name,
            "prompt_sha256": self.sha256,
            "prompt_source": self.source,
        }
        if self.protocol == "reference":
            described["reference_code"] = self.reference_code().provenance()
        return described

    def reference_code(self) -> ReferenceCode:
        """The checkout's code a reference-protocol set was loaded with (imported once per process)."""
        if self.protocol != "reference" or self.source is None or self.code_sha256 is None:
            raise ValueError(f"prompt set {self.name} is not of the reference protocol")
        return loaded_reference_code(Path(self.source), self.code_sha256)


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
    """The checkout's judge system prompts and user template, as its own code loads them."""
    code = load_reference_code(checkout)
    system = code.judge_system_prompts()
    for domain in DOMAINS:
        if not system.get(domain):
            path = code.config(domain).get("judge_system_prompt_path", f"prompts/{domain}/{REFERENCE_SYSTEM_FILE}")
            raise PromptError(f"judge prompt file not found or empty: {checkout / path}")
    return PromptSet(
        name=name,
        protocol="reference",
        system=system,
        user_template=reference_template(code),
        source=str(checkout.resolve()),
        code_sha256=code.sha256,
    )


def reference_template(
    code: ReferenceCode, name: str = REFERENCE_TEMPLATE_NAME, fields: tuple[str, ...] = REFERENCE_FIELDS
) -> str:
    """The template `name` (JUDGE_USER_PROMPT, or the Turing test's) of the checkout's task_configs, whose
    format fields must be `fields`."""
    template = code.template(name)
    _check_reference_fields(template, code.checkout / REFERENCE_CONFIG, name, fields)
    return template


def _check_reference_fields(template: str, path: Path, name: str, expected: tuple[str, ...]) -> None:
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as error:
        raise PromptError(f"{path}: {name} is not a format string: {error}") from None
    if fields != set(expected):
        raise PromptError(f"{path}: {name} has the fields {sorted(fields)}; awbench fills {list(expected)}")


def protocol_request(prompt_set: PromptSet, sample: Sample, prediction: PredictionRecord) -> JudgeRequest | None:
    """What a judge under this prompt set's protocol is asked about a stored generation; None when it judges none.

    awbench's protocol judges as every awbench judge does (`prediction_request`). The reference protocol asks
    what the reference's judge stage asks: every generation with any text, empty, thinking-only and cut-off
    ones included, extracted by the checkout's own `parse_model_output`, so that its numbers are reproduced."""
    if prompt_set.protocol != "reference":
        return prediction_request(sample, prediction)
    content = prediction.content
    if not content:
        return None
    text = prompt_set.reference_code().extract(content, reference_subtask(sample.record))
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
        "prediction": fence(shown_prediction(prompt_set, request)),
        "ground_truth": fence(shown_text(prompt_set, request.sample, record.ground_truth)),
    }
    user = fill(prompt_set.user_template, values)
    return judge_chat(prompt_set, request.domain, user)


def reference_messages(prompt_set: PromptSet, request: JudgeRequest) -> Messages:
    """What the reference's judge stage sends (eval.py `build_judge_messages`): the system prompt of the record's
    subtask ("" for one the checkout does not know); the context is every earlier turn's action and raw
    observation, each followed by a newline and a blank line; the current action is `current_prompt` when given,
    else the turn's prompt entry; the prediction and the ground truth, cleaned by the checkout's
    `clean_response_marker`, go in plain triple-backtick fences; the filled template is stripped."""
    record = request.sample.record
    context, current, truth = reference_turn(record)
    user = prompt_set.user_template.format(
        context=context,
        world_model_input=current,
        predicted_observation=f"**World Model Output (Simulated):**\n```\n{shown_prediction(prompt_set, request)}\n```",
        ground_truth=f"**Ground Truth (Real Output):**\n```\n{shown_text(prompt_set, request.sample, truth)}\n```",
    ).strip()
    system = prompt_set.system.get(reference_subtask(record), "")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def judge_chat(prompt_set: PromptSet, domain: str, user: str) -> Messages:
    """The chat every judge sends: the domain's system prompt, then the filled user template."""
    return [{"role": "system", "content": prompt_set.system[domain]}, {"role": "user", "content": user}]


def turn_values(domain: str, record: BenchmarkRecord) -> dict[str, str]:
    """The placeholders every judge's template of our layout shares: which domain and turn, the history before it
    and the action taken."""
    return {
        "domain_label": DOMAIN_LABELS.get(domain, domain),
        "turn": str(record.turn_idx),
        "history": render_history(record),
        "action": fence(record.action),
    }


def reference_subtask(record: BenchmarkRecord) -> str:
    """eval.py's `get_subtask`: the task after its last slash, as written (its configurations are looked up by it)."""
    return record.task.split("/")[-1]


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


def shown_prediction(prompt_set: PromptSet, request: JudgeRequest) -> str:
    """The prediction's text exactly as the prompt set's messages show it to the judge (inside their fence). The
    verdict parser compares the judge's answer with this text to tell quotes from the judge's own verdict."""
    return shown_text(prompt_set, request.sample, request.prediction)


def reference_reader(prompt_set: PromptSet, request: JudgeRequest) -> ReferenceReader | None:
    """Under the reference protocol, the checkout's own reading of a judge's answer about `request`."""
    if prompt_set.protocol != "reference":
        return None
    code, subtask = prompt_set.reference_code(), reference_subtask(request.sample.record)
    return lambda answer: code.read_verdict(answer, subtask)


def shown_text(prompt_set: PromptSet, sample: Sample, text: str) -> str:
    """A prediction or observation of `sample` as the prompt set's messages show it: without its observation
    marker, or, under the reference protocol, as the checkout's `clean_response_marker` leaves it."""
    if prompt_set.protocol == "reference":
        return prompt_set.reference_code().clean(text, reference_subtask(sample.record))
    return strip_observation_marker(text)


def fill(template: str, values: dict[str, str]) -> str:
    """`{{name}}` placeholders replaced in one pass over the template only."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def render_history(record: BenchmarkRecord) -> str:
    """The turns before the current one, numbered, each an action and the observation it received (as the judges
    read them: `judge_history`), `fence`d, put together in one join."""
    history = judge_history(record)
    if not history:
        return "(none: this is the first turn of the trajectory)"
    pieces: list[str] = []
    for index, (text, recorded) in enumerate(zip(history, earlier_turns(record), strict=True)):
        marks = recorded_marks(recorded)  # a dropped observation marker has no backtick: the same marks
        kind = "observation" if index % 2 else "action"
        pieces += ("\n\n" if index else "", f"### Turn {index // 2 + 1}: {kind}\n\n", marks, "\n", text, "\n", marks)
    return "".join(pieces)


def fence(text: str) -> str:
    """A code fence longer than any backtick run in `text`, so nothing inside can close it."""
    marks = fence_marks(text)
    return f"{marks}\n{text}\n{marks}"


def fence_marks(text: str) -> str:
    """The shortest run of at least three backticks that does not occur in the text: longer than every run that
    does."""
    marks = "```"
    while marks in text:
        marks += "`"
    return marks


# A judge renders the history of each trajectory it has open (as many as its concurrency, in prefix order) again for
# each of its later samples, and finding the marks is a scan of every character: remembered by the records' own
# strings, which the run holds anyway.
recorded_marks = lru_cache(maxsize=1 << 15)(fence_marks)


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
