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

* ``ec-shared``: the paper's setting (§8.1 EC: 50 items, 20 customers, pattern length 10, 200k events
  per window by default) with its sharing degree (many queries share long sub-patterns):
  ``queries/30`` bundles of 9 items, each query = a bundle + 1 own item, WITHIN 12500 SLIDE 12500
  (seconds) over the ecommerce stream at 20 events/s, so a window holds 250k events (about 250 per
  item and customer, mostly one per customer and time stamp, so the kernels' array work follows the
  counted operations; 250 keeps the 10-event counts inside int64), 500k events (two windows). This
  is the workload of the target "optimal >= 5x faster than non-shared at 120 queries".

The ecommerce streams are cached partitioned by customer (a keyed source), so no plan's job shuffles.

Plans: ``nonshared`` (A-Seq for every query), ``greedy`` (GO: GWMIN on the Sharon graph without
expansion), ``optimal`` (the exact MWIS of the expanded Sharon graph by CP-SAT, 60 s limit). Each plan
runs on Spark (``local[2]`` unless CEPOPT_SPARK_MASTER says otherwise) through
:func:`cepopt.executor.api.execute` (Spark engine), the stream cut into blocks of ``BLOCK`` windows, and
kernel-only: the same partitions made in pandas (:func:`cepopt.executor.sharon_exec.local_partitions`)
and run in process by the compiled plan (:func:`cepopt.executor.sharon_exec.compile_sharon`), without
Spark; every plan, both ways, must give the same results digest.

Columns: time_s (end to end, one Spark job), kernel_s / kernel_cpu_s (sum of per-partition kernel
wall / CPU time inside that job), kernel_only_s / kernel_only_cpu_s (wall / CPU time of the kernel-only
run: preparing each partition's arrays, the compiled loops, the partial aggregates; best of the
rounds, plans interleaved), load_1m (the machine's load average when the plan ran), same_plan (greedy:
its plan is the optimal one),
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
EVENTS = {"generated": 20_000, "ecommerce": 24_000, "ec-shared": 500_000}
WINDOW, SLIDE = 10, 5
EC_ITEMS, EC_CUSTOMERS, EC_RATE, EC_BUNDLE, EC_SUFFIX = 50, 20, 40.0, 8, 2
EC_WINDOW, EC_SLIDE = 120, 60
# ec-shared: the paper's sharing degree (§8.1: many queries share long sub-patterns): 30 queries per
# bundle, each = a bundle of 9 items + 1 own item, so the shared prefix is 90% of every query
SH_PER_BUNDLE, SH_BUNDLE, SH_SUFFIX = 30, 9, 1
# 20 events/s x 12500 s = 250k events per window (the paper's default is 200k), ~1 per customer and second
SH_RATE, SH_WINDOW = 20.0, 12_500
BLOCK = 4
REPEAT = 3
REPEAT_AT = {"ec-shared": 5}  # its largest sizes are the 5x target: more rounds against timing noise
#: the target: optimal at least this much faster than non-shared at the largest size (ec-shared)
TARGET = 12.0
#: "optimal never slower than greedy" is broken only when time and kernel CPU greedy/optimal are both
#: below this (timing noise of a shared machine: identical plans differ by more than 10 % end to end)
NOISE = 0.9


def make_instance(queries: int, seed: int = 0, *, workload: str = "generated", window: int | None = None,
                  slide: int | None = None):
    """The benchmark instance of ``workload`` (see the module docstring); deterministic in ``seed``."""
    if workload == "generated":
        from cepopt.instances.sharon_generator import make_instance as sharon_instance

        return sharon_instance(queries=queries, seed=seed, window=window or WINDOW, slide=slide or SLIDE)
    if workload == "ecommerce":
        return _ecommerce_instance(queries, seed, window or EC_WINDOW, slide or EC_SLIDE)
    if workload == "ec-shared":
        return _ecommerce_instance(queries, seed, window or SH_WINDOW, slide or SH_WINDOW, per_bundle=SH_PER_BUNDLE,
                                   bundle=SH_BUNDLE, suffix=SH_SUFFIX, label="ec-shared", rate=SH_RATE)
    raise ValueError(f"unknown workload {workload!r}")


