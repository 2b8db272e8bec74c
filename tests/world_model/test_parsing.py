import pytest

from awbench.world_model.parsing import (
    extract_prediction,
    strip_observation_marker,
    strip_thinking,
)

P, E = "<predicted_observation>", "</predicted_observation>"

EXTRACT_CASES = [
    ("plain text, no tags", "  ls -la output\n", "ls -la output"),
    ("single block", f"{P}\nfile.txt\n{E}", "file.txt"),
    ("think block then block", f"<think>the user ran ls</think>\n{P}a.txt{E}", "a.txt"),
    ("several think blocks", f"<think>one</think>{P}x{E}<think>two\nlines</think>", "x"),
    ("multi-line think", "<think>\nline 1\nline 2\n</think>\n\nresult", "result"),
    ("uppercase think tags", f"<THINK>plan</THINK>{P}ok{E}", "ok"),
    ("mixed-case tags", "<Think>plan</tHiNk><Predicted_Observation>ok</PREDICTED_OBSERVATION>", "ok"),
    ("orphan close (template opened the thinking)", f"reasoning here</think>{P}x{E}", "x"),
    ("orphan close, no block", "the agent wants...\n</think>\n\n$ echo hi\nhi", "$ echo hi\nhi"),
    ("orphan open resumes at the block", f"<think>I should print {{'a': 1}}\n{P}{{'a': 1}}{E}", "{'a': 1}"),
    ("orphan open without a block drops to the end", "Answer first.<think>cut off mid-thoug", "Answer first."),
    ("closed block then orphan open", "<think>a</think>b<think>c", "b"),
    ("nested-looking think tags", "<think>a<think>b</think>c</think>d", "d"),
    ("orphan close before orphan open", "x</think>y<think>z", "y"),
    ("block only inside thinking is not taken", f"<think>draft: {P}wrong{E}</think>right", "right"),
    ("several blocks: the last wins", f"{P}first{E}\n{P}second{E}\n{P}third{E}", "third"),
    ("unclosed last block runs to the end", f"{P}done{E}\n{P}\npartial output\n  ", "partial output"),
    ("repeated opening tag", f"{P}a{P}b{E}", "b"),
    ("closing tag without opening", f"Observation body\n{E}\nHope this helps!", "Observation body"),
    ("text around the block is dropped", f"Sure! Here it is:\n{P}\nbody\n{E}\nLet me know.", "body"),
    ("inner whitespace kept", f"{P}\n\n  line 1\n\n\tline 2  \n\n{E}", "line 1\n\n\tline 2"),
    ("empty generation", "", ""),
    ("whitespace only", " \n\t\n ", ""),
    ("empty block", f"{P}{E}", ""),
    ("only thinking", "<think>nothing else</think>", ""),
    ("unicode content", f"<think>思考</think>{P}\n文件已保存：报告.txt ✓\n{E}", "文件已保存：报告.txt ✓"),
    ("marker is kept by extraction", f"{P}**Environment Observation:**\nok{E}", "**Environment Observation:**\nok"),
    ("angle brackets in content", f"{P}<html><body>x</body></html>{E}", "<html><body>x</body></html>"),
    ("think tag text inside content after thinking", f"</think>{P}a</thinking> b{E}", "a</thinking> b"),
]


@pytest.mark.parametrize(
    ("generation", "expected"), [case[1:] for case in EXTRACT_CASES], ids=[case[0] for case in EXTRACT_CASES]
)
def test_extract_prediction(generation: str, expected: str) -> None:
    assert extract_prediction(generation) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("reasoning</think><predicted_observation>x", "<predicted_observation>x"),
        ("<think>a</think>b<think>c", "b"),
        ("<THINK>everything", ""),
        ("keep <think>a</think> this", "keep  this"),
        ("<think>a</think>b</think>c", "c"),
        (f"a<think>b{P}c<think>d{P}e", f"a{P}c{P}e"),
    ],
)
def test_strip_thinking(text: str, expected: str) -> None:
    assert strip_thinking(text) == expected


def test_strip_thinking_without_resume_tag_drops_to_the_end() -> None:
    text = "verdict<think>x<predicted_observation>y"
    assert strip_thinking(text, resume_at=None) == "verdict"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The judge's side, as the reference parser: an unclosed think ends at the first final_evaluation tag.
        ("<think>draft\n<final_evaluation>{}</final_evaluation>", "<final_evaluation>{}</final_evaluation>"),
        ("<think>a<FINAL_EVALUATION>b", "<FINAL_EVALUATION>b"),
        ("<think>a<final_evaluation>b<final_evaluation>c", "<final_evaluation>b<final_evaluation>c"),
        ("<think>a</think>b<think>c<final_evaluation>d", "b<final_evaluation>d"),
        ("<think>cut off mid-thought", ""),
        ("<think>a<predicted_observation>b", ""),  # the candidates' tag is no resume point for judges
    ],
)
def test_strip_thinking_resumes_at_the_judges_verdict(text: str, expected: str) -> None:
    assert strip_thinking(text, resume_at="<final_evaluation>") == expected


def test_candidate_side_does_not_resume_at_a_verdict_tag() -> None:
    assert strip_thinking("<think>a<final_evaluation>b") == ""
    assert extract_prediction(f"<think>a<final_evaluation>b{P}x{E}") == "x"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("**Environment Observation:**\nfile.txt", "file.txt"),
        ("**Environment Observation:**\r\nfile.txt", "file.txt"),
        ("  \n**Environment Observation:**  \nfile.txt", "file.txt"),
        ("**Environment Observation:**\n\nfile.txt", "\nfile.txt"),
        ("**Environment Observation:** inline", "inline"),
        ("**Environment Observation:**", ""),
        ("Environment Observation:\nfile.txt", "Environment Observation:\nfile.txt"),
        ("**environment observation:**\nx", "**environment observation:**\nx"),
        ("text\n**Environment Observation:**\nx", "text\n**Environment Observation:**\nx"),
        ("  no marker\n", "  no marker\n"),
        ("", ""),
    ],
)
def test_strip_observation_marker(text: str, expected: str) -> None:
    assert strip_observation_marker(text) == expected
