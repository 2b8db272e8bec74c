#!/usr/bin/env python3
"""Write the hand-written domains of the AgentWorldBench *sample*: mcp, search, android, web, os.

These five environments (MCP servers, a search engine, an Android phone, a browser, a
desktop) cannot be run here, so their trajectories are written by hand, as Python
data, in the formats those environments really produce.  Screens and results that
depend on earlier actions are produced by small functions of the current state
(e.g. ``notes_list(...)`` renders the notes app with whatever notes exist at that
point, ``find_in_page`` really searches the page text returned by an earlier
``open_page``), so later turns stay consistent with earlier ones.  The per-turn
records (history prefix up to the evaluated turn) are built by code.

Usage:  python3 data/sample/build_handwritten.py [--out DIR]   (default DIR: this folder)
"""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

OBSERVATION_MARKER = "**Environment Observation:**"
TASK_PREFIX = "agentworld"


def act(obj: dict) -> str:
    """Actions are single-line JSON."""
    return json.dumps(obj, ensure_ascii=False)


def pretty(obj) -> str:
    """Tool results are pretty-printed JSON."""
    return json.dumps(obj, ensure_ascii=False, indent=2)


def block(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


# =========================================================================== system prompts

SYSTEM_PROMPTS = {
    "mcp": """You are a world model standing in for MCP (Model Context Protocol) tool servers. An AI agent calls the tools below one at a time, and you answer every call exactly as the real server would.

Tools exposed in this session:
{context}

The agent's task: {goal}

You receive the conversation so far as numbered turns: the agent's action (a JSON tool call {{"tool": ..., "arguments": {{...}}}}) and, for all but the last turn, the server's result. Produce the result of the last call only: the tool's JSON payload in the server's own schema, or the server's error object when the call is invalid or fails. Echo supplied values unchanged, reflect everything earlier calls created or changed, and keep unknowable facts (existing records, ids, timestamps) plausible and consistent.

You may think first. Then output only the result inside <predicted_observation>...</predicted_observation>, without the "**Environment Observation:**" heading.""",
    "search": """You are a world model simulating the web-research tools of an AI agent, and you answer each call as the real tools would:
- search {{"query"}}: a header echoing the query with the approximate hit count and time taken, then numbered results (title, URL, snippet).
- open_page {{"url"}}: a header (URL, title, UTC fetch time, HTTP status, size), a blank line, then the page's main text, one paragraph per line, exactly as scraped (stray control characters included); HTTP errors for missing pages.
- find_in_page {{"pattern"}}: case-insensitive search of the most recently opened page; matching lines as [L<n>] <line>, counting lines of the page text after the header, or "No matches".

The agent's task: {goal}

You receive the conversation so far as numbered turns: the agent's action (a JSON tool call) and, for all but the last turn, the tool's output. Produce the output of the last call only, looking like the real web and consistent with every page shown earlier.

You may think first. Then output only the tool output inside <predicted_observation>...</predicted_observation>, without the "**Environment Observation:**" heading.""",
    "android": """You are a world model simulating an Android 13 phone (1080 x 2400 px) operated by an AI agent. After each action you return the next screen as a uiautomator UI-hierarchy dump.

The agent's task: {goal}

Actions are JSON: open_app {{"app_name"}}; click or long_press on {{"element_id": <resource-id of a unique element>}} or on {{"x", "y"}}; type {{"element_id", "text"}}; navigate_back; navigate_home; scroll {{"direction"}}. You receive the conversation so far as numbered turns: the agent's action and, for all but the last turn, the dump that followed. Produce the dump that follows the last action.

The dump is an XML declaration and <hierarchy rotation="0"> with nested <node> elements carrying index, text, resource-id, class, package, content-desc, the boolean states (checkable ... selected) and bounds "[left,top][right,bottom]"; the status bar (clock, battery) is included. Typed text, toggles and app data persist; the clock advances.

You may think first. Then output only the XML inside <predicted_observation>...</predicted_observation>, without the "**Environment Observation:**" heading.""",
    "web": """You are a world model simulating a web browser driven by an AI agent. After each action you return the accessibility tree of the current tab.

The agent's task: {goal}

Actions are JSON: goto {{"url"}}; click {{"element": "[id]"}}; type {{"element", "text", "press_enter"}}; select_option {{"element", "option"}}; scroll {{"direction"}}; go_back. You receive the conversation so far as numbered turns: the agent's action and, for all but the last turn, the observation that followed. Produce the observation that follows the last action.

An observation is the tab line, the URL, then one node per line, "[id] role 'name'" with properties (focused, required, expanded, value ...), children indented by tabs. Ids persist until a new page loads. Typed text, cart contents and created items must be reflected; content you cannot know must look like a real site of this kind.

You may think first. Then output only the observation inside <predicted_observation>...</predicted_observation>, without the "**Environment Observation:**" heading.""",
    "os": """You are a world model simulating an Ubuntu 22.04 GNOME desktop (1920 x 1080 px, user "user", host "ubuntu") operated by an AI agent with mouse and keyboard. After each action you return the desktop's accessibility tree.

The agent's task: {goal}

Actions are JSON: click / double_click / right_click {{"x", "y"}}; type {{"text"}} ("\\n" is Enter); hotkey {{"keys"}}. You receive the conversation so far as numbered turns: the agent's action and, for all but the last turn, the tree that followed. Produce the tree that follows the last action.

The tree is XML: a <desktop-frame> root with one <application> per running program (GNOME shell with top bar and dock first), windows as <frame>, widgets with name, coords "(x, y)", size "(w, h)" and states (active, focused, selected, editable); editor and terminal text is element content. Windows, files and text persist; the top-bar clock advances.

You may think first. Then output only the XML inside <predicted_observation>...</predicted_observation>, without the "**Environment Observation:**" heading.""",
}

# =========================================================================== MCP

GITHUB_TOOLS = """- github.search_repositories(query, page?, per_page?): search repositories visible to the token
- github.list_issues(owner, repo, state?, labels?, sort?, per_page?): list issues of a repository
- github.get_issue(owner, repo, issue_number): get one issue
- github.create_issue(owner, repo, title, body?, labels?, assignees?, milestone?): open an issue
- github.update_issue(owner, repo, issue_number, title?, body?, state?, labels?, assignees?, milestone?): edit an issue (milestone is the milestone number)
- github.add_issue_comment(owner, repo, issue_number, body): comment on an issue or pull request
- github.list_milestones(owner, repo, state?): list milestones"""

CALENDAR_TOOLS = """- calendar.get_current_time(timezone): current date and time in a time zone
- calendar.list_events(calendar_id, time_min, time_max): events of a calendar in a window
- calendar.query_free_busy(attendees, time_min, time_max): busy intervals of other people
- calendar.create_event(calendar_id, summary, start, end, attendees?, description?, add_video_call?): create an event (times are RFC 3339)
- calendar.send_invitations(event_id, message?): e-mail the invitation to all attendees"""

OWNER, REPO = "acme-robotics", "fleet-manager"
REPO_URL = f"https://github.com/{OWNER}/{REPO}"
BOT = {"login": "acme-ops-bot", "id": 118204471, "type": "Bot"}
MILESTONE_24 = {
    "number": 9,
    "title": "v2.4",
    "state": "open",
    "description": "Spring release: dock scheduling v2, telemetry batching",
    "due_on": "2025-03-28T07:00:00Z",
    "open_issues": 11,
    "closed_issues": 37,
    "html_url": f"{REPO_URL}/milestone/9",
}
MILESTONE_25 = {
    "number": 10,
    "title": "v2.5",
    "state": "open",
    "description": "",
    "due_on": "2025-05-16T07:00:00Z",
    "open_issues": 4,
    "closed_issues": 0,
    "html_url": f"{REPO_URL}/milestone/10",
}
LABEL = {
    "bug": {"id": 5127740012, "name": "bug", "color": "d73a4a", "description": "Something isn't working"},
    "telemetry": {"id": 5127741398, "name": "telemetry", "color": "0e8a16", "description": "Robot telemetry ingestion"},
    "tracking": {"id": 5127742205, "name": "tracking", "color": "5319e7", "description": "Release or epic tracking issue"},
}
NEW_ISSUE_TITLE = "Battery telemetry times out after 30 s on docks with more than 40 robots"
NEW_ISSUE_BODY = (
    "On dock B7 (52 robots) the battery telemetry request to /v1/telemetry/battery times out after 30 s, so the "
    "dashboard shows stale charge levels.\n\nSteps: run `fleetctl telemetry pull --dock B7`.\nExpected: response "
    "within 5 s. Actual: `context deadline exceeded` after 30 s.\n\nSmaller docks (<= 40 robots) are fine."
)
COMMENT_BODY = "Blocking bug for 2.4: #248 (battery telemetry times out on docks with more than 40 robots)."
TRACKING_BODY = (
    "Release checklist for v2.4\n\n- [x] Dock scheduling v2 (#187)\n- [x] Telemetry batching (#203)\n"
    "- [ ] Migration guide (#221)\n- [ ] Load test on dock B7\n\nBlocking bugs are linked in the comments."
)


def gh_issue(number, title, body, labels, created, updated, comments, milestone=None, assignees=(), id_=None, node_id=None, user=None):
    return {
        "id": id_,
        "node_id": node_id,
        "number": number,
        "title": title,
        "body": body,
        "state": "open",
        "labels": [LABEL[x] for x in labels],
        "user": user or BOT,
        "assignees": [{"login": a, "id": 39184577, "type": "User"} for a in assignees],
        "milestone": milestone,
        "comments": comments,
        "created_at": created,
        "updated_at": updated,
        "closed_at": None,
        "html_url": f"{REPO_URL}/issues/{number}",
    }


MAINTAINER = {"login": "mhoffmann", "id": 39184577, "type": "User"}
TRACKING_212 = dict(
    number=212, title="v2.4 release tracking", body=TRACKING_BODY, labels=["tracking"],
    created="2025-01-20T10:02:11Z", updated="2025-03-04T16:55:38Z", comments=4, milestone=MILESTONE_24,
    id_=2802216677, node_id="I_kwDOIsXfYs6nBq5l", user=MAINTAINER,
)
NEW_248 = dict(
    number=248, title=NEW_ISSUE_TITLE, body=NEW_ISSUE_BODY, labels=["bug", "telemetry"],
    created="2025-03-06T09:14:27Z", updated="2025-03-06T09:14:27Z", comments=0,
    id_=2901733410, node_id="I_kwDOIsXfYs6s9v4i",
)
MILESTONE_24_AFTER = dict(MILESTONE_24, open_issues=12)

MCP_GITHUB = {
    "id": 3,
    "goal": (
        "In acme-robotics/fleet-manager, file a bug about battery telemetry timing out on docks with more than "
        "40 robots (labels bug and telemetry), assign it to mhoffmann in the v2.4 milestone, and link it from "
        "the v2.4 release tracking issue."
    ),
    "context": GITHUB_TOOLS,
    "turns": [
        (
            {"tool": "github.search_repositories", "arguments": {"query": "fleet-manager org:acme-robotics"}},
            pretty(
                {
                    "total_count": 2,
                    "incomplete_results": False,
                    "items": [
                        {
                            "id": 583920114,
                            "full_name": "acme-robotics/fleet-manager",
                            "description": "Dispatch and telemetry service for the warehouse robot fleet",
                            "private": True,
                            "default_branch": "main",
                            "language": "Go",
                            "stargazers_count": 41,
                            "open_issues_count": 23,
                            "pushed_at": "2025-03-05T17:42:09Z",
                            "html_url": REPO_URL,
                        },
                        {
                            "id": 601144872,
                            "full_name": "acme-robotics/fleet-manager-ui",
                            "description": "Operator dashboard for fleet-manager",
                            "private": True,
                            "default_branch": "main",
                            "language": "TypeScript",
                            "stargazers_count": 17,
                            "open_issues_count": 9,
                            "pushed_at": "2025-03-03T08:15:51Z",
                            "html_url": "https://github.com/acme-robotics/fleet-manager-ui",
                        },
                    ],
                }
            ),
        ),
        (
            {"tool": "github.list_issues", "arguments": {"owner": OWNER, "repo": REPO, "state": "open", "labels": ["tracking"]}},
            pretty(
                [
                    {k: v for k, v in gh_issue(**TRACKING_212).items() if k != "body"},
                    {
                        k: v
                        for k, v in gh_issue(
                            number=198, title="Telemetry pipeline migration to NATS (tracking)", body="",
                            labels=["tracking", "telemetry"], created="2024-12-09T13:40:00Z",
                            updated="2025-02-26T09:12:45Z", comments=11, milestone=MILESTONE_25,
                            id_=2727370153, node_id="I_kwDOIsXfYs6idF2p", user=MAINTAINER,
                        ).items()
                        if k != "body"
                    },
                ]
            ),
        ),
        (
            {
                "tool": "github.create_issue",
                "arguments": {"owner": OWNER, "repo": REPO, "title": NEW_ISSUE_TITLE, "body": NEW_ISSUE_BODY, "labels": ["bug", "telemetry"]},
            },
            pretty(gh_issue(**NEW_248)),
        ),
        (
            {"tool": "github.add_issue_comment", "arguments": {"owner": OWNER, "repo": REPO, "issue_number": 212, "body": COMMENT_BODY}},
            pretty(
                {
                    "id": 2703318842,
                    "node_id": "IC_kwDOIsXfYs6hIFQ6",
                    "html_url": f"{REPO_URL}/issues/212#issuecomment-2703318842",
                    "issue_url": f"https://api.github.com/repos/{OWNER}/{REPO}/issues/212",
                    "body": COMMENT_BODY,
                    "user": BOT,
                    "author_association": "NONE",
                    "created_at": "2025-03-06T09:15:02Z",
                    "updated_at": "2025-03-06T09:15:02Z",
                }
            ),
        ),
        (
            {"tool": "github.update_issue", "arguments": {"owner": OWNER, "repo": REPO, "issue_number": "248", "milestone": "v2.4", "assignees": ["mhoffmann"]}},
            pretty(
                {
                    "error": {
                        "code": -32602,
                        "message": "Invalid arguments for tool update_issue",
                        "data": [
                            {"path": ["issue_number"], "expected": "number", "received": "string", "message": "Expected number, received string"},
                            {"path": ["milestone"], "expected": "number", "received": "string", "message": "Expected number, received string"},
                        ],
                    }
                }
            ),
        ),
        (
            {"tool": "github.list_milestones", "arguments": {"owner": OWNER, "repo": REPO, "state": "open"}},
            pretty([MILESTONE_24, MILESTONE_25]),
        ),
        (
            {"tool": "github.update_issue", "arguments": {"owner": OWNER, "repo": REPO, "issue_number": 248, "milestone": 9, "assignees": ["mhoffmann"]}},
            pretty(gh_issue(**dict(NEW_248, updated="2025-03-06T09:16:40Z", milestone=MILESTONE_24_AFTER, assignees=["mhoffmann"]))),
        ),
        (
            {"tool": "github.get_issue", "arguments": {"owner": OWNER, "repo": REPO, "issue_number": 212}},
            pretty(gh_issue(**dict(TRACKING_212, comments=5, updated="2025-03-06T09:15:02Z"))),
        ),
    ],
    "evaluate": [1, 3, 5, 7, 8],
}

CAL_ME = "dana.kim@northwind.example"
PRIYA = "priya.nair@northwind.example"
TOMAS = "tomas.ruiz@northwind.example"
DAY = "2025-03-11"
WINDOW = {"time_min": f"{DAY}T12:00:00+01:00", "time_max": f"{DAY}T18:00:00+01:00"}
REVIEW_SUMMARY = "Design review: dock scheduling v2"
REVIEW_DESC = "Walk through the v2 scheduling screens (Figma link in the doc). Please bring open questions."
REVIEW_ID = "7q3k9m2vd1h0s8e5bq4l6r0c2t"


def cal_event(id_, summary, start, end, etag, updated, attendees=(), organizer=CAL_ME, extra=None):
    ev = {
        "id": id_,
        "status": "confirmed",
        "summary": summary,
        "start": {"dateTime": start},
        "end": {"dateTime": end},
        "organizer": {"email": organizer, "self": organizer == CAL_ME},
        "attendees": [dict(a) for a in attendees],
        "etag": etag,
        "updated": updated,
    }
    if extra:
        ev.update(extra)
    return ev


EV_1ON1 = cal_event(
    "0c5ri8b1ml2g7n6d3t1a5q0e9k", "1:1 Dana / Jonas", f"{DAY}T13:00:00+01:00", f"{DAY}T13:30:00+01:00",
    '"3471802291044000"', "2025-01-07T10:05:45.522Z",
    attendees=[{"email": "jonas.weber@northwind.example", "responseStatus": "accepted"}, {"email": CAL_ME, "responseStatus": "accepted", "self": True}],
    organizer="jonas.weber@northwind.example",
)
EV_PLANNING = cal_event(
    "5h8t0v3kq2c6p1b9m4e7r2s0aj", "Sprint 31 planning", f"{DAY}T14:00:00+01:00", f"{DAY}T15:00:00+01:00",
    '"3479122018790000"', "2025-02-19T08:30:09.395Z",
    attendees=[{"email": CAL_ME, "responseStatus": "accepted", "self": True}, {"email": "platform-team@northwind.example", "responseStatus": "needsAction"}],
)
REVIEW_ATTENDEES = [
    {"email": PRIYA, "responseStatus": "needsAction"},
    {"email": TOMAS, "responseStatus": "needsAction"},
    {"email": CAL_ME, "responseStatus": "accepted", "organizer": True, "self": True},
]
EV_REVIEW = cal_event(
    REVIEW_ID, REVIEW_SUMMARY, f"{DAY}T15:30:00+01:00", f"{DAY}T16:15:00+01:00",
    '"3482917455120000"', "2025-03-06T13:24:18.412Z", attendees=REVIEW_ATTENDEES,
    extra={
        "description": REVIEW_DESC,
        "created": "2025-03-06T13:24:18.000Z",
        "htmlLink": f"https://calendar.northwind.example/event?eid=N3Eza{REVIEW_ID[:10]}",
        "hangoutLink": "https://meet.northwind.example/xkq-rbvu-pfa",
    },
)

MCP_CALENDAR = {
    "id": 8,
    "goal": (
        "Schedule a 45-minute design review of dock scheduling v2 with Priya Nair and Tomás Ruiz next Tuesday "
        "afternoon (2025-03-11, Berlin time) at a time when all three of you are free, with a video call, and "
        "send them the invitation."
    ),
    "context": CALENDAR_TOOLS,
    "turns": [
        (
            {"tool": "calendar.get_current_time", "arguments": {"timezone": "Europe/Berlin"}},
            pretty({"timezone": "Europe/Berlin", "datetime": "2025-03-06T14:22:51+01:00", "day_of_week": "Thursday", "utc_offset": "+01:00", "is_dst": False}),
        ),
        (
            {"tool": "calendar.list_events", "arguments": {"calendar_id": "primary", **WINDOW}},
            pretty({"calendar_id": CAL_ME, "time_zone": "Europe/Berlin", "events": [EV_1ON1, EV_PLANNING], "next_page_token": None}),
        ),
        (
            {"tool": "calendar.query_free_busy", "arguments": {"attendees": [PRIYA, TOMAS], **WINDOW}},
            pretty(
                {
                    "time_min": "2025-03-11T11:00:00Z",
                    "time_max": "2025-03-11T17:00:00Z",
                    "calendars": {
                        PRIYA: {"busy": [{"start": "2025-03-11T11:00:00Z", "end": "2025-03-11T12:30:00Z"}, {"start": "2025-03-11T14:00:00Z", "end": "2025-03-11T14:30:00Z"}, {"start": "2025-03-11T15:30:00Z", "end": "2025-03-11T16:00:00Z"}]},
                        TOMAS: {"busy": [{"start": "2025-03-11T13:00:00Z", "end": "2025-03-11T14:00:00Z"}, {"start": "2025-03-11T15:30:00Z", "end": "2025-03-11T16:30:00Z"}]},
                    },
                }
            ),
        ),
        (
            {
                "tool": "calendar.create_event",
                "arguments": {
                    "calendar_id": "primary", "summary": REVIEW_SUMMARY, "start": f"{DAY}T15:30:00+01:00",
                    "end": f"{DAY}T15:15:00+01:00", "attendees": [PRIYA, TOMAS], "description": REVIEW_DESC, "add_video_call": True,
                },
            },
            pretty(
                {
                    "isError": True,
                    "error": {
                        "code": "INVALID_ARGUMENT",
                        "message": f"The event end ({DAY}T15:15:00+01:00) must be after its start ({DAY}T15:30:00+01:00).",
                        "field": "end",
                    },
                }
            ),
        ),
        (
            {
                "tool": "calendar.create_event",
                "arguments": {
                    "calendar_id": "primary", "summary": REVIEW_SUMMARY, "start": f"{DAY}T15:30:00+01:00",
                    "end": f"{DAY}T16:15:00+01:00", "attendees": [PRIYA, TOMAS], "description": REVIEW_DESC, "add_video_call": True,
                },
            },
            pretty(EV_REVIEW),
        ),
        (
            {"tool": "calendar.list_events", "arguments": {"calendar_id": "primary", **WINDOW}},
            pretty({"calendar_id": CAL_ME, "time_zone": "Europe/Berlin", "events": [EV_1ON1, EV_PLANNING, EV_REVIEW], "next_page_token": None}),
        ),
        (
            {"tool": "calendar.send_invitations", "arguments": {"event_id": REVIEW_ID, "message": "Agenda and Figma link are in the event description."}},
            pretty(
                {
                    "event_id": REVIEW_ID,
                    "sent_at": "2025-03-06T13:25:11Z",
                    "recipients": [
                        {"email": PRIYA, "status": "queued", "message_id": "<20250306132511.4f7c1e02@mail.northwind.example>"},
                        {"email": TOMAS, "status": "queued", "message_id": "<20250306132511.9b03d7aa@mail.northwind.example>"},
                    ],
                }
            ),
        ),
    ],
    "evaluate": [1, 2, 4, 5],
}

# =========================================================================== Search


def search_results(query: str, hits: str, seconds: str, results: list[tuple[str, str, str]]) -> str:
    lines = [f'Search results for "{query}" (about {hits} results, {seconds} seconds)', ""]
    for i, (title, url, snippet) in enumerate(results, 1):
        lines += [f"{i}. {title}", f"   {url}", f"   {snippet}", ""]
    return "\n".join(lines).rstrip("\n")


def page(url: str, title: str, fetched: str, status: str, size: str, body: str) -> str:
    return f"URL: {url}\nTitle: {title}\nFetched: {fetched} | HTTP {status} | {size}\n\n{body}"


def find_in_page(opened: str, pattern: str) -> str:
    """Deterministic: searches the page text (after the header) of an earlier open_page output."""
    header, _, body = opened.partition("\n\n")
    url = header.split("\n", 1)[0].removeprefix("URL: ")
    lines = body.split("\n")
    hits = [(n, line) for n, line in enumerate(lines, 1) if pattern.lower() in line.lower()]
    if not hits:
        return f'No matches for "{pattern}" in {url}'
    out = [f'{len(hits)} match{"es" if len(hits) != 1 else ""} for "{pattern}" in {url}']
    out += [f"[L{n}] {line}" for n, line in hits]
    return "\n".join(out)


ORESUND_WIKI = page(
    "https://en.wikipedia.org/wiki/%C3%98resund_Bridge",
    "Øresund Bridge - Wikipedia",
    "2025-03-06T13:41:07Z", "200", "184.6 kB",
    block(
        """
        Øresund Bridge
        The Øresund Bridge (Danish: Øresundsbroen; Swedish: Öresundsbron) is a cable-stayed bridge carrying both a motorway and a railway across the Øresund strait between Denmark and Sweden.
        At almost 8 kilometres it is Europe's longest combined road and rail bridge, reaching from the Swedish coast to Peberholm, an artificial island in the middle of the strait.
        The crossing is completed by the 4-kilometre Drogden Tunnel from Peberholm to the island of Amager in Denmark.
        Carries: four lanes of the E20 motorway and the double-track Øresund Line
        Total length: 7,845 metres
        Longest span: 490 metres
        Clearance below: 57 metres
        Construction start: 1995
        Opened: 1 July 2000
        History
        The bridge was designed by the Danish architect Georg Rotne and built by a consortium of Scandinavian and German contractors.
        The Øresund Connection was officially opened on 1 July 2000 by Queen Margrethe II of Denmark and King Carl XVI Gustaf of Sweden.
        Traffic was initially lower than forecast because of high tolls, but has grown steadily since the late 2000s.
        See also
        List of bridges in Denmark · List of bridges in Sweden · Fixed links in Denmark
        This page was last edited on 14 February 2025, at 09:26 (UTC).
        """
    ),
)

ORESUND_OFFICIAL = page(
    "https://www.oresundsbron.com/en/info/facts-and-figures",
    "Facts and figures | Øresundsbron",
    "2025-03-06T13:43:52Z", "200", "61.3 kB",
    block(
        """
        Facts and figures
        Øresundsbron connects Denmark and Sweden by road and rail.\u2029The link consists of a bridge, an artificial island and a tunnel.
        The bridge
        Length of the bridge: 7,845 metres
        Height of the pylons: 204 metres
        Free height under the bridge: 57 metres
        Main span between the pylons: 490 metres
        Peberholm
        The artificial island is 4,055 metres long and was created from material dredged from the seabed.
        The tunnel
        The Drogden tunnel is 4,050 metres long, of which 3,510 metres is an immersed tunnel made of 20 elements.
        Opening
        The fixed link opened to traffic on 1 July 2000, after five years of construction.
        Total length of the fixed link from coast to coast: about 16 km.
        Cookie settings · Privacy policy · © Øresundsbro Konsortiet
        """
    ),
)

SEARCH_ORESUND = {
    "id": 12,
    "goal": (
        "Find out in which year the Øresund Bridge opened and how long the bridge itself is (in metres), and "
        "confirm the length on the operator's official website."
    ),
    "turns": [
        (
            {"tool": "search", "query": "Øresund Bridge opening year length"},
            search_results(
                "Øresund Bridge opening year length", "1,270,000", "0.46",
                [
                    ("Øresund Bridge - Wikipedia", "https://en.wikipedia.org/wiki/%C3%98resund_Bridge",
                     "The Øresund Bridge is a cable-stayed bridge carrying both a motorway and a railway across the Øresund strait between Denmark and Sweden. At almost 8 kilometres it is Europe's longest ..."),
                    ("Øresund Bridge | Britannica", "https://www.britannica.com/topic/Oresund-Bridge",
                     "Øresund Bridge, combined road and railway bridge across the Øresund strait, linking Copenhagen, Denmark, with Malmö, Sweden. Opened in July 2000 ..."),
                    ("How the Øresund Bridge changed life on both sides of the strait", "https://www.thelocal.se/20240630/oresund-bridge-anniversary",
                     "Jun 30, 2024 — When the bridge opened on July 1st, 2000,\u2028few expected that 20,000 people would one day commute across the strait every day ..."),
                    ("Øresundsbron – Facts and figures", "https://www.oresundsbron.com/en/info/facts-and-figures",
                     "Facts about the bridge, the artificial island Peberholm and the Drogden tunnel: lengths, heights and the construction period ..."),
                    ("Oresund Bridge - Structurae", "https://structurae.net/en/structures/oresund-bridge",
                     "Cable-stayed bridge · Completion: 2000 · Main span 490 m · Total length 7 845 m · Pylons 204 m ..."),
                ],
            ),
        ),
        ({"tool": "open_page", "url": "https://en.wikipedia.org/wiki/%C3%98resund_Bridge"}, ORESUND_WIKI),
        ({"tool": "find_in_page", "pattern": "opened"}, find_in_page(ORESUND_WIKI, "opened")),
        (
            {"tool": "search", "query": "oresundsbron official facts bridge length metres"},
            search_results(
                "oresundsbron official facts bridge length metres", "48,300", "0.38",
                [
                    ("Facts and figures | Øresundsbron", "https://www.oresundsbron.com/en/info/facts-and-figures",
                     "Length of the bridge: 7,845 metres. Height of the pylons: 204 metres. Free height under the bridge: 57 metres ..."),
                    ("Fakta om Øresundsbron | Øresundsbron", "https://www.oresundsbron.com/da/info/fakta-om-oresundsbron",
                     "Broens længde: 7.845 meter. Pylonernes højde: 204 meter. Frihøjde under broen: 57 meter ..."),
                    ("History of the Øresund link | Øresundsbron", "https://www.oresundsbron.com/en/info/history",
                     "In 1991 the Danish and Swedish governments agreed to build a fixed link across the Øresund ..."),
                    ("Øresund Bridge - Wikipedia", "https://en.wikipedia.org/wiki/%C3%98resund_Bridge",
                     "Total length: 7,845 metres. Longest span: 490 metres ..."),
                ],
            ),
        ),
        ({"tool": "open_page", "url": "https://www.oresundsbron.com/en/info/facts-and-figures"}, ORESUND_OFFICIAL),
        ({"tool": "find_in_page", "pattern": "7845"}, find_in_page(ORESUND_OFFICIAL, "7845")),
        ({"tool": "find_in_page", "pattern": "7,845"}, find_in_page(ORESUND_OFFICIAL, "7,845")),
    ],
    "evaluate": [1, 2, 4, 5, 6, 7],
}

PEP634 = page(
    "https://peps.python.org/pep-0634/",
    "PEP 634 – Structural Pattern Matching: Specification | peps.python.org",
    "2025-03-06T15:02:44Z", "200", "96.1 kB",
    block(
        """
        PEP 634 – Structural Pattern Matching: Specification
        Author: Brandt Bucher, Guido van Rossum
        Status: Final
        Type: Standards Track
        Created: 12-Sep-2020
        Python-Version: 3.10
        Replaces: 622
        Table of Contents
        Abstract
        This document gives the formal specification of the match statement. Together with PEP 635 (motivation and rationale) and PEP 636 (tutorial) it supersedes PEP 622.
        Syntax and Semantics
        The match statement
        match_stmt: "match" subject_expr ':' NEWLINE INDENT case_block+ DEDENT
        The subject expression is evaluated once; the case blocks are then tried from top to bottom, and the first one whose pattern succeeds (and whose guard, if any, is true) is executed.
        Copyright
        This document is placed in the public domain or under the CC0-1.0-Universal license, whichever is more permissive.
        """
    ),
)

WHATSNEW_310 = page(
    "https://docs.python.org/3/whatsnew/3.10.html",
    "What’s New In Python 3.10 — Python 3.13.2 documentation",
    "2025-03-06T15:05:19Z", "200", "212.8 kB",
    block(
        """
        What’s New In Python 3.10
        Editor: Pablo Galindo Salgado
        This page lists what changed in Python 3.10 compared with 3.9. Python 3.10 was released on October 4, 2021.
        Summary – Release highlights
        New syntax features:
        PEP 634, Structural Pattern Matching: Specification
        PEP 635, Structural Pattern Matching: Motivation and Rationale
        PEP 636, Structural Pattern Matching: Tutorial
        bpo-12782: context managers may now be grouped in parentheses.
        PEP 634: Structural Pattern Matching
        A new match statement lets a value be compared against a series of case patterns, each with its own block of code.\u0085Patterns can be sequences, mappings, literals of the built-in types, or instances of classes.
        Syntax and operations
        The general form is: match subject: case <pattern_1>: <action_1> case <pattern_2>: <action_2> case _: <action_wildcard>
        Declarative approach
        Many readers will know the idea from the switch statement of C, Java or JavaScript, where one value is compared with a list of literals.\u2028Pattern matching goes further: a pattern can also take the value apart and bind names to its pieces.
        Previous topic: What’s New In Python 3.11 · Next topic: What’s New In Python 3.9
        """
    ),
)

SEARCH_PEP = {
    "id": 30,
    "goal": (
        "Which Python version introduced the match statement, which PEP specifies it, and who are that PEP's "
        "authors? Give the release date of that Python version as well."
    ),
    "turns": [
        (
            {"tool": "search", "query": "python match statement introduced in which version"},
            search_results(
                "python match statement introduced in which version", "2,890,000", "0.41",
                [
                    ("What’s New In Python 3.10 — Python 3.13.2 documentation", "https://docs.python.org/3/whatsnew/3.10.html",
                     "PEP 634: Structural Pattern Matching. A new match statement lets a value be compared against a series of case patterns, each with its own block ..."),
                    ("PEP 634 – Structural Pattern Matching: Specification", "https://peps.python.org/pep-0634/",
                     "This document gives the formal specification of the match statement. Together with PEP 635 and PEP 636 it supersedes PEP 622 ..."),
                    ("Structural Pattern Matching in Python – Real Python", "https://realpython.com/structural-pattern-matching/",
                     "In this tutorial, you'll learn how to harness the power of structural pattern matching in Python 3.10 and later ..."),
                    ("What is the Python equivalent for a case/switch statement? - Stack Overflow", "https://stackoverflow.com/questions/11479816/what-is-the-python-equivalent-for-a-case-switch-statement",
                     "Python 3.10 (2021) introduced the match-case statement, which provides a first-class implementation of a switch ..."),
                ],
            ),
        ),
        ({"tool": "open_page", "url": "https://peps.python.org/pep-0634/"}, PEP634),
        ({"tool": "find_in_page", "pattern": "Author"}, find_in_page(PEP634, "Author")),
        (
            {"tool": "open_page", "url": "https://peps.python.org/pep-0634/authors"},
            page("https://peps.python.org/pep-0634/authors", "404 Not Found", "2025-03-06T15:03:30Z", "404", "1.9 kB",
                 "Page not found\nThe page you requested could not be found. Return to the PEP index: https://peps.python.org/"),
        ),
        (
            {"tool": "search", "query": "\"Python 3.10\" release date what's new"},
            search_results(
                "\"Python 3.10\" release date what's new", "640,000", "0.52",
                [
                    ("What’s New In Python 3.10 — Python 3.13.2 documentation", "https://docs.python.org/3/whatsnew/3.10.html",
                     "This page lists what changed in Python 3.10 compared with 3.9. Python 3.10 was released on October 4, 2021 ..."),
                    ("Python Release Python 3.10.0 | Python.org", "https://www.python.org/downloads/release/python-3100/",
                     "Release Date: Oct. 4, 2021. This is the stable release of Python 3.10.0 ..."),
                    ("PEP 619 – Python 3.10 Release Schedule", "https://peps.python.org/pep-0619/",
                     "This document describes the development and release schedule for Python 3.10 ..."),
                ],
            ),
        ),
        ({"tool": "open_page", "url": "https://docs.python.org/3/whatsnew/3.10.html"}, WHATSNEW_310),
    ],
    "evaluate": [1, 3, 4, 6],
}

# =========================================================================== Android

SYSUI = "com.android.systemui"
NOTES = "com.jotter.notes"
SETTINGS = "com.android.settings"
ANDROID_FLAGS = ("checkable", "checked", "clickable", "enabled", "focusable", "focused", "scrollable", "long-clickable", "password", "selected")
ANDROID_CLASSES = {
    "RecyclerView": "androidx.recyclerview.widget.RecyclerView",
    "ViewGroup": "android.view.ViewGroup",
    "View": "android.view.View",
}


def N(cls, bounds, text="", rid="", desc="", pkg=None, children=(), **flags):
    return {"cls": cls, "bounds": bounds, "text": text, "rid": rid, "desc": desc, "pkg": pkg, "children": list(children), "flags": flags}


def render_android(*roots, package: str) -> str:
    lines = ["<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>", '<hierarchy rotation="0">']

    def walk(node, index, depth, pkg):
        pkg = node["pkg"] or pkg
        flags = dict(node["flags"])
        flags.setdefault("enabled", True)
        flags.setdefault("focusable", flags.get("clickable", False))
        values = " ".join(f'{name}="{str(bool(flags.get(name.replace("-", "_"), False))).lower()}"' for name in ANDROID_FLAGS)
        cls = ANDROID_CLASSES.get(node["cls"], "android.widget." + node["cls"])
        l, t, r, b = node["bounds"]
        attrs = (
            f'index="{index}" text={quoteattr(node["text"])} resource-id="{node["rid"]}" class="{cls}" '
            f'package="{pkg}" content-desc={quoteattr(node["desc"])} {values} bounds="[{l},{t}][{r},{b}]"'
        )
        pad = "  " * depth
        if node["children"]:
            lines.append(f"{pad}<node {attrs}>")
            for i, child in enumerate(node["children"]):
                walk(child, i, depth + 1, pkg)
            lines.append(f"{pad}</node>")
        else:
            lines.append(f"{pad}<node {attrs} />")

    for i, root in enumerate(roots):
        walk(root, i, 1, package)
    lines.append("</hierarchy>")
    return "\n".join(lines)


def status_bar(clock: str, battery: int):
    return N("FrameLayout", (0, 0, 1080, 96), rid=f"{SYSUI}:id/status_bar", pkg=SYSUI, children=[
        N("TextView", (42, 18, 150, 78), text=clock, rid=f"{SYSUI}:id/clock", pkg=SYSUI),
        N("ImageView", (936, 24, 1040, 72), desc=f"Battery {battery} percent.", rid=f"{SYSUI}:id/battery", pkg=SYSUI),
    ])


EXISTING_NOTES = [
    ("Packing list", "passport, charger, rain jacket, adapter", "Mar 2"),
    ("Book ideas", "The Overstory; Piranesi; Klara and the Sun", "Feb 18"),
]
NOTE_ITEM_H, NOTE_ITEM_GAP, NOTE_TOP = 196, 24, 288


def note_item(title, preview, date, top, pinned=False, selected=False):
    """A list row exposes its content through content-desc (as many note apps do) and shows its title."""
    desc = f"{title}. {preview}. Edited {date}." + (" Pinned." if pinned else "")
    return N("LinearLayout", (32, top, 1048, top + NOTE_ITEM_H), rid=f"{NOTES}:id/note_item", desc=desc, children=[
        N("TextView", (72, top + 28, 880, top + 88), text=title, rid=f"{NOTES}:id/note_title"),
    ], clickable=True, long_clickable=True, selected=selected)


def notes_list(notes, clock, battery, pinned=(), selected=None):
    """notes: list of (title, preview, date); pinned: titles shown in the Pinned section."""
    if selected is None:
        bar = [
            N("TextView", (48, 140, 600, 220), text="Notes", rid=f"{NOTES}:id/toolbar_title"),
            N("ImageButton", (944, 128, 1048, 232), desc="Search", rid=f"{NOTES}:id/action_search", clickable=True),
        ]
    else:
        bar = [
            N("TextView", (144, 140, 520, 220), text="1 selected", rid=f"{NOTES}:id/selection_count"),
            N("ImageButton", (824, 128, 928, 232), desc="Pin", rid=f"{NOTES}:id/action_pin", clickable=True),
            N("ImageButton", (944, 128, 1048, 232), desc="Delete", rid=f"{NOTES}:id/action_delete", clickable=True),
        ]
    items, top = [], NOTE_TOP
    sections = [("Pinned", [n for n in notes if n[0] in pinned]), ("Others", [n for n in notes if n[0] not in pinned])] if pinned else [(None, notes)]
    for header, group in sections:
        if header:
            items.append(N("TextView", (48, top, 1032, top + 64), text=header, rid=f"{NOTES}:id/section_header"))
            top += 80
        for title, preview, date in group:
            items.append(note_item(title, preview, date, top, pinned=title in pinned, selected=title == selected))
            top += NOTE_ITEM_H + NOTE_ITEM_GAP
    app = N("FrameLayout", (0, 96, 1080, 2400), rid=f"{NOTES}:id/root", children=[
        *bar,
        N("RecyclerView", (0, 264, 1080, 2400), rid=f"{NOTES}:id/notes_list", children=items, scrollable=True, focusable=True),
        N("ImageButton", (864, 2184, 1024, 2344), desc="New note", rid=f"{NOTES}:id/fab_new_note", clickable=True),
    ])
    return render_android(status_bar(clock, battery), app, package=NOTES)


def note_editor(title, body, focus, status, clock, battery):
    app = N("FrameLayout", (0, 96, 1080, 2400), rid=f"{NOTES}:id/root", children=[
        N("ImageButton", (16, 128, 120, 232), desc="Navigate up", clickable=True),
        N("ImageButton", (944, 128, 1048, 232), desc="Pin", rid=f"{NOTES}:id/action_pin", clickable=True),
        N("EditText", (48, 288, 1032, 408), text=title, rid=f"{NOTES}:id/note_title", clickable=True, long_clickable=True, focused=focus == "title"),
        N("EditText", (48, 432, 1032, 1400), text=body, rid=f"{NOTES}:id/note_body", clickable=True, long_clickable=True, focused=focus == "body"),
        N("TextView", (48, 1416, 1032, 1472), text=status, rid=f"{NOTES}:id/note_status"),
    ])
    return render_android(status_bar(clock, battery), app, package=NOTES)


GROCERIES = ("Groceries", "oat milk, lemons, rye bread", "9:42")
NOTES_AFTER = [GROCERIES] + EXISTING_NOTES
GROCERIES_CENTER = (540, NOTE_TOP + NOTE_ITEM_H // 2)

ANDROID_NOTES = {
    "id": 4,
    "goal": "In the Jotter Notes app, create a note titled \"Groceries\" with the text \"oat milk, lemons, rye bread\", then pin it to the top of the list.",
    "turns": [
        ({"action": "open_app", "app_name": "Jotter Notes"}, notes_list(EXISTING_NOTES, "9:41", 76)),
        ({"action": "click", "element_id": f"{NOTES}:id/fab_new_note"}, note_editor("", "", "title", "New note", "9:41", 76)),
        ({"action": "type", "element_id": f"{NOTES}:id/note_title", "text": "Groceries"}, note_editor("Groceries", "", "title", "Saved · 9:41", "9:41", 76)),
        (
            {"action": "type", "element_id": f"{NOTES}:id/note_body", "text": "oat milk, lemons, rye bread"},
            note_editor("Groceries", "oat milk, lemons, rye bread", "body", "Saved · 9:42", "9:42", 76),
        ),
        ({"action": "navigate_back"}, notes_list(NOTES_AFTER, "9:42", 76)),
        ({"action": "long_press", "x": GROCERIES_CENTER[0], "y": GROCERIES_CENTER[1]}, notes_list(NOTES_AFTER, "9:42", 76, selected="Groceries")),
        ({"action": "click", "element_id": f"{NOTES}:id/action_pin"}, notes_list(NOTES_AFTER, "9:43", 75, pinned=("Groceries",))),
    ],
    "evaluate": [1, 2, 3, 5],
    # The real Android file has two different rows for one (id, turn_idx); this reproduces that once:
    # the screen after turn 3 captured again a bit later (status-bar clock and battery differ).
    "recaptures": {3: note_editor("Groceries", "", "title", "Saved · 9:41", "9:42", 75)},
}

SETTINGS_HOME_ITEMS = [
    ("Network & internet", "Mobile, Wi‑Fi, hotspot"),
    ("Storage", "41% used - 75.34 GB free"),
    ("Display", "Dark theme, font size, brightness"),
]
ROW_H = 168


def pref_row(title, summary, top, switch=None):
    kids = [
        N("TextView", (168, top + 30, 860, top + 88), text=title, rid="android:id/title"),
        N("TextView", (168, top + 92, 860, top + 140), text=summary, rid="android:id/summary"),
    ]
    if switch is not None:
        kids.append(N("Switch", (880, top + 48, 1032, top + 120), rid="android:id/switch_widget", checkable=True, checked=switch))
    return N("LinearLayout", (0, top, 1080, top + ROW_H), children=kids, clickable=True)


def settings_home(clock, battery):
    rows = [pref_row(t, s.format(battery=battery), 420 + i * ROW_H) for i, (t, s) in enumerate(SETTINGS_HOME_ITEMS)]
    app = N("FrameLayout", (0, 96, 1080, 2400), rid="android:id/content", children=[
        N("TextView", (48, 280, 1032, 396), text="Search settings", rid=f"{SETTINGS}:id/search_action_bar", clickable=True),
        N("RecyclerView", (0, 420, 1080, 2400), rid=f"{SETTINGS}:id/recycler_view", children=rows, scrollable=True, focusable=True),
    ])
    return render_android(status_bar(clock, battery), app, package=SETTINGS)


DISPLAY_ROWS = {"brightness": 284, "timeout": 452, "dark": 620}


def display_screen(clock, battery, dark, timeout):
    items = [
        pref_row("Brightness level", "58%", DISPLAY_ROWS["brightness"]),
        pref_row("Screen timeout", f"After {timeout} of inactivity", DISPLAY_ROWS["timeout"]),
        pref_row("Dark theme", "Will never turn on automatically", DISPLAY_ROWS["dark"], switch=dark),
    ]
    app = N("FrameLayout", (0, 96, 1080, 2400), rid="android:id/content", children=[
        N("ImageButton", (16, 130, 120, 234), desc="Navigate up", clickable=True),
        N("TextView", (168, 142, 900, 222), text="Display", rid=f"{SETTINGS}:id/collapsing_toolbar_title"),
        N("RecyclerView", (0, 268, 1080, 2400), rid=f"{SETTINGS}:id/recycler_view", children=items, scrollable=True, focusable=True),
    ])
    return render_android(status_bar(clock, battery), app, package=SETTINGS)


TIMEOUT_CHOICES = ["30 seconds", "1 minute", "2 minutes", "5 minutes", "10 minutes"]
CHOICE_TOP, CHOICE_H = 820, 132


def timeout_dialog(clock, battery, current):
    choices = [
        N("CheckedTextView", (84, CHOICE_TOP + i * CHOICE_H, 996, CHOICE_TOP + (i + 1) * CHOICE_H), text=c, rid="android:id/text1",
          checkable=True, checked=c == current, clickable=True)
        for i, c in enumerate(TIMEOUT_CHOICES)
    ]
    bottom = CHOICE_TOP + len(TIMEOUT_CHOICES) * CHOICE_H
    dialog = N("FrameLayout", (84, 660, 996, bottom + 160), rid=f"{SETTINGS}:id/parentPanel", children=[
        N("TextView", (148, 712, 932, 792), text="Screen timeout", rid="android:id/alertTitle"),
        N("ListView", (84, CHOICE_TOP, 996, bottom), rid="android:id/select_dialog_listview", children=choices, scrollable=True, focusable=True),
        N("Button", (744, bottom + 24, 948, bottom + 136), text="Cancel", rid="android:id/button2", clickable=True),
    ])
    return render_android(status_bar(clock, battery), dialog, package=SETTINGS)


def center(top, h=ROW_H, x=540):
    return {"x": x, "y": top + h // 2}


ANDROID_SETTINGS = {
    "id": 15,
    "goal": "Turn on the dark theme and set the screen timeout to 5 minutes in the phone's Settings, then go back to the main Settings screen.",
    "turns": [
        ({"action": "open_app", "app_name": "Settings"}, settings_home("14:05", 76)),
        ({"action": "click", **center(420 + 2 * ROW_H)}, display_screen("14:05", 76, dark=False, timeout="30 seconds")),
        ({"action": "click", "x": 956, "y": DISPLAY_ROWS["dark"] + 84}, display_screen("14:05", 76, dark=True, timeout="30 seconds")),
        ({"action": "click", **center(DISPLAY_ROWS["timeout"])}, timeout_dialog("14:05", 76, "30 seconds")),
        ({"action": "click", **center(CHOICE_TOP + 3 * CHOICE_H, CHOICE_H)}, display_screen("14:06", 76, dark=True, timeout="5 minutes")),
        ({"action": "navigate_back"}, settings_home("14:06", 75)),
    ],
    "evaluate": [1, 2, 3],
}


# =========================================================================== Web


def tree(text: str) -> str:
    """Write trees indented with two spaces per level; observations use tabs."""
    out = []
    for line in block(text).split("\n"):
        stripped = line.lstrip(" ")
        out.append("\t" * ((len(line) - len(stripped)) // 2) + stripped)
    return "\n".join(out)


FORGE = "http://forge.internal:8023"
FORGE_ISSUES = [
    (57, "Search results page ignores the version selector", "opened 2 days ago by lmartins", ["bug"], "updated 5 hours ago"),
    (55, "Add a page on configuring SSO with Okta", "opened 1 week ago by priya.n", ["documentation", "enhancement"], "updated 3 days ago"),
    (52, "Code blocks overflow on mobile", "opened 2 weeks ago by tkowalski", ["bug", "css"], "updated 1 week ago"),
    (49, "Document the new rate limits for the REST API", "opened 3 weeks ago by lmartins", ["documentation"], "updated 2 weeks ago"),
]
ISSUE_TITLE = "Broken link to the install guide on the Quickstart page"
ISSUE_DESC = "The \"Install\" link in docs/quickstart.md points to /install.html, which returns 404. It should point to /getting-started/install/."


def forge_chrome(title: str, url: str, issues_count: int) -> str:
    return tree(
        f"""
        Tab 0 (current): {title}
        URL: {url}

        [1] RootWebArea '{title}' focused: True
          [12] banner ''
            [14] link 'Forge home'
            [16] searchbox 'Search or go to…'
            [19] link 'Merge requests 2'
            [21] button 'agent-bot user menu' hasPopup: menu expanded: False
          [30] navigation 'Project navigation'
            [32] link 'acme / docs-site'
            [33] link 'Repository'
            [34] link 'Issues {issues_count}'
            [35] link 'Merge requests 2'
            [36] link 'Wiki'
        """
    )


def forge_issue_list(issues, open_count) -> str:
    head = forge_chrome("Issues · acme / docs-site · Forge", f"{FORGE}/acme/docs-site/-/issues", open_count)
    rows = []
    for i, (num, title, opened, labels, updated) in enumerate(issues):
        base = 60 + i * 8
        rows.append(f"      [{base}] listitem ''")
        rows.append(f"        [{base + 1}] link '{title}'")
        rows.append(f"        [{base + 2}] StaticText '#{num} · {opened}'")
        for k, lab in enumerate(labels):
            rows.append(f"        [{base + 3 + k}] link '{lab}'")
        rows.append(f"        [{base + 6}] StaticText '{updated}'")
    body = tree(
        f"""
        x
          [40] main ''
            [42] heading 'Issues' level: 1
            [44] link 'Open {open_count}'
            [45] link 'Closed 61'
            [46] link 'All {open_count + 61}'
            [48] link 'New issue'
            [50] searchbox 'Search or filter results…'
            [52] combobox 'Sort by' hasPopup: listbox expanded: False value: 'Created date'
            [54] list ''
        """
    ).split("\n", 1)[1]
    return head + "\n" + body + "\n" + tree("x\n" + "\n".join(rows)).split("\n", 1)[1]


def forge_new_issue(title="", desc="", focus=None) -> str:
    head = forge_chrome("New issue · acme / docs-site · Forge", f"{FORGE}/acme/docs-site/-/issues/new", 14)
    t_focus = " focused: True" if focus == "title" else ""
    d_focus = " focused: True" if focus == "desc" else ""
    title_line = f"[350] textbox 'Title (required)'{t_focus} required: True"
    desc_line = f"[356] textbox 'Description'{d_focus} multiline: True"
    lines = [
        "x",
        "  [340] main ''",
        "    [342] heading 'New issue' level: 1",
        f"    {title_line}",
    ]
    if title:
        lines.append(f"      [351] StaticText '{title}'")
    lines += [
        "    [353] combobox 'Choose a template' hasPopup: listbox expanded: False value: 'No template'",
        "    [355] tablist ''",
        "      [357] tab 'Write' selected: True",
        "      [358] tab 'Preview' selected: False",
        f"    {desc_line}",
    ]
    if desc:
        lines.append(f"      [359] StaticText '{desc}'")
    lines += [
        "    [360] StaticText 'Supports Markdown. For quick actions, type /.'",
        "    [362] checkbox 'This issue is confidential and should only be visible to team members with at least Reporter access.' checked: false",
        "    [364] button 'Assignee Unassigned'",
        "    [366] button 'Milestone None'",
        "    [368] button 'Labels None'",
        "    [370] button 'Create issue'",
        "    [371] link 'Cancel'",
    ]
    return head + "\n" + tree("\n".join(lines)).split("\n", 1)[1]


def forge_issue_page() -> str:
    head = forge_chrome(f"{ISSUE_TITLE} (#58) · Issues · acme / docs-site · Forge", f"{FORGE}/acme/docs-site/-/issues/58", 15)
    body = tree(
        f"""
        x
          [420] main ''
            [422] StaticText 'Open'
            [423] StaticText 'Issue created'
            [424] time 'Mar 6, 2025 2:31pm GMT+0100'
            [425] StaticText 'just now by'
            [426] link 'agent-bot'
            [430] heading '{ISSUE_TITLE}' level: 1
            [432] StaticText '{ISSUE_DESC}'
            [436] button 'Close issue'
            [438] button 'Add a to do'
            [440] StaticText 'Reference: acme/docs-site#58'
            [442] button 'Assignee None - assign yourself'
            [444] button 'Labels None'
            [446] button 'Milestone None'
            [448] StaticText 'Activity'
            [450] textbox 'Write a comment or drag your files here…' multiline: True
            [452] button 'Comment'
        """
    ).split("\n", 1)[1]
    return head + "\n" + body


WEB_FORGE = {
    "id": 6,
    "goal": (
        f"In the Forge project acme/docs-site, open a new issue titled \"{ISSUE_TITLE}\" with the description "
        f"\"{ISSUE_DESC}\" and check that it shows up in the project's issue list."
    ),
    "turns": [
        ({"action": "goto", "url": f"{FORGE}/acme/docs-site/-/issues"}, forge_issue_list(FORGE_ISSUES, 14)),
        ({"action": "click", "element": "[48]"}, forge_new_issue(focus="title")),
        ({"action": "type", "element": "[350]", "text": ISSUE_TITLE, "press_enter": False}, forge_new_issue(ISSUE_TITLE, focus="title")),
        ({"action": "type", "element": "[356]", "text": ISSUE_DESC, "press_enter": False}, forge_new_issue(ISSUE_TITLE, ISSUE_DESC, focus="desc")),
        ({"action": "click", "element": "[370]"}, forge_issue_page()),
        (
            {"action": "click", "element": "[34]"},
            forge_issue_list([(58, ISSUE_TITLE, "opened just now by agent-bot", [], "updated just now")] + FORGE_ISSUES, 15),
        ),
    ],
    "evaluate": [1, 3, 4, 6],
}

SHOP = "http://shop.internal:7770"
QUERY = "AA rechargeable batteries"
PRODUCTS = [
    # name, price, rating (%), reviews
    ("Voltix AA NiMH Rechargeable Batteries 2800mAh, 8-Pack", "$21.49", 88, 1412),
    ("EnerCell AA Rechargeable Batteries 2500mAh, 4-Pack", "$12.99", 92, 212),
    ("PowerMax Pro AA Rechargeable Batteries with Charger", "$27.95", 84, 903),
    ("Brightlite AA Low Self-Discharge Batteries, 4 Count", "$11.49", 76, 58),
    ("EcoCell AA 2000mAh Pre-Charged Rechargeable, 12-Pack", "$24.99", 90, 347),
    ("Voltix AA NiMH Rechargeable Batteries 2800mAh, 4-Pack", "$13.79", 90, 655),
]


def shop_header(title: str, url: str, cart: int, search_value: str = "") -> str:
    value = f" value: '{search_value}'" if search_value else ""
    cart_text = f"My Cart {cart} item{'s' if cart != 1 else ''}" if cart else "My Cart"
    return tree(
        f"""
        Tab 0 (current): {title}
        URL: {url}

        [1] RootWebArea '{title}' focused: True
          [5] link 'My Account'
          [6] link 'My Wish List'
          [7] link 'Sign Out'
          [9] link 'store logo'
          [11] link '{cart_text}'
          [13] combobox 'Search' hasPopup: listbox required: False expanded: False{value}
          [14] button 'Search'
          [16] menubar ''
            [17] menuitem 'Electronics' hasPopup: menu
            [18] menuitem 'Home & Kitchen' hasPopup: menu
            [19] menuitem 'Health & Household' hasPopup: menu
            [20] menuitem 'Sports & Outdoors' hasPopup: menu
        """
    )


def shop_results(sort: str) -> str:
    items = PRODUCTS if sort == "Relevance" else sorted(PRODUCTS, key=lambda p: float(p[1][1:]))
    url = f"{SHOP}/catalogsearch/result/?q=AA+rechargeable+batteries" + ("" if sort == "Relevance" else "&product_list_order=price")
    head = shop_header(f"Search results for: '{QUERY}'", url, 0, QUERY)
    lines = [
        "x",
        "  [200] main ''",
        f"    [202] heading \"Search results for: '{QUERY}'\" level: 1",
        "    [204] StaticText 'Items 1-6 of 23'",
        f"    [206] combobox 'Sort By' hasPopup: listbox expanded: False value: '{sort}'",
        "    [207] link 'Set Descending Direction'",
        "    [210] list ''",
    ]
    for i, (name, price, rating, reviews) in enumerate(items):
        base = 212 + i * 6
        lines += [
            f"      [{base}] listitem ''",
            f"        [{base + 1}] link '{name}'",
            f"        [{base + 2}] StaticText 'Rating: {rating}%'",
            f"        [{base + 3}] link '{reviews} Reviews'",
            f"        [{base + 4}] StaticText '{price}'",
            f"        [{base + 5}] button 'Add to Cart'",
        ]
    lines.append("    [260] link 'Page Next'")
    return head + "\n" + tree("\n".join(lines)).split("\n", 1)[1]


ENERCELL = PRODUCTS[1][0]


def shop_product(cart: int, added: bool) -> str:
    head = shop_header(ENERCELL, f"{SHOP}/enercell-aa-rechargeable-batteries-2500mah-4-pack.html", cart)
    lines = ["x", "  [300] main ''"]
    if added:
        lines.append(f"    [302] alert 'You added {ENERCELL} to your shopping cart.' live: assertive atomic: True relevant: additions text")
    lines += [
        f"    [304] heading '{ENERCELL}' level: 1",
        "    [306] StaticText 'Rating: 92%'",
        "    [307] link '212 Reviews'",
        "    [308] link 'Add Your Review'",
        "    [310] StaticText '$12.99'",
        "    [311] StaticText 'In stock'",
        "    [312] StaticText 'Only 3 left'",
        "    [313] StaticText 'SKU: B07QXV6N1F'",
        "    [315] spinbutton 'Qty' required: False value: '1'",
        "    [316] button 'Add to Cart'",
        "    [318] button 'Add to Wish List'",
        "    [320] tablist ''",
        "      [321] tab 'Details' selected: True",
        "      [322] tab 'Reviews (212)' selected: False",
        "    [324] StaticText 'Pre-charged with solar energy, ready to use. Holds 80% of charge after 3 years of storage. Recharge up to 1200 times.'",
        "    [326] StaticText 'Deal ends in 05:42:17'",
    ]
    return head + "\n" + tree("\n".join(lines)).split("\n", 1)[1]


def shop_cart() -> str:
    head = shop_header("Shopping Cart", f"{SHOP}/checkout/cart/", 1)
    body = tree(
        f"""
        x
          [400] main ''
            [402] heading 'Shopping Cart' level: 1
            [404] table ''
              [405] row 'Item Price Qty Subtotal'
              [406] row ''
                [407] link '{ENERCELL}'
                [408] StaticText '$12.99'
                [409] spinbutton 'Qty' value: '1'
                [410] StaticText '$12.99'
                [411] link 'Edit item parameters'
                [412] link 'Remove item'
            [414] button 'Update Shopping Cart'
            [416] heading 'Summary' level: 2
            [418] StaticText 'Subtotal $12.99'
            [419] StaticText 'Tax $0.00'
            [420] StaticText 'Order Total $12.99'
            [422] StaticText 'Arrives Tue, Mar 11 if you order within 3 hrs 18 mins'
            [424] button 'Proceed to Checkout'
        """
    ).split("\n", 1)[1]
    return head + "\n" + body


WEB_SHOP = {
    "id": 21,
    "goal": "On the shop, search for AA rechargeable batteries, find the cheapest 4-pack rated at least 90%, add one to the cart and open the cart.",
    "turns": [
        (
            {"action": "goto", "url": SHOP},
            shop_header("One Stop Market", f"{SHOP}/", 0) + "\n" + tree(
                """
                x
                  [100] main ''
                    [102] heading 'One Stop Market' level: 1
                    [104] StaticText 'Product Showcases'
                    [106] link 'Pre-baked Gingerbread House Kit Value Pack, 17 oz'
                    [107] StaticText '$19.99'
                    [109] link 'V8 +Energy, Healthy Energy Drink, Pomegranate Blueberry, 8 Ounce Can, Pack of 24'
                    [110] StaticText '$14.47'
                    [112] link 'Elmwood Inn Fine Teas, Orange Vanilla Caffeine-free Fruit Infusion, 16-Ounce Pouch'
                    [113] StaticText '$19.36'
                """
            ).split("\n", 1)[1],
        ),
        ({"action": "type", "element": "[13]", "text": QUERY, "press_enter": True}, shop_results("Relevance")),
        ({"action": "select_option", "element": "[206]", "option": "Price"}, shop_results("Price")),
        ({"action": "click", "element": "[219]"}, shop_product(0, added=False)),
        ({"action": "click", "element": "[316]"}, shop_product(1, added=True)),
        ({"action": "click", "element": "[11]"}, shop_cart()),
    ],
    "evaluate": [1, 2, 5, 6],
}

# =========================================================================== OS


def E(tag: str, attrs: dict | None = None, children=(), text: str | None = None) -> dict:
    return {"tag": tag, "attrs": attrs or {}, "children": list(children), "text": text}


def render_xml(node: dict, depth: int = 0) -> list[str]:
    pad = "  " * depth
    attrs = "".join(f" {k}={quoteattr(str(v))}" for k, v in node["attrs"].items() if v is not None)
    if node["text"] is not None:  # text content is kept verbatim (newlines included), escaped
        return [f"{pad}<{node['tag']}{attrs}>{escape(node['text'])}</{node['tag']}>"]
    if not node["children"]:
        return [f"{pad}<{node['tag']}{attrs} />"]
    if all(not c["children"] and c["text"] is None and "coords" not in c["attrs"] for c in node["children"]):
        # rows of small leaves (table cells, menu titles) stay on their parent's line
        inner = "".join(render_xml(c)[0] for c in node["children"])
        return [f"{pad}<{node['tag']}{attrs}>{inner}</{node['tag']}>"]
    lines = [f"{pad}<{node['tag']}{attrs}>"]
    for child in node["children"]:
        lines += render_xml(child, depth + 1)
    lines.append(f"{pad}</{node['tag']}>")
    return lines


def box(x: int, y: int, w: int, h: int) -> dict:
    return {"coords": f"({x}, {y})", "size": f"({w}, {h})"}


def flag(value: bool) -> str | None:
    return "true" if value else None


def gnome_shell(clock: str) -> dict:
    dock = ["Files", "Firefox Web Browser", "Text Editor", "Terminal"]
    return E("application", {"name": "gnome-shell"}, [
        E("panel", {"name": "Top Bar", **box(0, 0, 1920, 32)}, [
            E("push-button", {"name": "Activities", **box(0, 0, 110, 32)}),
            E("label", {"name": clock, **box(880, 0, 160, 32)}),
            E("menu", {"name": "System", **box(1800, 0, 120, 32)}),
        ]),
        E("panel", {"name": "Dock", **box(0, 32, 78, 1048)}, [
            *[E("push-button", {"name": name, **box(7, 50 + i * 72, 64, 64)}) for i, name in enumerate(dock)],
        ]),
    ])


def desktop(clock: str, *apps: dict) -> str:
    root = E("desktop-frame", {"name": "main", **box(0, 0, 1920, 1080)}, [gnome_shell(clock), *apps])
    return "\n".join(render_xml(root))


def terminal_app(content: str, active: bool) -> dict:
    menus = [E("menu", {"name": m}) for m in ("File", "Edit", "View", "Search", "Terminal", "Help")]
    return E("application", {"name": "gnome-terminal-server"}, [
        E("frame", {"name": "user@ubuntu: ~", "active": flag(active), **box(320, 180, 1060, 680)}, [
            E("menu-bar", box(320, 217, 1060, 30), menus),
            E("terminal", {"name": "Terminal", "focused": flag(active), "editable": "true", **box(320, 247, 1045, 613)}, text=content),
            E("scroll-bar", {"orientation": "vertical", **box(1365, 247, 15, 613)}),
        ]),
    ])


def gedit_app(text: str, saved: bool, line: int, col: int) -> dict:
    star = "" if saved else "*"
    return E("application", {"name": "gedit"}, [
        E("frame", {"name": f"{star}meeting-notes.txt (~/Documents) - gedit", "active": "true", **box(460, 120, 1000, 760)}, [
            E("push-button", {"name": "Open", **box(470, 128, 86, 36)}),
            E("label", {"name": f"{star}meeting-notes.txt", **box(860, 126, 200, 20)}),
            E("label", {"name": "~/Documents", **box(900, 146, 120, 18)}),
            E("push-button", {"name": "Save", **box(1296, 128, 70, 36)}),
            E("toggle-button", {"name": "Application menu", **box(1374, 128, 36, 36)}),
            E("scroll-pane", box(460, 170, 1000, 672), [
                E("text", {"name": "", "focused": "true", "editable": "true", "multi-line": "true", **box(460, 170, 985, 672)}, text=text),
            ]),
            E("status-bar", box(460, 842, 1000, 38), [
                E("combo-box", {"name": "Plain Text", **box(1080, 846, 110, 30)}),
                E("combo-box", {"name": "Tab Width: 8", **box(1196, 846, 110, 30)}),
                E("combo-box", {"name": f"Ln {line}, Col {col}", **box(1312, 846, 100, 30)}),
                E("combo-box", {"name": "INS", **box(1416, 846, 40, 30)}),
            ]),
        ]),
    ])


PROMPT = "user@ubuntu:~$ "
GEDIT_CMD = "gedit ~/Documents/meeting-notes.txt"
NOTES_TEXT = "Agenda: budget review\nOwner: Dana"  # gedit adds the final newline on save: 34 bytes
LS_OUTPUT = (
    "total 32\n"
    "-rw-rw-r-- 1 user user 18944 Feb 27 10:14 budget-2025.ods\n"
    "-rw-rw-r-- 1 user user    34 Mar  6 14:36 meeting-notes.txt\n"
    "drwxrwxr-x 2 user user  4096 Jan 13 09:02 old-notes\n"
    "-rw-rw-r-- 1 user user   512 Dec 18 17:40 vacation-plan.md"
)

OS_GEDIT = {
    "id": 2,
    "goal": (
        "Create the file ~/Documents/meeting-notes.txt with gedit containing the two lines \"Agenda: budget review\" "
        "and \"Owner: Dana\", save it, close gedit and check the file in a terminal."
    ),
    "turns": [
        ({"action": "hotkey", "keys": ["ctrl", "alt", "t"]}, desktop("Mar 6  14:34", terminal_app(PROMPT, True))),
        (
            {"action": "type", "text": GEDIT_CMD + "\n"},
            desktop("Mar 6  14:34", terminal_app(PROMPT + GEDIT_CMD + "\n", False), gedit_app("", saved=True, line=1, col=1)),
        ),
        (
            {"action": "type", "text": NOTES_TEXT},
            desktop("Mar 6  14:35", terminal_app(PROMPT + GEDIT_CMD + "\n", False), gedit_app(NOTES_TEXT, saved=False, line=2, col=12)),
        ),
        (
            {"action": "hotkey", "keys": ["ctrl", "s"]},
            desktop("Mar 6  14:36", terminal_app(PROMPT + GEDIT_CMD + "\n", False), gedit_app(NOTES_TEXT, saved=True, line=2, col=12)),
        ),
        ({"action": "hotkey", "keys": ["ctrl", "q"]}, desktop("Mar 6  14:36", terminal_app(PROMPT + GEDIT_CMD + "\n" + PROMPT, True))),
        (
            {"action": "type", "text": "ls -l ~/Documents\n"},
            desktop("Mar 6  14:37", terminal_app(PROMPT + GEDIT_CMD + "\n" + PROMPT + "ls -l ~/Documents\n" + LS_OUTPUT + "\n" + PROMPT, True)),
        ),
    ],
    "evaluate": [1, 2, 3, 4, 6],
}

HOME_ROWS = [
    ("Desktop", "0 items", "Oct 3 2024"),
    ("Documents", "3 items", "Feb 27"),
    ("Downloads", "23 items", "Feb 28"),
    ("Music", "0 items", "Oct 3 2024"),
    ("Pictures", "4 items", "Feb 9"),
    ("snap", "3 items", "Jan 22"),
    ("Videos", "2 items", "Nov 11 2024"),
]
PICTURES_FILES = [("family-2023.jpg", "2.4 MB", "Dec 27 2023"), ("IMG_0420.jpg", "3.1 MB", "Feb 9")]
SCREENSHOTS = [
    ("Screenshot from 2024-05-14 10-22-31.png", "412.6 kB", "May 14 2024"),
    ("Screenshot from 2024-06-02 18-04-55.png", "1.2 MB", "Jun 2 2024"),
    ("Screenshot from 2024-09-30 09-41-07.png", "238.9 kB", "Sep 30 2024"),
    ("Screenshot from 2024-11-21 15-13-48.png", "877.0 kB", "Nov 21 2024"),
]
ROW_TOP, ROW_HEIGHT = 260, 40


def pictures_rows(folder_name: str = "Screenshots", folder_date: str = "Nov 21 2024") -> list[tuple[str, str, str]]:
    """Nautilus lists folders first, each group sorted case-insensitively."""
    folders = sorted([(folder_name, f"{len(SCREENSHOTS)} items", folder_date), ("Wallpapers", "6 items", "Aug 19 2024")], key=lambda r: r[0].lower())
    return folders + PICTURES_FILES


def nautilus(location: str, path_label: str, rows, selected: str | None = None, extra: dict | None = None) -> dict:
    places = ["Recent", "Starred", "Home", "Documents", "Downloads", "Pictures", "Trash"]
    current_place = {"Home": "Home", "Pictures": "Pictures"}.get(location, "Pictures")
    table = [
        E("table-column-header", {"name": "Name", **box(520, 220, 700, 40)}),
        E("table-column-header", {"name": "Size", **box(1220, 220, 200, 40)}),
        E("table-column-header", {"name": "Modified", **box(1420, 220, 240, 40)}),
    ]
    for i, (name, size, modified) in enumerate(rows):
        table.append(E("table-row", {"name": name, "selected": flag(name == selected), **box(520, ROW_TOP + i * ROW_HEIGHT, 1140, ROW_HEIGHT)}, [
            E("table-cell", {"name": name}), E("table-cell", {"name": size}), E("table-cell", {"name": modified}),
        ]))
    frame_children = [
        E("push-button", {"name": "Back", **box(310, 128, 36, 36)}),
        E("push-button", {"name": "Forward", **box(350, 128, 36, 36)}),
        E("label", {"name": path_label, **box(400, 130, 500, 32)}),
        E("toggle-button", {"name": "Search", **box(1480, 128, 36, 36)}),
        E("list", {"name": "Places", **box(300, 176, 220, 764)}, [E("list-item", {"name": p, "selected": flag(p == current_place)}) for p in places]),
        E("table", {"name": "Content", **box(520, 176, 1140, 764)}, table),
    ]
    if extra:
        frame_children.append(extra)
    return E("application", {"name": "nautilus"}, [E("frame", {"name": location, "active": "true", **box(300, 120, 1360, 820)}, frame_children)])


def row_center(index: int) -> dict:
    return {"x": 700, "y": ROW_TOP + index * ROW_HEIGHT + ROW_HEIGHT // 2}


CONTEXT_MENU_ITEMS = [
    "Open", "Open in New Tab", "Open in New Window", "Open With Other Application", "Cut", "Copy", "Move to…",
    "Copy to…", "Move to Trash", "Rename…", "Compress…", "Star", "Properties",
]
CONTEXT_MENU = E("menu", {"name": "Context Menu", **box(700, 280, 260, 13 * 34)}, [
    E("menu-item", {"name": item, **box(700, 280 + i * 34, 260, 34)}) for i, item in enumerate(CONTEXT_MENU_ITEMS)
])
RENAME_POPOVER = E("popover", {"name": "Rename Folder", **box(560, 300, 420, 150)}, [
    E("label", {"name": "Folder name", **box(580, 316, 200, 24)}),
    E("text", {"name": "", "focused": "true", "editable": "true", "selected-text": "Screenshots", **box(580, 350, 290, 40)}, text="Screenshots"),
    E("push-button", {"name": "Rename", **box(880, 350, 80, 40)}),
])

OS_FILES = {
    "id": 11,
    "goal": "In the Files app, rename the folder ~/Pictures/Screenshots to \"screens-2024\" and open it to check its contents.",
    "turns": [
        ({"action": "click", "x": 39, "y": 82}, desktop("Mar 6  16:02", nautilus("Home", "Home", HOME_ROWS))),
        ({"action": "double_click", **row_center(4)}, desktop("Mar 6  16:02", nautilus("Pictures", "Home / Pictures", pictures_rows()))),
        (
            {"action": "right_click", **row_center(0)},
            desktop("Mar 6  16:02", nautilus("Pictures", "Home / Pictures", pictures_rows(), selected="Screenshots", extra=CONTEXT_MENU)),
        ),
        (
            {"action": "click", "x": 800, "y": 280 + 9 * 34 + 17},
            desktop("Mar 6  16:03", nautilus("Pictures", "Home / Pictures", pictures_rows(), selected="Screenshots", extra=RENAME_POPOVER)),
        ),
        (
            {"action": "type", "text": "screens-2024\n"},
            desktop("Mar 6  16:03", nautilus("Pictures", "Home / Pictures", pictures_rows("screens-2024"), selected="screens-2024")),
        ),
        (
            {"action": "double_click", **row_center(0)},
            desktop("Mar 6  16:03", nautilus("screens-2024", "Home / Pictures / screens-2024", SCREENSHOTS)),
        ),
    ],
    "evaluate": [1, 2, 4],
}

# =========================================================================== records

TRAJECTORIES = {
    "mcp": [MCP_GITHUB, MCP_CALENDAR],
    "search": [SEARCH_ORESUND, SEARCH_PEP],
    "android": [ANDROID_NOTES, ANDROID_SETTINGS],
    "web": [WEB_FORGE, WEB_SHOP],
    "os": [OS_GEDIT, OS_FILES],
}


def format_prompt(turn: int, action: str) -> str:
    return f"### Turn {turn}\n**Action:**\n{action}"


def format_response(observation: str) -> str:
    return f"{OBSERVATION_MARKER}\n{observation}"


def build_records(domain: str, traj: dict) -> list[dict]:
    turns = traj["turns"]
    prompts = [format_prompt(i, act(action)) for i, (action, _) in enumerate(turns, 1)]
    responses = [format_response(obs) for _, obs in turns]
    system = SYSTEM_PROMPTS[domain].format(goal=traj["goal"], context=traj.get("context", ""))
    records = []

    def record(t: int, last_response: str) -> dict:
        return {
            "task": f"{TASK_PREFIX}/{domain}",
            "id": traj["id"],
            "prompt": prompts[:t],
            "response": responses[: t - 1] + [last_response],
            "current_prompt": prompts[t - 1],
            "system_str": system,
            "turn_idx": t,
            "total_turns": len(turns),
        }

    for t in traj["evaluate"]:
        records.append(record(t, responses[t - 1]))
        if t in traj.get("recaptures", {}):
            records.append(record(t, format_response(traj["recaptures"][t])))
    return records


def write_jsonl(path: Path, records: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="output folder (default: this script's folder)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for domain, trajectories in TRAJECTORIES.items():
        records = [rec for traj in trajectories for rec in build_records(domain, traj)]
        write_jsonl(args.out / f"{domain}_test.jsonl", records)
        print(f"wrote {len(records)} records to {args.out / f'{domain}_test.jsonl'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
