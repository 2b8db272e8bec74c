"""Judge prompts: a system prompt per domain and one user-prompt template, loaded from a directory.

Two layouts are accepted:
  ours      DIR/{domain}.md and DIR/user_template.md (the built-in set `rubric` is `judges/rubric/`)
  official  DIR/{domain}/judge_system_prompt.txt, as in the reference repository; it has no user
            template, so the built-in one is used unless a template file is given.

The template's placeholders are `{{name}}` tokens, replaced in one pass over the template only, so braces
and `{{...}}` inside the inserted texts are left alone. See judges/README.md for the list.
"""

from __future__ import annotations

import hashlib
import re
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, computed_field

from awbench.domains import DOMAIN_LABELS, DOMAINS
from awbench.records import JudgeRequest
from awbench.resources import bundled

BUILTIN_SETS = ("rubric",)
OFFICIAL_FILE = "judge_system_prompt.txt"
TEMPLATE_FILE = "user_template.md"
PLACEHOLDERS = ("domain_label", "turn", "history", "action", "prediction", "ground_truth")
REQUIRED_PLACEHOLDERS = ("action", "prediction", "ground_truth")

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_BACKTICK_RUN = re.compile(r"`+")


class PromptError(Exception):
    """A prompt set or template that cannot be used; the message names the path."""


class PromptSet(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    system: dict[str, str]  # domain -> system prompt
    user_template: str

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def sha256(self) -> str:
        """Over every prompt text with its name, in sorted order: any edit changes it."""
        named = [(f"system/{domain}", text) for domain, text in self.system.items()]
        named = sorted([*named, ("user_template", self.user_template)])
        digest = hashlib.sha256()
        for name, text in named:
            for part in (name, text):
                encoded = part.encode()
                digest.update(len(encoded).to_bytes(8, "big") + encoded)  # length-prefixed: no ambiguous joins
        return digest.hexdigest()


def load_prompt_set(prompts: str, template: str | None = None) -> PromptSet:
    """`prompts` is a built-in set name or a directory; `template` overrides the user template."""
    if prompts in BUILTIN_SETS:
        directory = bundled(f"judges/{prompts}")
    else:
        directory = Path(prompts).expanduser()
        if not directory.is_dir():
            raise PromptError(f"judge prompts {prompts!r}: neither a built-in set ({', '.join(BUILTIN_SETS)}) nor a directory")
    if any((directory / domain / OFFICIAL_FILE).is_file() for domain in DOMAINS):
        system = {domain: _read(directory / domain / OFFICIAL_FILE) for domain in DOMAINS}
        default_template = bundled(f"judges/rubric/{TEMPLATE_FILE}")
    elif any((directory / f"{domain}.md").is_file() for domain in DOMAINS):
        system = {domain: _read(directory / f"{domain}.md") for domain in DOMAINS}
        default_template = directory / TEMPLATE_FILE
    else:
        raise PromptError(
            f"no judge prompts in {directory}: expected {{domain}}.md files (with {TEMPLATE_FILE}) "
            f"or {{domain}}/{OFFICIAL_FILE} files, for the domains {', '.join(DOMAINS)}"
        )
    template_path = Path(template).expanduser() if template else default_template
    user_template = _read(template_path)
    _check_placeholders(user_template, template_path)
    return PromptSet(name=prompts, system=system, user_template=user_template)


def render_messages(prompt_set: PromptSet, request: JudgeRequest) -> list[dict[str, str]]:
    """The judge's chat: the domain's system prompt, then the filled-in user template.

    The whole history goes in however long it is: consistency is judged against everything the trajectory
    established, so cutting turns would make the judge blind to the state it must check. A judge whose context
    window cannot hold a long trajectory fails that request with the server's error instead.
    """
    if request.domain not in prompt_set.system:
        raise PromptError(f"prompt set {prompt_set.name!r} has no judge prompt for domain {request.domain!r}")
    values = {
        "domain_label": DOMAIN_LABELS.get(request.domain, request.domain),
        "turn": str(len(request.history) // 2 + 1),
        "history": render_history(request.history),
        "action": fence(request.action),
        "prediction": fence(request.prediction),
        "ground_truth": fence(request.ground_truth),
    }
    user = _PLACEHOLDER.sub(lambda m: values[m.group(1)], prompt_set.user_template)
    return [{"role": "system", "content": prompt_set.system[request.domain]}, {"role": "user", "content": user}]


def render_history(history: list[str]) -> str:
    """Numbered turns, each an action and the observation it received (the last may lack one)."""
    if not history:
        return "(none: this is the first turn of the trajectory)"
    parts = []
    for index in range(0, len(history), 2):
        turn = index // 2 + 1
        parts.append(f"### Turn {turn}: action\n\n{fence(history[index])}")
        if index + 1 < len(history):
            parts.append(f"### Turn {turn}: observation\n\n{fence(history[index + 1])}")
    return "\n\n".join(parts)


def fence(text: str) -> str:
    """A code fence longer than any backtick run in `text`, so nothing inside can close it."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}\n{text}\n{marks}"


def _read(path: Path) -> str:
    if not path.is_file():
        raise PromptError(f"judge prompt file not found: {path}")
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        raise PromptError(f"judge prompt file is empty: {path}")
    return text


def _check_placeholders(template: str, path: Path) -> None:
    found = set(_PLACEHOLDER.findall(template))
    unknown = sorted(found - set(PLACEHOLDERS))
    missing = [name for name in REQUIRED_PLACEHOLDERS if name not in found]
    if unknown:
        names = ", ".join("{{%s}}" % n for n in unknown)
        raise PromptError(f"{path}: unknown placeholder(s) {names}; known: {', '.join(PLACEHOLDERS)}")
    if missing:
        raise PromptError(f"{path}: missing placeholder(s) {', '.join('{{%s}}' % n for n in missing)}")
