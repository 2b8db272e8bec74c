"""A report made from someone else's run directory runs no script of theirs (issue 25.1).

Every value read from a run or its data goes into the page escaped for where it lands (HTML text, attributes, JSON
in a `<script>`); ids read from disk that awbench would not have made are refused; and the page's
Content-Security-Policy lets only its own script run, so that a value that escaped escaping would still run
nothing. Each payload below sets an attribute on <html> if it runs: Chromium shows whether any did.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest
from browser import add_script, dump_dom, require_chromium
from refusals import refusal
from runs_helpers import invoke, make_run

from awbench.analysis.report import script_json
from awbench.domains import DOMAINS


def run_js(where: str) -> str:
    return f"document.documentElement.setAttribute('data-pwned','{where}')"


def hostile(where: str) -> str:
    """Breaks out of an attribute (either quote), out of text, out of a <script> element, and opens a comment in
    one ("<!--<script>" keeps a script element open past its end tag)."""
    js = run_js(where)
    return f"""x"'><img src=x onerror="{js}"><svg onload="{js}"></svg></script><script>{js}</script><!--<script>"""


def slashless(where: str) -> str:
    """For a directory name, which cannot hold "/"."""
    js = run_js(where)
    return f"""x"'><img src=x onerror="{js}"><!--<script>"""


RUN_NAME = slashless("run-name")
SAMPLE_ID = hostile("sample-id")
COMMENT_ID = "<!--<script>"  # alone, as the issue found it: it stopped the search script


