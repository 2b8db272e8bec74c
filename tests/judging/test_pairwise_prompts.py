"""The pairwise judge's prompts: awbench's own set, a directory of our layout, and a reference checkout's
`REF_ANSWER_JUDGE_USER_PROMPT`, read at run time. The checkout here is a fixture in our own words with the
reference's layout: `eval/lwm_eval_utils/task_configs.py` holding format strings with the reference's fields."""

from __future__ import annotations

import pytest
from reference_checkout import PAIRWISE_TEMPLATE, write_checkout

from awbench.domains import DOMAINS
from awbench.judging.choice.pairwise_prompts import load_pairwise_prompts, pairwise_messages
from awbench.judging.llm.prompts import PromptError
from awbench.records import BenchmarkRecord, Sample
from awbench.resources import bundled

MARKER = "**Environment Observation:**"


def terminal_sample(turn: int = 2) -> Sample:
    record = BenchmarkRecord.model_validate(
        {
            "task": "terminal",
            "id": "t0",
            "prompt": ["### Turn 1\n**Action:**\nls", "### Turn 2\n**Action:**\ncat notes.txt"],
            "response": [f"{MARKER}\nnotes.txt", f"{MARKER}\nbuy {{milk}}\n"],
            "current_prompt": "### Turn 2\n**Action:**\ncat notes.txt",
            "system_str": "You simulate a shell.",
            "turn_idx": turn,
            "total_turns": 2,
        }
    )
    return Sample(key=record.base_key(), record=record, origin="test")


def test_the_builtin_set_fills_every_placeholder_in_order():
    prompts = load_pairwise_prompts()
    system = (bundled("judges/pairwise") / "system.md").read_text(encoding="utf-8")
    assert (prompts.name, prompts.protocol, prompts.source) == ("pairwise", "awbench", None)
    assert prompts.system == dict.fromkeys(DOMAINS, system)
    messages = pairwise_messages(prompts, terminal_sample(), "buy {{milk}}", f"{MARKER}\nbuy bread")
    assert messages[0] == {"role": "system", "content": system}
    user = messages[1]["content"]
    assert user.startswith("Compare two simulated Terminal observations with the real one.")
    assert "## Current action (turn 2)\n\n```\n### Turn 2\n**Action:**\ncat notes.txt\n```" in user
    assert "### Turn 1: observation\n\n```\nnotes.txt\n```" in user  # the history, without markers
    # Each text in its own fence, in the order given; braces inside a text stay as they are (one pass).
    a, b, truth = user.index("## Response A"), user.index("## Response B"), user.index("## Real observation")
    assert a < b < truth
    assert user[a:b] == "## Response A\n\n```\nbuy {{milk}}\n```\n\n"
    assert user[b:truth] == "## Response B\n\n```\nbuy bread\n```\n\n"  # the observation marker is not shown
    assert "## Real observation (ground truth)\n\n```\nbuy {milk}\n\n```" in user
    assert user.rstrip().endswith("exactly as `\\boxed{A}` or `\\boxed{B}`, with nothing after it.")


def test_the_reference_template_is_read_from_the_checkout(tmp_path):
    checkout = write_checkout(tmp_path / "Qwen-AgentWorld")
    prompts = load_pairwise_prompts(str(checkout))
    assert (prompts.name, prompts.protocol, prompts.source) == (
        "pairwise-reference",
        "reference",
        str(checkout.resolve()),
    )
    assert prompts.user_template == PAIRWISE_TEMPLATE
    assert prompts.sha256 != load_pairwise_prompts().sha256
    assert load_pairwise_prompts(str(checkout / "prompts")).user_template == PAIRWISE_TEMPLATE  # or its prompts/
    messages = pairwise_messages(prompts, terminal_sample(), f"  {MARKER}\nbuy milk ", "buy {bread}")
    assert messages[0]["content"] == load_pairwise_prompts().system["terminal"]  # the reference has none of its own
    assert messages[1]["content"] == (
        "# Context (Historical Interactions):\n\n"
        f"### Turn 1\n**Action:**\nls\n{MARKER}\nnotes.txt\n\n\n\n"  # each turn ends in a blank line
        "# Current Turn:\n\n### Turn 2\n**Action:**\ncat notes.txt\n\n"
        "Which of the two answers below is nearer to the true output?\n\n"
        "**Response A:**\n```\nbuy milk\n```\n\n"  # the marker anywhere is removed, then whitespace stripped
        "**Response B:**\n```\nbuy {bread}\n```\n\n"
        "**Ground Truth (Real Output):**\n```\nbuy {milk}\n```\n\n"
        "Answer with \\boxed{A} or \\boxed{B}."
    )


def test_a_first_turn_has_no_context_and_the_message_is_stripped(tmp_path):
    prompts = load_pairwise_prompts(str(write_checkout(tmp_path / "ref")))
    user = pairwise_messages(prompts, terminal_sample(turn=1), "notes.txt", "ls: cannot access")[1]["content"]
    assert user.startswith("# Current Turn:\n\n### Turn 2\n**Action:**\ncat notes.txt")  # current_prompt as given


@pytest.mark.parametrize(
    ("pairwise", "message"),
    [
        (None, "task_configs.py: no string REF_ANSWER_JUDGE_USER_PROMPT"),
        (
            "{context} {response_a} {response_b}",
            "REF_ANSWER_JUDGE_USER_PROMPT has the fields ['context', 'response_a', 'response_b']; awbench fills "
            "['context', 'world_model_input', 'response_a', 'response_b', 'ground_truth']",
        ),
    ],
)
def test_a_checkout_without_a_usable_pairwise_template_is_refused(tmp_path, pairwise, message):
    checkout = write_checkout(tmp_path / "ref", pairwise=pairwise)
    with pytest.raises(PromptError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_pairwise_prompts(str(checkout))


def test_our_layout_and_its_errors(tmp_path):
    ours = tmp_path / "mine"
    ours.mkdir()
    with pytest.raises(PromptError, match=f"no pairwise judge prompts in {ours}: expected system.md"):
        load_pairwise_prompts(str(ours))
    (ours / "system.md").write_text("Pick the closer one.\n", encoding="utf-8")
    (ours / "user_template.md").write_text("{{response_a}} or {{response_b}}?\n", encoding="utf-8")
    with pytest.raises(PromptError, match=r"user_template.md: missing placeholder\(s\) \{\{ground_truth\}\}"):
        load_pairwise_prompts(str(ours))
    (ours / "user_template.md").write_text("{{prediction}} {{response_a}} {{response_b}} {{ground_truth}}\n")
    with pytest.raises(PromptError, match=r"unknown placeholder\(s\) \{\{prediction\}\}"):
        load_pairwise_prompts(str(ours))
    other = tmp_path / "other.md"
    other.write_text("A: {{response_a}}\nB: {{response_b}}\nReal: {{ground_truth}}\n", encoding="utf-8")
    loaded = load_pairwise_prompts(str(ours), template=str(other))
    assert (loaded.name, loaded.source) == ("pairwise-custom", str(ours.resolve()))
    assert loaded.system["web"] == "Pick the closer one.\n"
    user = pairwise_messages(loaded, terminal_sample(), "x", "y")[1]["content"]
    assert user == "A: ```\nx\n```\nB: ```\ny\n```\nReal: ```\nbuy {milk}\n\n```\n"
    with pytest.raises(PromptError, match="--judge-template cannot be combined with a reference checkout"):
        load_pairwise_prompts(str(write_checkout(tmp_path / "ref")), template=str(other))
    with pytest.raises(PromptError, match="neither the built-in set"):
        load_pairwise_prompts(str(tmp_path / "nowhere"))
