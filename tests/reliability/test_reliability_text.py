"""Names are text wherever awbench writes them: run, model and judge names (and an imported log's model name)
that look like spreadsheet formulas, markdown table syntax, HTML or rich markup, and output paths holding
markup, are written as the text they are. CSV cells starting as a formula would (`=`, `+`, `-`, `@`, tab, CR)
get OWASP's leading `'` (number cells stay numbers); markdown cells escape `|`, line breaks and HTML; the
terminal shows every name and path as it is, with no style or link taken from it, as a colour terminal (both
consoles forced to one) would show it, a control character (ESC) as U+FFFD.

The runs are real run directories (`runs_helpers.make_run`), judged again, Turing-tested and compared pairwise
by a real local server (tests/fake_openai.py); each command is awbench's own, in this process."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from reliability_helpers import cli, no_traceback, verdict_text
from rich.color import ColorSystem
from runs_helpers import MCP, SEARCH, SMALL, make_run, write_data

from awbench.cli import common

# Each starts as a spreadsheet formula would, or holds rich markup (a run name holds no '/' nor control character).
MARKUP_RUN = "[reverse]AA[link=https:evil.example]BB:smile:"
RUNS = {
    MARKUP_RUN: '=HYPERLINK("https://evil.example/?leak","click")\n| fake | row |',
    "+cmd|' -C calc'!A0": "@SUM(1+1)*cmd|' /C calc'!A0",
    "-2+3": "\t=1+1 <script>alert(1)</script> & co",
    "@SUM(1+1)": "\r=2+2 \x1b[7mREV\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\",  # a terminal's own escapes
}
JUDGE_MODEL = "=judge(1)|x"  # the rubric judge make_run records: in every leaderboard row and group header
OTHER_JUDGE = "judge-b"  # a second rubric and Turing judge, for `judges`' agreement table
KEY_ENV = "AWBENCH_TEST_TEXT_KEY"
OSC_8 = "\x1b]8;"  # a terminal hyperlink
REVERSE = "\x1b[7m"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def answer(body: dict) -> Reply:
    """A Turing or pairwise question is answered A; a rubric question with a verdict that follows its length."""
    user = body["messages"][-1]["content"]
    if "Response A" in user:
        return Reply("\\boxed{A}")
    level = 1 + len(user) % 5
    return Reply(verdict_text(dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), level)))


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory):
    """Four rubric-judged runs of hostile names; the first judged again by another judge, and Turing-tested by
    both judges. The server stays up for the pairwise commands."""
    root = tmp_path_factory.mktemp("text")
    data = write_data(root / "data", SMALL)
    out = root / "results"
    for i, (name, model) in enumerate(RUNS.items()):
        make_run(out, name, data, {k: 1 + (i + j) % 5 for j, k in enumerate(MCP + SEARCH)}, model=model,
                 judge_model=JUDGE_MODEL)  # fmt: skip
    with pytest.MonkeyPatch.context() as env, FakeOpenAIServer(responder=answer) as server:
        env.setenv(KEY_ENV, "sk-test-text")
        judge = ["--output", out, "--judge-base-url", server.url, "--judge-api-key-env", KEY_ENV]
        done = cli("judge", MARKUP_RUN, *judge, "--judge-model", OTHER_JUDGE, "--judge", "llm")
        assert done.exit_code == 0, done.output
        for model in (JUDGE_MODEL, OTHER_JUDGE):
            tested = cli("turing", MARKUP_RUN, *judge, "--judge-model", model)
            assert tested.exit_code == 0, tested.output
        yield out, [*judge, "--pairwise", "--judge-model", "pair-judge"]  # the runs, the pairwise judge's options


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both consoles as a colour terminal 250 columns wide: a style or link would be written as escape codes."""
    for console in (common.console, common.err_console):
        monkeypatch.setattr(console, "_force_terminal", True)
        monkeypatch.setattr(console, "_color_system", ColorSystem.TRUECOLOR)
        monkeypatch.setattr(console, "_width", 250)


def plain_lines(output: str) -> list[str]:
    return [line.rstrip() for line in ANSI.sub("", output).splitlines()]


def as_text(output: str, *names: str) -> list[str]:
    """The output's lines without styles, after checking that it is a terminal's (styled), that no link or
    reverse video is in it, and that each name is printed whole, no style inside it."""
    assert "\x1b[" in output  # the forced terminal styles what awbench styles itself
    assert OSC_8 not in output and REVERSE not in output
    for name in names:
        assert name in output, name
    return plain_lines(output)


