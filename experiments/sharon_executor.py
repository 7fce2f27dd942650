"""sharon-executor: throughput, latency and measured operations of Non-Shared vs greedy-plan vs
optimal-plan execution on Spark as the workload grows (Sharon Fig. 14b/14f and Fig. 16).

Three workloads (``workload`` column):

* ``generated``: ``cepopt.instances.sharon_generator.make_instance`` (default preset: 30 types,
  queries of length 10 built from 12 shared pieces, relative rates 1-6, the authors'
  optimizer-benchmark shape), WITHIN 10 SLIDE 5; stream ``gen:workload`` for that instance (types
  drawn at the stated rates, about 100 events per time unit, about 1000 events per window), 20k
  events. Sharing is mostly interior: many segments per query, real greedy/optimal differences.
* ``ecommerce`` (Sharon §8.1 EC shape): purchase sequences over items I0..I49 with [customer];
  ``queries/6`` bundles of 8 items, each query = a bundle + 2 random items (length 10), so queries
  of a bundle share it as a prefix; WITHIN 120 SLIDE 60 (seconds); stream ``gen:ecommerce``
  (20 customers, 40 events/s), 24k events; statistics = expected events per type, window and
  customer.

* ``ec-shared``: the ecommerce stream and shape with the paper's sharing degree (§8.1: many queries
  share long sub-patterns): ``queries/30`` bundles of 9 items, each query = a bundle + 1 own item
  (length 10), WITHIN 120 SLIDE 120; the predicted non-shared/optimal cost ratio is about 7.7.

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
EVENTS = {"generated": 20_000, "ecommerce": 24_000, "ec-shared": 24_000}
WINDOW, SLIDE = 10, 5
EC_ITEMS, EC_CUSTOMERS, EC_RATE, EC_BUNDLE, EC_SUFFIX = 50, 20, 40.0, 8, 2
EC_WINDOW, EC_SLIDE = 120, 60
# ec-shared: the paper's sharing degree (§8.1: many queries share long sub-patterns): 30 queries per
# bundle, each = a bundle of 9 items + 1 own item, so the shared prefix is 90% of every query
SH_PER_BUNDLE, SH_BUNDLE, SH_SUFFIX, SH_SLIDE = 30, 9, 1, 120
BLOCK = 4
REPEAT = 2


def make_instance(queries: int, seed: int = 0, *, workload: str = "generated", window: int | None = None,
                  slide: int | None = None):
    """The benchmark instance of ``workload`` (see the module docstring); deterministic in ``seed``."""
    if workload == "generated":
        from cepopt.instances.sharon_generator import make_instance as sharon_instance

        return sharon_instance(queries=queries, seed=seed, window=window or WINDOW, slide=slide or SLIDE)
    if workload == "ecommerce":
        return _ecommerce_instance(queries, seed, window or EC_WINDOW, slide or EC_SLIDE)
    if workload == "ec-shared":
        return _ecommerce_instance(queries, seed, window or EC_WINDOW, slide or SH_SLIDE, per_bundle=SH_PER_BUNDLE,
                                   bundle=SH_BUNDLE, suffix=SH_SUFFIX, label="ec-shared")
    raise ValueError(f"unknown workload {workload!r}")


def _ecommerce_instance(queries: int, seed: int, window: int, slide: int, *, per_bundle: int = 6,
                        bundle: int = EC_BUNDLE, suffix: int = EC_SUFFIX, label: str = "ecommerce"):
    import random

    from cepopt.instance import Instance
    from cepopt.model import Equivalence, Query, Seq, Statistics, Type, Window, Workload

    rnd = random.Random(seed)
    items = [f"I{i}" for i in range(EC_ITEMS)]
    bundles = [rnd.sample(items, bundle) for _ in range(max(1, queries // per_bundle))]
    qs = []
    for i in range(queries):
        b = bundles[i % len(bundles)]
        tail = rnd.sample([t for t in items if t not in b], suffix)
        qs.append(Query(Seq(tuple(Type(t) for t in b + tail)), Window(window, slide),
                        where=(Equivalence("customer"),), name=f"q{i + 1}"))
    used = sorted({t for q in qs for t in q.pattern.event_types()})
    per_window = EC_RATE * window / EC_ITEMS / EC_CUSTOMERS
    stats = Statistics(rates={t: EC_RATE / EC_ITEMS for t in used},
                       events_per_window={t: per_window for t in used})
    return Instance("sharon", Workload(tuple(qs)), stats, name=f"{label}-{queries}q-s{seed}")


def _stream(workload: str, inst, seed: int, events: int):
    from cepopt.instances.streams import generate

    if workload in ("ecommerce", "ec-shared"):
        return generate("ecommerce", seed=seed, events=events, items=EC_ITEMS, customers=EC_CUSTOMERS,
                        rate=EC_RATE)
    return generate("workload", seed=seed, instance=inst, events=events)


def grid(quick: bool) -> list[dict]:
    if quick:
        return [{"workload": "generated", "queries": 6, "seed": 0, "events": 1500, "repeat": 1}]
    return [{"workload": w, "queries": q, "seed": 0, "events": EVENTS[w], "repeat": REPEAT}
            for w in ("ec-shared", "generated", "ecommerce") for q in QUERIES]


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
    from cepopt.sharon.plan import SharonPlan

    queries, seed, events = int(point["queries"]), int(point["seed"]), int(point["events"])
    workload = str(point.get("workload", "generated"))
    inst = make_instance(queries, seed, workload=workload)
    problem, plans = _plans(inst)
    stream = _stream(workload, inst, seed, events)
    spark = get_spark()
    repeat = int(point.get("repeat", REPEAT))
    sdf = to_spark(stream, spark)
    if repeat > 1:
        # the stream is read by several jobs: build it once
        sdf = sdf.cache()
        sdf.count()
    if repeat > 1:
        # warm the Python workers up (imports, first tasks) so that no plan pays for it
        sharon_driver.execute(problem, SharonPlan.empty(), sdf.limit(200), spark, windows_per_block=BLOCK)
    rows = []
    for name in PLANS:
        plan, status, score = plans[name]
        plan = plan if plan is not None else SharonPlan.empty()
        # best of REPEAT runs: the machine is shared, the minimum is the least disturbed measurement
        runs = [sharon_driver.execute(problem, plan, sdf, spark, windows_per_block=BLOCK) for _ in range(repeat)]
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
    if repeat > 1:
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
    import pandas as pd

    out_dir = Path(out_dir)
    if "workload" not in df.columns:
        df = df.assign(workload="generated")
    df = df.sort_values(["workload", "queries", "plan"])
    workloads = list(dict.fromkeys(df["workload"]))
    fig, axes = plt.subplots(len(workloads), 3, figsize=(14, 4 * len(workloads)), squeeze=False)
    for row, wl in zip(axes, workloads, strict=True):
        for plan, sub in df[df["workload"] == wl].groupby("plan"):
            row[0].plot(sub["queries"], sub["throughput"], marker="o", label=plan)
            row[1].plot(sub["queries"], sub["latency_s"] * 1000, marker="o", label=plan)
            row[2].plot(sub["queries"], sub["operations"], marker="o", label=plan)
        row[0].set_ylabel(f"{wl}: throughput (events/s)")
        row[1].set_ylabel("latency proxy (kernel ms per window)")
        row[2].set_ylabel("measured operations")
        row[2].set_yscale("log")
        for ax in row:
            ax.set_xlabel("queries")
            ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "sharon-executor.png", dpi=110)
    plt.close(fig)

    lines = []
    same = df.groupby(["workload", "queries"])["digest"].nunique()
    lines.append(f"Identical results under every plan: **{bool((same == 1).all())}** "
                 f"({len(same)} workloads x sizes, each with one results digest over its plans).\n")
    rows = []
    for (wl, q), sub in df.groupby(["workload", "queries"]):
        by = sub.set_index("plan")
        if not set(PLANS) <= set(by.index):
            continue
        t, k, o = by["time_s"], by["kernel_s"], by["operations"]
        rows.append({"workload": wl, "queries": q,
                     "time nonshared/opt": t["nonshared"] / t["optimal"],
                     "kernel nonshared/opt": k["nonshared"] / k["optimal"],
                     "time greedy/opt": t["greedy"] / t["optimal"],
                     "ops nonshared/opt": o["nonshared"] / o["optimal"],
                     "ops greedy/opt": o["greedy"] / o["optimal"],
                     "predicted nonshared/opt": by["predicted_cost"]["nonshared"] / by["predicted_cost"]["optimal"]})
    lines.append(markdown_table(pd.DataFrame(rows), floatfmt=".3g"))
    lines.append("")
    for wl in workloads:
        sub = df[(df["workload"] == wl) & df["predicted_cost"].notna()]
        rho = _spearman(sub["predicted_cost"].to_numpy(float), sub["operations"].to_numpy(float))
        per = [(q, _spearman(g["predicted_cost"].to_numpy(float), g["operations"].to_numpy(float)))
               for q, g in sub.groupby("queries")]
        lines.append(f"- {wl}: Spearman(predicted cost, measured operations) over all rows **{rho:.3f}**; "
                     "per size: " + ", ".join(f"{q}: {r:.2f}" for q, r in per))
    lines.append("")
    lines.append(markdown_table(df, ["workload", "queries", "plan", "status", "score", "shared_entries", "time_s",
                                     "kernel_s", "throughput", "latency_s", "operations", "predicted_cost",
                                     "digest"]))
    lines.append(
        "\nReading: `operations` are the kernels' deterministic count updates and combinations (the "
        "quantity Eq. 2-7 model); `time_s` is the best of the repeated Spark runs on a shared 2-core "
        "machine, so it carries Spark's fixed job cost and other processes' load; `kernel_s` sums the "
        "per-partition kernel times. COUNT(*) workloads run the vectorized kernel "
        "(`executor/aseq_fast.py`: one NumPy matrix per partition, rows = instance levels, columns = START "
        "batches, one set of array operations per time-stamp batch); its per-batch cost is a few dozen NumPy "
        "calls whatever the plan, so on streams whose batches hold one event (ecommerce, ec-shared: one "
        "customer's events have distinct time stamps) the fixed per-batch cost, not the count updates, still "
        "sets the time, and a plan's boundary snapshots add calls per batch.\n")
    import os

    lines.append(f"Machine: {os.cpu_count()} cores; load average when the report was written: "
                 f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}.\n")
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