def write_hostile_data(root: Path) -> Path:
    """One two-turn trajectory per domain; MCP's ids, actions, observations and system prompts are payloads."""
    root.mkdir(parents=True)
    for domain in DOMAINS:
        records = []
        for t, sample_id in enumerate(
            (SAMPLE_ID, COMMENT_ID) if domain == "mcp" else (f"{domain[0]}0", f"{domain[0]}1")
        ):
            actions = [f"### Turn {i}\n**Action:**\nrun {hostile('action')} {i}" for i in (1, 2)]
            observations = [f"**Environment Observation:**\n{hostile('observation')} {t}.{i}\nline two" for i in (1, 2)]
            records += [
                {
                    "task": domain,
                    "id": sample_id,
                    "prompt": actions[:turn],
                    "response": observations[:turn],
                    "system_str": hostile("system"),
                    "turn_idx": turn,
                    "total_turns": 2,
                    "current_prompt": actions[turn - 1],
                }
                for turn in (1, 2)
            ]
        (root / f"{domain}_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return root


def sample_keys(data: Path) -> list[str]:
    from awbench.config import DataSettings
    from awbench.data.dataset import load_samples

    return [s.key for s in load_samples(DataSettings(source=str(data))).samples]


@pytest.fixture
def hostile_run(tmp_path) -> Path:
    """A scored run as someone else could hand it over: payloads in every value the report shows that a run's
    files or its data hold, in a directory whose name is a payload too."""
    data = write_hostile_data(tmp_path / "data")
    keys = sample_keys(data)
    results = tmp_path / "results"
    grades: dict[str, int | None] = {k: 1 + i % 5 for i, k in enumerate(keys)}
    grades[f"mcp/{SAMPLE_ID}/1"] = None  # a failed generation, among the worst: its error message is shown
    store = make_run(
        results,
        "plain",
        data,
        grades,
        model=hostile("model"),
        judge_model=hostile("judge-model"),
        prompt_set=hostile("prompt-set"),
        rules={k: 0.5 for k in keys},
        predictions={k: f"{hostile('prediction')}\nline two" for k in keys},
        strengths=(hostile("strength"),),
        weaknesses=(hostile("weakness"),),
    )
    predictions = store.predictions.path
    predictions.write_text(
        predictions.read_text(encoding="utf-8").replace('"HTTP 500"', json.dumps(hostile("error"))), encoding="utf-8"
    )
    scores = store.evaluation("llm-plain").scores_path
    table = json.loads(scores.read_text(encoding="utf-8"))
    table["agreement"][hostile("agreement-domain")] = 0.5
    scores.write_text(json.dumps(table), encoding="utf-8")
    return store.path.rename(results / RUN_NAME)


def report_of(run: Path, out: Path, *args: str) -> str:
    result = invoke("report", str(run), "-o", str(out), "--no-ci", "--worst", "2", *args)
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8")


class Elements(HTMLParser):
    """Every start tag as (tag, attributes), and the text inside each <script>."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data

    def attribute(self, tag: str, name: str) -> list[str]:
        return [a[name] for t, a in self.tags if t == tag and name in a]


def assert_only_own_markup(page: str) -> Elements:
    """The page's elements are the ones awbench writes: no payload became an element or an attribute."""
    elements = Elements(page)
    assert [a.get("id") for t, a in elements.tags if t == "script"] == ["sample-index", None]
    assert not {t for t, _ in elements.tags} & {"img", "iframe", "object", "embed", "link", "base", "form"}
    assert not [a for _, a in elements.tags if any(name.startswith("on") for name in a)]
    assert all(not re.search(r"[<>&\u2028\u2029]", script) for script in elements.scripts[:1])
    return elements


# --------------------------------------------------------------------------- without a browser


def test_json_in_a_script_element_escapes_exactly_what_could_end_it():
    value = {"</script><!--<script>&": ["a\u2028b\u2029c", "é ✓"], "plain": 1.5}
    text = script_json(value)
    assert text == (
        '{"\\u003c/script\\u003e\\u003c!--\\u003cscript\\u003e\\u0026": ["a\\u2028b\\u2029c", "é ✓"], "plain": 1.5}'
    )
    assert json.loads(text) == value


def test_every_value_is_escaped_where_it_lands(hostile_run, tmp_path):
    page = report_of(hostile_run, tmp_path / "report.html")
    elements = assert_only_own_markup(page)
    # Each value reads back exactly: as an attribute, as text, and in the search box's index.
    assert set(elements.attribute("tr", "data-run")) == {RUN_NAME}
    index = json.loads(elements.scripts[0])
    assert index["runs"] == [RUN_NAME]
    assert [k for k in index["samples"] if k.startswith("mcp/")] == [
        f"mcp/{i}/{turn}" for i in (COMMENT_ID, SAMPLE_ID) for turn in (1, 2)
    ]
    cards = elements.attribute("details", "data-key")
    assert f"mcp/{SAMPLE_ID}/1" in cards and set(cards) <= set(index["samples"])
    text = re.sub(r"<[^>]*>", "", page)  # escaped payloads are all that is left of them
    for where in (
        "model",
        "judge-model",
        "prompt-set",
        "prediction",
        "strength",
        "weakness",
        "error",
        "action",
        "observation",
        "agreement-domain",
    ):  # the last is shown capitalized
        assert run_js(where).replace("'", "&#x27;").lower() in text.lower(), where
    board = tmp_path / "board.html"
    result = invoke("leaderboard", str(hostile_run), "--format", "html", "-o", str(board))
    assert result.exit_code == 0, result.output
    assert_only_own_markup(board.read_text(encoding="utf-8"))


def _make_foreign(run: Path, judge_dir: str | None = None, judge_json_id: str | None = None) -> None:
    judges = run / "judges"
    if judge_dir is not None:
        (judges / "llm-plain").rename(judges / judge_dir)
    if judge_json_id is not None:
        info = judges / "llm-plain" / "judge.json"
        info.write_text(
            info.read_text(encoding="utf-8").replace('"llm-plain"', json.dumps(judge_json_id)), encoding="utf-8"
        )


@pytest.mark.parametrize("command", [("report", "-o"), ("leaderboard", "--format", "html", "-o")])
def test_a_judge_id_awbench_does_not_make_is_refused(hostile_run, tmp_path, command):
    out = tmp_path / "out.html"
    _make_foreign(hostile_run, judge_dir=slashless("judge-dir"))
    result = invoke(command[0], str(hostile_run), *command[1:], str(out))
    assert (refusal(result), result.stdout) == ((2, "not_written_by_awbench"), "")
    assert f"{slashless('judge-dir')!r} is not a judge id" in result.stderr and result.stderr.count("\n") == 1
    assert not out.exists()


def test_a_judge_id_inside_judge_json_is_checked_too(hostile_run, tmp_path):
    out = tmp_path / "out.html"
    _make_foreign(hostile_run, judge_json_id=hostile("judge-json"))
    result = invoke("report", str(hostile_run), "-o", str(out))
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"error: {hostile_run / 'judges' / 'llm-plain' / 'judge.json'}: id: ")
    assert (
        "is not a judge id awbench makes (letters, digits, '.', '_' and '-' only, not starting with '.')"
        in result.stderr
    )
    assert "Traceback" not in result.output and not out.exists()