# --- CSV ---------------------------------------------------------------------------------------------------------


def neutral(text: str) -> str:
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def test_csv_cells_that_would_be_formulas_are_text_and_numbers_stay_numbers(results, tmp_path: Path) -> None:
    out, _ = results
    printed = cli("leaderboard", "--output", out, "--format", "csv")
    assert printed.exit_code == 0, printed.output
    written = tmp_path / "board.csv"
    assert cli("leaderboard", "--output", out, "--format", "csv", "-o", written).exit_code == 0
    assert written.read_bytes() == printed.stdout_bytes
    rows = list(csv.DictReader(io.StringIO(printed.stdout, newline="")))
    assert {row["run"] for row in rows} == {neutral(name) for name in RUNS}
    assert {row["run"]: row["model"] for row in rows} == {neutral(n): neutral(m) for n, m in RUNS.items()}
    assert {row["judge"] for row in rows} == {"'" + JUDGE_MODEL, OTHER_JUDGE}
    numbers = ["rank", "MCP", "Search", "Overall", "scored", "failed", "unscored"]
    for row in rows:
        for column in numbers:
            assert row[column] == "" or float(row[column]) >= 0, (column, row[column])
        assert row["group"].startswith(("judge =judge(1)|x · ", f"judge {OTHER_JUDGE} · "))


def test_an_imported_logs_model_name_is_text_in_the_csv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model name an inspect_ai log gives (`eval.model`) is the imported run's: a formula is made text."""
    pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install '.[inspect]')")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import write_eval_log

    from awbench.interop.inspect_task import agentworldbench

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-text")
    with FakeOpenAIServer(responder=lambda body: Reply("**Environment Observation:**\nok")) as server:
        task = agentworldbench(data="sample", limit=1, judge="rules", domains="os")
        [log] = inspect_eval(
            task, model="openai/candidate", model_base_url=server.url, model_args={"responses_api": False},
            log_dir=str(tmp_path / "logs"), display="none", max_retries=1, timeout=30,
        )  # fmt: skip
    log.eval.model = '=HYPERLINK("https://evil.example","x")'
    file = tmp_path / "log.json"
    write_eval_log(log, str(file), format="json")
    out = tmp_path / "results"
    imported = cli("import", file, "--run-name", "imported", "--output", out)
    assert imported.exit_code == 0, imported.output
    [row] = csv.DictReader(io.StringIO(cli("leaderboard", "--output", out, "--format", "csv").stdout, newline=""))
    assert row["model"] == "'" + '=HYPERLINK("https://evil.example","x")'.removeprefix("openai/")


# --- Markdown ----------------------------------------------------------------------------------------------------


def test_markdown_cells_escape_pipes_line_breaks_and_html(results) -> None:
    out, _ = results
    result = cli("leaderboard", "--output", out, "--format", "markdown")
    assert result.exit_code == 0, result.output
    table = [line for line in result.stdout.split("\n\n")[1].splitlines() if line.startswith("|")]  # the runs'
    widths = {len(re.findall(r"(?<!\\)\|", line)) for line in table}
    assert len(widths) == 1 and len(table) == 2 + len(RUNS)  # every row one line, with every cell in its column
    assert "<script>" not in result.stdout and "<br>" in result.stdout
    rows = {line.split(" | ")[1]: line.split(" | ")[2] for line in table[2:]}
    marked = r"\[reverse\]AA\[link=https:evil.example\]BB:smile: *(partial \(2 of 7 domains\))*"
    assert rows[marked] == r'=HYPERLINK\("https://evil.example/?leak","click"\)<br>\| fake \| row \|'
    assert rows[r"-2+3 *(partial \(2 of 7 domains\))*"] == "\t=1+1 &lt;script&gt;alert\\(1\\)&lt;/script&gt; &amp; co"
    assert "**judge =judge\\(1\\)\\|x · prompts rubric@1a2b3c" in result.stdout


# --- The terminal ------------------------------------------------------------------------------------------------


def test_names_print_as_text_in_the_leaderboard_and_ls(results, terminal) -> None:
    out, _ = results
    board = cli("leaderboard", "--output", out)
    assert board.exit_code == 0, board.output
    lines = as_text(board.stdout, MARKUP_RUN, '=HYPERLINK("https://evil.example/?leak","click")')
    assert any(line.startswith(f"judge {JUDGE_MODEL} · prompts rubric@1a2b3c") for line in lines)
    turing = [line.split("│") for line in lines if MARKUP_RUN in line and "turing-" in line]
    assert [row[1].strip() for row in turing] == [MARKUP_RUN, MARKUP_RUN]  # the Turing table's, one per judge
    assert "=2+2 \ufffd[7mREV\ufffd]8;;https://evil.example\ufffd\\link" in board.stdout  # ESC shown, not obeyed
    listed = cli("ls", out)
    assert listed.exit_code == 0, listed.output
    assert any(line.startswith(MARKUP_RUN + "  ") for line in as_text(listed.stdout, MARKUP_RUN)), listed.stdout


