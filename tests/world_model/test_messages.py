from awbench.records import BenchmarkRecord
from awbench.world_model.messages import judge_history, world_model_messages

OBS = "**Environment Observation:**\n"


def _record(turn_idx=3, system="You simulate a shell."):
    return BenchmarkRecord(
        task="agentworld/terminal",
        id=7,
        system_str=system,
        turn_idx=turn_idx,
        total_turns=5,
        prompt=[f"### Turn {i}\n**Action:**\ncmd{i}" for i in range(1, turn_idx + 1)],
        response=[f"{OBS}out{i}" for i in range(1, turn_idx + 1)],
        current_prompt=f"### Turn {turn_idx}\n**Action:**\ncmd{turn_idx}",
    )


def test_full_history_exactly():
    assert world_model_messages(_record()) == [
        {"role": "system", "content": "You simulate a shell."},
        {"role": "user", "content": "### Turn 1\n**Action:**\ncmd1"},
        {"role": "assistant", "content": f"{OBS}out1"},
        {"role": "user", "content": "### Turn 2\n**Action:**\ncmd2"},
        {"role": "assistant", "content": f"{OBS}out2"},
        {"role": "user", "content": "### Turn 3\n**Action:**\ncmd3"},
    ]


def test_first_turn_and_empty_system_prompt():
    assert world_model_messages(_record(turn_idx=1, system="")) == [
        {"role": "user", "content": "### Turn 1\n**Action:**\ncmd1"},
    ]


def test_dropping_the_oldest_turns_keeps_system_and_action():
    assert world_model_messages(_record(), drop_oldest_turns=1) == [
        {"role": "system", "content": "You simulate a shell."},
        {"role": "user", "content": "### Turn 2\n**Action:**\ncmd2"},
        {"role": "assistant", "content": f"{OBS}out2"},
        {"role": "user", "content": "### Turn 3\n**Action:**\ncmd3"},
    ]


def test_judge_history_strips_markers_and_stops_before_the_current_turn():
    assert judge_history(_record()) == [
        "### Turn 1\n**Action:**\ncmd1",
        "out1",
        "### Turn 2\n**Action:**\ncmd2",
        "out2",
    ]
    assert judge_history(_record(turn_idx=1)) == []
