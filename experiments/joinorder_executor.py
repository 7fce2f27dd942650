"""``cepopt experiment joinorder-executor``: predicted cost vs measured partial matches vs wall time
of every join-order method's plan, executed on Spark (Kolchinsky & Schuster Figs. 4-16).

Stream: the stock-like generator (instances/stock_stream.py), 1M minute-bar updates over 100
tickers by default (``--quick``: 5k over 8, two patterns of size 3). Patterns: the paper's pattern sets (sequence,
negation, conjunction, Kleene, disjunction) of sizes 3 to 8 with ⌊n/2⌋ conditions
``x.difference < y.difference`` on disjoint pairs, window 10 minutes. Statistics are estimated from
the stream (stream -> statistics -> plan -> execution). Per pattern every method plans; each
distinct plan runs on Spark. All plans of a pattern must find the same matches.

Cost model: every method plans, and every prediction is made, with ``MODEL`` = ``seq_temporal="exact"``,
``kleene_nonempty`` and ``kleene_poisson``. A Kleene leaf is then priced ``e^{rW} - 1``: a partial match
is a *non-empty* set (Theorem 4 counts ``2^{|S'|} - 1``), and when the N events of a window are
(close to) Poisson, E[2^N] = e^{rW}; the paper's ``2^{rW}`` over-predicted the Kleene-4 DP-LD plan,
which starts with its Kleene leaf, 2.4x (measured 1.51, paper 3.66, this model 1.36).
``seq_temporal="exact"`` ([R-SEQ-EXACT]): a node of k SEQ-ordered events gets the factor 1/k!, the probability that k
independently timestamped events arrive in the pattern's order. That is the model of these streams
(each symbol updates in a minute independently of the others, and the estimated selectivities are
of the conditions only, not conditioned on order; same-minute ties, which the executor's ``<=``
order check admits, make the true order probability slightly higher than 1/k!). The paper-literal
[R-SEQ] default ``adjacent`` (1/2 per adjacent pair, nothing for the others) over-predicts a k-event
SEQ node by k!/2^(k-1) (x3 at k=4, x315 at k=8); it is kept as the diagnostic column
``predicted_adjacent`` (``ratio_adjacent``, ``spearman_adjacent``), the same plan's cost under it.

What is measured, and why:

- ``active``: the measured cost. The model's PM(S) = W^|S|·∏r·∏sel·P(order) is the expected number of
  partial matches of S *active* in a window (spec §2.1); its time average over the stream is
  Σ(W - span)/T over the node's partial matches. ``active`` sums it over the nodes Cost_ord /
  Cost_tree count. For a pattern with negation the model prices the positive part (§2.6: the NOT
  check adds no cost term and its pruning is not modelled), so ``active`` and ``created`` count
  the plan run without its NOT checks; ``executed_active`` is the plan as run, checks included
  (their ratio is the pruning the model ignores).
- ``created``: the raw number of partial matches created over the stream. It is not the model's
  quantity: a set S of point events within the window is created about (T/W)·|S|·PM(S) times
  (|S| W^(|S|-1) of offsets fit a window, against W^|S| of lifetime), so the raw sum weights each
  node by its size, and a Kleene set of m events counts like m events (it lives W - span, short for
  big sets). That weighting, not a counting error, is why raw counts rank plans differently from
  the model; they are reported as a diagnostic.
- ``time_s`` / ``throughput``: wall time of the driver's ``execute`` on the already loaded stream
  (building the Spark plan, the one job that computes every node, counts them and materialises the
  results table; the predictions); loading the stream and planning are excluded, and each pattern's
  first plan runs once untimed before the timed runs, so that JVM warm-up and the compilation of the
  pattern's code are not charged to one method.

Targets checked in the report: measured partial matches rank the plans as the cost model does
(per pattern the Spearman correlation of the predicted cost with ``active`` over its distinct
plans; the per-set statistic is the mean over the set's patterns, >= 0.9: plans only ever compete
within a pattern, while a correlation pooled over patterns also asks the model to get the size of
the gaps between patterns right, and is shown as a secondary figure), the optimal plan's measured
cost within 2x of its prediction, and at least 500k events/s for size-4 patterns on local[2].
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cepopt.experiments.framework import Experiment, markdown_table

KINDS = ("conjunction", "sequence", "negation", "kleene", "disjunction")
ORDER_METHODS = ("trivial", "efreq", "greedy", "ii-random", "ii-greedy", "dp-ld")
TREE_METHODS = ("zstream", "zstream-ord", "dp-b")
METHODS = ORDER_METHODS + TREE_METHODS
WINDOW = 600  # 10 minutes, in seconds
#: the cost model of the plans and predictions (see the module docstring)
MODEL = {"seq_temporal": "exact", "kleene_nonempty": True, "kleene_poisson": True}

_STREAMS: dict[tuple, tuple] = {}


def grid(quick: bool) -> list[dict]:
    if quick:
        return [{"kind": k, "size": 3, "seed": 0, "events": 5_000, "symbols": 8}
                for k in ("conjunction", "negation")]
    # The pure pattern sets first (sizes 3..8), then Kleene and disjunction (3..5): a Kleene leaf
    # holds 2^(events per window) sets, a disjunction three branches.
    points = [{"kind": kind, "size": size, "seed": 0, "events": 1_000_000, "symbols": 100}
              for kind in ("conjunction", "sequence", "negation") for size in range(3, 9)]
    points += [{"kind": kind, "size": size, "seed": 0, "events": 1_000_000, "symbols": 100}
               for kind in ("kleene", "disjunction") for size in range(3, 6)]
    return points


def _stream(events: int, symbols: int, seed: int):
    """The stock stream as a persisted Spark DataFrame (built once per process)."""
    from cepopt.executor.join_eval import prepare_events
    from cepopt.executor.session import get_spark
    from cepopt.instances.stock_stream import generate

    key = (events, symbols, seed)
    if key not in _STREAMS:
        spark = get_spark()
        pdf = generate(seed=seed, events=events, symbols=symbols)
        # localCheckpoint: the plan becomes a scan of materialised blocks, not a 1M-row local
        # relation that the analyzer would walk for every derived DataFrame.
        sdf = prepare_events(spark.createDataFrame(pdf)).localCheckpoint(eager=True)
        _STREAMS[key] = (pdf, sdf)
    return _STREAMS[key]


def run(point: dict) -> list[dict]:
    from cepopt.executor.join_stats import estimate_statistics
    from cepopt.executor.joinorder_driver import execute
    from cepopt.instances.stock_stream import pattern
    from cepopt.joinorder import cost
    from cepopt.joinorder.problem import build_query
    from cepopt.solution import MethodResult
    from cepopt.solve import method as get_method

    pdf, sdf = _stream(point["events"], point["symbols"], point["seed"])
    query = pattern(point["kind"], point["size"], seed=point["seed"] + 17 * point["size"],
                    symbols=point["symbols"], window=WINDOW)
    stats = estimate_statistics(query, pdf, sample=20_000, seed=point["seed"])
    duration = float(pdf["ts"].max() - pdf["ts"].min())
    problem = build_query(query, stats, name=query.name, **MODEL)
    adjacent = build_query(query, stats, name=query.name, seq_temporal="adjacent")  # paper-literal
    executed: dict[str, dict] = {}
    rows = []
    for name in METHODS:
        start = time.perf_counter()
        result = get_method("joinorder", name).fn(problem, time_limit=60, seed=point["seed"])
        plan = result.plan if isinstance(result, MethodResult) else result
        plan_time = time.perf_counter() - start
        predicted, log_predicted = cost.predict(problem, plan), cost.evaluate(problem, plan)
        predicted_adjacent = cost.predict(adjacent, plan)
        key = str(plan)
        if not executed:  # warm-up, untimed (see the module docstring)
            execute(problem, plan, sdf).results.unpersist()
        if key not in executed:
            executed[key] = _execute(problem, plan, sdf, point, duration)
        m = executed[key]
        rows.append({
            "method": name, "plan_kind": "tree" if name in TREE_METHODS else "order", "plan": key,
            "log_predicted": log_predicted, "predicted": predicted, "predicted_adjacent": predicted_adjacent,
            "active": m["active"],
            "created": m["created"], "executed_active": m["executed_active"],
            "executed_created": m["executed_created"], "matches": m["matches"], "time_s": m["time_s"],
            "throughput": point["events"] / m["time_s"] if m["time_s"] > 0 else math.nan,
            "plan_time_s": plan_time, "nodes": m["nodes"], "digest": m["digest"],
        })
    return rows


def _execute(problem, plan, sdf, point: dict, duration: float) -> dict:
    """Run ``plan`` through the driver (timed), and its positive part when the pattern has a NOT
    (untimed)."""
    from cepopt.executor.joinorder_driver import execute, plan_trees, run_plan

    result = execute(problem, plan, sdf)
    try:
        out = {
            "executed_created": result.operations,
            "executed_active": result.metrics["active_partial_matches"],
            "matches": result.metrics["matches"],
            "time_s": result.time_s,
            "nodes": "; ".join(str(v) for k, v in result.metrics.items() if k.endswith("plan_nodes")),
            "digest": result.digest()[:16] if point["events"] <= 50_000 else "",
        }
    finally:
        result.results.unpersist()
    out["created"], out["active"] = out["executed_created"], out["executed_active"]
    if any(tree.pattern.negations for tree in plan_trees(problem, plan)):
        positive = run_plan(problem, plan, sdf, negate=False)
        out["created"] = sum(r.operations for r in positive.runs)
        out["active"] = sum(r.active for r in positive.runs) / duration
        for r in positive.runs:
            r.release()
    return out


def _spearman(x, y) -> float:
    x, y = pd.Series(x).rank(), pd.Series(y).rank()
    if x.nunique() < 2 or y.nunique() < 2:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def report(df: pd.DataFrame, out_dir: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines = []
    # Same matches under every plan of a pattern.
    same = df.groupby(["kind", "size", "seed"]).apply(
        lambda g: g["matches"].nunique() == 1 and g["digest"].fillna("").nunique() == 1, include_groups=False)
    lines.append(f"Every plan of a pattern found the same number of matches: {bool(same.all())} "
                 f"({int(same.sum())}/{len(same)} patterns).")
    # Spearman rank correlation of the predicted cost with the measured cost over the distinct plans
    # of each pattern (orders and trees together: each plan's count is the quantity its own cost counts).
    corr, pooled = [], []
    for (kind, size, _seed), g in df.groupby(["kind", "size", "seed"]):
        g = g.drop_duplicates("plan")
        if len(g) >= 3:
            corr.append({"kind": kind, "size": size, "plans": len(g),
                         "spearman": _spearman(g["log_predicted"], g["active"]),
                         "spearman_created": _spearman(g["log_predicted"], g["created"]),
                         "spearman_adjacent": _spearman(g["predicted_adjacent"], g["active"])})
        if len(g) >= 2:
            # Pooled over the patterns of a set: each plan relative to its pattern's best plan.
            rel = np.log(g["active"].clip(lower=1e-300))
            pooled.append(pd.DataFrame({"kind": kind, "rel_predicted": g["log_predicted"] - g["log_predicted"].min(),
                                        "rel_active": rel - rel.min()}))
    if corr:
        cdf = pd.DataFrame(corr)
        per_set = cdf.groupby("kind").agg(
            patterns=("size", "count"), mean_spearman=("spearman", "mean"), min_spearman=("spearman", "min"),
            mean_spearman_created=("spearman_created", "mean"),
            mean_spearman_adjacent=("spearman_adjacent", "mean")).reset_index()
        if pooled:
            pdf = pd.concat(pooled)
            pooled_corr = pdf.groupby("kind").apply(lambda g: pd.Series({
                "pooled_spearman": _spearman(g["rel_predicted"], g["rel_active"])}), include_groups=False)
            per_set = per_set.merge(pooled_corr.reset_index(), on="kind", how="left")
        met = bool((per_set["mean_spearman"] >= 0.9).all())
        lines += ["", "## Rank agreement: Spearman of predicted cost vs measured partial matches", "",
                  "Plans and predictions use `seq_temporal=exact` ([R-SEQ-EXACT]: a node's k SEQ-ordered "
                  "events in order with probability 1/k!, the model of a stream with independent "
                  "timestamps) and a Kleene leaf priced e^{rW} - 1 (non-empty sets, Poisson counts: "
                  "`kleene_nonempty`, `kleene_poisson`). Per pattern over its distinct plans; the target "
                  "(>= 0.9 per pattern set) is on "
                  f"`mean_spearman`, the mean over the set's patterns: {'met' if met else 'missed'}. "
                  "The measured cost is `active`, the time-averaged number of active partial matches at the "
                  "counted nodes (the model's PM(S); the positive part for negation, spec §2.6). "
                  "`spearman_created` ranks by the raw number of partial matches created, which weights a node "
                  "by its size (see the experiment's docstring); `pooled_spearman` pools every plan of the set, "
                  "relative to its pattern's cheapest; `spearman_adjacent` (diagnostic) ranks by the cost under "
                  "the paper-literal [R-SEQ] default `adjacent` (1/2 per adjacent SEQ pair).", "",
                  markdown_table(per_set), "", "Per pattern:", "", markdown_table(cdf)]
    # Optimal plans: measured active partial matches vs prediction.
    opt = df[df["method"].isin(["dp-ld", "dp-b"])].copy()
    opt["ratio"] = opt["active"] / opt["predicted"]
    opt["executed_ratio"] = opt["executed_active"] / opt["predicted"]
    opt["ratio_adjacent"] = opt["active"] / opt["predicted_adjacent"]
    within = opt["ratio"].between(0.5, 2.0)
    lines += ["", f"Optimal plans within 2x of their prediction: {int(within.sum())}/{len(opt)} (ratio range "
                  f"{opt['ratio'].min():.3g} - {opt['ratio'].max():.3g}). With the NOT checks' pruning (not "
                  f"modelled): {int(opt['executed_ratio'].between(0.5, 2.0).sum())}/{len(opt)} (range "
                  f"{opt['executed_ratio'].min():.3g} - {opt['executed_ratio'].max():.3g}). Diagnostic, the same "
                  "plans priced with the paper-literal model ([R-SEQ] `adjacent`, 1/2 per adjacent SEQ pair "
                  "instead of 1/k! per node; Kleene 2^{rW}): "
                  f"{int(opt['ratio_adjacent'].between(0.5, 2.0).sum())}/{len(opt)} (range "
                  f"{opt['ratio_adjacent'].min():.3g} - {opt['ratio_adjacent'].max():.3g})."]
    lines += ["", "## Optimal plans: measured (time-averaged active partial matches) / predicted", "",
              "`predicted`: seq_temporal=exact, Kleene e^{rW} - 1; `ratio_adjacent`: measured / the "
              "paper-literal prediction.", "",
              markdown_table(opt[["kind", "size", "method", "predicted", "active", "ratio", "executed_active",
                                  "executed_ratio", "ratio_adjacent", "created", "time_s", "throughput"]])]
    # Throughput per method and size (the paper's figures).
    thr = df.pivot_table(index=["kind", "size"], columns="method", values="throughput", aggfunc="mean")
    lines += ["", "## Throughput (events/s) per method", "", markdown_table(thr.reset_index())]
    size4 = df[df["size"] == 4]
    if len(size4):
        lines += ["", f"Size-4 throughput: min {size4['throughput'].min():.4g}, median "
                      f"{size4['throughput'].median():.4g} events/s (target >= 1e5)."]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for name, g in df.groupby("method"):
        t = g.groupby("size")["throughput"].mean()
        axes[0].plot(t.index, t.values, marker="o", label=name)
    axes[0].set_yscale("log")
    axes[0].set_xlabel("pattern size")
    axes[0].set_ylabel("throughput (events/s)")
    axes[0].legend(fontsize=7)
    axes[1].scatter(df["predicted"], df["active"], s=10)
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    lo = max(1e-3, float(np.nanmin(df[["predicted", "active"]].replace(0, np.nan).to_numpy())))
    hi = float(np.nanmax(df[["predicted", "active"]].to_numpy()))
    axes[1].plot([lo, hi], [lo, hi], "k--", lw=0.8)
    axes[1].set_xlabel("predicted cost (seq_temporal=exact, Kleene e^rW - 1)")
    axes[1].set_ylabel("measured active partial matches")
    fig.tight_layout()
    fig.savefig(out_dir / "joinorder-executor.png", dpi=120)
    plt.close(fig)
    lines += ["", "![throughput and cost](joinorder-executor.png)"]
    return "\n".join(lines)


EXPERIMENT = Experiment(
    name="joinorder-executor",
    description=__doc__.split("\n\n")[0],
    grid=grid,
    run=run,
    report=report,
    paper_claim="JQPG plans have considerably higher throughput: DP-LD over EFREQ x1.7 (Kleene) up to x2.7 "
                "(conjunctions); DP-B over ZSTREAM up to x7.6 at n=7; throughput roughly inversely "
                "proportional to the model cost (Fig. 16).",
    uses_spark=True,
)
