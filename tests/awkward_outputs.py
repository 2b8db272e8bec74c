"""Awkward outputs of our own making, for reference-exact tests: what world models emit (`GENERATIONS`, each with
the finish reason its server gives) and what judges answer (`VERDICTS`). No reading of them is recorded here:
the tests take what the checkout's code (or its stand-in) makes of them."""

from __future__ import annotations

from typing import NamedTuple

M = "**Environment Observation:**"
P, Q = "<predicted_observation>", "</predicted_observation>"
OBS = "total 8\n-rw-r--r-- 1 root root 12 Mar  6 14:30 notes.txt"


class Generation(NamedTuple):
    content: str | None  # None: the server sends `"content": null`
    finish_reason: str = "stop"


GENERATIONS: list[Generation] = [
    Generation(OBS),
    Generation(f"{P}{OBS}{Q}"),
    Generation(f"{P}\n{M}\n{OBS}\n{Q}"),
    Generation(f"<think>list the files</think>\n{P}{OBS}{Q}"),
    Generation(f"<think>a<think>b</think>c</think>{P}{OBS}{Q}"),
    Generation(f"<think>never closed {P}{OBS}{Q}"),
    Generation("<think>a plan that never ends"),
    Generation("<think>only a plan</think>"),
    Generation(f"a plan</think>\n{OBS}"),
    Generation(f"{P}first{Q} and then {P}second{Q}"),
    Generation(f"{P}{OBS}"),
    Generation(Q),
    Generation(f"{P}<think>hmm</think>{OBS}{Q}"),
    Generation(f"{P}<think>hmm {OBS}{Q}"),
    Generation(f"{P}\r\nline one\r\nline two\r\n{Q}"),
    Generation(f"{OBS}\x00tail"),
    Generation(None),
    Generation(""),
    Generation("   \n  "),
    Generation(f"{P}partial outp", "length"),
    Generation("partial plain outp", "length"),
    Generation(P + "x" * 79 + "\n" + ("y" * 79 + "\n") * 3750 + Q),  # 300 KB
    Generation(f"<PREDICTED_OBSERVATION>{OBS}</PREDICTED_OBSERVATION>"),
    Generation(f"{OBS}\u200b\u200f e\u0301 \U0001f642 \u202eevil\u202c"),
    Generation(f"before {M} after"),
    Generation(f"  {M}\n{OBS}  "),
    Generation(f'<predicted_observation id="1">{OBS}{Q}'),
    Generation('```json\n{"files": ["notes.txt"]}\n```'),
    Generation(f'{OBS}\n<final_evaluation>{{"scores": {{"format": 5, "factuality": 5}}}}</final_evaluation>'),
    Generation(f"<think>{P}fake{Q}</think>{OBS}"),
    Generation(f"{P}{OBS}{Q}</think>"),
    Generation(f"<THINK>plan</THINK>{OBS}"),
    Generation(f"\ufeff{OBS}"),
    Generation(M),
    Generation(f"\t{OBS}  \t"),
    Generation("{context} {ground_truth} {{braces}} {0}"),
    Generation(f"</think></think>{P}{OBS}{Q}<think>"),
    Generation(f"{P}{OBS}{Q}", "content_filter"),  # text the server's filter stopped: eval.py keeps and judges it
]

S4 = '{"format": 4, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4}'
S_MIXED = '{"format": 5, "factuality": 3, "consistency": 4, "realism": 2, "quality": 4}'
FENCE = "```"


def block(body: str, fence: str = "json") -> str:
    return f"<final_evaluation>\n{FENCE}{fence}\n{body}\n{FENCE}\n</final_evaluation>"


