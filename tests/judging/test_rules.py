"""Unit tests of the rule judge: the metadata detectors on realistic snippets, and the parts of the score."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from html.parser import HTMLParser

import pytest

from awbench.judging.rules import RuleResult, rule_score, structure
from awbench.judging.rules.deterministic import deterministic_items
from awbench.judging.rules.masking import mask
from awbench.judging.rules.score import RULES_VERSION, combine
from awbench.judging.rules.text import line_key, normalized_lines
from awbench.resources import sample_dir

M = "**Environment Observation:**"

DETECTOR_CASES = {
    "ls -l": (
        "total 16\n"
        "drwxr-xr-x 2 root root 4096 Nov 29 22:44 reports\n"
        "-rw-r--r-- 1 root root  612 Jan  3  2024 notes.txt\n"
        "-rw-r--r-- 1 root root 1.2K May  3 08:00 access.log",
        "total ⟨SIZE⟩\n"
        "drwxr-xr-x 2 root root ⟨SIZE⟩ ⟨TIME⟩ reports\n"
        "-rw-r--r-- 1 root root  ⟨SIZE⟩ ⟨TIME⟩ notes.txt\n"
        "-rw-r--r-- 1 root root ⟨SIZE⟩ ⟨TIME⟩ access.log",
    ),
    "ps aux": (
        "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
        "root           1  0.0  0.1   4624  3712 ?        Ss   22:40   0:00 /bin/bash\n"
        "root        4127  0.0  0.0   7064  1580 pts/0    R+   22:44   0:00 ps aux",
        "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
        "root           ⟨PID⟩  ⟨PERCENT⟩  ⟨PERCENT⟩   ⟨SIZE⟩  ⟨SIZE⟩ ?        Ss   ⟨TIME⟩   ⟨DURATION⟩ /bin/bash\n"
        "root        ⟨PID⟩  ⟨PERCENT⟩  ⟨PERCENT⟩   ⟨SIZE⟩  ⟨SIZE⟩ pts/0    R+   ⟨TIME⟩   ⟨DURATION⟩ ps aux",
    ),
    "ps -o": (
        "    PID     ELAPSED COMMAND\n   4300       00:05 bash",
        "    PID     ELAPSED COMMAND\n   ⟨PID⟩       ⟨DURATION⟩ bash",
    ),
    "job control and pid keys": (
        '[1] 12345\nshell pid: 4300\nchild pid: 4321 parent: 4300\nusers:(("python3",pid=881,fd=3))',
        '[1] ⟨PID⟩\nshell pid: ⟨PID⟩\nchild pid: ⟨PID⟩ parent: ⟨PID⟩\nusers:(("python3",pid=⟨PID⟩,fd=3))',
    ),
    "git log": (
        "commit 3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c\n"
        "Author: Sample Agent <agent@example.com>\n"
        "Date:   Fri Nov 29 22:44:16 2026 +0000\n"
        "\n"
        "    Make weight tier upper limits inclusive (fixes #31)\n"
        "[main 1a2b3c4] Fix tiers\n"
        " 1 file changed, 1 insertion(+), 1 deletion(-)\n"
        "index 9c1e2f3..a4b5c6d 100644",
        "commit ⟨HASH⟩\n"
        "Author: Sample Agent <agent@example.com>\n"
        "Date:   ⟨TIME⟩\n"
        "\n"
        "    Make weight tier upper limits inclusive (fixes #31)\n"
        "[main ⟨HASH⟩] Fix tiers\n"
        " 1 file changed, 1 insertion(+), 1 deletion(-)\n"
        "index ⟨HASH⟩..⟨HASH⟩ 100644",
    ),
    "docker ps": (
        "CONTAINER ID   IMAGE          COMMAND                  CREATED         STATUS         PORTS                  NAMES\n"
        '3f2a1b4c5d6e   nginx:1.25     "/docker-entrypoint.…"   2 minutes ago   Up 2 minutes   0.0.0.0:8080->80/tcp   web',
        "CONTAINER ID   IMAGE          COMMAND                  CREATED         STATUS         PORTS                  NAMES\n"
        '⟨HASH⟩   nginx:1.25     "/docker-entrypoint.…"   ⟨TIME⟩   Up ⟨DURATION⟩   0.0.0.0:8080->80/tcp   web',
    ),
    "curl progress": (
        "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
        "                                 Dload  Upload   Total   Spent    Left  Speed\n"
        "100  1256  100  1256    0     0   5432      0 --:--:-- --:--:-- --:--:--  5437\n"
        "Downloading wheel (1.2 MB) 3.4 MB/s 50%",
        "  % Total    % Received % Xferd  Average Speed   Time    Time     Time  Current\n"
        "                                 Dload  Upload   Total   Spent    Left  Speed\n"
        "⟨PROGRESS⟩\n"
        "Downloading wheel (⟨SIZE⟩) ⟨RATE⟩ ⟨PERCENT⟩",
    ),
    "pytest and unittest timing": (
        "tests/test_pricing.py ....                                [100%]\n"
        "============================== 4 passed in 0.12s ===============================\n"
        "Ran 7 tests in 0.001s\n"
        "real\t0m0.035s\nuser\t0m0.020s\nsys\t0m0.012s\n"
        "slowest: 12 ms",
        "tests/test_pricing.py ....                                [⟨PERCENT⟩]\n"
        "============================== 4 passed in ⟨DURATION⟩ ===============================\n"
        "Ran 7 tests in ⟨DURATION⟩\n"
        "real\t⟨DURATION⟩\nuser\t⟨DURATION⟩\nsys\t⟨DURATION⟩\n"
        "slowest: ⟨DURATION⟩",
    ),
    "date and log formats": (
        "Sun Nov 29 22:44:16 UTC 2026\n"
        "finished 2026-11-29 22:44:16 UTC\n"
        "verified at 22:44:16\n"
        "Date: Wed, 24 Jun 2026 00:57:52 GMT\n"
        "Nov 29 22:44:16 host sshd[812]: Accepted publickey\n"
        '203.0.113.7 - - [01/May/2024:08:00:20 +0000] "GET / HTTP/1.1" 200 1234 "-" "curl/8.4.0"',
        "⟨TIME⟩\n"
        "finished ⟨TIME⟩\n"
        "verified at ⟨TIME⟩\n"
        "Date: ⟨TIME⟩\n"
        "⟨TIME⟩ host sshd[812]: Accepted publickey\n"
        '203.0.113.7 - - [⟨TIME⟩] "GET / HTTP/1.1" 200 1234 "-" "curl/8.4.0"',
    ),
    "json record": (
        '{"id": "123e4567-e89b-12d3-a456-426614174000", "created_at": "2024-05-03T08:00:00Z",\n'
        ' "updated": 1714723200, "number": 248, "etag": "\\"3487301225618000\\""}',
        '{"id": "⟨UUID⟩", "created_at": "⟨TIME⟩",\n'
        ' "updated": ⟨TIME⟩, "number": 248, "etag": "\\"3487301225618000\\""}',
    ),
    "sizes, addresses, temp names, ports": (
        "4.0K\t.\n123\tinput.txt\n<shipcalc.pricing.Quote object at 0x7f3a2b1c4d50>\n"
        "/tmp/tmp.XyZ123abCd and /tmp/tmpa1b2c3d4\n"
        "Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...\n"
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "⟨SIZE⟩\t.\n⟨SIZE⟩\tinput.txt\n<shipcalc.pricing.Quote object at ⟨ADDR⟩>\n"
        "/tmp/⟨TMPNAME⟩ and /tmp/⟨TMPNAME⟩\n"
        "Serving HTTP on 0.0.0.0 port ⟨PORT⟩ (http://0.0.0.0:⟨PORT⟩/) ...\n"
        "sha256:⟨HASH⟩",
    ),
    "ui clocks and battery": (
        '<node text="9:41" resource-id="com.android.systemui:id/clock" bounds="[42,18][150,78]" />\n'
        '<node content-desc="Battery 76 percent." />\n<label name="Mar 6  14:34" coords="(880, 0)" />',
        '<node text="⟨TIME⟩" resource-id="com.android.systemui:id/clock" bounds="[42,18][150,78]" />\n'
        '<node content-desc="Battery ⟨PERCENT⟩ percent." />\n<label name="⟨TIME⟩" coords="(880, 0)" />',
    ),
}

UNMASKED = [
    "  34 logs/access-2024-05-01.log\n 102 total",  # wc -l counts and a date inside a file name
    "     1\timport argparse\n    12\t    return Quote(tier=name, zone=zone, price=base)",  # cat -n
    "12:        if weight_kg < limit:",  # grep -n
    "[exit code: 1]\n(no output)\n3 passed, 1 failed\ntotal words: 9",
    "  3 the\n  2 dog\nletter 2.5\nversion 0.3.1 on Python 3.11",
    "deadbeef facade added Decade2",  # hex-looking words are not hashes
    'bounds="[0,96][1080,264]" index="3"',
]


@pytest.mark.parametrize("name", sorted(DETECTOR_CASES))
def test_detectors_mask_runtime_metadata(name: str) -> None:
    raw, expected = DETECTOR_CASES[name]
    assert mask(raw) == expected
    assert mask(expected) == expected


@pytest.mark.parametrize("text", UNMASKED)
def test_deterministic_numbers_are_left_alone(text: str) -> None:
    assert mask(text) == text


# ----------------------------------------------------------------------------- the score


def score(domain: str, truth: str, prediction: str, history: list[str]) -> RuleResult:
    return rule_score(domain=domain, ground_truth=truth, prediction=prediction, history=history)


TERMINAL_HISTORY = [
    "### Turn 1\n**Action:**\nprintf 'hello\\nworld\\n' > a.txt && ls -l",
    f"{M}\ntotal 4\n-rw-r--r-- 1 root root 12 Nov 29 22:44 a.txt",
    "### Turn 2\n**Action:**\ncat a.txt; date; echo done",
]
TERMINAL_TRUTH = "hello\nworld\nSun Nov 29 22:45:01 UTC 2026\ndone"


def test_version_and_identical_prediction() -> None:
    assert RULES_VERSION == "2"
    result = score("terminal", TERMINAL_TRUTH, TERMINAL_TRUTH, TERMINAL_HISTORY)
    assert result.score == 1.0 and result.exact_match and result.deterministic_complete
    assert set(result.parts) == {"deterministic_recall", "metadata_format", "structure", "length", "exact_match"}


def test_other_metadata_values_still_match_exactly() -> None:
    result = score("terminal", TERMINAL_TRUTH, "hello\nworld\nMon Dec  1 10:00:00 UTC 2026\ndone", TERMINAL_HISTORY)
    assert result.exact_match and result.score == 1.0


def test_wrong_deterministic_line_is_caught() -> None:
    result = score("terminal", TERMINAL_TRUTH, "hello\nwrld\nSun Nov 29 22:45:01 UTC 2026\ndone", TERMINAL_HISTORY)
    assert not result.exact_match and not result.deterministic_complete
    assert result.parts["deterministic_recall"] == pytest.approx(2 / 3)
    assert result.parts["metadata_format"] == 1.0
    assert result.score < 0.8


def test_metadata_of_the_wrong_kind_costs_format() -> None:
    result = score("terminal", TERMINAL_TRUTH, "hello\nworld\n4127\ndone", TERMINAL_HISTORY)
    assert result.parts["metadata_format"] == 0.0 and result.parts["deterministic_recall"] == 1.0


def test_empty_prediction_scores_zero_unless_truth_is_empty() -> None:
    assert score("terminal", TERMINAL_TRUTH, "", TERMINAL_HISTORY).score == 0.0
    assert score("terminal", TERMINAL_TRUTH, " \n\n", TERMINAL_HISTORY).score == 0.0
    assert score("terminal", "", "", TERMINAL_HISTORY).score == 1.0
    assert score("terminal", "", "something", TERMINAL_HISTORY).score == 0.0


# The current action's output shares nothing with the trajectory: no deterministic item, no metadata, no prompt.
CRASH_HISTORY = ["### Turn 1\n**Action:**\npython3 app.py"]
CRASH_TRUTH = (
    "Traceback (most recent call last):\n"
    '  File "/root/app.py", line 3, in <module>\n'
    "    import yaml\n"
    "ModuleNotFoundError: No module named 'yaml'"
)


def test_unrelated_prediction_gets_no_free_recall() -> None:
    """An unrelated terminal output scored 72 in RULES_VERSION 1: with nothing deterministic in the truth, recall
    counted as 1.0, metadata as 1.0 (no placeholders on either side) and prompts as agreeing (none on either
    side). Now those parts are left out and the score rests on what was checked: here, structure and length."""
    unrelated = "Reading configuration...\nLoaded 12 routes\nServer ready\nPress Ctrl+C to stop"
    result = score("terminal", CRASH_TRUTH, unrelated, CRASH_HISTORY)
    assert set(result.parts) == {"structure", "length", "exact_match"}
    assert result.parts["structure"] == 0.0
    assert result.score < 0.3
    # The same crash with other words scores on its (identical) shape.
    reworded = CRASH_TRUTH.replace("yaml", "toml").replace("app.py", "main.py").replace("import", "from")
    assert score("terminal", CRASH_TRUTH, reworded, CRASH_HISTORY).score >= 0.8


def test_parts_with_nothing_to_check_leave_the_weighting() -> None:
    assert combine({"structure": 0.4, "length": 1.0}) == pytest.approx(0.9 * (0.5 * 0.4 + 0.2 * 1.0) / 0.7)
    shape = 0.5 * 0.4 + 0.3 * 0.5 + 0.2 * 1.0
    assert combine({"structure": 0.4, "metadata_format": 0.5, "length": 1.0}) == pytest.approx(0.9 * shape)
    # Half of the shape credit is only earned as far as the deterministic content is right.
    with_recall: dict[str, float | None] = {
        "deterministic_recall": 0.6,
        "structure": 0.4,
        "metadata_format": 0.5,
        "length": 1.0,
    }
    assert combine(with_recall) == pytest.approx(0.9 * (0.5 * 0.6 + 0.5 * shape * (0.5 + 0.5 * 0.6)))
    assert combine({**with_recall, "deterministic_recall": 0.0}) == pytest.approx(0.9 * 0.25 * shape)
    result = score("terminal", "alpha beta\ngamma delta", "one two\nthree four", ["### Turn 1\n**Action:**\nfortune"])
    assert "deterministic_recall" not in result.parts and "metadata_format" not in result.parts
    assert result.deterministic_complete and result.score <= 0.9


def test_surplus_metadata_costs_format() -> None:
    history = ["### Turn 1\n**Action:**\nfortune"]
    result = score("terminal", "alpha beta\ngamma delta", "alpha beta\ngamma delta at 10:42:00", history)
    assert result.parts["metadata_format"] == 0.0
    two_of_three = score("terminal", "at 10:42:00\nfor 3.2s", "at 11:00:01\nfor 1.5s\nin 40ms", history)
    assert two_of_three.parts["metadata_format"] == pytest.approx(2 / 3)


def test_closing_tags_are_not_deterministic_content() -> None:
    """`</panel>` is in every earlier tree; any prediction in the same markup has it, so it proves nothing."""
    screen = '<panel name="Dock">\n  <push-button name="Files" />\n</panel>\n</application>'
    history = [
        '### Turn 1\n**Action:**\n{"action": "click", "x": 1, "y": 2}',
        f"{M}\n{screen}",
        "### Turn 2\n**Action:**\nwait",
    ]
    truth = '<dialog name="Save changes?">\n  <push-button name="Save" />\n</dialog>\n</panel>\n</application>'
    keys = [line_key(line) for line in normalized_lines(mask(truth))]
    assert deterministic_items(keys, tuple(history)) == []


def test_a_value_counts_as_often_as_the_truth_holds_it() -> None:
    history = ['### Turn 1\n**Action:**\n{"action": "click", "element_id": "com.jotter.notes:id/fab"}']
    truth = "\n".join(f'<node text="{t}" package="com.jotter.notes" />' for t in ("a1", "b2", "c3", "d4"))
    once = truth.replace("com.jotter.notes", "com.other.app").replace("com.other.app", "com.jotter.notes", 1)
    result = score("android", truth, once, history)
    assert result.parts["deterministic_recall"] == pytest.approx(1 / 4)


def test_file_written_earlier_and_numbered_view_are_deterministic() -> None:
    create = {
        "tool": "str_replace_editor",
        "command": "create",
        "path": "/testbed/r.py",
        "file_text": "import os\nprint(os.sep)\n",
    }
    history = [
        f"### Turn 1\n**Action:**\n{json.dumps(create)}",
        f"{M}\nFile created successfully at: /testbed/r.py",
        '### Turn 2\n**Action:**\n{"tool": "str_replace_editor", "command": "view", "path": "/testbed/r.py"}',
    ]
    truth = "Here's the result of running `cat -n` on /testbed/r.py:\n     1\timport os\n     2\tprint(os.sep)"
    wrong = "Here's the result of running `cat -n` on /testbed/r.py:\n     1\timport sys\n     2\tprint(sys.argv)"
    result = score("swe", truth, wrong, history)
    # Found: the echoed path (1 of 3 items). Missed: both file lines, which are also all that is new since
    # the previous observation, and that half of the part is 0.
    assert result.parts["deterministic_recall"] == pytest.approx((1 / 3 + 0) / 2)
    assert result.parts["structure"] == 1.0
    right = score("swe", truth, truth.replace("     ", "  "), history)
    assert right.deterministic_complete and right.score == 1.0


MCP_CALL = {
    "tool": "github.create_issue",
    "arguments": {"owner": "acme-robotics", "repo": "fleet-manager", "title": "Battery telemetry times out"},
}
MCP_TRUTH = json.dumps(
    {
        "number": 248,
        "title": "Battery telemetry times out",
        "html_url": "https://github.com/acme-robotics/fleet-manager/issues/248",
        "created_at": "2025-03-06T13:41:07Z",
        "user": {"login": "acme-ops-bot"},
    },
    indent=2,
)


def test_mcp_echoed_arguments_and_key_paths() -> None:
    history = [f"### Turn 1\n**Action:**\n{json.dumps(MCP_CALL)}"]
    good = MCP_TRUTH.replace("248", "251").replace("13:41:07", "09:00:00")
    result = score("mcp", MCP_TRUTH, good, history)
    assert result.parts["deterministic_recall"] == 1.0 and result.parts["structure"] == 1.0
    assert result.parts["metadata_format"] == 1.0
    wrong_title = good.replace("Battery telemetry times out", "Battery telemetry is slow")
    assert score("mcp", MCP_TRUTH, wrong_title, history).parts["deterministic_recall"] < 1.0
    not_json = score("mcp", MCP_TRUTH, "Issue 251 created: Battery telemetry times out", history)
    assert not_json.parts["structure"] == 0.0


WEB_TRUTH = (
    "Tab 0 (current): Issues\nURL: http://forge.internal:8023/issues\n\n"
    "[1] RootWebArea 'Issues' focused: True\n\t[14] link 'Forge home'\n\t[16] searchbox 'Search'\n"
    "\t[19] link 'Merge requests 2'"
)


def test_accessibility_tree_roles() -> None:
    history = ['### Turn 1\n**Action:**\n{"action": "goto", "url": "http://forge.internal:8023/issues"}']
    relabelled = WEB_TRUTH.replace("Forge home", "Home page").replace("Merge requests 2", "Pull requests 5")
    assert score("web", WEB_TRUTH, relabelled, history).parts["structure"] == 1.0
    as_text = score("web", WEB_TRUTH, "Issues page\nForge home\nSearch", history)
    assert as_text.parts["structure"] < 0.3


ANDROID_TRUTH = (
    "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<hierarchy rotation=\"0\">\n"
    '  <node index="0" text="" class="android.widget.FrameLayout" bounds="[0,0][1080,2400]">\n'
    '    <node index="0" text="9:41" class="android.widget.TextView" bounds="[42,18][150,78]" />\n'
    '    <node index="1" text="Notes" class="android.widget.TextView" bounds="[48,140][600,220]" />\n'
    "  </node>\n</hierarchy>"
)


def test_ui_xml_tag_paths() -> None:
    history = ['### Turn 1\n**Action:**\n{"action": "open_app", "app_name": "Jotter Notes"}']
    other_text = ANDROID_TRUTH.replace('"Notes"', '"Tasks"').replace("9:41", "10:02")
    same_shape = score("android", ANDROID_TRUTH, other_text, history)
    assert same_shape.parts["structure"] == 1.0 and same_shape.parts["metadata_format"] == 1.0
    broken = score("android", ANDROID_TRUTH, ANDROID_TRUTH.replace("</hierarchy>", ""), history)
    assert broken.parts["structure"] < 1.0
    buttons = ANDROID_TRUTH.replace("widget.TextView", "widget.Button")
    assert score("android", ANDROID_TRUTH, buttons, history).parts["structure"] < 0.5


def test_android_view_ids_are_structure() -> None:
    """Two apps' screens share widget classes; their layouts' view ids (without the package) tell them apart."""

    def screen(package: str, ids: tuple[str, ...]) -> str:
        nodes = "".join(
            f'  <node class="android.widget.TextView" resource-id="{package}:id/{i}" text="x" />\n' for i in ids
        )
        return f'<hierarchy rotation="0">\n{nodes}</hierarchy>'

    history = ['### Turn 1\n**Action:**\n{"action": "navigate_home"}']
    truth = screen("com.jotter.notes", ("toolbar_title", "note_title", "note_body"))
    same_ids = score(
        "android", truth, screen("com.jotter.notes.debug", ("toolbar_title", "note_title", "note_body")), history
    )
    assert same_ids.parts["structure"] == 1.0
    other_app = score("android", truth, screen("com.android.settings", ("search_bar", "title", "summary")), history)
    assert other_app.parts["structure"] < 0.5


def test_observations_may_come_without_their_marker() -> None:
    """An observation in the history reads the same with its marker (as the rule judge passes them) and
    without it (as the LLM judges' history has them); actions keep their heading."""
    unmarked = [item.removeprefix(f"{M}\n") for item in TERMINAL_HISTORY]
    for prediction in (TERMINAL_TRUTH, "hello\nwrld\nSun Nov 29 22:45:01 UTC 2026\ndone", "total 4", ""):
        assert score("terminal", TERMINAL_TRUTH, prediction, unmarked) == score(
            "terminal", TERMINAL_TRUTH, prediction, TERMINAL_HISTORY
        )


class _ReferenceTagPaths(HTMLParser):
    """structure.tag_paths as html.parser would count them (what the rule judge used before its own scanner)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, str]] = []
        self.paths: Counter[str] = Counter()

    def _count(self, tag: str, attrs: list[tuple[str, str | None]]) -> str:
        named = dict(attrs)
        label = tag
        if tag == "node" and named.get("class"):
            view_id = (named.get("resource-id") or "").rsplit("/", 1)[-1]
            label = f"node:{str(named['class']).rsplit('.', 1)[-1]}" + (f"#{view_id}" if view_id else "")
        self.paths["/".join([entry[1] for entry in self.stack[-(structure.PATH_DEPTH - 1) :]] + [label])] += 1
        return label

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        label = self._count(tag, attrs)
        if tag not in structure.VOID_TAGS:
            self.stack.append((tag, label))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._count(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, max(-1, len(self.stack) - 33), -1):
            if self.stack[depth][0] == tag:
                del self.stack[depth:]
                return


def _markup_texts() -> list[str]:
    texts = []
    for path in sorted(sample_dir().glob("*_test.jsonl")):
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                texts += [text for text in json.loads(line)["response"] if "<" in text]
    return texts + [
        '<div><p>a<br>b</p><img src=x><script>var s = "<b>";</script><!-- <i> --><P CLASS=x>y</P></div>',
        "<ul><li>one<li>two</ul></li></li>",
        '<a href="x>y">z</a><?php echo 1 ?><!DOCTYPE html>',
        "<node class='a.B' resource-id=\"p:id/q\"/><node CLASS=\"c.D\" text='&amp;'></node>",
    ]


def test_tag_scanner_counts_what_html_parser_counts() -> None:
    texts = _markup_texts()
    assert len(texts) > 50
    for text in texts:
        reference = _ReferenceTagPaths()
        reference.feed(text)
        reference.close()
        assert structure.tag_paths(text) == reference.paths, text[:200]


def _is_xml_by_element_tree(text: str) -> bool:
    body = re.sub(r"^\s*<\?xml[^>]*\?>", "", text[: structure.MAX_MARKUP_CHARS])
    body = re.sub(r"^\s*<!DOCTYPE[^>]*>", "", body, flags=re.IGNORECASE)
    try:
        ET.fromstring(f"<awb-root>{body}</awb-root>")
    except (ET.ParseError, ValueError, RecursionError):
        return False
    return True


def test_xml_check_agrees_with_element_tree() -> None:
    texts = _markup_texts() + [
        "<a:b/>",
        '<a:b xmlns:a="u"/>',
        "<x>&nbsp;</x>",
        "<x>&amp;&#65;</x>",
        "<x></y>",
        "<x/><y/>",
        "text <x/>",
        '<?xml version="1.0"?><r/>',
        '<?xml version="1.0"?><r/><?xml version="1.0"?><r/>',
        "<!DOCTYPE html><r/>",
        "<r a='1' a='2'/>",
        "<r>\x01</r>",
        "<" * 3000,
        "<r>" * 2000 + "</r>" * 2000,
    ]
    for text in texts:
        assert structure._is_xml(text.strip()) == _is_xml_by_element_tree(text.strip()), text[:200]
