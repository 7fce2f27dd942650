"""``cepopt benchmark report DIR``: tables and plots regenerated from ``DIR/results.csv`` alone.

Per family: performance profiles on time (a cell counts as solved when its status is "optimal" within the
time limit) and on objective (ratio to the instance's best known objective), a cactus plot with the
virtual best solver, PAR10 and the shifted geometric mean of time, a win/tie/loss table against a
baseline method (default: the family's first method in the file), the mean primal gap over time, the
primal / dual / primal-dual integrals; then the failures. A *problem* is one (instance, seed, repeat);
a cell missing from the file counts as a failure. Definitions: :mod:`cepopt.benchmarking.metrics`,
:mod:`cepopt.benchmarking.progress`. Writes ``report.md``, ``summary.csv``, ``cells.csv``,
``profiles.csv``, ``win_tie_loss.csv``, ``failures.csv``, ``results.parquet`` (the results, typed) and PNGs
into ``DIR`` (or ``out``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cepopt.benchmarking import metrics
from cepopt.benchmarking.progress import gamma, integrals, step_value
from cepopt.benchmarking.results import FAILED, read_results

__all__ = ["FamilyTable", "family_tables", "profile_section", "write_report"]


@dataclass
class FamilyTable:
    """The cells of one family (or of one of its objectives) aligned as problems x methods (None where a cell
    is missing)."""

    family: str
    sense: str
    horizon: float  # the time limit (the longest cell when there is none)
    time_limit: float | None
    problems: list[tuple[str, int, int]]
    methods: list[str]
    cells: dict[str, list[dict | None]]
    best: dict[str, float | None]  # instance -> best known objective

    def column(self, method: str, key: str) -> list[Any]:
        return [None if c is None else _value(c.get(key)) for c in self.cells[method]]

    def solved(self, method: str) -> list[bool]:
        return [c is not None and c["status"] == "optimal"
                and (self.time_limit is None or float(c["time_s"]) <= self.time_limit) for c in self.cells[method]]

    def times(self, method: str) -> list[float | None]:
        return [t if ok else None for t, ok in zip(self.column(method, "time_s"), self.solved(method))]

    def objective_ratios(self, method: str) -> list[float]:
        return [metrics.objective_ratio(obj, self.best[p[0]], self.sense)
                for p, obj in zip(self.problems, self.column(method, "objective"))]

    def trajectory(self, method: str, i: int) -> dict:
        cell = self.cells[method][i]
        if cell is None or not cell.get("progress"):
            return {"primal": [], "dual": []}
        return json.loads(cell["progress"])


def _value(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    return v.item() if hasattr(v, "item") else v


def _objective_groups(frame):
    """The label each row is compared under: its family, or "family (objective)" when the family's plans are
    scored by several cost functions (join order: left-deep orders by ln Cost_ord, trees by ln Cost_tree); a
    cell without a plan goes with its method's other cells."""
    names = frame["objective_name"].fillna("").astype(str) if "objective_name" in frame else None
    if names is None:
        return frame["family"].astype(str)
    by_method = {}
    for (fam, meth), found in names[names != ""].groupby([frame["family"], frame["method"]]):
        by_method[fam, meth] = found.mode().iloc[0]
    named = [n or by_method.get((f, m), "") for f, m, n in zip(frame["family"], frame["method"], names)]
    several = {f for f in frame["family"].unique() if len({n for g, n in zip(frame["family"], named)
                                                           if g == f and n}) > 1}
    return [f"{f} ({n})" if f in several and n else str(f) for f, n in zip(frame["family"], named)]


def family_tables(frame) -> list[FamilyTable]:
    """One :class:`FamilyTable` per family of the results (per objective where a family has several)."""
    out = []
    for family, rows in frame.groupby(_objective_groups(frame), sort=True):
        records = rows.to_dict("records")
        methods = list(dict.fromkeys(r["method"] for r in records))
        problems = sorted({(str(r["instance"]), int(r["seed"]), int(r["repeat"])) for r in records})
        index = {(str(r["instance"]), int(r["seed"]), int(r["repeat"]), r["method"]): r for r in records}
        limits = [float(r["time_limit"]) for r in records if _value(r["time_limit"]) is not None]
        time_limit = max(limits) if limits else None
        horizon = time_limit or max((float(r["time_s"]) for r in records if _value(r["time_s"]) is not None),
                                    default=0.0)
        sense = next((str(r["sense"]) for r in records if _value(r["sense"]) in ("min", "max")), "min")
        best = {}
        for inst in {p[0] for p in problems}:
            best[inst] = metrics.best_known([_value(r["objective"]) for r in records if str(r["instance"]) == inst],
                                            sense)
        cells = {m: [index.get((*p, m)) for p in problems] for m in methods}
        out.append(FamilyTable(str(family), sense, horizon, time_limit, problems, methods, cells, best))
    return out


