"""Keys never written: recognisable keys in the candidate's and the judge's key variables, endpoints that echo
them in error messages and in 200 bodies of errors, and then every file under the results directory, the
HTML report, the exported reference files, and the stdout and stderr of every command are searched for them.

The runs are subprocesses (only they ever read the keys), and the variables holding the keys have names that
do not look like keys, so nothing but awbench's own registration of the keys it reads can mask them. The
commands that read the runs afterwards run in this process, which never saw the keys: whatever they print
comes from the files. A leak is any 12 characters of a key in a row, after removing everything but letters,
digits and dashes (so a key cut by a line break or a table border still counts).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from refusals import refusal
from reliability_helpers import (
    CANDIDATE_MODEL,
    JUDGE_MODEL,
    awbench,
    awbench_command,
    clean_env,
    cli,
    deterministic,
    digest,
    jsonl_lines,
    no_traceback,
)

from awbench.config import EngineSettings, JudgeSettings, ModelSettings
from awbench.redact import (
    holds_mask,
    looks_like_key,
    quoted,
    redact,
    register_secret,
    secrets_masked,
    url_holds_mask,
    url_secrets_masked,
)

CANDIDATE_KEY = "sk-awbench-TESTKEY-1234567890"
JUDGE_KEY = "sk-awbench-JUDGEKEY-0987654321"
ENV = clean_env(CANDIDATE_CRED=CANDIDATE_KEY, GRADER_CRED=JUDGE_KEY)
WINDOW = 12


def leaked(text: str, keys: tuple[str, ...] = (CANDIDATE_KEY, JUDGE_KEY)) -> list[str]:
    squeezed = re.sub(r"[^A-Za-z0-9-]", "", text)
    return [key for key in keys if any(key[i : i + WINDOW] in squeezed for i in range(len(key) - WINDOW + 1))]


def padded_html(key: str, offset: int) -> bytes:
    """An HTML error page with the key starting at `offset`, around where messages cut the body off."""
    head = "<html><body>"
    return (head + "x" * (offset - len(head)) + f"{key} is not allowed</body></html>").encode()


def echoing(key: str):
    """Per request (chosen by a hash of it), an error that echoes the key the request came with, or a good answer."""

    def respond(body: dict) -> Reply:
        kinds = [
            lambda: Reply(status=500, error_message=f"upstream rejected key {key}"),
            lambda: Reply(raw_body=padded_html(key, 180 + digest(body["messages"])[0] % 30), content_type="text/html"),
            lambda: Reply(raw_body=json.dumps({"error": {"message": f"invalid api key {key}"}}).encode()),
            lambda: Reply(status=400, error_message=f"content management policy: request with key {key} refused"),
            lambda: Reply(status=400, error_message=f"maximum context length is 10 tokens (key {key})"),
            lambda: deterministic(body),
        ]
        return kinds[digest(body["messages"])[1] % len(kinds)]()

    return respond


def run_args(candidate: FakeOpenAIServer, judge: FakeOpenAIServer, output: Path, name: str) -> list[str]:
    return [
        "run",
        "--model",
        CANDIDATE_MODEL,
        "--base-url",
        candidate.url,
        "--api-key-env",
        "CANDIDATE_CRED",
        "--judge-model",
        JUDGE_MODEL,
        "--judge-base-url",
        judge.url,
        "--judge-api-key-env",
        "GRADER_CRED",
        "--data",
        "sample",
        "--max-retries",
        "0",
        "--judge-max-retries",
        "0",
        "--concurrency",
        "8",
        "--run-name",
        name,
        "--output",
        str(output),
    ]


def test_keys_echoed_by_endpoints_are_written_and_printed_nowhere(tmp_path: Path) -> None:
    results = tmp_path / "results"
    outputs: list[tuple[str, str]] = []  # (what, text) of every command

    with (
        FakeOpenAIServer(responder=echoing(CANDIDATE_KEY)) as candidate,
        FakeOpenAIServer(responder=echoing(JUDGE_KEY)) as judge,
    ):
        first = awbench(*run_args(candidate, judge, results, "echo"), env=ENV)
    outputs.append(("run", first.stdout + first.stderr))
    assert first.returncode == 1, first.stderr  # many failures, on purpose
    no_traceback(first)
    sent = {h.get("Authorization") or h.get("authorization") for h in candidate.headers + judge.headers}
    assert sent == {f"Bearer {CANDIDATE_KEY}", f"Bearer {JUDGE_KEY}"}  # the keys really went out, and came back
    predictions = jsonl_lines(results / "echo" / "predictions.jsonl")
    statuses = {p["status"] for p in predictions}
    assert {"ok", "error", "overlength"} <= statuses
    assert sum("MalformedResponse" in (p["error"] or "") for p in predictions) >= 5

    # A key refused on a chat request, and a key refused by the endpoint check: both stop the run with a message.
    refusing = Reply(status=401, error_message=f"Incorrect API key provided: {CANDIDATE_KEY}")
    with (
        FakeOpenAIServer(responder=lambda body: refusing) as candidate,
        FakeOpenAIServer(responder=deterministic) as judge,
    ):
        fatal = awbench(*run_args(candidate, judge, results, "refused"), env=ENV)
    outputs.append(("run (401)", fatal.stdout + fatal.stderr))
    assert fatal.returncode == 2 and "HTTP 401" in fatal.stderr
    with (
        FakeOpenAIServer(responder=deterministic) as candidate,
        FakeOpenAIServer(models=Reply(status=401, error_message=f"bad key {JUDGE_KEY}")) as judge,
    ):
        check = awbench(*run_args(candidate, judge, results, "checked"), env=ENV)
    outputs.append(("run (check 401)", check.stdout + check.stderr))
    assert check.returncode == 2 and "refused the key" in check.stderr

    report = tmp_path / "report.html"
    official = tmp_path / "official"
    failed_key = next(p["key"] for p in predictions if p["status"] == "error")
    for args in (
        ["show", "echo", "--failed", "--limit", "100"],
        ["show", "echo"],
        ["show", "echo", "--sample", failed_key],
        ["score", "echo"],
        ["leaderboard"],
        ["leaderboard", "--format", "json"],
        ["report", results / "echo", "-o", report],
        ["export", "echo", "--official", official],
    ):
        result = cli(*args, "--output", results) if args[0] != "report" else cli(*args)
        no_traceback(result)
        assert result.exit_code in (0, 1), (args, result.output)
        outputs.append((" ".join(map(str, args)), result.output))

    assert "upstream rejected key ***" in next(text for what, text in outputs if what.startswith("show echo --failed"))
    for what, text in outputs:
        assert not leaked(text), (what, leaked(text))
    files = [p for p in [*results.rglob("*"), report, *official.rglob("*")] if p.is_file()]
    assert len(files) >= 8 and report in files
    for path in files:
        assert not leaked(path.read_text(encoding="utf-8", errors="replace")), path


@pytest.mark.parametrize("option", ["--api-key-env", "--judge-api-key-env"])
def test_an_unset_key_variable_named_explicitly_exits_2_naming_it_and_sends_nothing(
    option: str, tmp_path: Path
) -> None:
    with FakeOpenAIServer(responder=deterministic) as server:
        if option == "--api-key-env":
            args = [
                "run",
                "--model",
                CANDIDATE_MODEL,
                "--base-url",
                server.url,
                option,
                "AWBENCH_MISSING_VAR",
                "--judge",
                "rules",
            ]
        else:
            args = [
                "run",
                "--model",
                "baseline:oracle",
                "--judge-model",
                JUDGE_MODEL,
                "--judge-base-url",
                server.url,
                option,
                "AWBENCH_MISSING_VAR",
            ]
        result = cli(*args, "--data", "sample", "--output", tmp_path / "results", env={"AWBENCH_MISSING_VAR": None})
    no_traceback(result)
    assert result.exit_code == 2
    assert f"the environment variable AWBENCH_MISSING_VAR ({option}) is not set" in result.output
    assert server.model_checks == 0 and server.requests == []
    assert not (tmp_path / "results").exists()


def test_a_key_like_variable_awbench_does_not_use_is_masked_too(tmp_path: Path) -> None:
    """An endpoint echoing some other secret of the environment (a proxy that reports the Hub token it saw):
    any variable named like a key (…_TOKEN, …_API_KEY, …_SECRET, …_PASSWORD) is masked as awbench's own keys are."""
    token = "hf_unrelated-SECRET-424242"
    results = tmp_path / "results"
    echo = Reply(status=500, error_message=f"upstream saw {token}")
    with FakeOpenAIServer(responder=lambda body: echo) as candidate:
        result = awbench(
            "run",
            "--model",
            CANDIDATE_MODEL,
            "--base-url",
            candidate.url,
            "--judge",
            "rules",
            "--data",
            "sample",
            "--domains",
            "os",
            "--max-retries",
            "0",
            "--run-name",
            "t",
            "--output",
            results,
            env=clean_env(HF_TOKEN=token),
        )
    no_traceback(result)
    assert result.returncode == 1 and len(candidate.requests) > 0
    errors = {p["error"] for p in jsonl_lines(results / "t" / "predictions.jsonl")}
    assert errors == {"HTTP 500: upstream saw ***"}
    for path in (p for p in results.rglob("*") if p.is_file()):
        assert "424242" not in path.read_text(encoding="utf-8", errors="replace"), path
    assert "424242" not in result.stdout + result.stderr