def test_names_print_as_text_in_show_compare_and_judges(results, terminal) -> None:
    out, _ = results
    shown = cli("show", MARKUP_RUN, "--output", out)
    assert shown.exit_code == 0, shown.output
    assert as_text(shown.stdout, MARKUP_RUN)[0].startswith(f"{MARKUP_RUN}: scores of judge llm-")
    compared = cli("compare", MARKUP_RUN, "@SUM(1+1)", "--output", out)
    assert compared.exit_code == 0, compared.output
    assert as_text(compared.stdout, MARKUP_RUN)[0].startswith(f"A = {MARKUP_RUN}   B = @SUM(1+1)   (judges llm-")
    judges = cli("judges", MARKUP_RUN, "--output", out)
    assert judges.exit_code == 0, judges.output
    [agreement] = [line.split("│") for line in as_text(judges.stdout, MARKUP_RUN) if MARKUP_RUN in line]
    assert agreement[3].strip() == MARKUP_RUN, judges.stdout


@pytest.mark.parametrize("command", ["compare", "leaderboard"])
def test_names_print_as_text_with_pairwise(results, terminal, command: str) -> None:
    _, pairwise = results
    runs = [MARKUP_RUN, "+cmd|' -C calc'!A0"]
    result = cli(command, *runs, *pairwise)
    assert result.exit_code == 0, result.output
    lines = as_text(result.stdout, MARKUP_RUN)
    if command == "compare":
        assert lines[0].startswith(f"A = {MARKUP_RUN}   B = +cmd|' -C calc'!A0   (pairwise judge pair-judge-")
    else:
        ranked = [line.split("│")[2].strip() for line in lines if line.startswith("│") and "1000" in line]
        assert sorted(ranked) == sorted(runs)


def test_paths_holding_markup_print_as_text(results, terminal, tmp_path: Path) -> None:
    """An output path with `[/]` (rich's closing tag) and a link: written, and said as it is."""
    out, _ = results
    where = tmp_path / "out[/][link=https:evil.example]x[/link]"
    report = where / "report[/].html"
    made = cli("report", out / MARKUP_RUN, "-o", report)
    no_traceback(made)
    assert made.exit_code == 0, made.output
    lines = as_text(made.stderr + made.stdout + "\x1b[0m", str(report))
    assert any(line.startswith(f"wrote {report} (1 run;") for line in lines), lines
    board = where / "board[/].md"
    written = cli("leaderboard", "--output", out, "--format", "markdown", "-o", board)
    assert written.exit_code == 0 and board.is_file()
    assert f"wrote {board}" in plain_lines(written.stderr)
    official = where / "official[/]"
    exported = cli("export", MARKUP_RUN, "--output", out, "--official", official)
    no_traceback(exported)
    assert exported.exit_code in (0, 2), exported.output
    assert OSC_8 not in exported.output and str(official) in exported.output


def test_an_output_path_holding_markup_prints_as_text_after_a_run(tmp_path: Path, terminal) -> None:
    """`run` says where it saved the run after inference and scoring: a path with `[/]` is that text."""
    data = write_data(tmp_path / "data", SMALL)
    output = tmp_path / "runs[/][bold]"
    result = cli(
        "run", "--model", "baseline:oracle", "--judge", "rules", "--data", data, "--run-name", "r", "--output", output
    )
    no_traceback(result)
    assert result.exit_code == 0, result.output
    lines = as_text(result.stdout, str(output / "r"))
    assert f"run saved in {output / 'r'}" in lines
    assert json.loads((output / "r" / "run.json").read_text())["config"]["run_name"] == "r"


# --- `;` spreadsheets, bidirectional controls, markdown links and emphasis (issue 35's trial, finding 10) ------

