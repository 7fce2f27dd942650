"""sharon-executor: throughput, latency and measured operations of Non-Shared vs greedy-plan vs
optimal-plan execution on Spark as the workload grows (Sharon Fig. 14b/14f and Fig. 16).

Workload: ``cepopt.instances.sharon_generator.make_instance`` (default preset: 30 types, queries of
length 10 built from 12 shared pieces, relative rates 1-6, the authors' optimizer-benchmark shape),
WITHIN 10 SLIDE 5. Stream: ``gen:workload`` for that instance (types drawn at the stated rates, about
100 events per time unit, so about 1000 events per window).

Plans: ``nonshared`` (A-Seq for every query), ``greedy`` (GO: GWMIN on the Sharon graph without
expansion), ``optimal`` (the exact MWIS of the expanded Sharon graph by CP-SAT, 60 s limit). Each plan
runs on Spark (``local[2]`` unless CEPOPT_SPARK_MASTER says otherwise) through
:func:`cepopt.executor.sharon_driver.execute`, the stream cut into blocks of ``BLOCK`` windows; every
plan must give the same results digest.

Columns: time_s (end to end, one Spark job), kernel_s (sum of per-partition kernel time),
throughput (stream events / time_s), latency_s (kernel time per window: the mean time to produce a
window's results once its events are in), operations (measured count updates + combinations),
predicted_cost (cost model: NonShared total minus the plan's score), score, digest.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cepopt.experiments.framework import Experiment, markdown_table

__all__ = ["EXPERIMENT", "make_instance"]

QUERIES = (20, 40, 60, 80, 100, 120)
PLANS = ("nonshared", "greedy", "optimal")
EVENTS = 20_000
WINDOW, SLIDE = 10, 5
BLOCK = 4
REPEAT = 2


def make_instance(queries: int, seed: int = 0, *, window: int = WINDOW, slide: int = SLIDE):
    """The benchmark instance (see the module docstring); deterministic in ``seed``."""
    from cepopt.instances.sharon_generator import make_instance as sharon_instance

    return sharon_instance(queries=queries, seed=seed, window=window, slide=slide)


def grid(quick: bool) -> list[dict]:
    if quick:
        return [{"queries": 6, "seed": 0, "events": 1500, "repeat": 1}]
    return [{"queries": q, "seed": 0, "events": EVENTS} for q in QUERIES]


def _plans(inst):
    from cepopt.solve import build_problem, solve

    _, plain, _ = build_problem(inst, {"expand": False})
    _, expanded, _ = build_problem(inst)
    g = solve(inst, "greedy", seed=0, problem=plain)
    o = solve(inst, "cpsat", time_limit=60, seed=0, problem=expanded)
    return expanded, {"nonshared": (None, "-", 0.0), "greedy": (g.plan, g.status, g.objective),
                      "optimal": (o.plan, o.status, o.objective)}


def run(point: dict) -> list[dict]:
    from cepopt.executor import sharon_driver
    from cepopt.executor.session import get_spark
    from cepopt.executor.streams import to_spark
    from cepopt.instances.streams import generate
    from cepopt.sharon.plan import SharonPlan

    queries, seed, events = int(point["queries"]), int(point["seed"]), int(point["events"])
    inst = make_instance(queries, seed)
    problem, plans = _plans(inst)
    stream = generate("workload", seed=seed, instance=inst, events=events)
    spark = get_spark()
    sdf = to_spark(stream, spark).cache()
    sdf.count()
    if int(point.get("repeat", REPEAT)) > 1:
        # warm the Python workers up (imports, first tasks) so that no plan pays for it
        sharon_driver.execute(problem, SharonPlan.empty(), sdf.limit(200), spark, windows_per_block=BLOCK)
    rows = []
    for name in PLANS:
        plan, status, score = plans[name]
        plan = plan if plan is not None else SharonPlan.empty()
        # best of REPEAT runs: the machine is shared, the minimum is the least disturbed measurement
        runs = [sharon_driver.execute(problem, plan, sdf, spark, windows_per_block=BLOCK)
                for _ in range(int(point.get("repeat", REPEAT)))]
        res = min(runs, key=lambda r: r.time_s)
        if len({r.digest() for r in runs}) != 1:
            raise RuntimeError(f"{name}: repeated runs gave different results")
        n_windows = max(1, res.results["window"].nunique())
        rows.append({
            "plan": name, "status": status, "score": score, "shared_entries": len(plan),
            "time_s": round(res.time_s, 4),
            "kernel_s": round(min(float(r.metrics["kernel_s"]) for r in runs), 4),
            "throughput": round(events / res.time_s, 1),
            "latency_s": min(float(r.metrics["kernel_s"]) for r in runs) / n_windows,
            "operations": res.operations, "update_ops": int(res.metrics["update"]),
            "combine_ops": int(res.metrics["combine"]), "predicted_cost": res.predicted_cost,
            "results_rows": len(res.results), "digest": res.digest()[:16],
        })
    sdf.unpersist()
    return rows


def _spearman(x, y) -> float:
    rx = np.argsort(np.argsort(x)).astype(float)
    ry = np.argsort(np.argsort(y)).astype(float)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def report(df, out_dir: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    df = df.sort_values(["queries", "plan"])
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for plan, sub in df.groupby("plan"):
        axes[0].plot(sub["queries"], sub["throughput"], marker="o", label=plan)
        axes[1].plot(sub["queries"], sub["latency_s"] * 1000, marker="o", label=plan)
        axes[2].plot(sub["queries"], sub["operations"], marker="o", label=plan)
    axes[0].set_ylabel("throughput (events/s)")
    axes[1].set_ylabel("latency proxy (kernel ms per window)")
    axes[2].set_ylabel("measured operations")
    for ax in axes:
        ax.set_xlabel("queries")
        ax.legend()
    axes[2].set_yscale("log")
    fig.tight_layout()
    fig.savefig(out_dir / "sharon-executor.png", dpi=110)
    plt.close(fig)

    lines = []
    same = df.groupby("queries")["digest"].nunique()
    lines.append(f"Identical results under every plan: **{bool((same == 1).all())}** "
                 f"(distinct digests per workload size: {({int(k): int(v) for k, v in same.items()})}).\n")
    wide = df.pivot_table(index="queries", columns="plan", values=["time_s", "kernel_s", "operations"])
    rows = []
    for q in wide.index:
        t, k, o = wide["time_s"].loc[q], wide["kernel_s"].loc[q], wide["operations"].loc[q]
        rows.append({"queries": q,
                     "speedup opt/nonshared (time)": t["nonshared"] / t["optimal"],
                     "speedup opt/nonshared (kernel)": k["nonshared"] / k["optimal"],
                     "speedup opt/greedy (time)": t["greedy"] / t["optimal"],
                     "ops nonshared/opt": o["nonshared"] / o["optimal"],
                     "ops greedy/opt": o["greedy"] / o["optimal"]})
    import pandas as pd

    summary = pd.DataFrame(rows)
    lines.append(markdown_table(summary, floatfmt=".3g"))
    rhos = []
    for q, sub in df.groupby("queries"):
        if sub["predicted_cost"].notna().all() and len(sub) > 1:
            rhos.append((q, _spearman(sub["predicted_cost"].to_numpy(float), sub["operations"].to_numpy(float))))
    allp = df[df["predicted_cost"].notna()]
    rho_all = _spearman(allp["predicted_cost"].to_numpy(float), allp["operations"].to_numpy(float))
    lines.append(f"\nSpearman(predicted cost, measured operations) over all rows: **{rho_all:.3f}**; "
                 "per workload size: " + ", ".join(f"{q}: {r:.2f}" for q, r in rhos) + "\n")
    lines.append(markdown_table(df, ["queries", "plan", "status", "score", "shared_entries", "time_s", "kernel_s",
                                     "throughput", "latency_s", "operations", "predicted_cost", "digest"]))
    lines.append(
        "\nReading: `operations` are the kernels' deterministic count updates and combinations (the "
        "quantity Eq. 2-7 model); `time_s` is the best of the repeated Spark runs on a shared 2-core "
        "machine, so it carries Spark's fixed job cost and other processes' load. The kernels are NumPy "
        "per START record; with about ten live START records per instance, their time is dominated by "
        "per-call Python overhead, which grows with the number of segments and boundary snapshots a "
        "plan creates, not with the count updates it saves.\n")
    lines.append("\n![sharon-executor](sharon-executor.png)\n")
    return "\n".join(lines)


EXPERIMENT = Experiment(
    name="sharon-executor",
    description=("Sharon executor on Spark: Non-Shared (A-Seq) vs greedy-plan vs optimal-plan execution of "
                 "generated Sharon workloads of 20-120 queries (length 10, WITHIN 10 SLIDE 5) on a stream "
                 "drawn at the workload's rates; throughput, latency proxy and measured operations."),
    grid=grid,
    run=run,
    report=report,
    paper_claim=("Sharon is 5- to 18-fold faster than A-Seq as queries grow from 20 to 120 (Fig. 14b/14f); "
                 "at 180 queries the optimal plan halves executor latency compared with the greedy plan "
                 "(Fig. 16)."),
    uses_spark=True,
)