# --- Keys in a base URL ----------------------------------------------------------------------------------------

URL_KEY = "sk-awbench-URLCANARY-3141592653"


def url_with_key(url: str, position: str) -> str:
    """The fake server's URL with the canary key as a user name's password, as the user name, or in the query."""
    scheme, rest = url.split("://")
    return {
        "password": f"{scheme}://user:{URL_KEY}@{rest}",
        "user": f"{scheme}://{URL_KEY}@{rest}",
        "query": f"{url}?api-version=2024-10-21&api_key={URL_KEY}",
    }[position]


def url_run(option: str, url: str, other: FakeOpenAIServer, results: Path, *extra: str) -> list[str]:
    """A run whose candidate (--base-url) or judge (--judge-base-url) endpoint is `url`, the other one `other`."""
    candidate, judge = (url, other.url) if option == "--base-url" else (other.url, url)
    return [
        "run",
        "--model",
        CANDIDATE_MODEL,
        "--base-url",
        candidate,
        "--judge-model",
        JUDGE_MODEL,
        "--judge-base-url",
        judge,
        "--data",
        "sample",
        "--domains",
        "os,search",
        "--limit",
        "3",
        "--max-retries",
        "0",
        "--judge-max-retries",
        "0",
        "--run-name",
        "u",
        "--output",
        str(results),
        *extra,
    ]


def nothing_leaked(results: Path, *outputs: str) -> None:
    for text in outputs:
        assert not leaked(text, (URL_KEY,)), text
    for path in (p for p in results.rglob("*") if p.is_file()):
        assert not leaked(path.read_text(encoding="utf-8", errors="replace"), (URL_KEY,)), path


