"""`awbench judges`: how much the judge decides (`awbench.analysis.judge_effects`), beside the judges' Turing
accuracy, as terminal tables."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import RenderableType
from rich.text import Text

from awbench.analysis.judge_effects import Estimate, JudgeEffects
from awbench.analysis.options import OVERALL
from awbench.analysis.stats import TOO_FEW
from awbench.cli.fitting import FittingTable
from awbench.domains import DOMAIN_LABELS


def fmt_estimate(estimate: Estimate, signed: bool = True, digits: int = 2) -> str:
    """`+1.23 [0.40, 2.10]`, `+1.23 (too few to tell)` without an interval, `–` without a value."""
    if estimate.value is None:
        return "–"
    sign = "+" if signed else ""
    value = f"{estimate.value:{sign}.{digits}f}"
    if estimate.lo is None or estimate.hi is None:
        return f"{value} ({TOO_FEW})"
    return f"{value} [{estimate.lo:{sign}.{digits}f}, {estimate.hi:{sign}.{digits}f}]"


def judge_effects_renderables(effects: JudgeEffects, turing: Mapping[str, str]) -> list[RenderableType]:
    """Per judge: its model, Turing accuracy (`turing`: judge model -> accuracy as printed), offset against the other
    judges overall and per domain, and possible self-preference; then the judges' rank agreement."""
    domains = " and ".join(DOMAIN_LABELS[d] for d in effects.domains) if len(effects.domains) < 7 else "Overall"
    table = FittingTable(
        title=f"How much the judge decides: {len(effects.judges)} judges of {len(effects.runs)} runs "
        f"(scores: {domains})",
        caption="offset: the judge's score less the other judges' mean, averaged over the runs; 95% intervals "
        "resample whole trajectories",
    )
    for name in ("judge", "model", "Turing accuracy %", "offset", *(DOMAIN_LABELS[d] for d in effects.domains)):
        if name in ("judge", "model"):
            table.add_column(name, overflow="fold")
        else:
            table.add_column(name, justify="right", no_wrap=True)
    for judge, model in effects.judges.items():
        offsets = effects.offsets[judge]
        table.add_row(
            judge,
            model,
            turing.get(model, "–"),
            fmt_estimate(offsets[OVERALL]),
            *(fmt_estimate(offsets[d]) for d in effects.domains),
        )
    out: list[RenderableType] = [table]
    if effects.rank_agreement:
        ranks = FittingTable(title="Rank agreement of the judges' leaderboards (Kendall's tau-b)", keys=2)
        for name in ("judge A", "judge B"):
            ranks.add_column(name, overflow="fold")
        for name in ("runs", "tau [95% CI]"):
            ranks.add_column(name, justify="right", no_wrap=True)
        for a in effects.rank_agreement:
            ranks.add_row(a.judge_a, a.judge_b, str(a.runs), fmt_estimate(a.tau, signed=False))
        out.append(ranks)
    for p in effects.self_preference:
        what = "possible self-preference" + (" (its interval leaves out 0)" if p.clear else "")
        out.append(
            Text(
                f"{what}: judge {p.judge} gives {p.run}, of its own family ({p.family}), "
                f"{fmt_estimate(p.residual)} points more than the other judges do, beyond its usual offset",
                style="yellow" if p.clear else "",
            )
        )
    out += [Text(f"note: {note}", style="yellow") for note in effects.notes]
    return out
