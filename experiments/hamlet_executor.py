"""``cepopt experiment hamlet-executor``: static vs dynamic sharing (and non-shared GRETA) as
burstiness grows (Hamlet Figs. 11-12), executed on Spark.

Workload: k queries ``SEQ(X_i, B+)`` over four start types, sharing B+; query i keeps only the B
events with ``B.v < c_i`` (c_i from 10 = all down to 6), so some burst events are matched by some
queries only and sharing them needs event-level snapshots (Def. 3.11). Stream: per partition ``g``,
runs of a few start events followed by a burst of B events whose length is geometric with mean
``burst`` (the burstiness axis); one event per time unit; tumbling windows of 500.

Per (burst, policy) we run the Hamlet kernel on Spark (``local[2]`` by default; partitions by ``g``
and window) and record wall time, summed kernel time, throughput (events / wall time and events /
kernel time), latency (kernel time per window, the delay of a window's result after its last event),
the measured operations (Eqs. 4/6 quantities), snapshots created and the Eq. 7 cost the policy
predicted. Every policy must give the same results (digest), checked per burst.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from cepopt.experiments.framework import Experiment, markdown_table

POLICIES = ("nonshared", "static", "dynamic")
START_TYPES = ("A", "C", "D", "E")


def grid(quick: bool) -> list[dict]:
    bursts = (4,) if quick else (2, 5, 10, 20, 40)
    return [{"burst": b, "policy": p, "quick": quick} for b in bursts for p in POLICIES]


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

    from cepopt.executor.hamlet_driver import run_classes
    from cepopt.executor.hamlet_kernel import finish_metrics
    from cepopt.executor.results import digest
    from cepopt.executor.session import get_spark
    from cepopt.hamlet.policy import get_policy
    from cepopt.hamlet.problem import compile_workload

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
    results, metrics = run_classes(compile_workload(workload(k)), get_policy(point["policy"]), sdf, spark)
    wall = time.perf_counter() - start
    if not quick:
        sdf.unpersist()
    finish_metrics(metrics)
    scopes = max(1, int(stream.groupby(["g", stream["ts"] // 500]).ngroups))
    kernel = float(metrics.get("kernel_s", 0.0))
    return {
        "events": len(stream), "queries": k, "wall_s": wall, "kernel_s": kernel,
        "throughput_wall": len(stream) / wall, "throughput_kernel": len(stream) / kernel if kernel else None,
        "latency_ms": 1000 * kernel / scopes, "operations": metrics["operations"],
        "propagations": metrics["propagations"], "snapshots": metrics["snapshots"],
        "shared_bursts": metrics["shared_bursts"], "bursts": metrics["bursts"],
        "predicted": metrics.get("predicted", 0.0), "digest": digest(results)[:16],
    }


def report(df, out_dir: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    df = df.sort_values(["burst", "policy"])
    agree = df.groupby("burst")["digest"].nunique().eq(1).all()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for pol, grp in df.groupby("policy"):
        axes[0].plot(grp["burst"], grp["throughput_kernel"], marker="o", label=pol)
        axes[1].plot(grp["burst"], grp["latency_ms"], marker="o", label=pol)
        axes[2].plot(grp["burst"], grp["operations"], marker="o", label=pol)
    for ax, title in zip(axes, ("throughput (events/s, kernel)", "latency per window (ms)", "operations"),
                         strict=True):
        ax.set_xlabel("mean burst length")
        ax.set_title(title)
        ax.set_xscale("log")
        ax.set_xticks(sorted(df["burst"].unique()), labels=[str(b) for b in sorted(df["burst"].unique())])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.legend()
    axes[2].set_yscale("log")
    fig.tight_layout()
    fig.savefig(out_dir / "hamlet-executor.png", dpi=120)
    plt.close(fig)
    cols = ["burst", "policy", "events", "wall_s", "kernel_s", "throughput_kernel", "latency_ms", "operations",
            "snapshots", "shared_bursts", "bursts", "predicted"]
    piv = df.pivot_table(index="burst", columns="policy", values="kernel_s")
    lines = [markdown_table(df, cols), "",
             f"All policies give identical results at every burstiness: **{bool(agree)}**.", ""]
    if {"static", "dynamic"} <= set(piv.columns):
        speed = (piv["static"] / piv["dynamic"] - 1) * 100
        lines.append("Dynamic vs static kernel-time speed-up (%): "
                     + ", ".join(f"burst {b}: {s:+.0f}" for b, s in speed.items()))
    if {"nonshared", "dynamic"} <= set(piv.columns):
        speed = piv["nonshared"] / piv["dynamic"]
        lines.append("\nNon-shared (GRETA) / dynamic kernel time: "
                     + ", ".join(f"burst {b}: {s:.2f}x" for b, s in speed.items()))
    from scipy.stats import spearmanr

    rho = {b: (spearmanr(g["predicted"], g["operations"]).statistic, spearmanr(g["predicted"], g["kernel_s"]).statistic)
           for b, g in df.groupby("burst") if len(g) > 2}
    if rho:
        lines.append("\nSpearman of the Eq. 7 prediction against measured operations / kernel time, per burst "
                     "(three policies): " + ", ".join(f"burst {b}: {o:+.2f} / {t:+.2f}" for b, (o, t) in rho.items())
                     + ". Eq. 7 prices a shared burst event as scanning all n events of the graph (b·n·s_p); "
                     "a kernel event reads one graphlet-level snapshot for everything before its graphlet plus the "
                     "expressions of the graphlet's earlier events, so for short bursts in long windows "
                     "the prediction of static sharing is far above its measured operations, while its kernel "
                     "time (event-level snapshots evaluated per query) follows the prediction.")
    lines.append("\n![hamlet-executor](hamlet-executor.png)")
    lines.append("\nWall time includes Spark's scheduling and Python-worker overhead (2 shared cores); "
                 "kernel time is the sum of the per-partition kernel times. `operations` counts the "
                 "faithful quantities of Eqs. 4/6 (predecessor edges, expression terms, snapshot reads); "
                 "`predicted` is the Eq. 7 cost of the policy's own decisions. The non-shared kernel keeps "
                 "per-type running sums (hamlet.md §2.7 fast path), O(|pt|) per event and query instead "
                 "of Eq. 4's O(n) scan, so its run time does not grow like its operation count.")
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
