"""``cepopt import joinorder FILE``: a join-ordering problem (relation cardinalities and predicate
selectivities, JSON) as a join-order instance.

The format is the one of the public problem files derived from the Join Order Benchmark and of the
large-join-query generators: a list of relations with their cardinalities and a list of binary join
predicates with their selectivities::

    {"name": "job-1a",                                   (optional)
     "relations": [{"name": "title", "cardinality": 2528312}, {"name": "mc", "cardinality": 2609129}, ...],
     "joins": [{"relations": ["title", "mc"], "selectivity": 3.95e-07}, ...]}

A join names its two relations by name or by index in ``relations``; several joins on one pair
multiply (independence, as the cost model assumes). A predicate over more than two relations
(a hyperedge) is refused: the cost model prices pairwise selectivities only.

Mapping to CEP (Kolchinsky & Schuster Theorem 1, the JQPG -> CPG direction of spec §3.2, scaled so
that no rate is below 1 event per unit only by the choice of units): **W = 1**, one event type per
relation with **rate r_i = |R_i|** (so ``W r_i = |R_i|``), selectivity ``sel_ij`` = the product of the
pair's join selectivities, no filters (cardinalities are taken after the relations' selections), and
the pattern ``AND`` of all relations (no temporal order). Then ``PM(S) = ∏_{i∈S} |R_i| ∏ sel_ij`` is
the textbook estimate of ``|⋈ S|``; a plan's Cost_tree is C_out plus ``Σ |R_i|`` (every plan pays the
base relations) and an order's Cost_ord is C_out of its left-deep tree plus ``|R_{p1}|``.
:func:`cepopt.joinorder.cost.log_c_out` gives C_out itself, which ``cepopt solve`` prints beside
ln Cost. Use ``--param cost=tree`` to rank orders by C_out exactly (the ``|R_{p1}|`` term then
becomes the constant ``Σ |R_i|``), and ``--param cross_products=avoid`` for the database rule.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from cepopt.errors import CepoptError
from cepopt.instance import Instance
from cepopt.model import And, Query, Statistics, Type, Window, Workload

__all__ = ["import_problem", "instance_from_json"]


def _name(raw: Any, k: int, seen: set[str]) -> str:
    """A type name from a relation name: letters, digits and underscores, unique."""
    text = re.sub(r"\W", "_", str(raw)) or f"R{k + 1}"
    if text[0].isdigit():
        text = "R" + text
    if text in seen:
        raise CepoptError(f"relations[{k}].name: {raw!r} appears twice (give each relation occurrence its own name)")
    seen.add(text)
    return text


def _positive(value: Any, where: str, upper: float = math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CepoptError(f"{where}: expected a number, got {value!r}")
    if not 0 < value <= upper:
        raise CepoptError(f"{where}: must be in (0, {upper:g}], got {value!r}")
    return float(value)


def instance_from_json(data: Any, name: str = "joinorder-import") -> Instance:
    """The instance of a parsed problem file (module docstring)."""
    if not isinstance(data, dict) or not isinstance(data.get("relations"), list) or not data["relations"]:
        raise CepoptError("relations: expected a non-empty list of {name, cardinality}")
    seen: set[str] = set()
    names, rates = [], {}
    for k, rel in enumerate(data["relations"]):
        if not isinstance(rel, dict) or "cardinality" not in rel:
            raise CepoptError(f"relations[{k}]: expected {{name, cardinality}}, got {rel!r}")
        nm = _name(rel.get("name", f"R{k + 1}"), k, seen)
        names.append(nm)
        rates[nm] = _positive(rel["cardinality"], f"relations[{k}].cardinality")
    index = {str(rel.get("name")): k for k, rel in enumerate(data["relations"]) if isinstance(rel, dict)}
    joins = data.get("joins", [])
    if not isinstance(joins, list):
        raise CepoptError("joins: expected a list of {relations, selectivity}")
    sels: dict[str, float] = {}
    for k, join in enumerate(joins):
        rels = join.get("relations") if isinstance(join, dict) else None
        if not isinstance(rels, list) or len(rels) < 2:
            raise CepoptError(f"joins[{k}].relations: expected two relations, got {rels!r}")
        if len(rels) > 2:
            raise CepoptError(f"joins[{k}].relations: a predicate over {len(rels)} relations (a hyperedge); the "
                              "cost model prices pairwise selectivities only")
        ends = []
        for ref in rels:
            pos = ref if isinstance(ref, int) and not isinstance(ref, bool) else index.get(str(ref))
            if pos is None or not 0 <= pos < len(names):
                raise CepoptError(f"joins[{k}].relations: unknown relation {ref!r}")
            ends.append(names[pos])
        if ends[0] == ends[1]:
            raise CepoptError(f"joins[{k}].relations: a join of {ends[0]} with itself")
        key = ",".join(sorted(ends))
        sels[key] = sels.get(key, 1.0) * _positive(join.get("selectivity"), f"joins[{k}].selectivity", 1.0)
    pattern = And(tuple(Type(nm, nm) for nm in names))  # each relation is its own event variable
    stats_sel = sels
    title = str(data.get("name", name))
    query = Query(pattern, Window(1.0), name="q1")
    return Instance("joinorder", Workload((query,)), Statistics(rates=rates, selectivities=stats_sel),
                    name=title, description=f"join-ordering problem {title}: {len(names)} relations, "
                                            f"{len(sels)} joined pairs; W = 1, rate = cardinality")


def import_problem(path: str | Path) -> Instance:
    """Read ``path`` (module docstring)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except OSError as exc:
        raise CepoptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CepoptError(f"{path}: not JSON: {exc}") from None
    return instance_from_json(data, name=p.stem)
