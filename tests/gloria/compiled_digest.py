"""Everything the GLORIA search computes on some instances, as text: run once in-process and once in a
subprocess under CEPOPT_PURE_PYTHON=1 by tests/gloria/test_compiled.py, which compares the two.

Values are written with ``repr`` so that an int that became a float (307 -> 307.0), or a Fraction that
became a float, is a difference. ``python -m tests.gloria.compiled_digest [SHARED_DIR]`` prints the
digest (of the random instances; with SHARED_DIR, of the published files) as JSON, with the
compiled modules the process used.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: published files (workload, dataset) that the comparison runs when the shared data is present
PUBLISHED = (("bus/MixWorkload/kleeneRatio/workload_3.txt", "bus"),
             ("bus/MixWorkload/kleeneRatio/workload_5.txt", "bus"),
             ("bus/SEQWorkload/workload_20.txt", "bus"),
             ("taxi/KleeneWorkload/kleeneLength/workload_2.txt", "taxi"))
#: random instances: (queries, seed, kleene, nested) under each problem option set below
RANDOM = ((4, 1, 0.3, 0.0), (6, 2, 0.5, 0.3), (8, 3, 0.3, 0.0), (10, 4, 0.6, 0.4), (12, 5, 0.3, 0.2))
OPTIONS = ({}, {"fork_accounting": "once"}, {"cost_model": "physical", "kleene_cycle_cost": "V1"})


def _graph(graph) -> dict:
    return {"nodes": graph.num_nodes, "edges": graph.num_edges, "options": repr(graph.options),
            "inner": repr(graph.inner), "end": repr(graph.end), "d_s": repr(graph.d_s),
            "best_in": repr(graph.best_in), "trace": repr(graph.trace), "stats": repr(graph.stats),
            "allowed": repr({k: dict(v.items()) for k, v in graph.allowed.items()})}


def digest_problem(problem) -> dict:
    from cepopt.errors import MethodLimitError
    from cepopt.gloria import cost
    from cepopt.gloria.exhaustive import exhaustive_graph
    from cepopt.gloria.greedy import greedy
    from cepopt.gloria.nodes import generate
    from cepopt.gloria.path_search import search
    from cepopt.gloria.plan import plan_to_json

    out: dict = {"pools": repr(problem.pools), "terms": repr(problem.terms), "order": repr(problem.order),
                 "freq": repr(problem.freq)}
    for mode in ("gloria", "safe", "noprune"):
        graph = generate(problem, mode)
        options, stats = search(graph)
        plan = cost.plan_from_options(problem, options)
        out[mode] = {**_graph(graph), "search_stats": repr(stats), "total": repr(cost.total_cost(problem, options)),
                     "evaluate": repr(cost.evaluate(problem, plan)), "plan": plan_to_json(plan)}
    out["greedy"] = repr(cost.total_cost(problem, greedy(problem, "share")))
    try:
        out["exhaustive"] = _graph(exhaustive_graph(problem, max_options=200, max_plans=1e5))
    except MethodLimitError as exc:
        out["exhaustive"] = str(exc)
    return out


def digest(shared: Path | None) -> dict:
    """The random instances, or with ``shared`` (the shared data's folder) the published files."""
    from cepopt.gloria import compiled_modules
    from cepopt.gloria.problem import build
    from cepopt.instances.gloria_generator import random_instance

    out: dict = {}
    if shared is None:
        for queries, seed, kleene, nested in RANDOM:
            inst = random_instance(queries, seed, kleene=kleene, nested=nested)
            for options in OPTIONS:
                out[f"random q={queries} seed={seed} {options}"] = digest_problem(build(inst, **options))
    else:
        from cepopt.instances.gloria_reader import import_workload

        base = shared / "anchors-data" / "gloria"
        for rel, dataset in PUBLISHED:
            inst = import_workload(base / "workloads" / rel, base / "event_type_frequencies.csv", dataset)
            out[rel] = digest_problem(build(inst))
    return {"compiled_modules": list(compiled_modules()), "digest": out}


if __name__ == "__main__":
    print(json.dumps(digest(Path(sys.argv[1]) if len(sys.argv) > 1 else None)))
