"""``cepopt experiment validate-cost-models``: does each family's cost model rank plans the way Spark
measures them?

For every family and seed: generate an instance, take the plan of every method (plus the non-shared /
trivial plan), execute each distinct plan on Spark over a stream drawn from the instance's own
statistics (``gen:workload``), and record the predicted cost, the measured operations and the wall
time. The report gives, per family, the Spearman rank correlation between predicted cost and measured
operations (and wall time) within each instance, averaged over instances.
"""

from __future__ import annotations

from pathlib import Path

from cepopt.experiments.framework import Experiment, markdown_table

# Integer timestamps need a join window of whole time units; low rates keep partial matches moderate.
_JO_EXEC = ["--window", "2", "--rate-min", "0.5", "--rate-max", "4", "--sel-min", "0.05", "--sel-max", "0.5"]

FAMILIES = {
    # family: (generator arguments, stream events, quick generator arguments, quick stream events)
    "sharon": (["--queries", "30", "--length", "6", "--types", "10"], 30000,
               ["--queries", "12", "--length", "5", "--types", "8"], 4000),
    "gloria": (["--queries", "8"], 3000, ["--queries", "5"], 1500),
    "joinorder": (["--size", "5", *_JO_EXEC], 4000, ["--size", "4", *_JO_EXEC], 2000),
}


RANDOM_COUNT = 10


def _random_sharon(problem, count: int, seed: int) -> list:
    """Random independent sets of the Sharon graph: a random maximal one (random vertex order, first
    fit), cut to a random size, so that plans range from non-shared to near-optimal (maximal sets
    alone are all within a few per cent of the optimum)."""
    import random

    rng = random.Random(seed)
    graph = problem.graph
    adj = graph.adj
    plans = []
    for _ in range(count):
        order = list(range(len(graph)))
        rng.shuffle(order)
        chosen: list[int] = []
        blocked: set[int] = set()
        for v in order:
            if v not in blocked:
                chosen.append(v)
                blocked |= adj[v] | {v}
        plans.append(problem.plan_of(chosen[:rng.randint(1, len(chosen))] if chosen else [], graph))
    return plans


def _random_gloria(problem, count: int, seed: int) -> list:
    from cepopt.gloria.methods import candidate_graph
    from cepopt.gloria.sample import random_plans

    return random_plans(candidate_graph(problem, "noprune"), count, seed=seed)


#: families whose instances also execute random valid plans, so that plans of every quality are ranked
RANDOM_PLANS = {"sharon": _random_sharon, "gloria": _random_gloria}


def grid(quick: bool) -> list[dict]:
    seeds = range(1) if quick else range(5)
    return [{"family": fam, "seed": seed, "quick": quick} for fam in FAMILIES for seed in seeds]


def run(point: dict) -> list[dict]:
    from cepopt.executor.session import get_spark
    from cepopt.instances.generate import generate
    from cepopt.pipeline import execute
    from cepopt.solve import compare, family

    args, events, quick_args, quick_events = FAMILIES[point["family"]]
    if point["quick"]:
        args, events = quick_args, quick_events
    inst = generate(point["family"], [*args, "--seed", str(point["seed"])])
    fam = family(inst.problem)
    sols = compare(inst, time_limit=30, seed=point["seed"])
    plans = {}
    for sol in sols:
        if sol.plan is not None:
            plans.setdefault(repr(sol.plan_json), (sol.method, sol.plan))
    problem = fam.build(inst)
    if fam.baseline_plan is not None:
        plan = fam.baseline_plan(problem)
        plans.setdefault(repr(fam.plan_to_json(plan)), ("baseline", plan))
    sampler = RANDOM_PLANS.get(point["family"])
    if sampler is not None:
        for plan in sampler(problem, 3 if point["quick"] else RANDOM_COUNT, point["seed"]):
            plans.setdefault(repr(fam.plan_to_json(plan)), ("random", plan))
    spark = get_spark()
    stream = f"gen:workload:events={events},seed={point['seed']}"
    rows, digests = [], set()
    for method, plan in plans.values():
        res = execute(inst, plan, stream, spark=spark, problem=problem)
        digests.add(res.digest())
        rows.append({"method": method, "predicted_cost": fam.predict(problem, plan), "operations": res.operations,
                     "time_s": res.time_s})
    for row in rows:
        row["answers_agree"] = len(digests) == 1
    return rows


def report(df, out_dir: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.stats import spearmanr

    summary = []
    for fam, group in df.groupby("family"):
        rho_ops, rho_time, pairs, agree = [], [], 0, 0
        for _, inst in group.groupby("seed"):
            if inst["predicted_cost"].nunique() > 1 and len(inst) > 2:
                rho_ops.append(spearmanr(inst["predicted_cost"], inst["operations"]).statistic)
                rho_time.append(spearmanr(inst["predicted_cost"], inst["time_s"]).statistic)
            rows = inst[["predicted_cost", "operations"]].to_numpy()
            for i in range(len(rows)):
                for j in range(i + 1, len(rows)):
                    if rows[i][0] != rows[j][0] and rows[i][1] != rows[j][1]:
                        pairs += 1
                        agree += (rows[i][0] < rows[j][0]) == (rows[i][1] < rows[j][1])
        summary.append({
            "family": fam, "instances": group["seed"].nunique(), "plans": len(group),
            "spearman_ops": sum(rho_ops) / len(rho_ops) if rho_ops else float("nan"),
            "spearman_time": sum(rho_time) / len(rho_time) if rho_time else float("nan"),
            "plan_pairs_ordered_alike": f"{agree}/{pairs}",
            "answers_agree": bool(group["answers_agree"].all()),
        })
    import pandas as pd

    table = pd.DataFrame(summary)
    fig, axes = plt.subplots(1, max(1, df["family"].nunique()), figsize=(5 * max(1, df["family"].nunique()), 4))
    axes = axes if hasattr(axes, "__iter__") else [axes]
    for ax, (fam, group) in zip(axes, df.groupby("family")):
        ax.scatter(group["predicted_cost"], group["operations"])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(fam)
        ax.set_xlabel("predicted cost")
        ax.set_ylabel("measured operations")
    fig.tight_layout()
    fig.savefig(out_dir / "validate-cost-models.png", dpi=100)
    plt.close(fig)
    return ("Spearman rank correlation between predicted cost and measured cost, per instance with at "
            "least three distinct plans, averaged (NaN: none); plan_pairs_ordered_alike counts, over all "
            "pairs of plans of one instance, those that predicted cost and measured operations order the "
            "same way.\n\n" + markdown_table(table) +
            "\n\n![predicted vs measured](validate-cost-models.png)\n")


EXPERIMENT = Experiment(
    name="validate-cost-models",
    description="Predicted cost vs measured Spark cost of every method's plan, per family (Spearman).",
    grid=grid, run=run, report=report, uses_spark=True,
    paper_claim="Each paper's optimizer relies on its cost model ranking plans as execution does.",
)