# ------------------------------------------------------------------------------------------- tables
def summary_rows(table: FamilyTable) -> list[dict]:
    """Per method: cells, solved, failures, missing cells, PAR10, shifted geometric mean, objective ratio,
    integrals."""
    rows = []
    limit = table.horizon or 1.0
    for m in table.methods:
        times = [t if t is not None else limit for t in table.column(m, "time_s")]
        solved = table.solved(m)
        statuses = table.column(m, "status")
        ints = [cell_integrals(table, m, i) for i in range(len(table.problems))]
        finite_ratios = [r for r in table.objective_ratios(m) if math.isfinite(r)]
        rows.append({
            "family": table.family, "method": m, "cells": len(times), "solved": sum(solved),
            "with_plan": sum(o is not None for o in table.column(m, "objective")),
            "failed": sum(s in FAILED for s in statuses), "missing": sum(s is None for s in statuses),
            "par10_s": metrics.par(times, solved, limit),
            "sgm_time_s": metrics.shifted_geometric_mean(times, solved, limit),
            "mean_objective_ratio": sum(finite_ratios) / len(finite_ratios) if finite_ratios else math.nan,
            **{k: sum(x[k] for x in ints) / len(ints) for k in ints[0]},
        })
    return rows


def cell_integrals(table: FamilyTable, method: str, i: int) -> dict[str, float]:
    return integrals(table.trajectory(method, i), table.best[table.problems[i][0]], table.horizon)


def cell_rows(table: FamilyTable) -> list[dict]:
    """Per cell: its objective ratio and integrals (what the summary averages)."""
    rows = []
    for m in table.methods:
        ratios = table.objective_ratios(m)
        for i, (inst, seed, rep) in enumerate(table.problems):
            rows.append({"family": table.family, "instance": inst, "seed": seed, "repeat": rep, "method": m,
                         "solved": table.solved(m)[i], "objective_ratio": ratios[i],
                         "best_known": table.best[inst], **cell_integrals(table, m, i)})
    return rows


def win_tie_loss_rows(table: FamilyTable, baseline: str | None) -> list[dict]:
    base = baseline if baseline in table.methods else table.methods[0]
    ref = table.column(base, "objective")
    rows = []
    for m in table.methods:
        if m != base:
            w, t, lo = metrics.win_tie_loss(table.column(m, "objective"), ref, table.sense)
            rows.append({"family": table.family, "method": m, "baseline": base, "wins": w, "ties": t, "losses": lo})
    return rows


def failure_rows(frame) -> list[dict]:
    """Cells without a plan: errors, crashes, kills, memory, time-outs without a plan."""
    bad = frame[frame["status"].isin([*FAILED, "timeout", "infeasible"]) & frame["objective"].isna()]
    return [{"family": r["family"], "instance": r["instance"], "method": r["method"], "seed": r["seed"],
             "repeat": r["repeat"], "status": r["status"], "message": str(r["message"])[:160]}
            for r in bad.to_dict("records")]


