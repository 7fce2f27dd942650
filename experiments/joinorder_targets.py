"""joinorder-targets: the exact join-order methods at the sizes issues 19 and 22 set targets for, and only
those (the full ``joinorder-scaling`` grid also runs every heuristic at every size and takes hours).

Grid: each (method, n, preset) of :data:`cepopt.experiments.joinorder_scaling.TARGETS`, on every preset
where the target says "all", x 3 seeds; a point runs that one method through joinorder-scaling's
``run`` (same instances, 60 s limit including model building, wall and process CPU time). ``--quick``:
n = 8, one seed, dp-ld and milp-order on the hard preset.
"""

from __future__ import annotations

from pathlib import Path

from cepopt.experiments.framework import Experiment, markdown_table
from cepopt.experiments.joinorder_scaling import PRESETS, SEEDS, TARGETS, _dash, _targets_table
from cepopt.experiments.joinorder_scaling import run as run_method

__all__ = ["EXPERIMENT"]


def grid(quick: bool) -> list[dict]:
    if quick:
        return [{"preset": "hard", "n": 8, "seed": 0, "only": m} for m in ("dp-ld", "milp-order")]
    points = []
    for method, n, preset, _ in TARGETS:
        for p in (PRESETS if preset is None else (preset,)):
            points += [{"preset": p, "n": n, "seed": s, "only": method} for s in SEEDS]
    # one point per (preset, n, seed, method): a target listed for one preset and for all runs once
    unique = {tuple(sorted(pt.items())): pt for pt in points}
    return list(unique.values())


def report(df, out_dir: Path) -> str:
    status = _dash(df.groupby(["method", "status"]).size().unstack(fill_value=0).reset_index())
    return _targets_table(df) + "\nStatuses over all runs:\n\n" + markdown_table(status) + "\n"


EXPERIMENT = Experiment(
    name="joinorder-targets",
    description=("The exact join-order methods (dp-ld, dp-b, milp-tree, milp-order) at the sizes of "
                 "issues 19 and 22's targets, 3 seeds, 60 s per call, on every preset the target names."),
    grid=grid,
    run=run_method,
    report=report,
)