@pytest.mark.parametrize("option", ["--base-url", "--judge-base-url"])
@pytest.mark.parametrize("position", ["password", "user"])
def test_a_user_name_or_password_in_a_base_url_is_refused_naming_the_option(
    option: str, position: str, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    with FakeOpenAIServer(responder=deterministic) as server:
        result = awbench(*url_run(option, url_with_key(server.url, position), server, results))
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    key_option = "--api-key-env" if option == "--base-url" else "--judge-api-key-env"
    assert result.stderr.startswith(f"error: {option}: a URL with a user name or password (user:key@host) is refused")
    assert key_option in result.stderr
    assert server.model_checks == 0 and server.requests == []  # refused before anything is sent
    assert not results.exists()
    nothing_leaked(tmp_path, result.stdout, result.stderr)


def test_a_user_name_or_password_in_openai_base_url_is_refused(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=deterministic) as server:
        result = awbench(
            "run",
            "--model",
            CANDIDATE_MODEL,
            "--backend",
            "openai",
            "--judge",
            "rules",
            "--data",
            "sample",
            "--domains",
            "os",
            "--output",
            tmp_path / "results",
            env=clean_env(OPENAI_BASE_URL=url_with_key(server.url, "password")),
        )
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    assert "has a user name or password" in result.stderr and "***@127.0.0.1" in result.stderr
    assert server.model_checks == 0 and server.requests == []
    nothing_leaked(tmp_path, result.stdout, result.stderr)


@pytest.mark.parametrize("option", ["--base-url", "--judge-base-url"])
def test_a_key_in_a_base_url_query_is_sent_and_kept_nowhere(option: str, tmp_path: Path) -> None:
    """The key is sent in the query as given; the endpoint echoes it, bare and inside the whole URL, in errors
    and bodies; run.json records the URL with the key masked; nothing the run wrote or printed, nor what the
    commands reading it print and write, holds it. Judging the run again without the URL is refused (the
    recorded URL holds `***`)."""
    results = tmp_path / "results"
    with FakeOpenAIServer() as endpoint, FakeOpenAIServer(responder=deterministic) as other:
        url = url_with_key(endpoint.url, "query")
        endpoint.responder = echoing(f"{URL_KEY} (from {url})")
        first = awbench(*url_run(option, url, other, results))
    no_traceback(first)
    assert first.returncode == 1, first.stderr  # the echoed errors are failures, on purpose
    assert endpoint.requests and set(endpoint.queries) == {f"api-version=2024-10-21&api_key={URL_KEY}"}
    manifest = json.loads((results / "u" / "run.json").read_text())
    recorded = (
        manifest["config"]["model"]["base_urls"][0]
        if option == "--base-url"
        else manifest["config"]["judge"]["base_url"]
    )
    assert recorded == f"{endpoint.url}?api-version=2024-10-21&api_key=***"
    errors = [p["error"] for p in jsonl_lines(results / "u" / "predictions.jsonl") if p["error"]]
    if option == "--base-url":
        assert any(f"key *** (from {endpoint.url}?api-version=2024-10-21&api_key=***" in e for e in errors), errors

    report, official = tmp_path / "report.html", tmp_path / "official"
    outputs = [first.stdout, first.stderr]
    for args in (
        ["show", "u", "--failed", "--limit", "100"],
        ["score", "u"],
        ["leaderboard", "--format", "json"],
        ["report", results / "u", "-o", report],
        ["export", "u", "--official", official],
    ):
        read = cli(*args, "--output", results) if args[0] != "report" else cli(*args)
        no_traceback(read)
        outputs.append(read.output)

    if option == "--judge-base-url":
        again = awbench("judge", "u", "--retry-failed", "--output", results)
        no_traceback(again)
        assert again.returncode == 2 and "holds a key masked as the run recorded it (***)" in again.stderr, again.stderr
        outputs += [again.stdout, again.stderr]
    nothing_leaked(tmp_path, *outputs)


@pytest.mark.parametrize(
    "name",
    [
        "key",
        "api_key",
        "API-KEY",
        "apikey",
        "x-api-key",
        "token",
        "access_token",
        "Secret",
        "client_secret",
        "password",
        "sig",
        "Signature",
        "subscription-key",
    ],
)
def test_key_like_query_parameters_are_masked_in_any_text(name: str) -> None:
    text = f"POST https://h.example/v1/chat?api-version=2024-10-21&{name}=abc123&model=m failed; see http://u:pw@h.example/"
    assert url_secrets_masked(text) == (
        f"POST https://h.example/v1/chat?api-version=2024-10-21&{name}=***&model=m failed; see http://***@h.example/"
    )
    assert url_holds_mask(url_secrets_masked(text.split()[1])) and not url_holds_mask(text.split()[1])


@pytest.mark.parametrize("name", ["api-version", "model", "monkey", "keys_count", "oauth"])
def test_ordinary_query_parameters_are_kept(name: str) -> None:
    url = f"https://h.example/v1?{name}=abc123"
    assert url_secrets_masked(url) == url


def test_a_source_link_with_a_key_is_not_published(tmp_path: Path) -> None:
    results = tmp_path / "results"
    made = cli(
        "run",
        "--model",
        "baseline:oracle",
        "--judge",
        "rules",
        "--data",
        "sample",
        "--domains",
        "os",
        "--run-name",
        "r",
        "--output",
        results,
    )
    assert made.exit_code == 0, made.output
    link = f"https://logs.example/run-r?X-Amz-Signature={URL_KEY}"
    result = cli("export", "r", "--output", results, "--hf-eval-results", tmp_path / "model", "--hf-source-url", link)
    no_traceback(result)
    assert refusal(result) == (2, "bad_option") and "?X-Amz-Signature=***" in result.stderr
    assert not leaked(result.output, (URL_KEY,)) and not (tmp_path / "model").exists()


# --- Keys in request bodies, headers, model arguments and --print-config -------------------------------------------

BODY_KEY = "sk-awbench-BODYCANARY-2718281828"
HEADER_KEY = "sk-awbench-HEADERCANARY-1414213562"
JUDGE_HEADER_KEY = "sk-awbench-JHEADERCANARY-1732050807"
ARG_KEY = "sk-awbench-ARGCANARY-2236067977"
CANARIES = (BODY_KEY, HEADER_KEY, JUDGE_HEADER_KEY, ARG_KEY, CANDIDATE_KEY, JUDGE_KEY, URL_KEY)


def split(key: str) -> str:
    """The key cut in two by a space, each part long enough (8 characters or more) to give much of it away."""
    return f"{key[:12]} {key[12:]}"


def nothing_kept(root: Path, *outputs: str) -> None:
    """No canary (nor 12 characters of one in a row) in any file under `root`, nor in any output."""
    for text in outputs:
        assert not leaked(text, CANARIES), (leaked(text, CANARIES), text)
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert not leaked(path.read_text(encoding="utf-8", errors="replace"), CANARIES), path


def body_run(candidate: FakeOpenAIServer, judge: FakeOpenAIServer, output: Path, name: str, *extra: str) -> list[str]:
    """A run whose candidate requests carry a key field, an Authorization header and the candidate's own key split
    in two; whose judge requests carry an x-api-key header and the judge's key cut short (its first 20 characters)."""
    body = {
        "api_key": BODY_KEY,
        "headers": {"Authorization": f"Bearer {HEADER_KEY}"},
        "metadata": {"note": split(CANDIDATE_KEY)},
    }
    judge_body = {"extra_headers": {"x-api-key": JUDGE_HEADER_KEY}, "user": JUDGE_KEY[:20]}
    return [
        *run_args(candidate, judge, output, name),
        "--domains", "os", "--limit", "2", "--extra-body", json.dumps(body), "--judge-extra-body", json.dumps(judge_body),
        *extra,
    ]  # fmt: skip


def test_keys_in_extra_bodies_and_headers_are_sent_and_kept_nowhere(tmp_path: Path) -> None:
    """The keys go out with the requests; run.json, judge.json, turing.json and pair.json record them masked;
    nothing written or printed holds them, a split or partial copy of a key awbench reads included. The same
    command resumes the run (its keys compared masked); judging it again from run.json alone is refused, as
    that would send `***`."""
    results = tmp_path / "results"
    outputs: list[str] = []
    with FakeOpenAIServer(responder=deterministic) as candidate, FakeOpenAIServer(responder=deterministic) as judge:
        for name in ("u", "v"):
            made = awbench(*body_run(candidate, judge, results, name), env=ENV)
            no_traceback(made)
            assert made.returncode == 0, made.stderr
            outputs += [made.stdout, made.stderr]
        sent = candidate.requests[0]
        assert (sent["api_key"], sent["headers"], sent["metadata"]) == (
            BODY_KEY, {"Authorization": f"Bearer {HEADER_KEY}"}, {"note": split(CANDIDATE_KEY)}
        )  # fmt: skip
        assert judge.requests[0]["extra_headers"] == {"x-api-key": JUDGE_HEADER_KEY}
        asked = len(candidate.requests) + len(judge.requests)

        again = awbench(*body_run(candidate, judge, results, "u"), env=ENV)
        assert again.returncode == 0 and "made with other settings" not in again.stderr, again.stderr
        assert len(candidate.requests) + len(judge.requests) == asked  # resumed: nothing asked again
        outputs += [again.stdout, again.stderr]

        rejudged = awbench("judge", "u", "--retry-failed", "--output", results, env=ENV)
        assert rejudged.returncode == 2, rejudged.stderr
        assert rejudged.stderr == (
            "error: the judge: --judge-extra-body holds a secret masked as the run recorded it (***): give "
            "--judge-extra-body, with it, again. For a free offline score without any API, use --judge rules\n"
        )
        choice_body = json.dumps({"headers": {"Authorization": f"Bearer {JUDGE_HEADER_KEY}"}})
        judge_options = ["--output", results, "--judge-model", JUDGE_MODEL, "--judge-base-url", judge.url,
                         "--judge-api-key-env", "GRADER_CRED", "--judge-extra-body", choice_body]  # fmt: skip
        turing = awbench("turing", "u", *judge_options, env=ENV)
        pairwise = awbench("compare", "u", "v", "--pairwise", *judge_options, env=ENV)
        for result in (rejudged, turing, pairwise):
            no_traceback(result)
            outputs += [result.stdout, result.stderr]
        assert turing.returncode in (0, 1) and pairwise.returncode in (0, 1)
        assert len(judge.requests) > asked - len(candidate.requests)  # the Turing and pairwise questions went out

    manifest = json.loads((results / "u" / "run.json").read_text())
    assert manifest["config"]["model"]["extra_body"] == {
        "api_key": "***", "headers": {"Authorization": "***"}, "metadata": {"note": "*** ***"}
    }  # fmt: skip
    [info] = (results / "u" / "judges").glob("*/judge.json")
    recorded = {"extra_headers": {"x-api-key": "***"}, "user": "***"}
    assert (
        json.loads(info.read_text())["settings"]["extra_body"] == recorded == manifest["config"]["judge"]["extra_body"]
    )
    [turing_info] = (results / "u" / "turing").glob("*/turing.json")
    [pair_info] = (results / "pairwise").glob("*/*/*/pair.json")
    masked_header = {"headers": {"Authorization": "***"}}
    assert json.loads(turing_info.read_text())["settings"]["extra_body"] == masked_header
    assert json.loads(pair_info.read_text())["judge"]["settings"]["extra_body"] == masked_header
    nothing_kept(tmp_path, *outputs)


MODEL_WITH_KEYS = f"""
class Keyed:
    def __init__(self, token, api_key, region):
        assert (token, api_key, region) == ({ARG_KEY!r}, {BODY_KEY!r}, "eu-west-1"), "the arguments as given"

    def predict(self, messages, *, sample, seed, max_tokens, temperature):
        return "a prediction"
"""


def test_keys_in_model_arguments_are_given_to_the_model_and_kept_nowhere(tmp_path: Path) -> None:
    (tmp_path / "wm_keyed.py").write_text(MODEL_WITH_KEYS)
    args = ["run", "--model", "python:wm_keyed:Keyed", "--model-arg", f"token={ARG_KEY}", "--model-arg",
            f"api_key={BODY_KEY}", "--model-arg", "region=eu-west-1", "--judge", "rules", "--data", "sample",
            "--domains", "os", "--limit", "2", "--run-name", "k", "--output", tmp_path / "results"]  # fmt: skip
    env = {**ENV, "PYTHONPATH": f"{tmp_path}:{ENV.get('PYTHONPATH', '')}"}
    outputs = []
    for _ in range(2):  # made, then resumed by the same command: its arguments compared masked
        result = subprocess.run(
            awbench_command(*args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        no_traceback(result)
        assert result.returncode == 0, result.stderr
        outputs += [result.stdout, result.stderr]
    manifest = json.loads((tmp_path / "results" / "k" / "run.json").read_text())
    assert manifest["config"]["model"]["model_args"] == {"token": "***", "api_key": "***", "region": "eu-west-1"}
    nothing_kept(tmp_path / "results", *outputs)


def test_print_config_masks_keys_and_run_refuses_the_file_until_they_are_written_back(tmp_path: Path) -> None:
    """--print-config writes `***` for each key (a comment above names the options), which `run --config`
    refuses, naming the file, line and option; with the keys written back it runs, sending them."""
    results = tmp_path / "results"
    with FakeOpenAIServer(responder=deterministic) as server:
        url = f"{server.url}?api-version=1&api_key={URL_KEY}"
        body = json.dumps({"headers": {"Authorization": f"Bearer {HEADER_KEY}"}})
        given = ["run", "--model", CANDIDATE_MODEL, "--base-url", url, "--extra-body", body, "--judge", "rules",
                 "--data", "sample", "--domains", "os", "--limit", "2", "--run-name", "c"]  # fmt: skip
        printed = awbench(*given, "--print-config", env=ENV)
        assert printed.returncode == 0, printed.stderr
        lines = printed.stdout.splitlines()
        assert lines[0] == (
            "# base_url, extra_body: each *** is a secret left out; write it in its place, or give the option on the "
            "command line"
        )
        assert f'base_url = ["{server.url}?api-version=1&api_key=***"]' in lines
        assert 'extra_body = { headers = { Authorization = "***" } }' in lines
        config = tmp_path / "run.toml"
        config.write_text(printed.stdout)
        refused = awbench("run", "--config", config, "--output", results, env=ENV)
        assert refused.returncode == 2 and server.requests == []
        line = next(i for i, text in enumerate(lines, start=1) if text.startswith("base_url"))
        assert refused.stderr == (
            f"error: {config}, line {line}: base_url: holds *** where a secret was left out (as --print-config "
            "writes it): write the secret in its place, or give --base-url on the command line\n"
        )
        outputs = [printed.stdout, printed.stderr, refused.stdout, refused.stderr]
        config.write_text(
            printed.stdout.replace("api_key=***", f"api_key={URL_KEY}").replace('"***"', f'"Bearer {HEADER_KEY}"')
        )
        accepted = awbench("run", "--config", config, "--output", results, env=ENV)
        assert accepted.returncode == 0, accepted.stderr
        assert set(server.queries) == {f"api-version=1&api_key={URL_KEY}"}
        assert server.requests[0]["headers"] == {"Authorization": f"Bearer {HEADER_KEY}"}
    config.unlink()  # the user's own file, with the keys the user wrote back
    nothing_kept(tmp_path, *outputs, accepted.stdout, accepted.stderr)


@pytest.mark.parametrize("option", ["--api-key-env", "--judge-api-key-env"])
def test_a_key_given_as_the_variables_name_is_refused_without_being_repeated(option: str, tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=deterministic) as server:
        result = awbench(*run_args(server, server, tmp_path / "results", "n"), option, CANDIDATE_KEY, env=ENV)
    no_traceback(result)
    assert result.returncode == 2
    assert result.stderr == (
        f"error: {option}: looks like a key itself; give the NAME of the environment variable that holds it\n"
    )
    assert server.model_checks == 0 and server.requests == []
    assert not (tmp_path / "results").exists()
    assert not leaked(result.stdout + result.stderr, (CANDIDATE_KEY,))


def test_split_and_partial_copies_of_a_key_awbench_reads_are_masked(tmp_path: Path) -> None:
    """An endpoint echoing the key cut by a space, and a part of it: masked in the records as the whole key is."""
    results = tmp_path / "results"
    echo = Reply(status=500, error_message=f"upstream saw {split(CANDIDATE_KEY)}, then {CANDIDATE_KEY[4:16]}")
    with FakeOpenAIServer(responder=lambda body: echo) as candidate:
        args = ["run", "--model", CANDIDATE_MODEL, "--base-url", candidate.url, "--api-key-env", "CANDIDATE_CRED",
                "--judge", "rules", "--data", "sample", "--domains", "os", "--max-retries", "0", "--run-name", "t",
                "--output", results]  # fmt: skip
        result = awbench(*args, env=ENV)
    no_traceback(result)
    assert result.returncode == 1 and candidate.requests
    errors = {p["error"] for p in jsonl_lines(results / "t" / "predictions.jsonl")}
    assert errors == {"HTTP 500: upstream saw *** ***, then ***"}
    nothing_kept(results, result.stdout, result.stderr)


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ('{"api_key": "abcdefgh12", "model": "m"}', '{"api_key": "***", "model": "m"}'),
        ("{'X-Api-Key': 'abcdefgh12'}", "{'X-Api-Key': '***'}"),
        ("Authorization: Bearer abcdefgh12", "Authorization: Bearer ***"),
        ("--model-arg token=abcdefgh12 seed=3", "--model-arg token=*** seed=3"),
        ("upstream: hf_AbCdEf0123456789XyZw is not valid", "upstream: *** is not valid"),
        # Kept: short values, ordinary words, names that are no keys
        ("--model-arg expects KEY=VALUE, got 'x'", None),
        ("max_tokens=32768, key_count=12345678", None),
        ("a Bearer token is required", None),
        ('{"eos_token": "</s>"}', None),
        ("run sk-learn-regression-baseline", None),
    ],
)
def test_secrets_written_out_in_text_are_masked_and_ordinary_text_is_kept(text: str, masked: str | None) -> None:
    assert redact(text) == (masked or text)


def test_a_known_keys_parts_are_masked_wherever_they_appear() -> None:
    key = "sk-proj-Qw3Er5Ty7Ui9Op1As2Df4Gh6Jk8"
    register_secret(key)
    assert redact(f"saw {key[:14]} {key[14:]}; then '{key[9:21]}'.") == "saw *** ***; then '***'."
    assert redact(f"saw {key[20:27]} and sk-proj-") == f"saw {key[20:27]} and sk-proj-"  # 7 characters, a prefix


def test_settings_are_masked_by_their_fields_names_at_any_depth() -> None:
    settings = {
        "api_key": "abcdefgh12",
        "headers": {"Authorization": "Bearer abcdefgh12", "X-Trace": "trace-1"},
        "auth": {"user": "someone1", "pass": "p4ssw0rd!"},
        "eos_token": "</s>",
        "stop": ["***"],
        "n": 3,
    }
    masked = {
        "api_key": "***",
        "headers": {"Authorization": "***", "X-Trace": "trace-1"},
        "auth": {"user": "***", "pass": "***"},
    }
    assert secrets_masked(settings) == {**settings, **masked}  # a short value, a list and a number kept
    assert holds_mask(settings) and not holds_mask({"headers": {"X-Trace": "trace-1"}})


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("OPENAI_API_KEY", False),
        ("CANDIDATE_CRED", False),
        ("my_token", False),
        ("sk-abc", True),
        ("hf_AbCdEf0123456789XyZw", True),
        ("a1b2c3d4e5f6a7b8c9d0e1", True),
    ],
)
def test_a_variables_name_and_a_key(name: str, key: bool) -> None:
    assert looks_like_key(name) is key


