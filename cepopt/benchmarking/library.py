"""The instance library: per family, tiers of generated instances with fixed seeds plus the bundled paper
examples (easy tier), each with its best known objective, best bound and status (a "solution file" in the
spirit of MIPLIB's), shipped as ``library.json`` beside this module.

* ``cepopt instances --library [TIER]`` lists the entries; ``cepopt benchmark library:TIER`` (or
  ``--library TIER``) benchmarks them; ``cepopt instances --library [TIER] --verify`` re-solves every
  "optimal" entry with its family's two exact methods and reports any disagreement.
* An entry is "optimal" when both exact methods of :data:`EXACT` proved the same objective (hamlet has one
  exact method: its entries say ``verified_by`` that one), "proven-once" when only one of two did,
  "open" when neither proved it within the build's time limit (the hard tier aims at those: the
  frontier), "disagree" when two proofs differ.
* Instances are regenerated from their ``gen:`` spec (the generators are seeded and deterministic); the
  verify command catches a generator whose output drifted (its optimum would change).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cepopt.benchmarking.library_data import AGREE, EXACT, SEEDS, TIER_NAMES, TIERS, entries, tier_specs

__all__ = ["EXACT", "TIERS", "build", "entries", "verify"]


def _summarise(frame, tier: str) -> list[dict[str, Any]]:
    """One entry per instance from the exact methods' cells: best objective, best bound, status."""
    out = []
    for (inst, family), rows in frame.groupby(["instance", "family"], sort=True):
        sense = rows["sense"].iloc[0]
        better = min if sense == "min" else max
        objectives = [float(v) for v in rows["objective"] if not math.isnan(v)]
        bounds = [float(v) for v in rows["bound"] if not math.isnan(v)]
        proofs = {r["method"]: float(r["objective"]) for r in rows.to_dict("records") if r["status"] == "optimal"}
        best = better(objectives) if objectives else None
        # the tightest bound: the largest lower bound (min) or the smallest upper bound (max)
        bound = (max(bounds) if sense == "min" else min(bounds)) if bounds else None
        if not proofs:
            status = "open"
        elif max(proofs.values()) - min(proofs.values()) > AGREE * max(1.0, *map(abs, proofs.values())):
            status = "disagree"
        elif len(proofs) >= min(2, len(EXACT[family])):
            status = "optimal"
        else:
            status = "proven-once"  # one exact method proved it; the other did not finish: not certified
        out.append({"instance": inst, "family": family, "tier": tier, "sense": sense, "status": status,
                    "best_objective": best, "best_bound": bound, "verified_by": sorted(proofs),
                    "time_limit": float(rows["time_limit"].iloc[0])})
    return out


def build(out: str | Path, time_limits: dict[str, float], jobs: int | None = None,
          tiers: Sequence[str] = TIER_NAMES, memory_mb: float | None = 3000) -> Path:
    """Solve every tier with its families' exact methods (results under ``out/TIER``) and write
    ``out/library.json`` (a maintainer's command: copy it beside this module to ship it)."""
    from cepopt.benchmarking import benchmark
    from cepopt.benchmarking.grid import resolve_instances
    from cepopt.benchmarking.results import read_results

    methods = [f"{fam}/{m}" for fam, ms in EXACT.items() for m in ms]
    rows: list[dict[str, Any]] = []
    for tier in tiers:
        specs = tier_specs(tier)
        run = benchmark(specs, methods, time_limit=time_limits[tier], jobs=jobs, out=Path(out) / tier,
                        memory_mb=memory_mb, command=f"cepopt.benchmarking.library.build (tier {tier})")
        frame = read_results(run.results_path)  # a rebuild resumes: only the tier's current instances count
        rows += _summarise(frame[frame["instance"].isin({r.id for r in resolve_instances(specs)})], tier)
    path = Path(out) / "library.json"
    path.write_text(json.dumps({"exact_methods": EXACT, "tiers": TIERS, "seeds": SEEDS, "instances": rows},
                               indent=1) + "\n")
    return path


def verify(tier: str | None, out: str | Path, jobs: int | None = None) -> list[dict[str, Any]]:
    """Re-solve every "optimal" entry (of a tier) with its exact methods; the disagreements (an exact
    method that proves another objective, or no longer proves one, within the entry's time limit)."""
    from cepopt.benchmarking import benchmark
    from cepopt.benchmarking.grid import resolve_instances
    from cepopt.benchmarking.results import read_results

    optimal = [e for e in entries(tier) if e["status"] == "optimal"]
    problems = []
    for t in sorted({e["tier"] for e in optimal}):
        ids = {e["instance"]: e for e in optimal if e["tier"] == t}
        refs = [r.instance.replace(name=r.id) for r in resolve_instances([f"library:{t}"]) if r.id in ids]
        limit = max(e["time_limit"] for e in ids.values())
        families = {e["family"] for e in ids.values()}
        methods = [f"{fam}/{m}" for fam, ms in EXACT.items() if fam in families for m in ms]
        run = benchmark(refs, methods, time_limit=limit, jobs=jobs, out=Path(out) / t)
        for r in read_results(run.results_path).to_dict("records"):
            entry = ids[r["instance"]]
            value = entry["best_objective"]
            ok = r["status"] == "optimal" and math.isclose(r["objective"], value, rel_tol=AGREE, abs_tol=AGREE)
            if not ok:
                problems.append({"instance": r["instance"], "method": r["method"], "recorded": value,
                                 "status": r["status"], "objective": r["objective"], "message": r["message"]})
    return problems
