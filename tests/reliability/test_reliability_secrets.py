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
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from reliability_helpers import (
    CANDIDATE_MODEL,
    JUDGE_MODEL,
    awbench,
    clean_env,
    cli,
    deterministic,
    digest,
    jsonl_lines,
    no_traceback,
)

from awbench.redact import url_holds_mask, url_secrets_masked

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
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "error: --hf-source-url https://logs.example/run-r?X-Amz-Signature=*** holds a user"
    )
    assert not leaked(result.output, (URL_KEY,)) and not (tmp_path / "model").exists()