def test_engine_arguments_holding_keys_are_recorded_masked() -> None:
    """`--engine-arg hf_token=...` (the candidate's vLLM engine, and the judge's): masked where settings are written."""
    model = ModelSettings(model="m", backend="vllm", engine={"engine_args": {"hf_token": ARG_KEY, "max_num_seqs": 8}})
    judge = JudgeSettings(engine=EngineSettings(engine_args={"hf_token": ARG_KEY}))
    assert json.loads(model.model_dump_json())["engine"]["engine_args"] == {"hf_token": "***", "max_num_seqs": 8}
    assert json.loads(judge.model_dump_json())["engine"]["engine_args"] == {"hf_token": "***"}
    assert model.engine.engine_args["hf_token"] == ARG_KEY  # the engine itself is given the key


# --- Keys under other names and of other forms (issue 35's trial, finding 5) -------------------------------------

# Random keys no service issued, none a part of another: AWS, Azure (32 hex digits), a JWT, a bearer of a list pair,
# Basic credentials, a `Token` scheme, camelCase fields, and keys in a URL's fragment and path.
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/F4jx3AGjPBoVcnprGo"
AWS_KEY_ID = "AKIATRIAL35EXAMPLE01"
AZURE_KEY = "4f1c2b7a9d3e8f60a1b2c3d4e5f6a7b8"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0cmlhbDM1In0.ZYsYJuH9FWcARtvq2FMxr2K8llsi"
PAIR_KEY = "sk-trial-of1ytQeWwKuUjq8FrkmCCxeTEXlR"
BASIC = "dXNlcjpXZ3hhOUdhZ1VGeFVidlJGZGJwdWZrdmtLZUUy"  # base64 of user:Wgxa9GagUFxUbvRFdbpufkvkKeE2
TOKEN_KEY = "4Gg79THpYURI9CW2p8jnznqUoVIX"
CAMEL_KEY = "xfskKeR6iIU0C0FuzNycqXMX9DGJ"
FRAGMENT_KEY = "fMK1wUDR9ZyaC4NPDgoS8Z0xR4Ik"
PATH_KEY = "9Dgp60TthpBdAwDJSblMZ6SgFuZX"
TRIAL_KEYS = (AWS_SECRET, AWS_KEY_ID, AZURE_KEY, JWT, PAIR_KEY, BASIC, TOKEN_KEY, CAMEL_KEY, FRAGMENT_KEY, PATH_KEY)
TRIAL_BODY = {
    "extra_headers": [["x-api-key", PAIR_KEY], ["X-Trace", "trace-1"]],
    "headers": [["Authorization", f"Basic {BASIC}"], {"name": "Ocp-Apim-Subscription-Key", "value": AZURE_KEY}],
    "aws": {"accessKeyId": AWS_KEY_ID, "secretAccessKey": AWS_SECRET},
    "metadata": {"clientSecret": CAMEL_KEY, "sessionToken": JWT, "apiToken": f"Token {TOKEN_KEY}", "user": "u-1"},
}
TRIAL_BODY_MASKED = {
    "extra_headers": [["x-api-key", "***"], ["X-Trace", "trace-1"]],
    "headers": [["Authorization", "***"], {"name": "Ocp-Apim-Subscription-Key", "value": "***"}],
    "aws": {"accessKeyId": "***", "secretAccessKey": "***"},
    "metadata": {"clientSecret": "***", "sessionToken": "***", "apiToken": "***", "user": "u-1"},
}


