"""A checkout of the reference release for tests, in our own words with its layout: `prompts/{domain}/
judge_system_prompt.txt` and `eval/lwm_eval_utils/task_configs.py` holding a `JUDGE_USER_PROMPT` format string
with the same four fields and doubled braces; and `expected_messages`, the reference's `build_judge_messages`
restated on the raw JSON record (dict lookups with defaults, as the script does), independently of awbench's own
record types."""

from __future__ import annotations

from pathlib import Path

from awbench.domains import DOMAINS

MARKER = "**Environment Observation:**"
TEMPLATE = """{context}

{world_model_input}

{predicted_observation}

{ground_truth}

Grade the simulated output against the real one on format, factuality, consistency, realism and quality.
End with <final_evaluation>
```json
{{"scores": {{"format": 1}}}}
```
</final_evaluation>"""


def write_checkout(root: Path, template_source: str | None = None) -> Path:
    for domain in DOMAINS:
        folder = root / "prompts" / domain
        folder.mkdir(parents=True)
        # A trailing newline and spaces: the reference sends the file whole.
        (folder / "judge_system_prompt.txt").write_text(f"You grade {domain} simulations.\n  \n", encoding="utf-8")
    config = root / "eval" / "lwm_eval_utils"
    config.mkdir(parents=True)
    source = template_source or (
        "import module_that_does_not_exist  # never imported: the file is parsed, not run\n"
        "raise SystemExit('executed')\n"
        f"JUDGE_USER_PROMPT = {TEMPLATE!r}\n"
    )
    (config / "task_configs.py").write_text(source, encoding="utf-8")
    return root


PAIRWISE_TEMPLATE = """{context}

{world_model_input}

Which of the two answers below is nearer to the true output?

{response_a}

{response_b}

{ground_truth}

Answer with \\boxed{{A}} or \\boxed{{B}}."""


def write_pairwise_checkout(root: Path, pairwise: str | None = PAIRWISE_TEMPLATE) -> Path:
    """A checkout whose task_configs.py holds `REF_ANSWER_JUDGE_USER_PROMPT` (left out with `pairwise=None`)."""
    for domain in DOMAINS:
        (root / "prompts" / domain).mkdir(parents=True)
        (root / "prompts" / domain / "judge_system_prompt.txt").write_text(f"You grade {domain}.\n", encoding="utf-8")
    config = root / "eval" / "lwm_eval_utils"
    config.mkdir(parents=True)
    source = 'import missing_module  # parsed, never run\nJUDGE_USER_PROMPT = "{context}{world_model_input}{predicted_observation}{ground_truth}"\n'
    if pairwise is not None:
        source += f"REF_ANSWER_JUDGE_USER_PROMPT = {pairwise!r}\n"
    (config / "task_configs.py").write_text(source, encoding="utf-8")
    return root


def expected_messages(job: dict, model_output: str, system_prompts: dict[str, str], template: str) -> list[dict]:
    """The reference's judge messages for a raw record and a parsed model output, restated."""
    task = job.get("task", "mcp")
    subtask = task.split("/")[-1] if "/" in task else task
    prompts, responses = job.get("prompt", []), job.get("response", [])
    turn = max(job.get("turn_idx", 1) - 1, 0)
    context = ""
    for i in range(turn):
        if i < len(prompts) and i < len(responses):
            context += prompts[i] + "\n" + responses[i] + "\n\n"
    if context:
        context = "# Context (Historical Interactions):\n\n" + context
    current = job.get("current_prompt", "")
    if not current and turn < len(prompts):
        current = prompts[turn]
    truth = responses[turn] if turn < len(responses) else ""

    def clean(text: str) -> str:
        return text[len(MARKER) :].strip() if text.startswith(MARKER) else text.replace(MARKER, "").strip()

    user = template.format(
        context=context,
        world_model_input="# Current Turn:\n\n" + current,
        predicted_observation="**World Model Output (Simulated):**\n```\n" + clean(model_output) + "\n```",
        ground_truth="**Ground Truth (Real Output):**\n```\n" + clean(truth) + "\n```",
    ).strip()
    return [{"role": "system", "content": system_prompts.get(subtask, "")}, {"role": "user", "content": user}]
