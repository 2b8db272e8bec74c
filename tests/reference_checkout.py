"""A stand-in for a checkout of the reference release, for tests: its layout (`prompts/{domain}/
judge_system_prompt.txt`, the package `eval/lwm_eval_utils/` with `task_configs.py`, `judge_parser.py`,
`output_parser.py`), with code of our own words behind the reference's function names and signatures. Its
parsers are deliberately simple and unlike awbench's (the first object with scores wins, thinking is cut by a
plain regex...), so a test can tell that awbench calls the checkout's functions rather than its own: `stand_in`
imports them, and the expected values are what they return.

`expected_messages` restates the reference's `build_judge_messages` on the raw JSON record (dict lookups with
defaults, as the script does), independently of awbench's own record types.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from awbench.domains import DOMAINS

CHECKOUT_VARIABLE = "AWBENCH_REFERENCE_CHECKOUT"
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

PAIRWISE_TEMPLATE = """{context}

{world_model_input}

Which of the two answers below is nearer to the true output?

{response_a}

{response_b}

{ground_truth}

Answer with \\boxed{{A}} or \\boxed{{B}}."""

TURING_TEMPLATE = """{context}

{world_model_input}

One of these is what the environment really returned:

{response_a}

{response_b}

Put the real one's letter in \\boxed{{}}."""

INIT = """from .task_configs import TASK_CONFIGS, SCORE_DIMENSIONS, JUDGE_USER_PROMPT
from .judge_parser import parse_judge_output, load_judge_system_prompts
from .output_parser import parse_model_output, clean_response_marker
"""

TASK_CONFIGS = """SCORE_DIMENSIONS = ["format", "factuality", "consistency", "realism", "quality"]
TASK_CONFIGS = {
    name: {
        "response_marker": "**Environment Observation:**",
        "response_tag": "predicted_observation",
        "judge_response_tag": "final_evaluation",
        "judge_system_prompt_path": f"prompts/{name}/judge_system_prompt.txt",
    }
    for name in ("terminal", "swe", "search", "mcp", "android", "web", "os")
}
"""

OUTPUT_PARSER = '''import re

from .task_configs import TASK_CONFIGS


def parse_model_output(raw_output, response_tag):
    """Thinking blocks cut out, then the last tagged block (to its end tag or the text's end)."""
    if not raw_output:
        return "No output"
    text = re.sub(r"<think>.*?</think>", "", raw_output, flags=re.S)
    blocks = re.findall(rf"<{response_tag}>(.*?)(?:</{response_tag}>|$)", text, flags=re.S)
    if blocks:
        return blocks[-1].strip()
    return text.strip() or "No output"


def clean_response_marker(text, subtask):
    marker = TASK_CONFIGS.get(subtask, {}).get("response_marker", "")
    return text.replace(marker, "").strip() if marker else text.strip()
'''

JUDGE_PARSER = '''import json
import logging
import re
from pathlib import Path

from .task_configs import SCORE_DIMENSIONS, TASK_CONFIGS

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]


def parse_judge_output(raw_output, response_tag):
    """The first JSON object holding "scores", its values as ints (anything else 0, above 5 cut to 5)."""
    decoder = json.JSONDecoder()
    text = raw_output or ""
    for start in [i for i, c in enumerate(text) if c == "{"]:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("scores"), dict):
            scores = {}
            for dim in SCORE_DIMENSIONS:
                value = obj["scores"].get(dim, 0)
                scores[dim] = min(value, 5) if isinstance(value, int) else 0
            counted = [v for v in scores.values() if v > 0]
            total = sum(counted) / len(counted) if counted else 0
            return {"success": True, "scores": scores, "total_score": total}
    logger.warning("no verdict in the judge's answer")
    return {"success": False, "scores": {d: 0 for d in SCORE_DIMENSIONS}, "total_score": 0.0}


def extract_choice_answer(raw_output):
    """The first boxed letter; "pick A" or "pick B" without one."""
    found = re.findall(r"boxed\\{([AB])\\}", raw_output or "") or re.findall(r"pick ([AB])\\b", raw_output or "")
    if found:
        return {"choice": found[0], "success": True}
    return {"choice": None, "success": False}


def load_judge_system_prompts():
    return {
        name: (ROOT / config["judge_system_prompt_path"]).read_text(encoding="utf-8")
        for name, config in TASK_CONFIGS.items()
    }
'''


def write_checkout(
    root: Path,
    template: str | None = TEMPLATE,
    *,
    pairwise: str | None = PAIRWISE_TEMPLATE,
    turing: str | None = TURING_TEMPLATE,
    files: dict[str, str] | None = None,
) -> Path:
    """The stand-in checkout at `root`; a template given None is left out of task_configs.py, and `files`
    replaces (or adds) modules of the package by name: {"judge_parser.py": "..."}."""
    for domain in DOMAINS:
        folder = root / "prompts" / domain
        folder.mkdir(parents=True)
        # A trailing newline and spaces: the reference sends the file whole.
        (folder / "judge_system_prompt.txt").write_text(f"You grade {domain} simulations.\n  \n", encoding="utf-8")
    package = root / "eval" / "lwm_eval_utils"
    package.mkdir(parents=True)
    configs = TASK_CONFIGS + "".join(
        f"{name} = {text!r}\n"
        for name, text in (
            ("JUDGE_USER_PROMPT", template),
            ("REF_ANSWER_JUDGE_USER_PROMPT", pairwise),
            ("TURING_JUDGE_USER_PROMPT", turing),
        )
        if text is not None
    )
    sources = {
        "__init__.py": INIT,
        "task_configs.py": configs,
        "output_parser.py": OUTPUT_PARSER,
        "judge_parser.py": JUDGE_PARSER,
        **(files or {}),
    }
    for name, source in sources.items():
        (package / name).write_text(source, encoding="utf-8")
    return root


def stand_in(checkout: Path) -> ModuleType:
    """The stand-in's package, imported by the test itself under a name of its own: what awbench must call."""
    package = checkout / "eval" / "lwm_eval_utils"
    name = f"stand_in_{abs(hash(str(checkout.resolve())))}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, package / "__init__.py", submodule_search_locations=[str(package)]
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


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

    def clean(text: str) -> str:  # the stand-in's clean_response_marker
        return text.replace(MARKER, "").strip()

    user = template.format(
        context=context,
        world_model_input="# Current Turn:\n\n" + current,
        predicted_observation="**World Model Output (Simulated):**\n```\n" + clean(model_output) + "\n```",
        ground_truth="**Ground Truth (Real Output):**\n```\n" + clean(truth) + "\n```",
    ).strip()
    return [{"role": "system", "content": system_prompts.get(subtask, "")}, {"role": "user", "content": user}]


def real_checkout(purpose: str) -> Path:
    """The checkout of QwenLM/Qwen-AgentWorld that AWBENCH_REFERENCE_CHECKOUT names; the test is skipped, saying
    for what it was needed, without one."""
    given = os.environ.get(CHECKOUT_VARIABLE)
    if not given:
        pytest.skip(f"{CHECKOUT_VARIABLE} is not set: no checkout of QwenLM/Qwen-AgentWorld to {purpose}")
    return Path(given)
