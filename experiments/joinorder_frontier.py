"""joinorder-frontier: time to proof (or the gap at the limit) of the exact join-order methods by n, per
query-graph shape and cross-product rule, beside the database join-ordering literature (issue 34).

Grid: shape (chain, star, cycle, clique; ``--graph`` of instances/joinorder_generator.py, pure
conjunctions ``--kind and`` so that the query graph is exactly the shape) x rule (``cross_products``
allowed: the CEP rule; avoid: the database rule) x plan kind x n x preset (steinbrunn: Steinbrunn et
al.'s cardinalities and selectivities, a join query with W = 1; hard: the CEP preset where the exact
MILPs work hardest) x 3 seeds; one exact method per point, 60 s per call including model building:

============  ==========  ==================================================================
kind, rule    method      why
============  ==========  ==================================================================
order, allow  milp-order  prefix-set MILP, proven by its sparse bounded DP-LD when the cut bites
order, avoid  dp-ccp-ld   DP over the connected sets (chain, cycle); cliques: every set is connected,
              ikkbz       so milp-order is exact there too; stars: IKKBZ (polynomial, acyclic graphs)
tree, allow   dp-b        compiled DP-B with upper-bound pruning, O(3^n)
tree, avoid   dp-ccp      csg-cmp pairs (DPccp); stars are solved as orders (every tree is left-deep)
============  ==========  ==================================================================

Every row records the 1-minute load average of the shared machine (``meta_load``) beside its time:
the figures are wall-clock under whatever load other jobs put on the 2 cores. ``--quick``: n = 8, one
seed, the steinbrunn preset, one point per (shape, rule, kind).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from cepopt.experiments.framework import Experiment, cpu_seconds, markdown_table

__all__ = ["ANCHORS", "EXPERIMENT", "POINTS", "TARGETS"]

SHAPES = ("chain", "star", "cycle", "clique")
PRESETS = ("steinbrunn", "hard")
SEEDS = (0, 1, 2)
TIME_LIMIT = 60.0

#: (kind, rule, shape) -> [(method, sizes)]
POINTS: dict[tuple[str, str, str], list[tuple[str, tuple[int, ...]]]] = {}
for _shape in SHAPES:
    POINTS[("order", "allowed", _shape)] = [("milp-order", (20, 40, 60) + ((100,) if _shape != "clique" else ()))]
    POINTS[("tree", "allowed", _shape)] = [("dp-b", (14, 18, 22))]
POINTS[("order", "avoid", "chain")] = [("dp-ccp-ld", (20, 40, 60, 100)), ("ikkbz", (100,))]
POINTS[("order", "avoid", "cycle")] = [("dp-ccp-ld", (20, 40, 60, 100))]
POINTS[("order", "avoid", "star")] = [("dp-ccp-ld", (14, 18)), ("ikkbz", (20, 40, 60, 100))]
POINTS[("order", "avoid", "clique")] = [("milp-order", (20, 40, 60))]
POINTS[("tree", "avoid", "chain")] = [("dp-ccp", (10, 20, 30, 50))]
POINTS[("tree", "avoid", "cycle")] = [("dp-ccp", (10, 20, 30))]
POINTS[("tree", "avoid", "star")] = [("dp-ccp", (10, 20, 30, 50))]
POINTS[("tree", "avoid", "clique")] = [("dp-ccp", (10, 14))]

#: the published figures the issue quotes (not measured here)
ANCHORS = (
    ("Kolchinsky & Schuster, PVLDB 2018 (CEP, cross products allowed)", "bushy DP-B: more than 50 h at n = 22 (Java)"),
    ("OpenCEP (the authors' public CEP engine)", "bushy DP: 56 s at n = 14"),
    ("Trummer & Koch, SIGMOD 2017 (MILP)", "optimal left-deep plans for 60 tables"),
    ("MPDP, SIGMOD 2022 (GPU DP)", "25 relations in PostgreSQL's time budget"),
    ("Schonberger et al., VLDB 2026 (hybrid bushy MILP with adaptive DP)", "scales to 100 relations"),
)


#: the issue's targets (2 cores, quiet machine, max over 3 seeds, < 60 s each): (kind, rule, shape, n, method)
TARGETS = tuple([("order", "allowed", sh, 100, "milp-order") for sh in ("chain", "star", "cycle")]
                + [("order", "allowed", "clique", 60, "milp-order")]
                + [("order", "avoid", "chain", 100, "dp-ccp-ld"), ("order", "avoid", "cycle", 100, "dp-ccp-ld"),
                   ("order", "avoid", "star", 100, "ikkbz"), ("order", "avoid", "clique", 60, "milp-order")]
                + [("tree", "avoid", sh, 30, "dp-ccp") for sh in ("chain", "cycle", "star")]
                + [("tree", "avoid", "chain", 50, "dp-ccp"), ("tree", "allowed", "clique", 26, "dp-b")])


def _targets(df) -> list[str]:
    lines = ["## The issue's targets (proven < 60 s, max over 3 seeds, every preset of this grid)\n",
             "| kind | rule | shape | n | method | measured (all presets and seeds) |", "|---|---|---|---|---|---|"]
    for kind, rule, shape, n, method in TARGETS:
        d = df[(df["kind"] == kind) & (df["rule"] == rule) & (df["n"] == n) & (df["method"] == method)]
        if kind == "tree" and rule == "allowed":
            d = df[(df["kind"] == kind) & (df["rule"] == rule) & (df["n"] == n)]
            shape = "every"
        else:
            d = d[d["shape"] == shape]
        if len(d):
            result = _cell(d)
        else:
            ran = df.loc[(df["method"] == method) & (df["rule"] == rule), "n"]
            result = f"not run (largest n of {method} in this grid: {ran.max() if len(ran) else '-'})"
        lines.append(f"| {kind} | {rule} | {shape} | {n} | {method} | {result} |")
    return lines + [""]


def grid(quick: bool) -> list[dict]:
    if quick:
        return [{"shape": shape, "rule": rule, "kind": kind, "preset": "steinbrunn", "n": 8, "seed": 0,
                 "method": methods[0][0]}
                for (kind, rule, shape), methods in POINTS.items()]
    points = [{"shape": shape, "rule": rule, "kind": kind, "preset": preset, "n": n, "seed": seed, "method": m}
              for (kind, rule, shape), methods in POINTS.items() for m, sizes in methods for n in sizes
              for preset in PRESETS for seed in SEEDS]
    # the largest sizes first: the frontier is what the run is for, and an interrupted run (the journal
    # resumes it) has measured the targets rather than the easy sizes
    return sorted(points, key=lambda p: -p["n"])


def run(point: dict) -> dict:
    from cepopt.instances.joinorder_generator import make_instance
    from cepopt.registry import solve

    inst = make_instance(int(point["n"]), seed=int(point["seed"]), preset=str(point["preset"]), kind="and",
                         graph=str(point["shape"]))
    load = os.getloadavg()[0]
    cpu = cpu_seconds()
    sol = solve(inst, str(point["method"]), time_limit=TIME_LIMIT, seed=int(point["seed"]),
                params={"cross_products": str(point["rule"])})
    cpu = cpu_seconds() - cpu
    return {"status": sol.status, "log_cost": sol.objective, "log_bound": sol.bound,
            "ln_gap": None if sol.objective is None or sol.bound is None else sol.objective - sol.bound,
            "time_s": round(sol.time_s, 4), "cpu_s": round(cpu, 4), "load_before": round(load, 2),
            "load_after": round(os.getloadavg()[0], 2), "proof": str(sol.stats.get("proof", ""))[:80],
            "message": sol.message[:120]}


def _cell(d) -> str:
    proven = int((d["status"] == "optimal").sum())
    text = f"{proven}/{len(d)} proven, max {d['time_s'].max():.2f} s wall, {d['cpu_s'].max():.2f} s CPU"
    gaps = d.loc[d["status"] != "optimal", "ln_gap"].dropna()
    if len(gaps):
        text += f", ln gap <= {gaps.max():.2g}"
    errors = d[d["status"] == "error"]
    if len(errors):
        text += f", {len(errors)} refused"
    return text + f" (load {d['load_before'].min():.1f}-{d['load_after'].max():.1f})"


def report(df, out_dir: Path) -> str:
    lines = ["## Published figures (quoted from the issue, not measured here)\n",
             "| source | figure |", "|---|---|"]
    lines += [f"| {a} | {b} |" for a, b in ANCHORS]
    lines += [""] + _targets(df)
    lines += ["## Measured: time to proof by n (max over seeds; wall-clock on a shared 2-core machine "
              "under the load given, 60 s limit including model building)\n",
              "| kind | rule | shape | method | preset | n | result |", "|---|---|---|---|---|---|---|"]
    keys = ["kind", "rule", "shape", "method", "preset", "n"]
    for key, d in df.groupby(keys, sort=True):
        lines.append("| " + " | ".join(str(k) for k in key) + f" | {_cell(d)} |")
    status = df.groupby(["method", "status"]).size().unstack(fill_value=0).reset_index()
    status.columns = [str(c) for c in status.columns]
    lines += ["", "Statuses over all runs:\n", markdown_table(status)]
    if "ln_gap" in df and df["ln_gap"].notna().any():
        worst = df["ln_gap"].max()
        lines.append(f"\nLargest ln gap at the limit: {worst:.3g}" if math.isfinite(worst) else "")
    return "\n".join(lines) + "\n"


EXPERIMENT = Experiment(
    name="joinorder-frontier",
    description=("Time to proof (or gap at the limit) of the exact join-order methods by n, per query-graph "
                 "shape (chain, star, cycle, clique) and cross-product rule, presets steinbrunn and hard, "
                 "3 seeds, 60 s per call, beside the join-ordering literature's published figures."),
    grid=grid,
    run=run,
    report=report,
    paper_claim="; ".join(f"{a}: {b}" for a, b in ANCHORS),
)