def markdown(rows: list[dict], floatfmt: str = ".4g") -> str:
    if not rows:
        return "(none)\n"
    cols = list(rows[0])

    def fmt(v: Any) -> str:
        text = format(v, floatfmt) if isinstance(v, float) else str(v)
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(fmt(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------- plots
def _taus(all_ratios: list[float]) -> list[float]:
    finite = sorted({r for r in all_ratios if math.isfinite(r)} | {1.0})
    top = max(finite[-1] * 1.05, 1.05)
    return [*finite, top]


def profile_rows(table: FamilyTable) -> list[dict]:
    """The step points of both profiles (what the plots draw)."""
    out = []
    time_ratios = metrics.ratios({m: table.times(m) for m in table.methods}, floor=metrics.MIN_TIME)
    obj_ratios = {m: table.objective_ratios(m) for m in table.methods}
    for kind, rs in (("time", time_ratios), ("objective", obj_ratios)):
        taus = _taus([r for v in rs.values() for r in v])
        for m, values in rs.items():
            for tau, rho in zip(taus, metrics.profile(values, taus)):
                out.append({"family": table.family, "profile": kind, "method": m, "tau": tau, "rho": rho})
    return out


def _plot_profiles(table: FamilyTable, rows: list[dict], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    for kind, xlabel in (("time", "tau (time / best time)"), ("objective", "tau (objective ratio to best known)")):
        fig, ax = plt.subplots(figsize=(6, 4))
        for m in table.methods:
            pts = [r for r in rows if r["profile"] == kind and r["method"] == m]
            ax.step([p["tau"] for p in pts], [p["rho"] for p in pts], where="post", label=m)
        if max((r["tau"] for r in rows if r["profile"] == kind), default=1.0) > 10:
            ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("share of problems")
        names.append(_save(fig, ax, f"{table.family}: performance profile ({kind})", out,
                           f"{_slug(table.family)}-profile-{kind}.png"))
    return names


def _slug(label: str) -> str:
    """A file-name part for a table label ("joinorder (ln Cost_ord)" -> "joinorder-ln-Cost_ord").

    >>> _slug("joinorder (ln Cost_ord)")
    'joinorder-ln-Cost_ord'
    """
    return re.sub(r"[^A-Za-z0-9_.]+", "-", label).strip("-")


def _save(fig, ax, title: str, out: Path, name: str) -> str:
    """Title, legend, write ``out/name``; returns ``name``."""
    import matplotlib.pyplot as plt

    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return name


def _plot_cactus(table: FamilyTable, out: Path) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    times = {m: table.column(m, "time_s") for m in table.methods}
    solved = {m: table.solved(m) for m in table.methods}
    for m in table.methods:
        ys = metrics.cactus(times[m], solved[m])
        ax.plot(range(1, len(ys) + 1), ys, marker=".", label=m)
    vbs = [t for t in metrics.virtual_best(times, solved) if t is not None]
    ax.plot(range(1, len(vbs) + 1), sorted(vbs), "k--", label="virtual best")
    ax.set_xlabel("problems solved")
    ax.set_ylabel("time (s)")
    ax.set_yscale("log")
    return _save(fig, ax, f"{table.family}: cactus plot", out, f"{_slug(table.family)}-cactus.png")


def mean_gap_curve(table: FamilyTable, method: str, times: list[float]) -> list[float]:
    """The mean primal gap (Berthold's gamma to the best known objective) of the method's cells at each time."""
    curves = []
    for i, p in enumerate(table.problems):
        primal = table.trajectory(method, i).get("primal", [])
        curves.append([gamma(step_value(primal, t), table.best[p[0]]) for t in times])
    return [sum(c[k] for c in curves) / len(curves) for k in range(len(times))] if curves else []


def _plot_gap(table: FamilyTable, out: Path) -> str:
    import matplotlib.pyplot as plt

    horizon = table.horizon or 1.0
    times = [horizon * k / 200 for k in range(201)]
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in table.methods:
        ax.step(times, mean_gap_curve(table, m, times), where="post", label=m)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("mean primal gap to best known")
    ax.set_ylim(-0.02, 1.02)
    return _save(fig, ax, f"{table.family}: primal gap over time", out, f"{_slug(table.family)}-gap.png")


# ------------------------------------------------------------------------------------------- experiments
def profile_section(frame, *, name: str, problem: list[str], sense: str, out_dir: str | Path,
                    time_limit: float | None = None, method: str = "method", objective: str = "objective",
                    time: str = "time_s", status: str = "status") -> str:
    """Performance profiles (time, objective), a cactus plot and the summary table of an experiment's rows,
    by the benchmark report's code: a problem is one combination of the ``problem`` columns; writes
    ``NAME-profile-time.png``, ``NAME-profile-objective.png``, ``NAME-cactus.png`` and
    ``NAME-profiles.csv`` into ``out_dir`` and returns the markdown section (no dual integrals: the
    experiments record no bounds over time)."""
    import pandas as pd

    out_dir = Path(out_dir)
    obj = pd.to_numeric(frame[objective], errors="coerce")
    took = pd.to_numeric(frame[time], errors="coerce")
    rows = pd.DataFrame({
        "instance": frame[problem].astype(str).agg("/".join, axis=1), "family": name, "sense": sense,
        "method": frame[method].astype(str), "seed": 0, "repeat": 0, "status": frame[status].astype(str),
        "objective": obj, "time_s": took, "time_limit": time_limit,
        # the final objective at the end of the call: the experiments record no progress over time
        "progress": [json.dumps({"primal": [] if pd.isna(o) else [[float(t), float(o)]], "dual": []})
                     for o, t in zip(obj, took.fillna(0.0))],
    })
    if rows.empty:
        return ""
    (table,) = family_tables(rows)
    prof = profile_rows(table)
    _csv(prof, out_dir / f"{name}-profiles.csv")
    images = [*_plot_profiles(table, prof, out_dir), _plot_cactus(table, out_dir)]
    return (f"\n## Performance profiles ({len(table.problems)} problems: {', '.join(problem)}; solved = status "
            "optimal within the time limit; a missing cell counts as unsolved; cepopt.benchmarking)\n\n"
            + markdown([{k: v for k, v in r.items() if k not in ("dual_integral", "primal_dual_integral")}
                        for r in summary_rows(table)])
            + "\n" + " ".join(f"![{n}]({n})" for n in images) + "\n")


# ------------------------------------------------------------------------------------------- report
def _csv(rows: list[dict], path: Path) -> None:
    import pandas as pd

    pd.DataFrame(rows).to_csv(path, index=False)


def write_report(directory: str | Path, out: str | Path | None = None, baseline: str | None = None,
                 plots: bool = True) -> Path:
    """Write the report of ``directory/results.csv`` into ``out`` (default: the same folder)."""
    from cepopt.benchmarking import RESULTS_NAME

    directory = Path(directory)
    frame = read_results(directory / RESULTS_NAME)
    target = Path(out) if out is not None else directory
    target.mkdir(parents=True, exist_ok=True)
    tables = family_tables(frame)
    summary, wtl, profiles, cells = [], [], [], []
    parts = [f"# Benchmark report\n\n{len(frame)} cells from `{directory / RESULTS_NAME}`. Solved = status "
             "optimal within the time limit; a problem is one (instance, seed, repeat). PAR10: unsolved at 10x "
             f"the time limit; SGM: shifted geometric mean of time, shift {metrics.SGM_SHIFT:g} s, unsolved at "
             "the limit. Integrals (s): Berthold's primal, dual and primal-dual integrals to the instance's best "
             "known objective over [0, time limit] (cepopt.benchmarking.progress).\n"]
    for table in tables:
        rows = summary_rows(table)
        summary += rows
        cells += cell_rows(table)
        family_wtl = win_tie_loss_rows(table, baseline)
        wtl += family_wtl
        prof = profile_rows(table)
        profiles += prof
        parts.append(f"\n## {table.family} ({len(table.problems)} problems, {table.sense}imize, "
                     f"time limit {table.time_limit if table.time_limit is not None else 'none'})\n\n")
        parts.append(markdown(rows))
        if family_wtl:
            parts.append(f"\nObjective against {family_wtl[0]['baseline']} (wins / ties / losses):\n\n")
            parts.append(markdown(family_wtl))
        if plots:
            names = [*_plot_profiles(table, prof, target), _plot_cactus(table, target), _plot_gap(table, target)]
            parts.append("\n" + " ".join(f"![{n}]({n})" for n in names) + "\n")
    failures = failure_rows(frame)
    parts.append(f"\n## Failures ({len(failures)})\n\n" + markdown(failures))
    meta = frame.iloc[0] if len(frame) else None
    if meta is not None:
        parts.append(f"\n**Run:** cepopt {meta['meta_version']} ({meta['meta_commit']}), {meta['meta_cores']} "
                     f"cores on {meta['meta_host']}, load {meta['meta_load']}, {meta['meta_date']}, "
                     f"`{meta['meta_command']}`\n")
    frame.to_parquet(target / "results.parquet", index=False)  # the same rows, typed, for dataframe tools
    _csv(summary, target / "summary.csv")
    _csv(cells, target / "cells.csv")
    _csv(wtl, target / "win_tie_loss.csv")
    _csv(profiles, target / "profiles.csv")
    _csv(failures, target / "failures.csv")
    path = target / "report.md"
    path.write_text("".join(parts))
    return path
