"""Looking at samples (`show`) and the HTML report, the latter rendered in headless Chromium."""

from __future__ import annotations

import json
import struct
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import add_script, dump_dom, require_chromium, screenshot
from refusals import refusal
from runs_helpers import MCP, SEARCH, SMALL, Grade, invoke, make_run, write_data

from awbench.analysis.charts import Series, bar_chart_svg
from awbench.analysis.report import build_report
from awbench.analysis.runs import discover_runs, load_run_data
from awbench.analysis.sample_view import clip, sample_view, unified_diff, worst_keys
from awbench.domains import DIMENSIONS, DOMAIN_LABELS, DOMAINS

# --------------------------------------------------------------------------- sample views


@pytest.fixture
def run(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    grades: dict[str, Grade] = {
        MCP[0]: {"format": 5, "factuality": 1, "consistency": 4, "realism": 4, "quality": 4},  # 65
        MCP[1]: 2,  # 25
        MCP[2]: 4,  # 75
        SEARCH[0]: None,  # failed generation: 0
    }
    store = make_run(
        tmp_path / "results",
        "viewed",
        data,
        grades,
        predictions={MCP[1]: "mcp output 0.2\nline 2 (predicted)"},
        strengths=("right exit status",),
        weaknesses=("wrong second line",),
    )
    return load_run_data(store)


def test_worst_keys_by_total_and_by_dimension(run):
    assert worst_keys(run, "llm", 2) == [SEARCH[0], MCP[1]]
    assert worst_keys(run, "llm", 5, domain="mcp") == [MCP[1], MCP[0], MCP[2]]
    # MCP[0]'s factuality (grade 1) and the failed generation both score 0: ties go by key
    assert worst_keys(run, "llm", 2, dimension="factuality") == [MCP[0], SEARCH[0]]
    assert worst_keys(run, "llm", 2, domain="mcp", dimension="factuality") == [MCP[0], MCP[1]]


def test_sample_view_has_context_action_texts_scores_and_reasons(run):
    view = sample_view(run, MCP[1], "llm", context_turns=2)
    assert (view.domain, view.status, view.score) == ("mcp", "ok", 25.0)
    assert view.context == [("### Turn 1\n**Action:**\nrun mcp 0 step 1", "mcp output 0.1\nline two")]
    assert view.earlier_turns == 0 and view.action.endswith("run mcp 0 step 2")
    assert view.ground_truth == "mcp output 0.2\nline two"  # the observation marker is stripped
    assert view.prediction == "mcp output 0.2\nline 2 (predicted)"
    assert view.dimensions == dict.fromkeys(DIMENSIONS, 25.0)
    assert [(r.strengths, r.weaknesses) for r in view.reasons] == [(["right exit status"], ["wrong second line"])]
    failed = sample_view(run, SEARCH[0], "llm")
    assert (failed.status, failed.score, failed.error, failed.reasons) == ("error", 0.0, "HTTP 500", [])


def test_diff_and_clip():
    assert unified_diff("a\nb", "a\nc") == ["--- ground truth", "+++ prediction", "@@ -1,2 +1,2 @@", " a", "-b", "+c"]
    assert unified_diff("same", "same") == []
    assert clip("short", 10) == "short"
    clipped = clip("a" * 60 + "b" * 40, 30)
    assert clipped.startswith("a" * 20) and clipped.endswith("b" * 10) and "[70 characters cut]" in clipped


# --------------------------------------------------------------------------- show


def test_show_sample_side_by_side(run):
    result = invoke("show", str(run.store.path), "--sample", MCP[1])
    assert result.exit_code == 0, result.output
    out = result.output
    for part in (
        MCP[1],
        "earlier turn",
        "run mcp 0 step 1",
        "action",
        "run mcp 0 step 2",
        "ground truth",
        "prediction",
        "line 2 (predicted)",
        "line two",
        "25.0",
        "+ right exit status",
        "- wrong second line",
    ):
        assert part in out, part


def test_show_diff(run):
    result = invoke("show", str(run.store.path), "--sample", MCP[1], "--diff")
    assert result.exit_code == 0, result.output
    assert "--- ground truth" in result.output and "+++ prediction" in result.output
    assert "-line two" in result.output and "+line 2 (predicted)" in result.output


def test_show_worst_in_a_domain_by_dimension(run):
    result = invoke("show", str(run.store.path), "--worst", "1", "--domain", "mcp", "--dimension", "Factuality")
    assert result.exit_code == 0, result.output
    assert MCP[0] in result.output and MCP[1] not in result.output


def test_show_overview(run):
    result = invoke("show", str(run.store.path))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "95% bootstrap intervals over trajectories" in out and "Overall" in out
    # MCP[1]'s prediction is 34 characters against 23 (ratio 1.48); the others match their ground truth
    assert "Mean score by prediction / ground-truth length" in out
    # each cell: the mean, its count below it
    bias = out[out.index("Mean score by prediction") :].splitlines()
    row = next(i for i, line in enumerate(bias) if line.startswith("│ viewed"))
    assert [c.strip() for c in bias[row].split("│")[2:-1]] == ["–", "–", "70.0", "25.0", "–"]
    assert [c.strip() for c in bias[row + 1].split("│")[2:-1]] == ["n=0", "n=0", "n=2", "n=1", "n=0"]


def test_show_errors(run):
    assert invoke("show", str(run.store.path), "--sample", "mcp/none/1").exit_code == 2
    assert invoke("show", str(run.store.path), "--worst", "1", "--domain", "chess").exit_code == 2
    assert invoke("show", str(run.store.path), "--sample", MCP[0], "--worst", "2").exit_code == 2


# --------------------------------------------------------------------------- charts


def test_bar_chart_has_one_bar_per_value():
    svg = bar_chart_svg(
        "c", "T", ["A", "B"], [Series(name="x", values=[10.0, None]), Series(name="y<", values=[50.0, 100.0])]
    )
    assert svg.count('class="bar"') == 3  # None draws no bar
    assert 'data-series="y&lt;"' in svg and 'data-value="100.00"' in svg


def test_the_png_is_the_report_chart_drawn_at_twice_its_size(tmp_path):
    """One chart code path: `--png` draws the figure the report's SVG is written from, at PNG_SCALE, each bar
    where the SVG has it, in its colour."""
    from matplotlib.colors import to_hex
    from matplotlib.image import imread

    from awbench.analysis.charts import PNG_SCALE, TOTAL_COLOR, Rect, bar_chart, color, svg, write_pngs

    series = [Series(name="x", values=[10.0, 100.0]), Series(name="y", values=[50.0, None])]
    figure = bar_chart("c", "T", ["A", "B"], series)
    assert f'width="{figure.width}" height="{figure.height}"' in svg(figure)
    (path,) = write_pngs({"c": ("T", ["A", "B"], series)}, tmp_path)
    assert path == tmp_path / "c.png"
    assert _png_size(path) == (figure.width * PNG_SCALE, figure.height * PNG_SCALE)
    pixels = imread(path)
    bars = {(s.data["series"], s.data["category"]): s for s in figure.shapes if isinstance(s, Rect) and s.css == "bar"}
    assert sorted(bars) == [("x", "A"), ("x", "B"), ("y", "A")]
    for (_, category), bar in bars.items():
        centre = pixels[round((bar.y + bar.height / 2) * PNG_SCALE), round((bar.x + bar.width / 2) * PNG_SCALE)]
        assert to_hex(centre[:3]) == (TOTAL_COLOR if category == "B" else color(0))


# --------------------------------------------------------------------------- the report in a browser

ALL = {d: [2, 1, 1, 1, 1] for d in DOMAINS}  # five trajectories a domain: intervals


@pytest.fixture
def report_runs(tmp_path) -> Path:
    data = write_data(tmp_path / "data", ALL)
    keys = [s.key for s in load_run_data_keys(data)]
    results = tmp_path / "results"
    for i, name in enumerate(("model-a", "model-b", "model-c")):
        grades: dict[str, Grade] = {k: 1 + (i + j) % 5 for j, k in enumerate(keys)}
        grades[keys[-1]] = None if i == 0 else grades[keys[-1]]
        make_run(results, name, data, grades, predictions={keys[0]: "a different\nprediction"}, cost=0.25 * (i + 1))
    return results


def load_run_data_keys(data: Path):
    from awbench.config import DataSettings
    from awbench.data.dataset import load_samples

    return load_samples(DataSettings(source=str(data))).samples


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Dom(HTMLParser):
    """Elements as (tag, attrs, ancestors' ids), and the text of elements with an id."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], tuple[str, ...]]] = []
        self.text: dict[str, str] = {}
        self._stack: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.elements.append((tag, a, tuple(i for _, i in self._stack if i)))
        if tag not in VOID:
            self._stack.append((tag, a.get("id")))

    def handle_endtag(self, tag):
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i][0] == tag:
                del self._stack[i:]
                break

    def handle_data(self, data):
        for _, ident in self._stack:
            if ident:
                self.text[ident] = self.text.get(ident, "") + data

    def find(self, tag: str, inside: str | None = None, cls: str | None = None) -> list[dict[str, str]]:
        return [
            a
            for t, a, ids in self.elements
            if t == tag and (inside is None or inside in ids) and (cls is None or cls in a.get("class", "").split())
        ]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def test_report_in_a_browser(report_runs, tmp_path):
    chromium = require_chromium()
    out, pngs = tmp_path / "report" / "report.html", tmp_path / "png"
    result = invoke("report", str(report_runs), "-o", str(out), "--png", str(pngs), "--worst", "2", "--reference")
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    # Self-contained: nothing is fetched (the SVG namespace URI is an identifier, not a request).
    assert "<link" not in page and " src=" not in page and "url(" not in page

    dom = _Dom()
    dom.feed(dump_dom(chromium, out))
    runs = dom.find("tr", inside="leaderboard", cls="run")
    computed = [r for r in runs if "published" not in r["class"].split()]
    assert sorted(r["data-run"] for r in computed) == ["model-a", "model-b", "model-c"]
    assert len(runs) - len(computed) == 14  # --reference: the published rows, marked

    # One chart per group: the three runs, and the published rows on their own.
    assert len(dom.find("rect", inside="chart-domains-2", cls="bar")) == 14 * 8
    bars = dom.find("rect", inside="chart-domains-1", cls="bar")
    assert len(bars) == 3 * 8  # every model: seven domains and Overall
    scores = json.loads((report_runs / "model-b" / "scores.json").read_text())
    for domain in DOMAINS:
        bar = next(b for b in bars if b["data-series"] == "model-b" and b["data-category"] == DOMAIN_LABELS[domain])
        assert bar["data-value"] == f"{scores['domains'][domain]['score']:.2f}"
    overall = next(b for b in bars if b["data-series"] == "model-b" and b["data-category"] == "Overall")
    assert overall["data-value"] == f"{scores['overall']:.2f}"
    assert (
        len(dom.find("rect", inside="chart-dimensions-1", cls="bar")) == 3 * 6
    )  # 5 dimensions + Overall, computed only
    assert [a["id"] for a in dom.find("svg", cls="chart")] == [
        "chart-domains-1",
        "chart-domains-2",
        "chart-dimensions-1",
    ]

    # The inline script ran: it indexed every sample and wrote the count.
    body = dom.find("body")[0]
    assert body["data-search-ready"] == "42"  # 7 domains x (2 + 1 + 1 + 1 + 1) samples
    assert dom.text["search-status"].startswith("42 samples indexed across 3 run(s)")
    cards = dom.find("details", cls="sample")
    assert len(cards) == 3 * 7 * 2  # runs x domains x --worst

    shot = screenshot(chromium, out, tmp_path / "report.png")
    assert _png_size(shot) == (1400, 2000)
    assert shot.stat().st_size > 30_000, "the screenshot looks blank"

    for name in ("chart-domains-1", "chart-domains-2", "chart-dimensions-1"):
        width, height = _png_size(pngs / f"{name}.png")
        assert width > 600 and height > 200


def test_report_search_box_finds_a_key(report_runs, tmp_path):
    chromium = require_chromium()
    out = tmp_path / "report.html"
    assert invoke("report", str(report_runs), "-o", str(out), "--no-ci").exit_code == 0
    # The page reads a query from its URL fragment (#q=...), as a reader's link to a sample would.
    dom = _Dom()
    dom.feed(dump_dom(chromium, out, fragment="q=mcp/m0/"))
    assert dom.text["search-status"].startswith("2 matching sample(s)")
    items = dom.find("li", inside="search-results")
    assert len(items) == 2
    assert "model-a" in dom.text["search-results"] and "→ detail" in dom.text["search-results"]


def test_build_report_without_a_browser(report_runs):
    stores, _ = discover_runs([report_runs])
    report = build_report(stores, worst_n=1, resamples=200)
    assert report.html.count('<tr class="run"') == 3
    assert report.html.count('class="bar"') == 3 * 8 + 3 * 6
    assert set(report.charts) == {"chart-domains-1", "chart-dimensions-1"}
    assert '<span class="ci">[' in report.html and "±" not in report.html  # intervals [lo, hi] by default
    # each run's section: its standard errors and their sources, and what one verdict and one generation cannot see
    assert report.html.count("<caption>Standard errors and their sources (0..100; docs/statistics.md)</caption>") == 3
    assert "the judge&#x27;s and the generations&#x27; noise is in the intervals but not measured apart" in report.html


def test_report_of_rule_judged_runs_has_no_dimension_chart(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    results = tmp_path / "results"
    make_run(results, "r1", data, dict.fromkeys(MCP, 3), rules=dict.fromkeys(MCP, 0.5), llm=False)
    make_run(results, "r2", data, {MCP[0]: None}, rules={}, llm=False)
    stores, _ = discover_runs([results])
    report = build_report(stores, worst_n=1, resamples=100)
    assert list(report.charts) == ["chart-domains-1"]
    assert report.charts["chart-domains-1"][0].startswith("Rule score by domain (0–100)\njudge rules · ")
    assert "No rubric-dimension chart" in report.html and 'id="chart-dimensions' not in report.html
    assert report.html.count('<tr class="run"') == 2


def test_report_of_no_runs_exits_2(tmp_path):
    result = invoke("report", str(tmp_path), "-o", str(tmp_path / "r.html"))
    assert refusal(result) == (2, "no_scored_runs")


# --------------------------------------------------------------------------- which runs, which charts


def test_report_takes_runs_as_names_paths_or_directories(report_runs, tmp_path):
    out = tmp_path / "r.html"
    for args in (
        ["model-a", "--output", str(report_runs)],
        [str(report_runs / "model-a")],
        ["--output", str(report_runs / "model-a")],
    ):
        result = invoke("report", *args, "-o", str(out), "--no-ci")
        assert (result.exit_code, result.stdout) == (
            0,
            f"wrote {out} (1 run; 2 leaderboard charts, 2 along trajectories)\n",
        ), result.output
    result = invoke("report", "model-a", "model-c", "--output", str(report_runs), "-o", str(out), "--no-ci")
    assert result.stdout == f"wrote {out} (2 runs; 2 leaderboard charts, 4 along trajectories)\n"
    assert (
        invoke("report", "--output", str(report_runs), "-o", str(out), "--no-ci").stdout
        == f"wrote {out} (3 runs; 2 leaderboard charts, 6 along trajectories)\n"
    )
    html = out.read_text()  # the count is the report's: every chart is one <svg> of its own id
    assert (html.count('<svg id="chart-'), html.count('<svg id="growth-')) == (2, 6)
    result = invoke("report", "model-z", "--output", str(report_runs), "-o", str(out))
    assert refusal(result) == (2, "unknown_run")
    assert result.stderr.endswith("; did you mean 'model-a', 'model-b' or 'model-c'?\n")


def test_rule_scores_are_never_charted_with_llm_scores(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    results = tmp_path / "results"
    make_run(results, "llm-1", data, dict.fromkeys(MCP + SEARCH, 4))
    make_run(results, "both", data, dict.fromkeys(MCP + SEARCH, 2), rules=dict.fromkeys(MCP + SEARCH, 0.5))
    make_run(results, "rules-only", data, dict.fromkeys(MCP, 3), rules=dict.fromkeys(MCP, 0.25), llm=False)
    stores, _ = discover_runs([results])
    report = build_report(stores, worst_n=0, reference=True, ci=False)
    charts = {
        name: (title.split("\n"), [s.name for s in series], any(s.published for s in series))
        for name, (title, _, series) in report.charts.items()
    }
    assert charts == {
        "chart-domains-1": (
            ["Score by domain (0–100)", charts["chart-domains-1"][0][1]],
            ["both", "llm-1"],
            False,
        ),  # unranked (partial): by name
        "chart-domains-2": (
            ["Rule score by domain (0–100)", charts["chart-domains-2"][0][1]],
            ["both", "rules-only"],
            False,
        ),
        "chart-domains-3": (
            ["Published score by domain (0–100)", charts["chart-domains-3"][0][1]],
            charts["chart-domains-3"][1],
            True,
        ),
        "chart-dimensions-1": (
            ["Score by rubric dimension, mean over domains (0–100)", charts["chart-dimensions-1"][0][1]],
            ["both", "llm-1"],
            False,
        ),
    }
    assert charts["chart-domains-1"][0][1].startswith("judge gpt-5.2-2025-12-11 · prompts rubric@1a2b3c")
    assert charts["chart-domains-2"][0][1].startswith("judge rules · prompts rules@1")
    assert len(charts["chart-domains-3"][1]) == 14
    assert "rule scores · judge rules" in report.html  # the leaderboard's group says so too


def test_each_run_is_loaded_once(report_runs, monkeypatch):
    import awbench.analysis.leaderboard
    import awbench.analysis.report

    loads = []

    def counting(store):
        loads.append(store.name)
        return load_run_data(store)

    monkeypatch.setattr(awbench.analysis.report, "load_run_data", counting)
    monkeypatch.setattr(awbench.analysis.leaderboard, "load_run_data", counting)
    stores, _ = discover_runs([report_runs])
    build_report(stores, worst_n=1, resamples=2000, reference=True)
    assert sorted(loads) == ["model-a", "model-b", "model-c"]


_OPENED: list[str] | None = None  # files opened while a test records them (an audit hook cannot be removed)


def _record_opens(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], (str, Path)):
        _OPENED.append(str(Path(args[0]).resolve()))


sys.addaudithook(_record_opens)


def _opens(call) -> Counter[str]:
    global _OPENED
    _OPENED = []
    try:
        call()
        return Counter(_OPENED)
    finally:
        _OPENED = None


def test_each_file_is_read_once(report_runs):
    import awbench.analysis.runs
    from awbench.analysis.leaderboard import build_leaderboard

    awbench.analysis.runs._load.cache_clear()  # the data is read once per command, so this command must be the first
    stores, _ = discover_runs([report_runs])
    opened = _opens(lambda: build_report(stores, worst_n=1, resamples=200, reference=True))
    data = str((report_runs.parent / "data").resolve())
    run_files = {p: n for p, n in opened.items() if p.startswith(str(report_runs.resolve()))}
    assert {n for p, n in opened.items() if p.startswith(data)} == {1}  # one file per domain, each once
    assert len([p for p in opened if p.startswith(data)]) == len(DOMAINS)
    expected = {str(p.resolve()) for p in report_runs.glob("*/*") if p.name in ("run.json", "predictions.jsonl")}
    expected |= {str(p.resolve()) for p in report_runs.glob("*/judges/*/*")}
    assert set(run_files) == expected and set(run_files.values()) == {1}

    # Other commands: each with its own stores, which have read nothing yet.
    without_ci = _opens(lambda: build_leaderboard(discover_runs([report_runs])[0]))
    assert set(without_ci.values()) == {1}
    assert {Path(p).name for p in without_ci} == {"run.json", "judge.json", "scores.json"}
    awbench.analysis.runs._load.cache_clear()
    with_ci = _opens(lambda: build_leaderboard(discover_runs([report_runs])[0], ci=True, resamples=200))
    assert set(with_ci.values()) == {1} and len(with_ci) == len(expected) + len(DOMAINS)


LAYOUT_CHECK = """
(function () {
  function box(el) { var b = el.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; }
  function overlap(a, b) { return a[0] < b[2] - 0.5 && b[0] < a[2] - 0.5 && a[1] < b[3] - 0.5 && b[1] < a[3] - 0.5; }
  var result = {};
  document.querySelectorAll("svg.chart").forEach(function (svg) {
    var frame = box(svg), problems = [];
    var texts = Array.prototype.map.call(svg.querySelectorAll("text"), function (t) { return [t, box(t)]; });
    var bars = Array.prototype.map.call(svg.querySelectorAll("rect.bar"), function (r) { return [r, box(r)]; });
    texts.forEach(function (a, i) {
      if (a[1][0] < frame[0] || a[1][2] > frame[2] + 0.5 || a[1][1] < frame[1] || a[1][3] > frame[3]) {
        problems.push("outside: " + a[0].textContent);
      }
      texts.slice(i + 1).forEach(function (b) {
        if (overlap(a[1], b[1])) { problems.push(a[0].textContent + " / " + b[0].textContent); }
      });
      bars.forEach(function (b) {
        if (overlap(a[1], b[1])) { problems.push(a[0].textContent + " / bar " + b[0].getAttribute("data-series")); }
      });
    });
    bars.forEach(function (a, i) {
      bars.slice(i + 1).forEach(function (b) { if (overlap(a[1], b[1])) { problems.push("bars overlap"); } });
    });
    result[svg.id] = {problems: problems.slice(0, 20), labels: Array.prototype.map.call(
      svg.querySelectorAll("text.label"), function (t) { return t.firstChild.textContent; }), bars: bars.length};
  });
  document.body.setAttribute("data-layout", JSON.stringify(result));
})();
"""


def test_a_chart_of_twenty_runs_is_readable_in_a_browser(tmp_path):
    chromium = require_chromium()
    data = write_data(tmp_path / "data", ALL)
    keys = [s.key for s in load_run_data_keys(data)]
    results = tmp_path / "results"
    names = [f"model-{i:02d}" for i in range(19)] + ["a-model-with-a-very-long-name-from-some-organisation-v2-instruct"]
    for i, name in enumerate(names):
        make_run(results, name, data, {k: 1 + (i + j) % 5 for j, k in enumerate(keys)})
    out = tmp_path / "report.html"
    result = invoke(
        "report", "--output", str(results), "-o", str(out), "--no-ci", "--worst", "0", "--png", str(tmp_path / "png")
    )
    assert result.exit_code == 0, result.output
    checked = tmp_path / "checked.html"
    checked.write_text(add_script(out.read_text(encoding="utf-8"), LAYOUT_CHECK), encoding="utf-8")
    dom = _Dom()
    dom.feed(dump_dom(chromium, checked))
    layout = json.loads(dom.find("body")[0]["data-layout"])
    assert set(layout) == {"chart-domains-1", "chart-dimensions-1"}
    for chart, categories in (("chart-domains-1", 8), ("chart-dimensions-1", 6)):
        assert layout[chart]["problems"] == [], chart
        assert layout[chart]["bars"] == 20 * categories
        labels = layout[chart]["labels"]  # in rank order; the long name cut to 40 characters
        assert sorted(labels) == sorted([*names[:19], names[19][:39] + "…"])
    shot = screenshot(chromium, out, tmp_path / "twenty.png", height=1400)
    assert shot.stat().st_size > 30_000
    width, height = _png_size(tmp_path / "png" / "chart-domains-1.png")
    assert width > 900 and height > 500


def test_a_report_with_nothing_to_show_exits_1(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    results = tmp_path / "results"
    make_run(results, "r1", data, dict.fromkeys(MCP, 3), rules=dict.fromkeys(MCP, 0.5), llm=False)
    result = invoke("report", "--output", str(results), "--judge", "llm", "-o", str(tmp_path / "r.html"))
    assert (refusal(result), result.stdout) == ((1, "nothing_to_show"), "")
    assert result.stderr.startswith("note: left out r1: it has no llm scores\n")
    assert not (tmp_path / "r.html").exists()


# --------------------------------------------------------------------------- the report at 1280 px (issue 26)

FIT_CHECK = """
(function () {
  "use strict";
  var result = {scroll: [], diffGaps: 0, diffLines: 0, ruleParts: document.querySelectorAll("span.rule-part").length};
  document.querySelectorAll(".scroll").forEach(function (el) {
    var inner = el.firstElementChild;
    result.scroll.push([inner.id, el.scrollWidth, el.clientWidth, Math.round(el.getBoundingClientRect().right)]);
  });
  document.querySelectorAll("details.sample").forEach(function (card) { card.open = true; });
  document.querySelectorAll("pre.diff").forEach(function (pre) {
    var spans = pre.querySelectorAll("span");
    result.diffLines += spans.length;
    for (var i = 1; i < spans.length; i++) {
      if (Math.abs(spans[i].getBoundingClientRect().top - spans[i - 1].getBoundingClientRect().bottom) > 0.5) {
        result.diffGaps += 1;
      }
    }
  });
  result.width = document.documentElement.clientWidth;
  document.body.setAttribute("data-fit", JSON.stringify(result));
})();
"""


def test_the_report_fits_a_1280_px_window(tmp_path):
    """The leaderboard with intervals and the published rows, every chart and the trajectory panels fit without a
    scrollbar; diff lines follow each other without an empty line; a rule-judged run's samples show their
    rule-score parts; the runs' sections come in the leaderboard's order."""
    chromium = require_chromium()
    data = write_data(tmp_path / "data", ALL)
    keys = [s.key for s in load_run_data_keys(data)]
    results = tmp_path / "results"
    for i, name in enumerate(("a-weak", "b-strong", "c-middle")):
        make_run(
            results,
            name,
            data,
            {k: 1 + i * 2 if i < 2 else 3 for k in keys},
            predictions={keys[0]: "line one\nline two changed\nline three\n\nline five"},
        )
    make_run(results, "ruled", data, {k: 3 for k in keys}, rules={k: 0.5 for k in keys}, llm=False)
    out = tmp_path / "report.html"
    result = invoke("report", "--output", str(results), "-o", str(out), "--reference", "--worst", "1")
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    sections = [name for name in ("b-strong", "c-middle", "a-weak") if f"<h3>{name}</h3>" in page]
    assert sections == ["b-strong", "c-middle", "a-weak"]
    positions = [page.index(f"<h3>{name}</h3>") for name in sections]
    assert positions == sorted(positions)  # the leaderboard's order, not the alphabet's
    checked = tmp_path / "checked.html"
    checked.write_text(add_script(page, FIT_CHECK), encoding="utf-8")
    dom = _Dom()
    dom.feed(dump_dom(chromium, checked, width=1280))
    fit = json.loads(dom.find("body")[0]["data-fit"])
    assert fit["width"] == 1280
    assert {inner for inner, *_ in fit["scroll"]} >= {"leaderboard", "chart-domains-1", "growth-0-context"}
    for inner, scroll_width, client_width, right in fit["scroll"]:
        assert scroll_width <= client_width and right <= 1280, (inner, scroll_width, client_width, right)
    assert fit["diffLines"] > 0 and fit["diffGaps"] == 0
    assert fit["ruleParts"] > 0


def test_trajectory_panels_wrap_to_the_page_width():
    from awbench.analysis.charts import PAGE_WIDTH, Line, LinePoint, line_panels_svg
    from awbench.analysis.growth import CONTEXT_BINS

    bins = [label for label, _, _ in CONTEXT_BINS]
    lines = [Line(name=d, label=d, points=[LinePoint(mean=50.0) for _ in bins]) for d in [*DOMAINS, "overall"]]
    svg = line_panels_svg("growth-0-context", "by context length", bins, lines)
    width = int(svg.split('width="', 1)[1].split('"', 1)[0])
    assert width <= PAGE_WIDTH  # four panels a row were 1,674 px: the OS panel was cut
    assert svg.count('class="panel"') == 8