def test_settings_mask_camel_case_names_pairs_naming_a_key_and_keys_of_fixed_forms() -> None:
    assert secrets_masked(TRIAL_BODY) == TRIAL_BODY_MASKED
    kept = {"maxTokens": "abcdefghijk1", "headers": [["X-Trace", "abcdefghijk1"]], "accessKeyId": "short"}
    assert secrets_masked(kept) == kept


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (f'{{"clientSecret": "{CAMEL_KEY}", "n": 1}}', '{"clientSecret": "***", "n": 1}'),
        (f"{{'secretAccessKey': '{AWS_SECRET}'}}", "{'secretAccessKey': '***'}"),
        (f'[["x-api-key", "{CAMEL_KEY}"], ["X-Trace", "trace-1"]]', '[["x-api-key", "***"], ["X-Trace", "trace-1"]]'),
        (f"Authorization: Basic {BASIC}", "Authorization: Basic ***"),
        (f"Authorization: Token {TOKEN_KEY}", "Authorization: Token ***"),
        (f"Ocp-Apim-Subscription-Key: {AZURE_KEY}", "Ocp-Apim-Subscription-Key: ***"),
        (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = ***"),
        (f"id {AWS_KEY_ID} refused", "id *** refused"),
        (f"bad jwt {JWT}.", "bad jwt ***."),
        ("key: -----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- end", "key: *** end"),
        # Kept: prose after a scheme, a sample key or a word after a key-like name, a field that is no key
        ("the token expired; Basic authentication is required", None),
        ("sample key: android/1234567/12345 was skipped", None),
        ('{"maxTokens": "abcdefghijk1", "monkey": "abcdefghijk1"}', None),
    ],
)
def test_keys_of_other_names_and_forms_are_masked_in_any_text(text: str, masked: str | None) -> None:
    assert redact(text) == (masked or text)


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        (f"https://h.example/v1#access_token={FRAGMENT_KEY}", "https://h.example/v1#access_token=***"),
        (f"https://logs.example/run-r#{FRAGMENT_KEY}", "https://logs.example/run-r#***"),
        (f"https://logs.example/t/{PATH_KEY}/run-r", "https://logs.example/t/***/run-r"),
        (f"see https://h.example/v1?apiKey={CAMEL_KEY} then", "see https://h.example/v1?apiKey=*** then"),
        # Kept: a commit's hash, a word, a host
        ("https://huggingface.co/o/m/commit/3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c", None),
        ("https://platform.example/docs/guides/error-codes#api-errors", None),
        ("https://Abcdefgh1234567890xyz.example/v1", None),
    ],
)
def test_keys_in_a_urls_fragment_or_path_are_masked(url: str, masked: str | None) -> None:
    assert url_secrets_masked(url) == (masked or url)
    assert url_holds_mask(url_secrets_masked(url)) is (masked is not None)