BIDI = "\u202etxt.exe\u202c"  # shows "gpt" + "exe.txt" reversed: a name that reads as another
SEMICOLON_MODELS = {"x;=1+1": 'm;=HYPERLINK("https://evil.example","y")', "y,=2+2": "m;@SUM(1+1)"}
MARKDOWN_MODELS = {
    "md1": "[click me](https://evil.example/phish)",
    "md2": "![t](https://evil.example/t.png)",
    "md3": "`code` **bold** _i_ ~~s~~",
    "bidi": f"gpt{BIDI}",
}


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs whose names and models hold `;` then a formula, markdown syntax and bidirectional controls; the
    `bidi` run's predictions hold them too (what `show --worst` prints)."""
    root = tmp_path_factory.mktemp("named")
    data = write_data(root / "data", SMALL)
    out = root / "results"
    for i, (name, model) in enumerate({**SEMICOLON_MODELS, **MARKDOWN_MODELS}.items()):
        grades = {k: 1 + (i + j) % 5 for j, k in enumerate(MCP + SEARCH)}
        make_run(out, name, data, grades, model=model, predictions={k: f"observation {BIDI}" for k in MCP + SEARCH})
    return out


def test_csv_text_cells_are_quoted_and_no_part_after_a_semicolon_starts_a_formula(named) -> None:
    """`x;=1+1` was written unquoted: a spreadsheet that splits on `;` read a cell `=1+1`."""
    printed = cli("leaderboard", "--output", named, "--format", "csv")
    assert printed.exit_code == 0, printed.output
    rows = list(csv.DictReader(io.StringIO(printed.stdout, newline="")))
    models = {row["run"]: row["model"] for row in rows if row["run"] in ("x;'=1+1", "y,=2+2")}
    assert models == {"x;'=1+1": 'm;\'=HYPERLINK("https://evil.example","y")', "y,=2+2": "m;'@SUM(1+1)"}
    assert '"x;\'=1+1","m;\'=HYPERLINK(""https://evil.example"",""y"")","no",' in printed.stdout  # quoted text
    split_on_semicolons = [c for row in csv.reader(io.StringIO(printed.stdout, newline=""), delimiter=";") for c in row]
    assert len(split_on_semicolons) > len(rows) and not [c for c in split_on_semicolons if c[:1] in "=+-@"]
    for row in csv.reader(io.StringIO(printed.stdout, newline=""), quoting=csv.QUOTE_NONNUMERIC):
        assert all(isinstance(cell, str) for cell in row[:1] + row[2:5])  # group, run, model, published: text
        assert all(isinstance(cell, float) for cell in row[5:7]) or row[0] == "group"  # MCP, Search: numbers


def test_bidirectional_controls_are_replaced_on_the_terminal_in_csv_and_markdown(named, terminal) -> None:
    """U+202E in a model name, a prediction (`show --worst`) or a message reached the terminal, CSV and markdown."""
    shown = "gpt\ufffdtxt.exe\ufffd"
    outputs = []
    for args in (["leaderboard"], ["ls"], ["show", "bidi", "--worst", "2"], ["compare", "bidi", "md1"]):
        result = cli(*args, "--output", named)
        assert result.exit_code == 0, result.output
        outputs.append(result.stdout)
    for args in (["--format", "csv"], ["--format", "markdown"]):
        result = cli("leaderboard", "--output", named, *args)
        assert result.exit_code == 0 and shown in result.stdout, result.output
        outputs.append(result.stdout)
    with FakeOpenAIServer(responder=lambda body: Reply(status=400, error_message=f"bad request {BIDI}")) as server:
        refused = cli("run", "--model", "m", "--base-url", server.url, "--judge", "rules", "--data", "sample",
                      "--domains", "os", "--limit", "1", "--max-retries", "0", "--output", named.parent / "other")  # fmt: skip
    assert refused.exit_code == 2 and "HTTP 400: bad request \ufffdtxt.exe\ufffd" in refused.stderr, refused.stderr
    assert "observation \ufffdtxt.exe\ufffd" in outputs[2]  # the worst predictions
    for text in [*outputs, refused.stderr]:
        assert not set(text) & {"\u202e", "\u202c"}, text


def test_markdown_cells_escape_links_images_emphasis_and_code(named) -> None:
    """A model name's link, image (a tracking beacon when rendered) and emphasis were rendered as such."""
    result = cli("leaderboard", "--output", named, "--format", "markdown")
    assert result.exit_code == 0, result.output
    models = {
        cells[1].split()[0]: cells[2]
        for line in result.stdout.splitlines()
        if line.startswith("|") and (cells := line.split(" | "))[1].startswith("md")
    }
    assert models == {
        r"md1": r"\[click me\]\(https://evil.example/phish\)",
        r"md2": r"\!\[t\]\(https://evil.example/t.png\)",
        r"md3": r"\`code\` \*\*bold\*\* \_i\_ \~\~s\~\~",
    }
