"""The Turing test's questions: one step of a trajectory and two observations, "Response A" and "Response B",
one the real environment's and one a world model's prediction; which is real? (`awbench turing`, through
`awbench.judging.choice.judge`).

Prompts: a system prompt per domain and a user template, as the rubric's (`awbench.judging.llm.prompts`):

  turing     the built-in set, `judges/turing/`: `{domain}.md` and `user_template.md` with `{{name}}`
             placeholders (TURING_PLACEHOLDERS), written for awbench
  DIR        a directory of that layout
  CHECKOUT   a Qwen-AgentWorld checkout: its user template `TURING_JUDGE_USER_PROMPT` (fields `{context}`,
             `{world_model_input}`, `{response_a}`, `{response_b}`) of `eval/lwm_eval_utils/task_configs.py`, filled
             as the reference's judge stage fills its own template, the observations cleaned by the checkout's
             own code (`awbench.judging.llm.reference_code`); the reference has no Turing system prompts, so the
             built-in set's are used. Never shipped with awbench.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from awbench.domains import DOMAINS
from awbench.judging.llm.prompts import (
    REFERENCE_CONFIG,
    TEMPLATE_FILE,
    PromptError,
    PromptSet,
    fence,
    fill,
    judge_chat,
    load_domain_layout,
    reference_checkout,
    reference_template,
    reference_turn,
    shown_text,
    turn_values,
)
from awbench.judging.llm.reference_code import load_reference_code
from awbench.records import Sample
from awbench.resources import bundled

TURING_SET = "turing"
TURING_PLACEHOLDERS = ("domain_label", "turn", "history", "action", "response_a", "response_b")
TURING_REQUIRED = ("action", "response_a", "response_b")
REFERENCE_TURING_TEMPLATE = "TURING_JUDGE_USER_PROMPT"
REFERENCE_TURING_FIELDS = ("context", "world_model_input", "response_a", "response_b")

Position = Literal["A", "B"]
Messages = list[dict[str, str]]


def load_turing_prompts(prompts: str | None = None, template: str | None = None) -> PromptSet:
    """`prompts`: None or "turing" (built-in), a directory of our layout, or a reference checkout; `template`
    overrides the user template of our layout."""
    if prompts in (None, TURING_SET):
        return _ours(TURING_SET, bundled(f"judges/{TURING_SET}"), template, source=None)
    directory = Path(prompts).expanduser()
    if not directory.is_dir():
        raise PromptError(f"Turing prompts {prompts!r}: neither the built-in set ({TURING_SET}) nor a directory")
    checkout = reference_checkout(directory)
    if checkout is not None:
        if template:
            raise PromptError(
                f"--judge-template cannot be combined with a reference checkout: its Turing template is "
                f"read from {checkout / REFERENCE_CONFIG}"
            )
        code = load_reference_code(checkout)
        system = _ours(TURING_SET, bundled(f"judges/{TURING_SET}"), None, None).system
        return PromptSet(
            name="reference-turing",
            protocol="reference",
            system=system,
            user_template=reference_template(code, REFERENCE_TURING_TEMPLATE, REFERENCE_TURING_FIELDS),
            source=str(checkout.resolve()),
            code_sha256=code.sha256,
        )
    if any((directory / f"{domain}.md").is_file() for domain in DOMAINS):
        return _ours("custom-turing", directory, template, source=str(directory.resolve()))
    raise PromptError(
        f"no Turing prompts in {directory}: expected {{domain}}.md files (with {TEMPLATE_FILE}), or a "
        f"Qwen-AgentWorld checkout (with {REFERENCE_CONFIG})"
    )


def _ours(name: str, directory: Path, template: str | None, source: str | None) -> PromptSet:
    return load_domain_layout(name, directory, template, source, TURING_PLACEHOLDERS, TURING_REQUIRED)


def turing_messages(prompt_set: PromptSet, sample: Sample, prediction: str, real: Position) -> Messages:
    """The question for one prediction, the real observation shown as Response `real`."""
    record = sample.record
    first, second = _ordered(shown_observations(prompt_set, sample, prediction), real)
    if prompt_set.protocol == "reference":
        context, current, _ = reference_turn(record)
        user = prompt_set.user_template.format(
            context=context,
            world_model_input=current,
            response_a=f"**Response A:**\n```\n{first}\n```",
            response_b=f"**Response B:**\n```\n{second}\n```",
        ).strip()
    else:
        values = {
            **turn_values(sample.domain, record),
            "response_a": fence(first),
            "response_b": fence(second),
        }
        user = fill(prompt_set.user_template, values)
    return judge_chat(prompt_set, sample.domain, user)


def shown_observations(prompt_set: PromptSet, sample: Sample, prediction: str) -> dict[str, str]:
    """The real observation and the prediction (`real`, `predicted`) as the protocol's question shows them."""
    return {
        "real": shown_text(prompt_set, sample, sample.record.ground_truth),
        "predicted": shown_text(prompt_set, sample, prediction),
    }


def _ordered(shown: dict[str, str], real: Position) -> tuple[str, str]:
    return (shown["real"], shown["predicted"]) if real == "A" else (shown["predicted"], shown["real"])