def trial_leaked(root: Path, *outputs: str) -> list[str]:
    """What holds 12 characters in a row of one of the trial's keys: outputs by number, files by path."""
    found = [f"output {i}" for i, text in enumerate(outputs) if leaked(text, TRIAL_KEYS)]
    return found + [
        str(p) for p in root.rglob("*") if p.is_file() and leaked(p.read_text(errors="replace"), TRIAL_KEYS)
    ]


def echoing_body(body: dict) -> Reply:
    """An endpoint that echoes the request it got, but its messages, in its error (the trial's)."""
    return Reply(
        status=500,
        error_message="unsupported request: " + json.dumps({k: v for k, v in body.items() if k != "messages"}),
    )


@pytest.mark.parametrize("responder", [deterministic, echoing_body], ids=["answering", "echoing"])
def test_keys_under_other_names_and_forms_are_sent_and_kept_nowhere(responder, tmp_path: Path) -> None:
    """The trial's body as --extra-body and --judge-extra-body, and a base URL with a key in its fragment: the keys go
    out as given; run.json, judge.json and --print-config hold them masked; an endpoint echoing the body puts them
    in no record, file or output."""
    results = tmp_path / "results"
    body = json.dumps(TRIAL_BODY)
    with FakeOpenAIServer(responder=responder) as server:
        url = f"{server.url}#access_token={FRAGMENT_KEY}"
        args = ["run", "--model", CANDIDATE_MODEL, "--base-url", url, "--api-key-env", "CANDIDATE_CRED",
                "--judge-model", JUDGE_MODEL, "--judge-base-url", server.url, "--judge-api-key-env", "GRADER_CRED",
                "--extra-body", body, "--judge-extra-body", body, "--data", "sample", "--domains", "os", "--limit", "2",
                "--max-retries", "0", "--judge-max-retries", "0", "--run-name", "t", "--output", results]  # fmt: skip
        made = awbench(*args, env=ENV)
        printed = awbench(*args, "--print-config", env=ENV)
        sent = server.requests[0]
    no_traceback(made)
    assert made.returncode == (0 if responder is deterministic else 1), made.stderr
    assert {k: sent[k] for k in TRIAL_BODY} == TRIAL_BODY  # sent as given
    manifest = json.loads((results / "t" / "run.json").read_text())
    assert manifest["config"]["model"]["extra_body"] == TRIAL_BODY_MASKED
    assert manifest["config"]["model"]["base_urls"] == [f"{server.url}#access_token=***"]
    if responder is echoing_body:
        echoed = [
            json.loads(p["error"].removeprefix("HTTP 500: unsupported request: "))
            for p in jsonl_lines(results / "t" / "predictions.jsonl")
        ]
        assert len(echoed) == 2 and all({k: e[k] for k in TRIAL_BODY} == TRIAL_BODY_MASKED for e in echoed)
    else:
        [info] = (results / "t" / "judges").glob("*/judge.json")
        assert json.loads(info.read_text())["settings"]["extra_body"] == TRIAL_BODY_MASKED
    assert printed.returncode == 0 and "***" in printed.stdout, printed.stderr
    assert trial_leaked(tmp_path, made.stdout, made.stderr, printed.stdout, printed.stderr) == []