def _ecommerce_instance(queries: int, seed: int, window: int, slide: int, *, per_bundle: int = 6,
                        bundle: int = EC_BUNDLE, suffix: int = EC_SUFFIX, label: str = "ecommerce",
                        rate: float = EC_RATE):
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
    per_window = rate * window / EC_ITEMS / EC_CUSTOMERS
    stats = Statistics(rates={t: rate / EC_ITEMS for t in used},
                       events_per_window={t: per_window for t in used})
    return Instance("sharon", Workload(tuple(qs)), stats, name=f"{label}-{queries}q-s{seed}")


def _stream(workload: str, inst, seed: int, events: int):
    from cepopt.instances.streams import generate

    if workload in ("ecommerce", "ec-shared"):
        return generate("ecommerce", seed=seed, events=events, items=EC_ITEMS, customers=EC_CUSTOMERS,
                        rate=SH_RATE if workload == "ec-shared" else EC_RATE)
    return generate("workload", seed=seed, instance=inst, events=events)


def grid(quick: bool) -> list[dict]:
    if quick:
        return [{"workload": "generated", "queries": 6, "seed": 0, "events": 1500, "repeat": 1}]
    return [{"workload": w, "queries": q, "seed": 0, "events": EVENTS[w], "repeat": REPEAT_AT.get(w, REPEAT)}
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
    import os

    from cepopt.executor.api import execute
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
    if "customer" in stream.columns:
        # a source keyed by customer (the queries' equivalence attribute), as a partitioned topic would
        # be: the plans' jobs group by it without a shuffle of their own
        sdf = sdf.repartition(int(spark.conf.get("spark.sql.shuffle.partitions")), "customer")
    if repeat > 1:
        # the stream is read by several jobs: build it once
        sdf = sdf.cache()
        sdf.count()
    if repeat > 1:
        # warm the Python workers up (imports, first tasks) so that no plan pays for it
        execute(problem, SharonPlan.empty(), sdf.limit(200), family="sharon", spark=spark,
                windows_per_block=BLOCK).release()
    rows = []
    kernel = _kernel_only(problem, plans, stream, repeat)
    # best of REPEAT runs, the plans interleaved round by round: the machine is shared, the minimum is
    # the least disturbed measurement, and interleaving spreads a slow spell over every plan
    all_runs: dict[str, list] = {name: [] for name in PLANS}
    for _ in range(repeat):
        for name in PLANS:
            plan = plans[name][0] if plans[name][0] is not None else SharonPlan.empty()
            all_runs[name].append(execute(problem, plan, sdf, family="sharon", spark=spark,
                                          windows_per_block=BLOCK))
    for name in PLANS:
        plan, status, score = plans[name]
        plan = plan if plan is not None else SharonPlan.empty()
        runs = all_runs[name]
        res = min(runs, key=lambda r: r.time_s)
        if len({r.digest() for r in runs} | {kernel[name]["digest"]}) != 1:
            raise RuntimeError(f"{name}: repeated runs (or the kernel-only run) gave different results")
        n_windows = max(1, res.to_pandas()["window"].nunique())
        rows.append({
            "plan": name, "status": status, "score": score, "shared_entries": len(plan),
            "same_plan": name == "greedy" and plans["greedy"][0] == plans["optimal"][0],
            "time_s": round(res.time_s, 4),
            "kernel_s": round(min(float(r.metrics["kernel_s"]) for r in runs), 4),
            "kernel_cpu_s": round(min(float(r.metrics["kernel_cpu_s"]) for r in runs), 4),
            "kernel_only_s": round(kernel[name]["wall"], 4), "kernel_only_cpu_s": round(kernel[name]["cpu"], 4),
            "load_1m": round(os.getloadavg()[0], 2),
            "throughput": round(events / res.time_s, 1),
            "latency_s": min(float(r.metrics["kernel_s"]) for r in runs) / n_windows,
            "operations": res.operations, "update_ops": int(res.metrics["update"]),
            "combine_ops": int(res.metrics["combine"]), "predicted_cost": res.predicted_cost,
            "results_rows": res.row_count(), "digest": res.digest()[:16],
        })
        for r in runs:
            r.release()
    if repeat > 1:
        sdf.unpersist()
    return rows


def _kernel_only(problem, plans: dict, stream, repeat: int) -> dict[str, dict]:
    """Per plan the kernels alone, in process (no Spark): the stream cut into the partitions the engines
    make (:func:`cepopt.executor.sharon_exec.local_partitions`, the same for every plan), each run by the
    compiled plan; best wall and CPU time of ``repeat`` rounds, plans interleaved, and the digest."""
    import time

    from cepopt.executor.results import digest
    from cepopt.executor.sharon_exec import compile_sharon, local_partitions, run_local
    from cepopt.sharon.plan import SharonPlan

    compiled = {name: compile_sharon(problem, plans[name][0] or SharonPlan.empty(), windows_per_block=BLOCK)
                for name in PLANS}
    parts = list(local_partitions(compiled["nonshared"], stream))
    for c in compiled.values():  # load the compiled loops before timing
        run_local(c, parts[:1])
    out = {name: {"wall": float("inf"), "cpu": float("inf")} for name in PLANS}
    for _ in range(max(1, repeat)):
        for name in PLANS:
            wall, cpu = time.perf_counter(), time.process_time()
            results, _ = run_local(compiled[name], parts)
            out[name]["wall"] = min(out[name]["wall"], time.perf_counter() - wall)
            out[name]["cpu"] = min(out[name]["cpu"], time.process_time() - cpu)
            out[name]["digest"] = digest(results)
    return out


def _targets(summary) -> list[str]:
    """The issue's target lines: optimal >= TARGET x faster than non-shared at the largest size (the
    paper's setting, ec-shared), and optimal never slower than greedy (beyond timing noise)."""
    out = ["## Targets\n"]
    if summary.empty:
        return out
    for wl, sub in summary.groupby("workload"):
        top = sub.loc[sub["queries"].idxmax()]
        ratio = top["time nonshared/opt"]
        verdict = "**met**" if ratio >= TARGET else "**missed**"
        if wl != "ec-shared":
            verdict += (f" (not the paper's setting: its operation ratio is {top['ops nonshared/opt']:.2f}x, "
                        f"so {TARGET:g}x is out of reach; the target is about ec-shared)")
        out.append(f"- {wl}, {int(top['queries'])} queries: optimal is **{ratio:.2f}x** faster than non-shared end "
                   f"to end, **{top['kernel only nonshared/opt']:.2f}x** kernel-only (CPU time of the kernels "
                   f"in process; on Spark the kernels' CPU {top['kernel cpu nonshared/opt']:.2f}x; operations "
                   f"{top['ops nonshared/opt']:.2f}x); target >= {TARGET:g}x end to end: {verdict}.")
    same = summary[summary["greedy plan"] == "= optimal"]
    diff = summary[summary["greedy plan"] != "= optimal"]
    # slower beyond noise: end-to-end time and kernel-only CPU time both say so
    bad = diff[(diff["time greedy/opt"] < NOISE) & (diff["kernel only greedy/opt"] < NOISE)]
    out.append(f"- optimal never slower than greedy: {len(same)} of {len(summary)} workload sizes have identical "
               "greedy and optimal plans (same work; their time ratio "
               f"{same['time greedy/opt'].min():.2f}-{same['time greedy/opt'].max():.2f} is timing noise)"
               if len(same) else "- optimal never slower than greedy: the plans differ at every size")
    if len(diff):
        out.append(f"- where the greedy and optimal plans differ ({len(diff)} sizes), optimal does "
                   f"{diff['ops greedy/opt'].min():.2f}-{diff['ops greedy/opt'].max():.2f}x fewer operations "
                   "than greedy and time greedy/opt is "
                   f"{diff['time greedy/opt'].min():.2f}-{diff['time greedy/opt'].max():.2f} (kernel-only "
                   f"{diff['kernel only greedy/opt'].min():.2f}-{diff['kernel only greedy/opt'].max():.2f}): "
                   + ("**met**" if bad.empty else
                      f"**missed** at {', '.join(f'{w} {q}' for w, q in zip(bad['workload'], bad['queries']))} "
                      f"(time and kernel-only greedy/opt < {NOISE:g})") + ".")
    out.append("")
    return out


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
        t, o = by["time_s"], by["operations"]
        cpu = by["kernel_cpu_s"] if "kernel_cpu_s" in by.columns else by["kernel_s"]
        # kernel-only: the kernels in process on the engines' partitions, no Spark (older rows: Spark's kernel CPU)
        ko = by["kernel_only_cpu_s"] if "kernel_only_cpu_s" in by.columns else cpu
        same = str(by["same_plan"]["greedy"]) == "True" if "same_plan" in by.columns else False
        rows.append({"workload": wl, "queries": q,
                     "time nonshared/opt": t["nonshared"] / t["optimal"],
                     "kernel only nonshared/opt": ko["nonshared"] / ko["optimal"],
                     "kernel cpu nonshared/opt": cpu["nonshared"] / cpu["optimal"],
                     "ops nonshared/opt": o["nonshared"] / o["optimal"],
                     "predicted nonshared/opt": by["predicted_cost"]["nonshared"] / by["predicted_cost"]["optimal"],
                     "time greedy/opt": t["greedy"] / t["optimal"],
                     "kernel only greedy/opt": ko["greedy"] / ko["optimal"],
                     "kernel cpu greedy/opt": cpu["greedy"] / cpu["optimal"],
                     "ops greedy/opt": o["greedy"] / o["optimal"],
                     "greedy plan": "= optimal" if same else "differs"})
    summary = pd.DataFrame(rows)
    lines.extend(_targets(summary))
    lines.append(markdown_table(summary, floatfmt=".3g"))
    lines.append("")
    for wl in workloads:
        sub = df[(df["workload"] == wl) & df["predicted_cost"].notna()]
        rho = _spearman(sub["predicted_cost"].to_numpy(float), sub["operations"].to_numpy(float))
        per = [(q, _spearman(g["predicted_cost"].to_numpy(float), g["operations"].to_numpy(float)))
               for q, g in sub.groupby("queries")]
        lines.append(f"- {wl}: Spearman(predicted cost, measured operations) over all rows **{rho:.3f}**; "
                     "per size: " + ", ".join(f"{q}: {r:.2f}" for q, r in per))
    lines.append("")
    cols = ["workload", "queries", "plan", "status", "score", "shared_entries", "time_s", "kernel_s",
            "kernel_cpu_s", "kernel_only_s", "kernel_only_cpu_s", "load_1m", "throughput", "latency_s", "operations",
            "predicted_cost", "digest"]
    lines.append(markdown_table(df, [c for c in cols if c in df.columns]))
    lines.append(
        "\nReading: `operations` are the kernels' deterministic count updates and combinations (the "
        "quantity Eq. 2-7 model); `time_s` is the best of the repeated Spark runs (one job each; the plans "
        "interleaved) on a shared machine, so it carries Spark's fixed job cost and other processes' load "
        "(`load_1m`); `kernel_s` / `kernel_cpu_s` sum the per-partition kernel wall / CPU times inside those "
        "jobs; `kernel_only_s` / `kernel_only_cpu_s` time the kernels alone in process on the same "
        "partitions (CPU time is the steadier measure under load). The kernel (`executor/sharon_loops.py`, "
        "compiled by numba) runs every plan and aggregate: per time-stamp batch, per instance level it "
        "touches, one loop over the live START records (the counted update), per boundary snapshot one "
        "sum over the START records of the previous segment (the counted combination; a first segment's "
        "sum is recomputed only when its last level changed); a query whose last segment is one event type "
        "adds the read to its window results at once. Work beside the counted operations (preparing the "
        "partition's arrays, per-event bookkeeping, the partial aggregates) costs both plans alike, so the "
        "time ratios stay below the operation ratios where a partition holds few events per query.\n")
    import os

    lines.append(f"Machine: {os.cpu_count()} cores; load average when the report was written: "
                 f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}.\n")
    lines.append("\n![sharon-executor](sharon-executor.png)\n")
    return "\n".join(lines)


EXPERIMENT = Experiment(
    name="sharon-executor",
    description=("Sharon executor on Spark: Non-Shared (A-Seq) vs greedy-plan vs optimal-plan execution of "
                 "workloads of 20-120 queries of length 10 (ec-shared: the paper's e-commerce setting, 250k "
                 "events per window; ecommerce; generated) on streams drawn at the workloads' rates; "
                 "throughput, latency proxy, kernel CPU time and measured operations."),
    grid=grid,
    run=run,
    report=report,
    paper_claim=("Sharon is 5- to 18-fold faster than A-Seq as queries grow from 20 to 120 (Fig. 14b/14f); "
                 "at 180 queries the optimal plan halves executor latency compared with the greedy plan "
                 "(Fig. 16)."),
    uses_spark=True,
)
