"""The pairwise judge's prompts: given a turn, its real observation and two world models' predictions, which
prediction is closer to the real one? The judge answers `\\boxed{A}` or `\\boxed{B}`.

  awbench    a directory holding `system.md` (one system prompt for every domain) and `user_template.md`, whose
             `{{name}}` placeholders are the rubric template's (`awbench.judging.llm.prompts`) with `response_a` and
             `response_b` in place of `prediction`; the built-in set `pairwise` is `judges/pairwise/`.
  reference  a Qwen-AgentWorld checkout: the user template `REF_ANSWER_JUDGE_USER_PROMPT` of its
             `eval/lwm_eval_utils/task_configs.py`, and its marker cleaning, run from the checkout at run time
             (`awbench.judging.llm.reference_code`) and never shipped with awbench. The reference has no system prompt
             for this question, so awbench's stays.
"""

from __future__ import annotations

from pathlib import Path

from awbench.domains import DOMAINS
from awbench.judging.llm.prompts import (
    REFERENCE_CONFIG,
    TEMPLATE_FILE,
    Messages,
    PromptError,
    PromptSet,
    fence,
    fill,
    judge_chat,
    load_user_template,
    read_prompt,
    reference_checkout,
    reference_template,
    reference_turn,
    shown_text,
    turn_values,
)
from awbench.judging.llm.reference_code import load_reference_code
from awbench.records import Sample
from awbench.resources import bundled

BUILTIN = "pairwise"
SYSTEM_FILE = "system.md"
PLACEHOLDERS = ("domain_label", "turn", "history", "action", "response_a", "response_b", "ground_truth")
REQUIRED_PLACEHOLDERS = ("response_a", "response_b", "ground_truth")
REFERENCE_TEMPLATE = "REF_ANSWER_JUDGE_USER_PROMPT"
REFERENCE_FIELDS = ("context", "world_model_input", "response_a", "response_b", "ground_truth")


def load_pairwise_prompts(prompts: str = BUILTIN, template: str | None = None) -> PromptSet:
    """`prompts`: the built-in set, a directory of our layout, or a Qwen-AgentWorld checkout (its root or its
    `prompts/` folder); `template` replaces the user template of our layout. The set's name, part of the judge's
    id, is `pairwise`, `pairwise-custom` or `pairwise-reference`; `source` records the directory read."""
    if prompts == BUILTIN:
        return _load_ours(prompts, bundled(f"judges/{BUILTIN}"), template, source=None)
    directory = Path(prompts).expanduser()
    if not directory.is_dir():
        raise PromptError(f"pairwise judge prompts {prompts!r}: neither the built-in set ({BUILTIN}) nor a directory")
    checkout = reference_checkout(directory)
    if checkout is not None:
        if template:
            raise PromptError(
                "--judge-template cannot be combined with a reference checkout: its pairwise template is "
                f"{REFERENCE_TEMPLATE} of {checkout / REFERENCE_CONFIG}"
            )
        code = load_reference_code(checkout)
        builtin = _load_ours(BUILTIN, bundled(f"judges/{BUILTIN}"), None, source=None)
        return PromptSet(
            name=f"{BUILTIN}-reference",
            protocol="reference",
            system=builtin.system,
            user_template=reference_template(code, REFERENCE_TEMPLATE, REFERENCE_FIELDS),
            source=str(checkout.resolve()),
            code_sha256=code.sha256,
        )
    if not (directory / SYSTEM_FILE).is_file():
        raise PromptError(
            f"no pairwise judge prompts in {directory}: expected {SYSTEM_FILE} and {TEMPLATE_FILE}, or a "
            f"Qwen-AgentWorld checkout (with {REFERENCE_CONFIG})"
        )
    return _load_ours(f"{BUILTIN}-custom", directory, template, source=str(directory.resolve()))


def _load_ours(name: str, directory: Path, template: str | None, source: str | None) -> PromptSet:
    system = read_prompt(directory / SYSTEM_FILE)
    user_template = load_user_template(directory, template, PLACEHOLDERS, REQUIRED_PLACEHOLDERS)
    return PromptSet(name=name, system=dict.fromkeys(DOMAINS, system), user_template=user_template, source=source)


def pairwise_messages(prompt_set: PromptSet, sample: Sample, first: str, second: str) -> Messages:
    """The judge's chat about one sample: the prediction `first` shown as Response A, `second` as Response B. The
    predictions are the texts each run's judge would be shown (`prompts.protocol_request`)."""
    record = sample.record
    if prompt_set.protocol == "reference":
        context, current, truth = reference_turn(record)
        user = prompt_set.user_template.format(
            context=context,
            world_model_input=current,
            response_a=f"**Response A:**\n```\n{shown_text(prompt_set, sample, first)}\n```",
            response_b=f"**Response B:**\n```\n{shown_text(prompt_set, sample, second)}\n```",
            ground_truth=f"**Ground Truth (Real Output):**\n```\n{shown_text(prompt_set, sample, truth)}\n```",
        ).strip()
    else:
        user = fill(
            prompt_set.user_template,
            {
                **turn_values(sample.domain, record),
                "response_a": fence(shown_text(prompt_set, sample, first)),
                "response_b": fence(shown_text(prompt_set, sample, second)),
                "ground_truth": fence(shown_text(prompt_set, sample, record.ground_truth)),
            },
        )
    return judge_chat(prompt_set, sample.domain, user)