# --- Keys of more providers' forms under innocuous names (issue 35's third trial) -----------------------------------

# Random keys in each provider's form, none issued: the trial's Groq, Replicate, npm and a GitLab token without a digit
# were stored in full under `--model-arg note=...`; a Hugging Face token is letters only, and so was kept too.
PROVIDER_KEYS = {
    "groq": "gsk_Vq3KdL9xWm2RtP7sYb4NcH8jFz1GaQe6Ux5oTi0Bw",
    "replicate": "r8_Xk4Pq9RmT2vLs7Wb3Nc8Hd1Jf6Gy5Ze0Ua",
    "npm": "npm_Qm7Rt2Kx9Lp4Vs8Wn3Bc6Hd1Jf5Gz0YaEu",
    "gitlab_no_digit": "glpat-XkPqRmTvLsWbNcHdJf",
    "gitlab_deploy": "gldt-Mv8Kq2Rx7Tp4Ls9Wn3Bc",
    "hugging_face_letters": "hf_QwErTyUiOpAsDfGhJkLzXcVbNmQwErTy",
    "anthropic": "sk-ant-api03-Rt5Kx9Lp2Vs7Wn4Bc8Hd1Jf6Gz3YaEu0Qm",
    "xai": "xai-Kx4Rt9Lp2Vs7Wn3Bc8Hd1Jf6Gz5YaEu0QmPk",
    "perplexity": "pplx-Lp7Vs2Wn9Bc4Hd8Jf3Gz6YaEu1QmPkRt5Kx",
    "nvidia": "nvapi-Wn5Bc2Hd9Jf4Gz7YaEu3QmPkRt8KxLp1Vs6",
    "cerebras": "csk-Hd3Jf8Gz1YaEu6QmPkRt4KxLp9Vs2Wn7Bc5",
    "pypi": "pypi-AgEIcHlwaS5vcmcCJGQ3ZjlmMjQ4LTk1NzEtNGQ4Mi1iY2Yx",
    "google": "AIzaSyKx4Rt9Lp2Vs7Wn3Bc8Hd1Jf6Gz5YaEu0",
    "github": "ghp_Rt5Kx9Lp2Vs7Wn4Bc8Hd1Jf6Gz3YaEu0QmP",
    "github_fine_grained": "github_pat_11ABCDEFG0Rt5Kx9Lp2Vs7Wn_4Bc8Hd1Jf6Gz3YaEu0Qm",
    "slack": "xoxb-2718281828-3141592653-Kx4Rt9Lp2Vs7Wn3Bc8Hd1Jf",
    "slack_app": "xapp-1-A0123456789-Kx4Rt9Lp2Vs7Wn3Bc8Hd1Jf",
}


@pytest.mark.parametrize("provider", sorted(PROVIDER_KEYS))
def test_keys_of_each_providers_form_are_masked_under_any_name(provider: str) -> None:
    key = PROVIDER_KEYS[provider]
    for text, masked in ((f"note={key}", "note=***"), (f"note {key}", "note ***"), (f"({key}).", "(***).")):
        assert redact(text) == masked
    assert secrets_masked({"note": key, "list": [f"see {key}"]}) == {"note": "***", "list": ["see ***"]}
    assert looks_like_key(key)


@pytest.mark.parametrize(
    "name",
    ["sk-learn-regression-baseline", "npm_package_json_version_2", "hf_hub_download_kwargs", "xai-grok-reasoning-beta"],
)
def test_names_after_a_keys_prefix_are_kept(name: str) -> None:
    """What follows the prefix is words joined by `-` or `_`, not a random value."""
    assert redact(f"model {name} used") == f"model {name} used"


MODEL_TAKING_NOTES = """
class Noted:
    def __init__(self, **notes):
        self.notes = notes

    def predict(self, messages, *, sample, seed, max_tokens, temperature):
        return "a prediction"
"""


