"""Runs on disk -> a leaderboard: one row per run, grouped so that only comparable runs are ranked together.

Two runs are comparable when the same judge (kind, model, prompt set and its hash), the same data
(fingerprint) and the same failure policy produced their scores; anything else is a different group,
and the leaderboard says which of those differ. Published rows are a group of their own unless mixed in.
The runs themselves are read by `awbench.analysis.runs`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from itertools import pairwise
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from awbench.analysis.options import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL, View
from awbench.analysis.planning import neighbour_detectable
from awbench.analysis.runs import RunData, load_run_data, run_intervals
from awbench.analysis.stats import TOO_FEW
from awbench.analysis.turing import TURING_TITLE, RunTuring, fmt_rate, run_turing_tests
from awbench.config import DEFAULT_JUDGE_MODEL, JudgeSettings
from awbench.domains import DIMENSIONS, DOMAIN_LABELS, DOMAINS, PUBLISHED_TOTAL, macro_overall
from awbench.records import SCHEMA_VERSION
from awbench.resources import bundled
from awbench.run.reference_scores import PrintedNumber
from awbench.run.scoring import ScoresFile, ScoreTable, resume_advice
from awbench.run.store import JudgeInfo, RunManifest, RunStore, StoreError, match_judge
from awbench.run.variance import VarianceComponents
from awbench.safe_text import shown

PUBLISHED_CSV = "data/reference/published_leaderboard.csv"
# Published numbers have two decimals: a mean of them is off the published mean by at most half a hundredth.
ROUNDING = 0.005 + 1e-9
NEIGHBOURS_NOTE = (
    "a row marked `within d of #k` trails the row ranked above it by less than d, the smallest Overall difference a "
    "paired comparison of the two detects at 80% power and 5% two-sided (from their variance components, with "
    "their samples' correlation taken as 0.5; a published row ranked with runs of the published protocol borrows "
    "those of the first): "
    "`awbench compare` them, and `awbench plan` says what K and J would tell them apart"
)
REFERENCE_ARITHMETIC = "scored as eval.py prints"
DIMENSION_LABELS = {d: d.capitalize() for d in DIMENSIONS}


# --------------------------------------------------------------------------- comparability


@dataclass(frozen=True)
class Provenance:
    """What must be equal for two evaluations' scores to be ranked together. Full hashes compare; short ones
    show. `published_protocol`: the judge stage of the release, byte for byte (the reference protocol, its
    judge model and sampling) on the full benchmark: such runs are ranked with the published rows, by the
    numbers the reference script prints for them. `policy` is REFERENCE_ARITHMETIC for every evaluation
    ranked by those numbers (the reference protocol's and imported ones)."""

    judge: str  # the LLM judge's model, or "rules"
    prompt_set: str
    prompt_hash: str  # the prompt set's sha256, or the rule judge's version
    data: str  # the data fingerprint
    policy: str
    published_protocol: bool = False

    @property
    def prompts(self) -> str:
        """`name@hash`; an imported evaluation's prompts are not known (no hash): its name alone."""
        return f"{self.prompt_set}@{self.prompt_hash[:6]}" if self.prompt_hash else self.prompt_set

    @property
    def header(self) -> str:
        if self.published_protocol:
            return f"published protocol · judge {self.judge} · prompts {self.prompts} · full benchmark · {self.policy}"
        scoring = self.policy if self.policy == REFERENCE_ARITHMETIC else f"failures {self.policy}"
        return f"judge {self.judge} · prompts {self.prompts} · data {self.data[:6]} · {scoring}"


_PROVENANCE_FIELDS = {
    "judge": ("judge",),
    "prompt set": ("prompt_set", "prompt_hash"),
    "data": ("data",),
    "failure policy": ("policy",),
}


def provenance(manifest: RunManifest, info: JudgeInfo, policy: str, reference: bool = False) -> Provenance:
    """`reference`: the evaluation's scores have the reference's reading, and are ranked by it."""
    described = info.described
    if info.kind == "llm":
        judge, name, sha = (
            info.settings.model,
            str(described.get("prompt_set", "?")),
            str(described.get("prompt_sha256", "?")),
        )
    else:
        judge, name, sha = "rules", "rules", str(described.get("rules_version", "?"))
    official = (
        info.kind == "llm"
        and described.get("protocol") == "reference"
        and published_judge(info.settings)
        and full_benchmark(manifest)
        and reference
    )
    policy = REFERENCE_ARITHMETIC if reference else policy
    return Provenance(
        judge=judge,
        prompt_set=name,
        prompt_hash=sha,
        data=manifest.data_fingerprint,
        policy=policy,
        published_protocol=official,
    )


def published_judge(settings: JudgeSettings) -> bool:
    """The release's judge: gpt-5.2-2025-12-11 at temperature 0.6, one free-form verdict per prediction."""
    return (
        settings.model == DEFAULT_JUDGE_MODEL
        and settings.temperature == 0.6
        and settings.samples == 1
        and not settings.structured
        and not settings.extra_body
    )


def full_benchmark(manifest: RunManifest) -> bool:
    data = manifest.config.data
    unselected = data.domains is None and data.limit is None and data.ids is None and data.sample is None
    return unselected and manifest.samples == PUBLISHED_TOTAL[0] and manifest.config.model.generations == 1


# --------------------------------------------------------------------------- the leaderboard model


class Cell(BaseModel):
    value: PrintedNumber | None  # a reference dimension may be -inf, as eval.py prints it
    lo: float | None = None
    hi: float | None = None
    too_few: bool = False  # intervals asked for, but too few trajectories to give one (`stats.too_few`)


class Row(BaseModel):
    run: str
    model: str
    judge_id: str | None = None  # which evaluation of the run (None for published rows)
    published: bool = False
    rank: int | None = None
    cells: dict[str, Cell]  # column id -> value
    scored: int | None = None
    failed: int | None = None
    unscored: int | None = None  # generations the judge could not score (those not judged yet: `incomplete`)
    n: int | None = None
    judge: str
    prompts: str
    data: str
    cost_usd: float | None = None
    source: str | None = None
    generations: int = 1  # K generations per sample (`--generations K`); a sample scores their mean
    incomplete: str | None = None  # "incomplete (11 of 65 judged)": some generation has no verdict yet; never ranked
    partial: str | None = None  # "partial (4 of 7 domains)": no Overall, only the domains that have scores
    # The smallest Overall difference from the row ranked above that a paired comparison of the two detects (80%
    # power, 5% two-sided; `planning.neighbour_detectable`); None without both rows' variance components.
    detectable: float | None = None
    undetectable: str | None = None  # "within 1.57 of #1": it trails the row above by less than that
    published_overall: str | None = None  # a published row whose Overall is not the mean of its domains: says so

    def marks(self) -> list[str]:
        """Why the row is not ranked, or has no Overall; a lead over it too small to detect; a published Overall
        that its domains do not average to."""
        return [m for m in (self.incomplete, self.partial, self.undetectable, self.published_overall) if m]


def judged_several_times(group: Group) -> set[str]:
    """The runs with several rows in a group (evaluations by judges whose settings the header does not tell
    apart): their rows name the judge id."""
    runs = [row.run for row in group.rows if not row.published]
    return {run for run in runs if runs.count(run) > 1}


def shows_generations(board: Leaderboard) -> bool:
    """A K column only when some run has more than one generation per sample."""
    return any(row.generations > 1 for group in board.groups for row in group.rows)


class Group(BaseModel):
    header: str
    published: bool = False
    rules: bool = False  # rule scores (the offline rule judge), never shown on one scale with LLM-judge scores
    rows: list[Row]


class Leaderboard(BaseModel):
    schema_version: int = SCHEMA_VERSION
    view: View
    scope: str  # "overall" or a domain id (the dimension view's scope)
    columns: list[str]  # column ids, in display order; the last is "overall"
    labels: dict[str, str]
    ci: bool = False
    groups: list[Group]
    notes: list[str] = []
    turing: list[RunTuring] = []  # the runs' Turing tests (`awbench turing`): judge accuracy and fool rate


class PublishedRow(BaseModel):
    model: str
    domains: dict[str, float]
    overall: float
    judge: str
    source: str

    @property
    def recomputed(self) -> float:
        """The Overall its seven published domain scores give (their mean)."""
        overall = macro_overall(self.domains)
        assert overall is not None  # the file has every domain (`load_published`)
        return overall

    def mismatch(self) -> str | None:
        """ "published Overall 58.71; its domains average 58.76" when the published Overall is not what its domains
        round to (two decimals: a difference above half a hundredth)."""
        if abs(self.recomputed - self.overall) <= ROUNDING:
            return None
        return f"published Overall {self.overall:.2f}; its domains average {self.recomputed:.2f}"


def load_published(path: Path | None = None) -> list[PublishedRow]:
    path = path or bundled(PUBLISHED_CSV)
    with open(path, newline="", encoding="utf-8") as handle:
        return [
            PublishedRow(
                model=row["model"],
                domains={d: float(row[DOMAIN_LABELS[d]]) for d in DOMAINS},
                overall=float(row["Overall"]),
                judge=row["judge"],
                source=row["source"],
            )
            for row in csv.DictReader(handle)
        ]


def _columns(view: View, scope: str) -> tuple[list[str], dict[str, str]]:
    if view == "domain":
        return [*DOMAINS, OVERALL], {**DOMAIN_LABELS, OVERALL: "Overall"}
    total = "Overall" if scope == OVERALL else f"{DOMAIN_LABELS[scope]} total"
    return [*DIMENSIONS, OVERALL], {**DIMENSION_LABELS, OVERALL: total}


def _cells(table: ScoreTable, view: View, scope: str) -> dict[str, Cell]:
    overall = None if table.partial() else table.overall
    if view == "domain":
        cells = {d: Cell(value=table.domains[d].score if d in table.domains else None) for d in DOMAINS}
        return {**cells, OVERALL: Cell(value=overall)}
    if scope != OVERALL:
        ds = table.domains.get(scope)
        dims = ds.dimensions if ds else {}
        return {**{d: Cell(value=dims.get(d)) for d in DIMENSIONS}, OVERALL: Cell(value=ds.score if ds else None)}
    # Overall per dimension: the macro mean over domains, like the headline Overall.
    cells = {}
    for d in DIMENSIONS:
        values = [ds.dimensions[d] for ds in table.domains.values() if d in ds.dimensions]
        cells[d] = Cell(value=float(np.mean(values)) if values else None)
    return {**cells, OVERALL: Cell(value=overall)}


def _with_intervals(
    cells: dict[str, Cell], ci: dict[str, dict[str, tuple[float, float]]], view: View, scope: str
) -> None:
    for col, cell in cells.items():
        if view == "domain":
            source, metric = (col, "score")
        else:
            source, metric = (scope, "score" if col == OVERALL else col)
        if source in ci:
            cell.lo, cell.hi = ci[source][metric]
        elif cell.value is not None:
            cell.too_few = True


def rankable(row: Row) -> bool:
    """Only a complete evaluation with a total (the Overall, or the chosen domain's) is ranked."""
    return row.incomplete is None and row.cells[OVERALL].value is not None


def _rank(rows: list[Row]) -> list[Row]:
    """Ranked rows by their total, then the others, unranked and marked: partial, then incomplete."""

    def sort_key(row: Row) -> tuple[bool, bool, float, str]:
        value = row.cells[OVERALL].value
        return (not rankable(row), row.incomplete is not None, -(value or 0.0), row.run)

    ordered = sorted(rows, key=sort_key)
    for i, row in enumerate(ordered, start=1):
        row.rank = i if rankable(row) else None
    return ordered


def _mark_neighbours(group: Group, variances: Mapping[int, VarianceComponents | None]) -> bool:
    """Marks each ranked row that trails the one above it by less than the pair's detectable difference; whether
    any was marked. In the published protocol's group, a published row (without components of its own) borrows the
    group's first run's: the release judged as the runs of that group are (one generation, one verdict, the full
    benchmark)."""
    own = [v for row in group.rows if (v := variances.get(id(row))) is not None]
    borrowed = own[0] if own and group.published else None
    ranked = [row for row in group.rows if row.rank is not None]
    marked = False
    for above, row in pairwise(ranked):
        a, b = (variances.get(id(r)) or borrowed for r in (above, row))
        if a is None or b is None:
            continue
        row.detectable = neighbour_detectable(a, b)
        lead = (above.cells[OVERALL].value or 0.0) - (row.cells[OVERALL].value or 0.0)
        if row.detectable is not None and lead < row.detectable:
            row.undetectable = f"within {row.detectable:.2f} of #{above.rank}"
            marked = True
    return marked


def _differences(keys: list[Provenance]) -> str:
    return ", ".join(
        label
        for label, names in _PROVENANCE_FIELDS.items()
        if len({tuple(getattr(k, n) for n in names) for k in keys}) > 1
    )


def build_leaderboard(
    stores: list[RunStore],
    *,
    view: View = "domain",
    scope: str = OVERALL,
    judge: str | None = None,
    ci: bool = False,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    reference: bool = False,
    mix_reference: bool = False,
    notes: list[str] | None = None,
    loaded: dict[Path, RunData] | None = None,
) -> Leaderboard:
    """One row per (run, judge evaluation); `judge` (an id, id prefix or kind) keeps one evaluation per run.
    Each run's files are read once: with `ci`, whole (into `loaded`, which a caller may share between boards and
    which is used when it holds the run); without, only run.json and each evaluation's judge.json and scores.json."""
    columns, labels = _columns(view, scope)
    notes = list(notes or [])
    shared = loaded is not None
    loaded = {} if loaded is None else loaded
    by_group: dict[Provenance, list[Row]] = {}
    variances: dict[int, VarianceComponents | None] = {}  # id(row) -> its evaluation's variance components
    for store in stores:
        path = store.path.resolve()
        data = loaded.get(path)
        if ci and data is None:
            data = load_run_data(store)
            if shared:
                loaded[path] = data  # else it is let go with the next run: ten full runs need not fit at once
        manifest = data.manifest if data else store.read_manifest()
        judged = (
            {i: (e.info, e.scores) for i, e in data.evaluations.items()} if data else _read_evaluations(store, manifest)
        )
        for info, scores in _scored(store.name, judged, judge, notes):
            key = provenance(manifest, info, scores.failure_policy, scores.reference is not None)
            scores = scores.ranked()
            table = scores.table()
            if view == "dimension" and table.judge == "rules":
                notes.append(f"left out {store.name} ({info.id}): the rule judge has no rubric dimensions")
                continue
            cells = _cells(table, view, scope)
            if ci and key.policy == REFERENCE_ARITHMETIC:
                notes.append(
                    f"no intervals for {store.name} ({info.id}): its numbers follow eval.py's arithmetic, "
                    "which the trajectory bootstrap does not"
                )
            elif ci:
                assert data is not None
                _with_intervals(cells, run_intervals(data, info.id, resamples, seed), view, scope)
                notes += _stale(data, info.id, table)
            completeness = scores.completeness
            if not completeness.complete:
                notes.append(
                    f"{store.name} ({info.id}) is not ranked: {completeness.label()}; {resume_advice(store.path)}"
                )
            by_group.setdefault(key, []).append(
                Row(
                    run=store.name,
                    model=manifest.config.model.model,
                    judge_id=info.id,
                    cells=cells,
                    scored=sum(d.scored for d in table.domains.values()),
                    failed=table.failed,
                    unscored=table.unscored - table.pending,
                    n=table.n,
                    judge=key.judge,
                    prompts=key.prompts,
                    data=key.data[:6],
                    cost_usd=scores.cost_usd,
                    generations=scores.generations,
                    incomplete=None if completeness.complete else completeness.label(),
                    partial=table.partial() if view == "domain" or scope == OVERALL else None,
                )
            )
            variances[id(by_group[key][-1])] = scores.variance

    groups = [Group(header=key.header, rows=_rank(rows), rules=key.judge == "rules") for key, rows in by_group.items()]
    official = next((g for g, key in zip(groups, by_group) if key.published_protocol), None)
    groups.sort(key=lambda g: (g is not official, -len(g.rows), g.header))
    if len(groups) > 1:
        notes.insert(0, f"{len(groups)} groups are ranked separately: they differ in {_differences(list(by_group))}")

    if reference:
        published = _published_rows(view, judge, notes)
        if published and official is not None:
            official.rows = _rank(official.rows + published)
            official.published = True
        elif published and mix_reference and any(not g.rules for g in groups):
            notes.append(
                "published rows are ranked with computed rows (--mix-reference): their judge runs, "
                "prompts and data version are not checked to match"
            )
            if any(g.rules for g in groups):
                notes.append("published rows are not ranked with rule scores: they are LLM-judge scores")
            for group in groups:
                if not group.rules:
                    group.rows = _rank(group.rows + [r.model_copy(deep=True) for r in published])
        elif published:
            header = f"published · judge {published[0].judge} · Qwen-AgentWorld release · not ranked with computed runs"
            groups.append(Group(header=header, published=True, rows=published))
    if scope == OVERALL and any([_mark_neighbours(group, variances) for group in groups]):  # every group marked
        notes.append(NEIGHBOURS_NOTE)
    unseen = [
        f"{row.run} ({' and '.join(v.unseen)})"
        for g in groups
        for row in g.rows
        if (v := variances.get(id(row))) and v.unseen
    ]
    if ci and unseen:
        notes.append(
            f"the intervals of {', '.join(unseen)} hold the noise named without measuring it apart (one verdict or "
            "one generation per sample): `awbench score RUN` says what each run measures"
        )
    turing = [test for store in stores for test in run_turing_tests(store)]
    return Leaderboard(
        view=view, scope=scope, columns=columns, labels=labels, ci=ci, groups=groups, notes=notes, turing=turing
    )


def _read_evaluations(store: RunStore, manifest: RunManifest) -> dict[str, tuple[JudgeInfo, ScoresFile | None]]:
    """Each evaluation's judge.json and scores.json, the primary first."""
    out = {}
    for evaluation in store.evaluations(manifest):
        out[evaluation.id] = (evaluation.read_info(), evaluation.read_scores())
    return out


def _scored(
    run: str, evaluations: dict[str, tuple[JudgeInfo, ScoresFile | None]], judge: str | None, notes: list[str]
) -> list[tuple[JudgeInfo, ScoresFile]]:
    """The run's scored evaluations: all of them, or the one `judge` names."""
    if judge is not None:
        try:
            chosen = match_judge(run, {i: info.kind for i, (info, _) in evaluations.items()}, judge)
        except StoreError:
            notes.append(f"left out {run}: it has no {judge} scores")
            return []
        evaluations = {chosen: evaluations[chosen]}
    found = []
    for judge_id, (info, scores) in evaluations.items():
        if scores is None:
            notes.append(f"left out {run} ({judge_id}): no scores yet; {resume_advice(run)}")
            continue
        found.append((info, scores))
    return found


def _published_rows(view: View, judge: str | None, notes: list[str]) -> list[Row]:
    if view == "dimension":
        notes.append("published rows left out: the release gives no per-dimension scores")
        return []
    if judge == "rules":
        notes.append("published rows left out: they are LLM-judge scores")
        return []
    rows = []
    for p in load_published():
        cells = {d: Cell(value=p.domains[d]) for d in DOMAINS} | {OVERALL: Cell(value=p.overall)}
        rows.append(
            Row(
                run=p.model,
                model=p.model,
                published=True,
                cells=cells,
                judge=p.judge,
                prompts="published",
                data="AgentWorldBench",
                source=p.source,
                published_overall=p.mismatch(),
            )
        )
    # Published order is by Overall too, so a reader can scan it like the computed groups.
    return sorted(rows, key=lambda r: -(r.cells[OVERALL].value or 0.0))


def _stale(data: RunData, judge_id: str, table: ScoreTable) -> list[str]:
    """scores.json older than the judgments it summarises would make the intervals bracket other numbers."""
    points = data.points(judge_id)
    for domain, ds in table.domains.items():
        values = [score for _, score, _ in points.get(domain, [])]
        recomputed = float(np.mean(values)) if values else None
        if recomputed is None or ds.score is None:
            stale = recomputed != ds.score
        else:
            stale = abs(recomputed - ds.score) > 1e-6
        if stale:
            return [
                f"{data.name}: scores.json does not match its judgments ({domain}); re-score the run "
                "before trusting its intervals"
            ]
    return []


# --------------------------------------------------------------------------- formats


def fmt_number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def interval(cell: Cell) -> tuple[float, float] | None:
    """The cell's 95% interval, when it has one. Bootstrap intervals are not symmetric: both ends are shown."""
    if cell.value is None or cell.lo is None or cell.hi is None or np.isnan(cell.lo) or np.isnan(cell.hi):
        return None
    return cell.lo, cell.hi


def fmt_interval(cell: Cell, digits: int = 2) -> str:
    """`[45.00, 53.00]`; `(too few to tell)` where too few trajectories give no interval."""
    bounds = interval(cell)
    if bounds is None:
        return f"({TOO_FEW})" if cell.too_few else ""
    return f"[{bounds[0]:.{digits}f}, {bounds[1]:.{digits}f}]"


def fmt_cell(cell: Cell) -> str:
    """`50.00`, or with an interval `50.00 [45.00, 53.00]` (or `50.00 (too few to tell)`)."""
    return f"{fmt_number(cell.value)} {fmt_interval(cell)}".rstrip()


INTERVALS_NOTE = (
    f'Intervals: [lo, hi], 95% bootstrap over whole trajectories; "{TOO_FEW}" (in a terminal, '
    '"too few"): fewer than five trajectories (Overall: in any of its domains), no interval'
)


def fmt_cost(cost: float | None) -> str:
    return "" if cost is None else f"${cost:.2f}"


# A CSV cell: text (quoted), a number (not quoted, so that spreadsheets and pandas read it as one), or nothing
# (an empty field).
CsvCell = str | Decimal | int | None


def _csv_number(value: float | None, places: int = 2) -> Decimal | None:
    """A missing value is an empty field, so that pandas and spreadsheets read the column as numbers."""
    return None if value is None or np.isnan(value) else Decimal(f"{value:.{places}f}")


# What a spreadsheet reads as the start of a formula (OWASP, CSV injection): `=`, `+`, `-`, `@`, tab, CR.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_text(text: str) -> str:
    """A text cell that a spreadsheet shows as text: one starting as a formula would begin gets a leading `'`
    (OWASP's rule), and so does each part after a `;`, where a spreadsheet that splits on `;` (Excel's separator
    in many locales) would start a cell of its own; no bidirectional control (`safe_text.shown`). Every text cell
    is quoted besides (`to_csv`). Number cells (`_csv_number`, a negative one included) are left as numbers."""
    return ";".join("'" + part if part.startswith(_FORMULA_STARTS) else part for part in shown(text).split(";"))


def _flat_rows(board: Leaderboard) -> list[dict[str, CsvCell]]:
    out = []
    for group in board.groups:
        for row in group.rows:
            record: dict[str, CsvCell] = {
                "group": _csv_text(group.header),
                "rank": row.rank,
                "run": _csv_text(row.run),
                "model": _csv_text(row.model),
                "published": "yes" if row.published else "no",
            }
            record |= {board.labels[c]: _csv_number(row.cells[c].value) for c in board.columns}
            if board.ci:
                for c in board.columns:
                    record[f"{board.labels[c]} lo"] = _csv_number(row.cells[c].lo)
                    record[f"{board.labels[c]} hi"] = _csv_number(row.cells[c].hi)
            record |= {
                "scored": row.scored,
                "failed": row.failed,
                "unscored": row.unscored,
                **({"generations": row.generations} if shows_generations(board) else {}),
                "judge": _csv_text(row.judge),
                "prompts": _csv_text(row.prompts),
                "data": _csv_text(row.data),
                "cost_usd": _csv_number(row.cost_usd, 4),
                "source": _csv_text(row.source or ""),
                "status": "; ".join(row.marks()),
            }
            record |= _turing_fields(board, row.run)
            out.append(record)
    return out


def _turing_fields(board: Leaderboard, run: str) -> dict[str, CsvCell]:
    """The run's Turing tests, columns per judge (`Turing JUDGE accuracy`, its `lo` and `hi`, the same for
    `fool rate`), empty for a run the judge did not test: one row per run, as the rest of the CSV."""
    tests = {(test.run, test.judge): test for test in board.turing}
    fields: dict[str, CsvCell] = {}
    for judge in sorted({test.judge for test in board.turing}):
        test = tests.get((run, judge))
        for name in ("accuracy", "fool rate"):
            rate = None if test is None else getattr(test, name.replace(" ", "_"))
            column = f"Turing {_csv_text(judge)} {name}"  # a header cell: text as any other
            fields[column] = None if rate is None else _csv_number(rate.value)
            fields[f"{column} lo"] = None if rate is None else _csv_number(rate.low)
            fields[f"{column} hi"] = None if rate is None else _csv_number(rate.high)
    return fields


def to_csv(board: Leaderboard) -> str:
    rows = _flat_rows(board)
    if not rows:
        return ""
    buffer = io.StringIO()
    # RFC 4180's CRLF: the csv module quotes a cell holding a line break of the terminator only (a lone CR in a
    # model name, unquoted after "\n", would split its row when read). Every cell but a number is quoted: a `;`
    # in a name is then inside quotes for a spreadsheet that splits on `;`.
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\r\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def to_json(board: Leaderboard) -> str:
    return json.dumps(board.model_dump(mode="json"), indent=2, allow_nan=False, default=str) + "\n"


# In a markdown table cell: a backslash or `|` would end the cell early, HTML would be rendered as HTML, and links,
# images (a tracking beacon when rendered), emphasis and code would be rendered as such: each is backslash-escaped.
_MARKDOWN_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"} | {c: "\\" + c for c in "\\|[]()!*_`~"})


def _md_escape(text: str) -> str:
    """Text as one markdown table cell shows it: `|`, backslashes, HTML, link, image, emphasis and code syntax
    escaped, no bidirectional control (`safe_text.shown`), each line break (which would end the row) as `<br>`."""
    return "<br>".join(shown(text).translate(_MARKDOWN_ESCAPES).splitlines())


def to_markdown(board: Leaderboard) -> str:
    k = shows_generations(board)
    heads = [
        "#",
        "Run",
        "Model",
        *(board.labels[c] for c in board.columns),
        "Scored",
        "Failed",
        "Unscored",
        *(["K"] if k else []),
        "Judge",
        "Prompts",
        "Data",
        "Cost",
    ]
    align = [
        "--:",
        ":--",
        ":--",
        *(["--:"] * len(board.columns)),
        "--:",
        "--:",
        "--:",
        *(["--:"] if k else []),
        ":--",
        ":--",
        ":--",
        "--:",
    ]
    parts: list[str] = []
    for group in board.groups:
        several = judged_several_times(group)
        parts.append(f"**{'rule scores · ' if group.rules else ''}{_md_escape(group.header)}**\n")
        parts.append("| " + " | ".join(heads) + " |")
        parts.append("| " + " | ".join(align) + " |")
        for row in group.rows:
            run = _md_escape(row.run) + (" *(published)*" if row.published else "")
            run += f" ({_md_escape(row.judge_id or '')})" if row.run in several else ""
            run += "".join(f" *({_md_escape(mark)})*" for mark in row.marks())
            cells = [
                "" if row.rank is None else str(row.rank),
                run,
                _md_escape(row.model),
                *(fmt_cell(row.cells[c]) for c in board.columns),
                "" if row.scored is None else str(row.scored),
                "" if row.failed is None else str(row.failed),
                "" if row.unscored is None else str(row.unscored),
                *([str(row.generations)] if k else []),
                _md_escape(row.judge),
                _md_escape(row.prompts),
                _md_escape(row.data),
                fmt_cost(row.cost_usd),
            ]
            parts.append("| " + " | ".join(cells) + " |")
        parts.append("")
    if board.turing:
        parts.append(f"**{TURING_TITLE}**\n")
        parts.append("| Run | Judge | Accuracy [95% CI] | Fool rate [95% CI] |")
        parts.append("| :-- | :-- | --: | --: |")
        for test in board.turing:
            cells = [_md_escape(test.run), _md_escape(test.judge), fmt_rate(test.accuracy), fmt_rate(test.fool_rate)]
            parts.append("| " + " | ".join(cells) + " |")
        parts.append("")
    if board.ci:
        parts.append(f"{INTERVALS_NOTE}.\n")
    parts += [f"- {_md_escape(note)}" for note in board.notes]
    return "\n".join(parts).rstrip("\n") + "\n"
