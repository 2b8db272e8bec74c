"""Terminal views (rich) of pairwise comparisons: one pair's win rates, and the Bradley–Terry leaderboard."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from awbench.analysis.options import OVERALL
from awbench.analysis.pairwise import Answered, PairwiseComparison, PairwiseLeaderboard
from awbench.analysis.preference import WinRate
from awbench.analysis.stats import TOO_FEW
from awbench.cli.common import plural
from awbench.cli.fitting import FittingTable
from awbench.domains import DOMAIN_LABELS

WIN_RATE_NOTE = "win rate: (wins + ties / 2) / n; a tie: the two orders got different answers"


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _interval(row: WinRate) -> str:
    if row.too_few:
        return TOO_FEW
    return f"[{_percent(row.lo)}, {_percent(row.hi)}]"


def _answered_line(answered: Answered) -> Text:
    cost = "unknown" if answered.cost_usd is None else f"${answered.cost_usd:.2f}"
    chosen = answered.questions - answered.unanswered
    return Text(
        f"{plural(answered.questions, 'question')}, {chosen} with a choice: Response A chosen in "
        f"{_percent(answered.first_position)} (50% = no position bias); cost {cost}",
        style="dim",
    )


def _warnings(warnings: list[str]) -> list[RenderableType]:
    return [Text(f"warning: {w}", style="bold yellow") for w in warnings]


def pairwise_comparison_renderables(c: PairwiseComparison) -> list[RenderableType]:
    table = FittingTable(
        title=f"A = {c.run_a}   B = {c.run_b}   (pairwise judge {c.judge}, prompts {c.prompts}; both orders)"
    )
    table.add_column("", overflow="fold")
    for name in ("n", "A wins", "ties", "B wins", "A win rate", "95% CI"):
        if name == "A win rate":
            table.start_group()
        table.add_column(name, justify="right", no_wrap=True)
    for row in c.rows:
        table.add_row(
            "Overall" if row.name == OVERALL else DOMAIN_LABELS[row.name],
            str(row.n),
            str(row.wins),
            str(row.ties),
            str(row.losses),
            _percent(row.win_rate),
            _interval(row),
            style="bold" if row.name == OVERALL else None,
        )
    notes = [_answered_line(c.answered), Text(f"{WIN_RATE_NOTE}; Overall: the mean of the domains", style="dim")]
    return [*_warnings(c.warnings), table, *notes]


def pairwise_leaderboard_renderables(board: PairwiseLeaderboard) -> list[RenderableType]:
    ranking = FittingTable(
        title=f"Bradley–Terry ranking by pairwise judge {board.judge}, prompts {board.prompts}", keys=2
    )
    ranking.add_column("#", justify="right", no_wrap=True)
    ranking.add_column("run", no_wrap=True)
    for name in ("rating", "95% CI", "n", "win", "tie", "loss"):
        if name == "n":
            ranking.start_group()
        ranking.add_column(name, justify="right", no_wrap=True)
    for row in board.rows:
        bounds = TOO_FEW if row.lo is None or row.hi is None else f"[{row.lo:.0f}, {row.hi:.0f}]"
        ranking.add_row(
            str(row.rank),
            row.run,
            f"{row.rating:.0f}",
            bounds,
            str(row.n),
            str(row.wins),
            str(row.ties),
            str(row.losses),
        )
    pairs = FittingTable(title="Pairs (overall)", keys=2)
    pairs.add_column("A", no_wrap=True)
    pairs.add_column("B", no_wrap=True)
    for name in ("n", "ties", "A win rate", "95% CI"):
        pairs.add_column(name, justify="right", no_wrap=True)
    for pair in board.pairs:
        result = pair.result
        pairs.add_row(pair.a, pair.b, str(result.n), str(result.ties), _percent(result.win_rate), _interval(result))
    notes = [
        Text(
            "rating: Bradley–Terry strength on the Elo scale (mean 1000; 400 more = odds of 10 to 1), fitted on each "
            "pair's overall win rate; the intervals refit it on resamples of whole trajectories",
            style="dim",
        ),
        _answered_line(board.answered),
        Text(WIN_RATE_NOTE, style="dim"),
    ]
    return [*_warnings(board.warnings), ranking, pairs, *notes]
