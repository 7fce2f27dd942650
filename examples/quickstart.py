"""A tour of cepopt's Python API: solve, compare, generate, execute, plot.

    python examples/quickstart.py plans.png

It solves Sharon's running example (Fig. 4) exactly, compares every method on it, writes a join-order
instance by hand (``cepopt.Instance``) and compares the join-order methods, generates a random Sharon
workload, executes three of its plans on a generated stream with the local engine (in process, no
JVM), checks that they give the same answers, and plots predicted against measured operations into
the PNG file named on the command line. It takes a few seconds.

Sharon's cost model prices one window, its rates counted per window: the stream is drawn so (``unit``
= the window length) and the prediction is scaled by the stream's windows, the unit of the measured
operations.
"""

import sys

import matplotlib

matplotlib.use("Agg")   # no display needed: the plot goes to a file

import matplotlib.pyplot as plt  # noqa: E402

import cepopt  # noqa: E402
from cepopt.instances.streams import generate as generate_stream  # noqa: E402
from cepopt.syntax import parse_queries  # noqa: E402


def main(png: str) -> None:
    # 1. Solve a bundled paper example with one exact method: the optimum of Fig. 4 is 50.
    fig4 = cepopt.load("sharon-fig4")
    best = cepopt.solve(fig4, "cpsat", time_limit=10, params={"expand": False})
    print(f"sharon-fig4 with cpsat: {best.status}, score {best.objective} (bound {best.bound})")
    print(best.plan)

    # 2. Compare every method of the family on it: objective, proven bound, gap, status, time.
    print(cepopt.compare(fig4, time_limit=10))

    # 3. An instance written by hand: which order should a CEP engine join SEQ(A, B, C) in?
    join = cepopt.Instance(
        problem="joinorder",
        name="cameras",
        workload=parse_queries("q: PATTERN SEQ(A a, B b, C c) WHERE a.id = c.id SEL 0.01 WITHIN 10 s"),
        statistics=cepopt.Statistics(rates={"A": 5, "B": 20, "C": 1}),
    )
    table = cepopt.compare(join, methods=["trivial", "greedy", "dp-ld", "dp-b"], time_limit=10)
    print(table)

    # 4. A random Sharon workload, as `cepopt generate sharon --queries 20 --length 8 --seed 1`.
    inst = cepopt.generate("sharon", seed=1, queries=20, length=8)

    # 5. Execute three plans on one generated stream, in process: same answers, different costs.
    # The rates count events per window (unit = the window length, 600 s), as the cost model does.
    window = inst.workload.queries[0].window.length
    events = generate_stream("workload", instance=inst, events=20000, seed=1, unit=int(window))
    windows = (events["ts"].max() - events["ts"].min() + 1) / window
    runs = {plan: cepopt.execute(inst, plan=plan, stream=events, engine="local")
            for plan in ("nonshared", "greedy", "cpsat-compact")}
    digests = {run.digest() for run in runs.values()}
    assert len(digests) == 1, "every plan must give the same answers"
    print(f"stream: {len(events):,} events over {windows:.1f} windows; predicted = per window x {windows:.1f}")
    for plan, run in runs.items():
        print(f"{plan:14s} predicted {run.predicted_cost * windows:>10,.0f}  measured {run.operations:>10,}"
              f"  (updates {run.metrics['update']:,}, combines {run.metrics['combine']:,})")
    # The updates follow the model; the combines do not: the model prices a shared pattern's combination
    # once per window (Eq. 5), the executor reads START records at each of the W/S = 10 window closes per
    # window length, so sharing saves less than predicted (README, "Execute a plan").

    # 6. Plot predicted against measured operations (the prediction of the whole stream).
    fig, ax = plt.subplots(figsize=(5, 4))
    for plan, run in runs.items():
        ax.scatter(run.predicted_cost * windows, run.operations, label=plan)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted operations (cost model x windows)")
    ax.set_ylabel("measured operations (executor)")
    ax.set_title(f"{inst.name}: {len(inst.workload.queries)} queries")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png)
    print(f"wrote {png}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/quickstart.py OUT.png")
    main(sys.argv[1])