def test_provider_keys_under_innocuous_names_are_kept_nowhere(tmp_path: Path) -> None:
    """Each provider's key as `--model-arg note_<provider>=KEY` and in `--judge-extra-body` under `note`: given to the
    model and sent to the judge as given; `run.json`, `judge.json` and `--print-config` hold `***`; no file or
    output holds 12 characters of any of them."""
    (tmp_path / "wm_noted.py").write_text(MODEL_TAKING_NOTES)
    results = tmp_path / "results"
    notes = [arg for provider, key in PROVIDER_KEYS.items() for arg in ("--model-arg", f"note_{provider}={key}")]
    judge_body = {"metadata": {f"note_{provider}": key for provider, key in PROVIDER_KEYS.items()}}
    env = {**ENV, "PYTHONPATH": f"{tmp_path}:{ENV.get('PYTHONPATH', '')}"}
    with FakeOpenAIServer(responder=deterministic) as judge:
        args = ["run", "--model", "python:wm_noted:Noted", *notes, "--judge-model", JUDGE_MODEL, "--judge-base-url",
                judge.url, "--judge-api-key-env", "GRADER_CRED", "--judge-extra-body", json.dumps(judge_body),
                "--data", "sample", "--domains", "os", "--limit", "2", "--run-name", "n", "--output", results]  # fmt: skip
        outputs = []
        for extra in ([], ["--print-config"]):
            result = subprocess.run(
                awbench_command(*args, *extra), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
            )
            no_traceback(result)
            assert result.returncode == 0, result.stderr
            outputs += [result.stdout, result.stderr]
        assert judge.requests[0]["metadata"] == judge_body["metadata"]  # sent as given
    masked = {f"note_{provider}": "***" for provider in PROVIDER_KEYS}
    manifest = json.loads((results / "n" / "run.json").read_text())
    assert manifest["config"]["model"]["model_args"] == masked
    assert manifest["config"]["judge"]["extra_body"] == {"metadata": masked}
    [info] = (results / "n" / "judges").glob("*/judge.json")
    assert json.loads(info.read_text())["settings"]["extra_body"] == {"metadata": masked}
    printed = outputs[2].splitlines()
    assert printed[0].startswith("# model_arg, judge_extra_body: each *** is a secret left out;"), printed
    assert f"model_arg = {json.dumps([f'note_{provider}=***' for provider in PROVIDER_KEYS])}" in printed
    judge_line = next(line for line in printed if line.startswith("judge_extra_body = "))
    assert judge_line.count('= "***"') == len(PROVIDER_KEYS)
    keys = tuple(PROVIDER_KEYS.values())
    assert [text for text in outputs if leaked(text, keys)] == []
    assert [p for p in tmp_path.rglob("*") if p.is_file() and leaked(p.read_text(errors="replace"), keys)] == []


def test_a_key_as_a_base_urls_path_segment_is_masked_in_the_refusal(tmp_path: Path) -> None:
    """The endpoint under `/key/<key>/v1` lists no models (404): the check refuses it, naming the URL masked."""
    with FakeOpenAIServer(responder=deterministic) as server:
        url = server.url.removesuffix("/v1") + f"/key/{PATH_KEY}/v1"
        result = awbench("run", "--model", CANDIDATE_MODEL, "--base-url", url, "--judge", "rules", "--data", "sample",
                         "--domains", "os", "--output", tmp_path / "results", "--max-retries", "0")  # fmt: skip
    no_traceback(result)
    assert result.returncode == 2 and server.requests == []
    masked = server.url.removesuffix("/v1") + "/key/***/v1"
    assert result.stderr.startswith(f"error: the candidate endpoint {masked} has no model listing at {masked}/models")
    assert trial_leaked(tmp_path, result.stdout, result.stderr) == []


@pytest.mark.parametrize(
    "link",
    [
        f"https://logs.example/run-r#access_token={FRAGMENT_KEY}",
        f"https://logs.example/t/{PATH_KEY}/run-r",
        f"https://logs.example/run-r#{FRAGMENT_KEY}",
    ],
    ids=["fragment parameter", "path segment", "bare fragment"],
)
def test_a_source_link_with_a_token_in_its_fragment_or_path_is_not_published(link: str, tmp_path: Path) -> None:
    results = tmp_path / "results"
    made = cli("run", "--model", "baseline:oracle", "--judge", "rules", "--data", "sample", "--domains", "os",
               "--run-name", "r", "--output", results)  # fmt: skip
    assert made.exit_code == 0, made.output
    result = cli("export", "r", "--output", results, "--hf-eval-results", tmp_path / "model", "--hf-source-url", link)
    no_traceback(result)
    assert refusal(result) == (2, "bad_option")
    assert result.stderr == (
        f"error: --hf-source-url {url_secrets_masked(link)} holds a user name, password or key: the file is "
        "published; give a link without them\n"
    )
    assert "***" in result.stderr and not (tmp_path / "model").exists()
    assert trial_leaked(tmp_path, result.output) == []


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("--temperature", "expected a number, got '***'"),
        ("--concurrency", "expected a whole number, got '***'"),
        ("--judge", "'***' is not one of 'llm', 'rules', 'both'"),
        ("--backend", "'***' is not one of 'baseline', 'openai', 'vllm', 'python'"),
    ],
)
def test_a_key_given_to_another_option_is_not_repeated(option: str, said: str) -> None:
    """A key pasted where a number or a name goes (the trial's `--temperature KEY`): refused without repeating it."""
    key = "VYmx6xcIkdDushfyKXUE8Nd2d1yB"
    result = cli("run", "--model", CANDIDATE_MODEL, "--base-url", "http://127.0.0.1:9/v1", option, key)
    assert refusal(result) == (2, "bad_option")
    assert result.stderr == f"error: {option}: {said}\n"
    assert quoted("temperature") == "'temperature'" and quoted(0.5) == "0.5"  # anything else is quoted as given


MODEL_TAKING_ONE = """
class M:
    def __init__(self, client):
        pass

    def predict(self, messages, *, sample, seed, max_tokens, temperature):
        return "x"
"""


def test_model_arguments_the_class_cannot_take_are_named_without_their_values(tmp_path: Path) -> None:
    (tmp_path / "wm_one.py").write_text(MODEL_TAKING_ONE)
    client = json.dumps({"headers": [["Authorization", f"Token {TOKEN_KEY}"]]})
    args = ["run", "--model", "python:wm_one:M", "--model-arg", f"client={client}", "--model-arg",
            f"cfg={json.dumps({'clientSecret': CAMEL_KEY})}", "--judge", "rules", "--data", "sample", "--domains", "os",
            "--output", tmp_path / "results"]  # fmt: skip
    env = {**ENV, "PYTHONPATH": f"{tmp_path}:{ENV.get('PYTHONPATH', '')}"}
    result = subprocess.run(awbench_command(*args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    no_traceback(result)
    assert result.returncode == 2
    assert result.stderr == (
        "error: python:wm_one:M: --model-arg: M(client) cannot take client, cfg: got an unexpected keyword argument "
        "'cfg'\n"
    )
    assert trial_leaked(tmp_path, result.stdout, result.stderr) == []