@pytest.mark.parametrize("name", ["line\nbreak", "bell\a", ".hidden"])
def test_a_run_name_awbench_does_not_make_is_refused(hostile_run, tmp_path, name):
    results = hostile_run.parent
    hostile_run.rename(results / name)
    result = invoke("report", str(results), "-o", str(tmp_path / "out.html"))
    assert (result.exit_code, result.stdout) == (2, "")
    message = (
        f"error: {results.resolve()}: the run {name!r} is not named as awbench names runs (printable, no '/', "
        "not starting with '.'): it was not written by awbench, and is not read\n"
    )
    assert result.stderr == message
    assert not (tmp_path / "out.html").exists()


# --------------------------------------------------------------------------- in a browser


def pwned(dom: str) -> str | None:
    """The attribute a payload sets on <html> when it runs."""
    found = re.search(r"<html[^>]*\bdata-pwned=\"([^\"]*)\"", dom)
    return found.group(1) if found else None


def search_ready(dom: str) -> int | None:
    """How many samples the page's search script indexed; None: it did not run."""
    found = re.search(r'<body[^>]*\bdata-search-ready="(\d+)"', dom)
    return int(found.group(1)) if found else None


def search_status(dom: str) -> str | None:
    found = re.search(r'<span id="search-status"[^>]*>([^<]*)</span>', dom)
    return found.group(1) if found else None


def test_no_payload_runs_in_a_browser_and_the_search_still_works(hostile_run, tmp_path):
    chromium = require_chromium()
    report = tmp_path / "report.html"
    page = report_of(hostile_run, report)
    samples = 2 * 2 * len(DOMAINS)

    # The report as written, opened at a search for the key that used to stop the search script.
    dom = dump_dom(chromium, report, fragment="q=" + quote(COMMENT_ID, safe=""))
    assert pwned(dom) is None
    assert search_ready(dom) == samples
    assert search_status(dom) == "4 matching sample(s)"  # both trajectories' two turns: SAMPLE_ID ends with it too

    # Escaping alone holds: without the policy, still nothing runs.
    no_policy = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page, count=1)
    assert no_policy != page
    unprotected = tmp_path / "no-policy.html"
    unprotected.write_text(no_policy, encoding="utf-8")
    dom = dump_dom(chromium, unprotected)
    assert (pwned(dom), search_ready(dom)) == (None, samples)

    # The policy alone holds: a payload put into the page raw, as a missed escape would, runs nothing, and the
    # page's own script still runs (a raw comment opener would hide it: no policy can keep a page whole)...
    raw = hostile("missed-escape").removesuffix(COMMENT_ID)
    missed = tmp_path / "missed-escape.html"
    missed.write_text(page.replace('<section id="charts">', raw + '<section id="charts">', 1), encoding="utf-8")
    dom = dump_dom(chromium, missed)
    assert (pwned(dom), search_ready(dom)) == (None, samples)
    # ... while the same page without the policy runs it: the payloads are live, and the check can see them.
    live = tmp_path / "live.html"
    live.write_text(
        re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", missed.read_text(encoding="utf-8")),
        encoding="utf-8",
    )
    assert pwned(dump_dom(chromium, live)) == "missed-escape"


def test_the_policy_keeps_the_reports_own_style(hostile_run, tmp_path):
    """The inline stylesheet is allowed by its hash: its rules apply (a heading's rule, the search box's width);
    the inline SVG charts, styled by presentation attributes, draw (a bar's size and colour)."""
    chromium = require_chromium()
    report = tmp_path / "report.html"
    page = report_of(hostile_run, report)
    probe = (
        'var h2 = getComputedStyle(document.querySelector("h2")), box = getComputedStyle(document.getElementById("search"));'
        'var bar = document.querySelector("svg.chart rect.bar"), size = bar.getBoundingClientRect();'
        'document.body.setAttribute("data-style", [h2.borderBottomStyle, box.width, getComputedStyle(bar).fill,'
        ' size.width > 0 && size.height === 14].join(" "));'
    )
    styled = tmp_path / "styled.html"
    styled.write_text(add_script(page, probe), encoding="utf-8")
    dom = dump_dom(chromium, styled)
    assert re.findall(r'<body[^>]*\bdata-style="([^"]*)"', dom) == ["solid 420px rgb(79, 70, 229) true"]