VERDICTS: list[str] = [
    block(f'{{"strengths": ["right listing"], "weaknesses": [], "scores": {S4}}}'),
    f'{{"strengths": [], "weaknesses": [], "scores": {S_MIXED}}}',
    f'{FENCE}json\n{{"scores": {S_MIXED}}}\n{FENCE}',
    block(f'{{"scores": {S4}}}') + "\nThat is my final answer, {really}.",
    block('{"scores": {"Format": 5, "Factuality": 4, "consistency": 3, "realism": 3, "quality": 3}}'),
    block('{"scores": {"format": "4", "factuality": "3/5", "consistency": "N/A", "realism": 4, "quality": 2}}'),
    block('{"scores": {"format": 3.6, "factuality": 4.5, "consistency": 2.5, "realism": 1.49, "quality": 5.0}}'),
    block('{"scores": {"format": 7, "factuality": 0, "consistency": -2, "realism": 3, "quality": 99}}'),
    block('{"scores": {"format": 4, "factuality": 4, "consistency": 4, "realism": 4}}'),
    block('{"scores": {"format": true, "factuality": false, "consistency": 3, "realism": 3, "quality": 3}}'),
    '{"note": "first thoughts"}\n' + block(f'{{"scores": {S4}}}'),
    f'{{"scores": {S4}}}\nOn reflection:\n{{"scores": {S_MIXED}}}',
    block('{"strengths": ["a"], "scores": {"format": 4, "factuality": 3'),
    block('{"scores": {"format": NaN, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4}}'),
    "reasoning that ran long</think>\n" + block(f'{{"scores": {S_MIXED}}}'),
    f'<think>maybe {{"scores": {S4}}}</think>\n' + block(f'{{"scores": {S_MIXED}}}'),
    block(f'{{"scores" : {S_MIXED}}}'),
    block("{'scores': {'format': 4, 'factuality': 4, 'consistency': 3, 'realism': 3, 'quality': 3}}"),
    block('{"scores": {"format": 4, "factuality": 4, "consistency": 3, "realism": 3, "quality": 3,},}'),
    block("{scores: {format: 2, factuality: 2, consistency: 2, realism: 2, quality: 2}}"),
    block("{'scores': {'format': True, 'factuality': None, 'consistency': 3, 'realism': 3, 'quality': 3}}"),
    "",
    "I cannot evaluate this without more context.",
    block('{"scores": [4, 4, 4, 4, 4]}'),
    block('{"scores": null}'),
    f'{FENCE}JSON\n{{"scores": {S4}}}\n{FENCE}',
    f'<final_evaluation>\n````json\n{{"scores": {S_MIXED}}}\n````\n</final_evaluation>',
    block(f'{{"strengths": ["uses {{x}} }} and {{"], "scores": {S_MIXED}}}'),
    block(f'{{"strengths": ["said \\"ok\\" twice"], "scores": {S4}}}'),
    block(f'{{"strengths": ["输出与真实结果一致"], "weaknesses": ["时间戳不同"], "scores": {S_MIXED}}}'),
    block(f'{{"strengths": ["mentions \\"scores\\": none"], "scores": {S4}}}'),
    f'Example:\n{FENCE}json\n{{"scores": {{"format": 1}}}}\n{FENCE}\nMine:\n{FENCE}json\n{{"scores": {S_MIXED}}}\n{FENCE}',
    f'{FENCE}json\n{{"scores": {S_MIXED}}}\n{FENCE}\n{FENCE}json\n{{"summary": "done"}}\n{FENCE}',
    f'<final_evaluation>{{"scores": {S4}}}</final_evaluation>',
    f'<final_evaluation>\n{{"scores": {S_MIXED}}}',
    f'<final_evaluation></final_evaluation>\n{{"scores": {S4}}}',
    block('{"scores": {"format": 2, "format": 5, "factuality": 3, "consistency": 3, "realism": 3, "quality": 3}}'),
    block(
        '{"scores": {"format": 10000000000000000000000, "factuality": 4, "consistency": 4, "realism": 4, "quality": 1}}'
    ),
    block('{"scores": {"format": -1.5, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4}}'),
    block('{"scores": {"format": "5 out of 5", "factuality": 4, "consistency": 4, "realism": 4, "quality": 4}}'),
    block(f'{{"evaluation": {{"scores": {S_MIXED}}}}}'),
    block(f'{{"scores": {S4}}}').replace("\n", "\r\n"),
    "Hmm { this brace never closes, and neither does [ this.\n" + block(f'{{"scores": {S_MIXED}}}'),
    f'{FENCE}json\n{{"scores": {S4}}}',
    block(f'{{\n  // the judge comments\n  "scores": {S4}\n}}'),
    block('{"scores": {"format": 4e0, "factuality": 3E0, "consistency": 4, "realism": 4, "quality": 4}}'),
    block('{"scores": {"format": 4, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4, "style": 1}}'),
    block('{"scores": {"\\u0066ormat": 2, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4}}'),
    "<think>" + block(f'{{"scores": {S4}}}'),
    # Negative scores the reference keeps whole: a line of hundreds of digits, or -inf once scaled.
    block('{"scores": {"format": -1.7e308, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4}}'),
    block('{"scores": {"format": 4, "factuality": -1e12, "consistency": 4, "realism": 4, "quality": 4}}'),
    block('{"scores": {"format": 4, "factuality": 4, "consistency": -1e300, "realism": 4, "quality": 4}}'),
    block('{"scores": {"format": 4, "factuality": 4, "consistency": 4, "realism": -9007199254740993, "quality": 4}}'),
]
