"""``cepopt experiment hamlet-executor``: static vs dynamic sharing (and non-shared GRETA) as
burstiness grows (Hamlet Figs. 11-12), executed on Spark.

Workload: k queries ``SEQ(X_i, B+)`` over four start types, sharing B+; query i keeps only the B
events with ``B.v < c_i`` (c_i from 10 = all down to 6), so some burst events are matched by some
queries only and sharing them needs event-level snapshots (Def. 3.11). Stream: per partition ``g``,
runs of a few start events followed by a burst of B events whose length is geometric with mean
``burst`` (the burstiness axis); one event per time unit; tumbling windows of 500.

Plans: non-shared GRETA, static sharing, the paper's dynamic optimizer and four seeded random valid
per-burst plans (``random-SEED-PCT``: share a burst with probability PCT %, by a random subset of
>= 2 candidates; cepopt.hamlet.policy.RandomPolicy), so that the ranking of plans by the cost model
can be checked on more than three points. Every plan is priced by the same Eq. 7 code path
(``option_cost`` of its own decisions).

Per (burst, policy) we run the Hamlet kernel on Spark (``local[2]`` by default; partitions by ``g``
and window) and record wall time, summed kernel time, throughput (events / wall time and events /
kernel time), latency (kernel time per window, the delay of a window's result after its last event),
the measured operations in the cost model's unit (``operations``: predecessor edges times the width
read, see executor/hamlet_kernel.py) and the running-sum kernel's own count
(``fastpath_operations``), snapshots created and the Eq. 7 cost the policy predicted. Every policy
must give the same results (digest), checked per burst.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cepopt.experiments.framework import Experiment, markdown_table

POLICIES = ("nonshared", "static", "dynamic", "random-1", "random-2-25", "random-3-75", "random-4-90")
QUICK_POLICIES = ("nonshared", "static", "dynamic", "random-1")
START_TYPES = ("A", "C", "D", "E")


def grid(quick: bool) -> list[dict]:
    bursts = (4,) if quick else (2, 5, 10, 20, 40)
    return [{"burst": b, "policy": p, "quick": quick} for b in bursts for p in (QUICK_POLICIES if quick else POLICIES)]


def make_stream(burst: float, events: int, groups: int, seed: int = 0) -> pd.DataFrame:
    """Bursty stream: per group, 1-3 start events then a burst of B events (geometric length)."""
    rng = np.random.default_rng(seed)
    per_group = events // groups
    rows = []
    for g in range(groups):
        t = 0
        while t < per_group:
            for _ in range(int(rng.integers(1, 4))):
                rows.append((t, START_TYPES[int(rng.integers(0, len(START_TYPES)))], 0, g))
                t += 1
            for _ in range(int(rng.geometric(1.0 / burst))):
                rows.append((t, "B", int(rng.integers(0, 10)), g))
                t += 1
    return pd.DataFrame(rows, columns=["ts", "type", "v", "g"]).astype({"ts": "int64", "v": "int64"})


def workload(k: int):
    from cepopt.model import AttrRef, Filter, Kleene, Query, Seq, Type, Window, Workload

    limits = [10, 10, 9, 8, 7, 6]
    w = Window(500, 500)
    return Workload(tuple(
        Query(Seq((Type(START_TYPES[i % len(START_TYPES)]), Kleene(Type("B")))), w,
              where=(Filter("B", "v", "<", limits[i % len(limits)]),), group_by=(AttrRef("g"),), name=f"q{i + 1}")
        for i in range(k)))


def run(point: dict) -> dict:
    import time
    from types import SimpleNamespace

    from cepopt.executor.engines import run_spark
    from cepopt.executor.session import get_spark
    from cepopt.executor.trend_exec import compile_hamlet

    quick = point["quick"]
    events = 400 if quick else 20000
    k = 3 if quick else 6
    stream = make_stream(point["burst"], events, groups=2 if quick else 4, seed=7)
    spark = get_spark()
    sdf = spark.createDataFrame(stream)
    if not quick:
        sdf = sdf.cache()
        sdf.count()
    start = time.perf_counter()
    compiled = compile_hamlet(SimpleNamespace(workload=workload(k)), point["policy"])
    run = run_spark(compiled, sdf, spark)
    wall = time.perf_counter() - start
    run.results.unpersist()
    if not quick:
        sdf.unpersist()
    metrics = compiled.finish(run.metrics)
    scopes = max(1, int(stream.groupby(["g", stream["ts"] // 500]).ngroups))
    kernel = float(metrics.get("kernel_s", 0.0))
    return {
        "events": len(stream), "queries": k, "wall_s": wall, "kernel_s": kernel,
        "throughput_wall": len(stream) / wall, "throughput_kernel": len(stream) / kernel if kernel else None,
        "latency_ms": 1000 * kernel / scopes, "operations": metrics["operations"],
        "fastpath_operations": metrics["fastpath_operations"], "pred_edges": metrics["pred_edges"],
        "shared_edges": metrics["shared_edges"], "snapshot_edges": metrics["snapshot_edges"],
        "evaluations": metrics["evaluations"],
        "propagations": metrics["propagations"], "snapshots": metrics["snapshots"],
        "shared_bursts": metrics["shared_bursts"], "bursts": metrics["bursts"],
        "predicted": metrics.get("predicted", 0.0), "digest": run.digest[:16],
    }


MAIN = ("nonshared", "static", "dynamic")


def rank_agreement(df) -> dict:
    """Spearman of predicted (Eq. 7) vs measured per burst over its plans, and pooled over every
    plan of every burst: raw, and relative to the burst's non-shared plan (predicted / predicted of
    non-shared against operations / operations of non-shared); plus the plan pairs of one burst
    that prediction and measurement order alike."""
    from scipy.stats import spearmanr

    out: dict = {"per_burst": {}, "pairs": [0, 0]}
    rel = []
    for b, g in df.groupby("burst"):
        if len(g) < 3:
            continue
        out["per_burst"][b] = {m: float(spearmanr(g["predicted"], g[m]).statistic)
                               for m in ("operations", "fastpath_operations", "kernel_s")}
        rows = list(zip(g["predicted"], g["operations"], strict=True))
        for i, (p1, o1) in enumerate(rows):
            for p2, o2 in rows[i + 1:]:
                if p1 != p2 and o1 != o2:
                    out["pairs"][1] += 1
                    out["pairs"][0] += (p1 < p2) == (o1 < o2)
        base = g[g["policy"] == "nonshared"]
        if len(base) == 1:
            rel.append(g.assign(pred_rel=g["predicted"] / float(base["predicted"].iloc[0]),
                                ops_rel=g["operations"] / float(base["operations"].iloc[0])))
    if len(df) >= 3:
        out["pooled_raw"] = float(spearmanr(df["predicted"], df["operations"]).statistic)
    if rel:
        import pandas as pd

        r = pd.concat(rel)
        out["pooled_rel"] = float(spearmanr(r["pred_rel"], r["ops_rel"]).statistic)
        out["pooled_rel_n"] = len(r)
    return out


def report(df, out_dir: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    df = df.sort_values(["burst", "policy"]).copy()
    df["meas_pred"] = df["operations"] / df["predicted"].where(df["predicted"] > 0)
    agree = df.groupby("burst")["digest"].nunique().eq(1).all()
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    for pol, grp in df.groupby("policy"):
        style = dict(marker="o", label=pol) if pol in MAIN else dict(color="0.6", ls="--", lw=0.8, marker=".")
        axes[0].plot(grp["burst"], grp["throughput_kernel"], **style)
        axes[1].plot(grp["burst"], grp["latency_ms"], **style)
        axes[2].plot(grp["burst"], grp["operations"], **style)
    bursts = sorted(df["burst"].unique())
    for ax, title in zip(axes[:3], ("throughput (events/s, kernel)", "latency per window (ms)",
                                    "operations (Eq. 7 units; grey: random plans)"), strict=True):
        ax.set_xlabel("mean burst length")
        ax.set_title(title)
        ax.set_xscale("log")
        ax.set_xticks(bursts, labels=[str(b) for b in bursts])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.legend(fontsize=7)
    axes[2].set_yscale("log")
    for b, grp in df.groupby("burst"):
        axes[3].scatter(grp["predicted"], grp["operations"], label=f"burst {b}", s=14)
    axes[3].set_xscale("log")
    axes[3].set_yscale("log")
    axes[3].set_xlabel("predicted (Eq. 7)")
    axes[3].set_ylabel("measured operations")
    axes[3].set_title("every plan")
    axes[3].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "hamlet-executor.png", dpi=120)
    plt.close(fig)
    cols = ["burst", "policy", "events", "wall_s", "kernel_s", "throughput_kernel", "latency_ms", "predicted",
            "operations", "meas_pred", "fastpath_operations", "snapshots", "shared_bursts", "bursts"]
    piv = df.pivot_table(index="burst", columns="policy", values="kernel_s")
    lines = [markdown_table(df, cols), "",
             f"All plans give identical results at every burstiness: **{bool(agree)}**.", ""]
    if {"static", "dynamic"} <= set(piv.columns):
        speed = (piv["static"] / piv["dynamic"] - 1) * 100
        lines.append("Dynamic vs static kernel-time speed-up (%): "
                     + ", ".join(f"burst {b}: {s:+.0f}" for b, s in speed.items()))
    if {"nonshared", "dynamic"} <= set(piv.columns):
        speed = piv["nonshared"] / piv["dynamic"]
        lines.append("\nNon-shared (GRETA) / dynamic kernel time: "
                     + ", ".join(f"burst {b}: {s:.2f}x" for b, s in speed.items()))
    rk = rank_agreement(df)
    if rk["per_burst"]:
        n_plans = df.groupby("burst").size().max()
        lines.append(
            f"\n**Does the cost model rank the plans as they run?** Spearman of the Eq. 7 prediction against "
            f"measured operations (Eq. 7 units) / the running-sum count / kernel time, per burst over its "
            f"{n_plans} plans: "
            + ", ".join(f"burst {b}: {v['operations']:+.2f} / {v['fastpath_operations']:+.2f} / "
                        f"{v['kernel_s']:+.2f}" for b, v in rk["per_burst"].items())
            + f". Pooled over all {len(df)} plans: {rk.get('pooled_raw', float('nan')):+.2f} (raw costs), "
            f"{rk.get('pooled_rel', float('nan')):+.2f} (each plan relative to the non-shared plan of its "
            f"burst). Plan pairs of one burst ordered alike: {rk['pairs'][0]}/{rk['pairs'][1]}. "
            "Target: Spearman >= 0.9.")
    lines.append("\n![hamlet-executor](hamlet-executor.png)")
    lines.append(
        "\n**What is counted.** `operations` is in the unit of Eq. 7, the same for both modes (as the "
        "Gloria kernel counts Eqs. 2-4 units): an event processed per query q counts its predecessor edges "
        "|pe(e,q)| in q's GRETA graph (NonShared = k·b·n); a shared event counts its predecessor edges in "
        "the merged Hamlet graph (the union over the sharing queries that match it) times the width of its "
        "coefficient vector, the snapshots of the graphlet so far (b·n·s_p); a snapshot counts, per "
        "sharing query, the events it reads (s_c·k·g·t): a graphlet-level snapshot reads the query's "
        "previous one and the events since (Eq. 5), an event-level snapshot reads the graphlet-level one "
        "and the event's in-graphlet predecessors; closing a graphlet evaluates its snapshots per query. "
        "`fastpath_operations` is the running-sum kernel's own work (one snapshot term for everything "
        "before a graphlet), the count reported before: it puts shared and non-shared execution in "
        "different units (a snapshot read vs n edges), so it does not rank the plans as Eq. 7 does. "
        "`meas_pred` = operations / predicted.")
    if {"nonshared", "static"} <= set(df["policy"]):
        mp = df.pivot_table(index="burst", columns="policy", values="meas_pred")
        low = [b for b, v in rk["per_burst"].items() if v["operations"] < 0.9]
        lines.append(
            "\n**Where prediction and measurement still differ.** (1) Eq. 7 charges every query the same n, "
            "the events of the whole Hamlet graph, whereas a non-shared query's own graph holds only the "
            "events it matches (its start type and the B events that pass its filter) and a shared event's "
            "predecessors are the union over the sharing queries: Eq. 7 over-prices every query a plan "
            "leaves unshared. (2) Eq. 7 charges every event of a burst the burst's final n and s_p, whereas "
            "an event has only its own predecessors and the snapshots created so far: it over-prices long "
            "shared graphlets with many event-level snapshots. Measured / predicted: "
            + ", ".join(f"{r['nonshared']:.2f}" for _, r in mp.iterrows())
            + " for the non-shared plan, "
            + ", ".join(f"{r['static']:.2f}" for _, r in mp.iterrows())
            + f" for static sharing (bursts {', '.join(str(b) for b in mp.index)}). "
            + (f"Per-burst Spearman is below 0.9 at burst {', '.join(str(b) for b in low)}, where the plans' "
               "measured costs lie close together (see the table) and these biases reorder them."
               if low else f"They misorder {rk['pairs'][1] - rk['pairs'][0]} of the {rk['pairs'][1]} plan "
               "pairs of one burst here."))
    lines.append("\nWall time includes Spark's scheduling and Python-worker overhead (2 shared cores); "
                 "kernel time is the sum of the per-partition kernel times. `predicted` is the Eq. 7 cost "
                 "of the plan's own decisions. The non-shared kernel keeps per-type running sums "
                 "(hamlet.md §2.7 fast path), O(|pt|) per event and query instead of Eq. 4's O(n) scan, so "
                 "its run time does not grow like its operation count.")
    return "\n".join(lines)


EXPERIMENT = Experiment(
    name="hamlet-executor",
    description="Hamlet executor on Spark: static vs dynamic sharing vs non-shared GRETA as burstiness grows",
    grid=grid,
    run=run,
    report=report,
    paper_claim=("Hamlet Fig. 11: dynamic sharing gives a 21-34% speed-up and 27-52% more throughput than "
                 "static sharing (stock data, 2K-4K events/min); Figs. 8/10: Hamlet beats GRETA by 1-5 "
                 "orders of magnitude in throughput."),
    uses_spark=True,
)
