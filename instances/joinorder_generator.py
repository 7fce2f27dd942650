"""Random join-order instances: one pattern with rates and selectivities in the paper's ranges.

Kolchinsky & Schuster §7.2 (synthetic regeneration, spec §5.2 [R]): n distinct event types, rates
``r_i ~ U[1, 45]`` events/s, ⌊n/2⌋ distinct random pairs carrying a predicate with selectivity
log-uniform in [0.002, 0.88] [R-SEL-DIST], window W = 20 min = 1200 s, no filters. The k-th pair's
predicate reads its own attribute, ``e_i.vk < e_j.vk``, so the predicates are independent, as the cost
model assumes, and ``gen:workload`` can draw a stream on which each has its stated selectivity
(instances/workload_stream.py). ``--predicates P`` sets the number of pairs instead
(0 <= P <= n(n-1)/2).

Presets (explicit flags override them):

* ``paper``: the distributions above, W = 1200 s.
* ``small-window``: W r < 5 (the intermediate terms, not the final PM(n), dominate the cost, so
  plans differ more): the paper's W = 0.1 s with rates U[1, 45] is W = 1 with rates U[0.1, 4.5]
  here, the same products W r and so the same costs, with a window of one time unit (streams have
  integer timestamps: a shorter window could not be resolved).
* ``dense``: a quarter of all pairs carry predicates, selectivity uniform in [0.5, 0.95].
* ``hard``: the issue's W = 0.3 s with rates U[1, 45], written as W = 1 with rates U[0.3, 13.5] (the same
  products W r, so the same plans; ln costs shift by the constant ln 0.3), a quarter of all pairs
  (n(n-1)/8) carry predicates, selectivity log-uniform in [0.5, 0.95]: weak predicates on a short
  window, where the exact MILPs work hardest (issue 22).

Query-graph shapes (``--graph``, Steinbrunn, Moerkotte & Kemper, *Heuristic and randomized
optimization for the join ordering problem*, VLDB J. 6, 1997): which pairs carry a predicate.
``random`` (default): the draw above; ``chain``: e_i - e_{i+1}; ``cycle``: the chain and e_n - e_1;
``star``: e_1 (the fact table) with every other event; ``clique``: every pair. The selectivities of
the chosen pairs follow the preset.

* ``steinbrunn``: their distributions, as a join query: relation cardinalities 10-100 with
  probability 15 %, 100-1,000 30 %, 1,000-10,000 35 %, 10,000-100,000 20 % (uniform integers within
  a class); each relation's join attribute has a domain size of 2-10 (5 %), 10-100 (50 %), 100-500
  (30 %) or 500-1,000 (15 %), and a predicate between R_i and R_j has selectivity
  ``1 / max(dom_i, dom_j)`` (Selinger's estimate of an equi-join; the classes as in Trummer & Koch's
  public generator of the SIGMOD 2017 MILP paper, which reads the paper's ``min`` as a typo for
  ``max``). Mapped to CEP by Theorem 1 (spec §3.2): W = 1 and the rate of T_i is ``|R_i|``, so
  ``PM(S) = ∏ |R_i| ∏ sel_ij`` is the join's estimated cardinality and Cost_ord / Cost_tree are C_out.

With ``--kind and`` the query graph is exactly the shape; ``seq`` and ``nested`` add their temporal
predicates (selectivity ``seq_selectivity`` on adjacent events, [R-SEQ]), which are join predicates
too (Theorem 3) and so edges of the graph under ``--param cross_products=avoid``.

Executability: a stream of the paper's and dense presets (W r in the tens of thousands) holds far
more matches than any executor can enumerate; :func:`generate` (``cepopt generate joinorder``) warns
when the full matches expected on a stream of a million events exceed
``workload_stream.MAX_MATCHES``, and ``gen:workload`` refuses such a stream. The small-window preset
and windows of a few time units with rates of a few events per unit execute.

Pattern kinds: ``seq`` (pure sequence, default), ``and`` (conjunction), ``nested``
(``SEQ(e1, .., AND(.., en))``: the second half is unordered), ``or`` (a disjunction of three
sequences splitting the n events as evenly as possible [R-DISJ]; predicates join events of one sequence
only, at most all such pairs, and a negated event joins a sequence that has a positive one).
``--kleene K`` puts K events under KL and ``--negation K`` adds K negated events (extra types, not
counted in n).

>>> inst = make_instance(5, seed=1)
>>> inst.problem, len(inst.workload[0].pattern.items), inst.params
('joinorder', 5, {})
"""

from __future__ import annotations

import argparse
import itertools
import math
import random

from cepopt.errors import CepoptError
from cepopt.instance import Instance
from cepopt.model import (
    And,
    AttrRef,
    Condition,
    Kleene,
    Not,
    Or,
    Query,
    Seq,
    Statistics,
    Type,
    Window,
    Workload,
)

__all__ = ["PRESETS", "configure", "generate", "make_instance"]

PRESETS: dict[str, dict] = {
    "paper": {"window": 1200.0, "rate_min": 1.0, "rate_max": 45.0, "sel_min": 0.002, "sel_max": 0.88,
              "sel_dist": "loguniform", "pairs": "half"},
    "small-window": {"window": 1.0, "rate_min": 0.1, "rate_max": 4.5, "sel_min": 0.002, "sel_max": 0.88,
                     "sel_dist": "loguniform", "pairs": "half"},
    "dense": {"window": 1200.0, "rate_min": 1.0, "rate_max": 45.0, "sel_min": 0.5, "sel_max": 0.95,
              "sel_dist": "uniform", "pairs": "quarter"},
    "hard": {"window": 1.0, "rate_min": 0.3, "rate_max": 13.5, "sel_min": 0.5, "sel_max": 0.95,
             "sel_dist": "loguniform", "pairs": "quarter"},
    # rates and selectivities are drawn by _steinbrunn (the bounds below are those of its classes)
    "steinbrunn": {"window": 1.0, "rate_min": 10.0, "rate_max": 100_000.0, "sel_min": 0.001, "sel_max": 0.5,
                   "sel_dist": "steinbrunn", "pairs": "half"},
}
KINDS = ("seq", "and", "nested", "or")
GRAPHS = ("random", "chain", "star", "cycle", "clique")
#: Steinbrunn et al. 1997: (probability, low, high) classes of relation cardinalities and of the join
#: attributes' domain sizes
CARDINALITY_CLASSES = ((0.15, 10, 100), (0.30, 100, 1_000), (0.35, 1_000, 10_000), (0.20, 10_000, 100_000))
DOMAIN_CLASSES = ((0.05, 2, 10), (0.50, 10, 100), (0.30, 100, 500), (0.15, 500, 1_000))


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", type=int, default=6, help="number of positive events n (default 6)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="paper",
                        help="paper (default), small-window (W = 1, rates 0.1-4.5), dense (1/4 of pairs, "
                             "sel 0.5-0.95), hard (W = 1, rates 0.3-13.5, 1/4 of pairs, sel log-uniform 0.5-0.95) "
                             "or steinbrunn (W = 1, cardinalities and selectivities of Steinbrunn et al. 1997)")
    parser.add_argument("--graph", choices=GRAPHS, default="random",
                        help="query graph: random pairs (default), chain, star, cycle or clique (Steinbrunn et al.)")
    parser.add_argument("--kind", choices=KINDS, default="seq", help="pattern kind (default seq)")
    parser.add_argument("--kleene", type=int, default=0, help="events under KL (default 0)")
    parser.add_argument("--negation", type=int, default=0, help="extra negated events (default 0)")
    parser.add_argument("--window", type=float, default=None, help="window W in seconds")
    parser.add_argument("--rate-min", type=float, default=None, help="smallest rate (events/s)")
    parser.add_argument("--rate-max", type=float, default=None, help="largest rate (events/s)")
    parser.add_argument("--sel-min", type=float, default=None, help="smallest predicate selectivity")
    parser.add_argument("--sel-max", type=float, default=None, help="largest predicate selectivity")
    parser.add_argument("--sel-dist", choices=("loguniform", "uniform"), default=None,
                        help="selectivity distribution")
    parser.add_argument("--predicates", type=int, default=None,
                        help="number of predicate pairs (default: preset, n/2 or n(n-1)/8)")


def generate(args: argparse.Namespace) -> Instance:
    opts = {k: getattr(args, k.replace("-", "_"), None) for k in
            ("window", "rate_min", "rate_max", "sel_min", "sel_max", "sel_dist", "predicates")}
    inst = make_instance(args.size, seed=args.seed if args.seed is not None else 0, preset=args.preset,
                         kind=args.kind, kleene=args.kleene, negation=args.negation,
                         graph=getattr(args, "graph", None) or "random",
                         **{k: v for k, v in opts.items() if v is not None})
    _warn_reach(inst)
    return inst


def _warn_reach(inst: Instance, events: int = 1_000_000) -> None:
    """A warning on stderr when a stream of ``events`` events of ``inst`` is beyond any executor."""
    import sys

    from cepopt.instances.workload_stream import MAX_MATCHES, predicted_matches

    matches = predicted_matches(inst, events)
    if matches > MAX_MATCHES:
        print(f"cepopt: warning: a stream of {events:,} events of {inst.name} would hold about {matches:.2g} "
              "matches: fine for planning, beyond executing (use --window of a few time units and --rate-max "
              "of a few events per unit, or --preset small-window)", file=sys.stderr)


def make_instance(n: int, *, seed: int = 0, preset: str = "paper", kind: str = "seq", kleene: int = 0,
                  negation: int = 0, window: float | None = None, rate_min: float | None = None,
                  rate_max: float | None = None, sel_min: float | None = None, sel_max: float | None = None,
                  sel_dist: str | None = None, predicates: int | None = None, graph: str = "random") -> Instance:
    """A random instance (see the module docstring); every draw comes from ``random.Random(seed)``."""
    if preset not in PRESETS:
        raise CepoptError(f"--preset: unknown preset {preset!r} (use one of {', '.join(PRESETS)})")
    if kind not in KINDS:
        raise CepoptError(f"--kind: unknown pattern kind {kind!r} (use one of {', '.join(KINDS)})")
    _check_graph(graph, kind, predicates)
    cfg = dict(PRESETS[preset])
    for key, value in (("window", window), ("rate_min", rate_min), ("rate_max", rate_max),
                       ("sel_min", sel_min), ("sel_max", sel_max), ("sel_dist", sel_dist)):
        if value is not None:
            cfg[key] = value
    if n < 1:
        raise CepoptError(f"--size: must be >= 1, got {n}")
    if kind == "or" and n < 3:
        raise CepoptError("--size: a disjunction of three sequences needs n >= 3")
    if not 0 <= kleene <= n or negation < 0:
        raise CepoptError(f"--kleene must be in 0..n and --negation >= 0, got {kleene}, {negation}")
    if not 0 < cfg["rate_min"] <= cfg["rate_max"]:
        raise CepoptError("--rate-min and --rate-max must satisfy 0 < --rate-min <= --rate-max")
    if not cfg["window"] >= 1:
        raise CepoptError(f"--window must be at least 1 time unit (streams have integer timestamps), got "
                          f"{cfg['window']:g}: scale the rates instead (W = 0.1 with rate r is W = 1 with r/10)")
    if not 0 < cfg["sel_min"] <= cfg["sel_max"] <= 1:
        raise CepoptError("selectivities must satisfy 0 < --sel-min <= --sel-max <= 1")
    rng = random.Random(seed)
    names = [f"e{i + 1}" for i in range(n)]
    types = [f"T{i + 1}" for i in range(n)]
    steinbrunn = cfg["sel_dist"] == "steinbrunn"
    rates, domains = _draw_rates(rng, cfg, types)
    # OR: branch k holds positive events bounds[k]..bounds[k+1]-1; a predicate across two branches
    # reaches no DNF conjunct, so pairs are drawn within branches only
    bounds = [round(n * k / 3) for k in range(4)] if kind == "or" else [0, n]
    pairs = [(i, j) for lo, hi in itertools.pairwise(bounds) for i in range(lo, hi) for j in range(i + 1, hi)]
    what = f"the pairs within the OR branches of {n} events" if kind == "or" else f"the pairs of {n} events"
    if predicates is None:
        predicates = min(n // 2, len(pairs)) if cfg["pairs"] == "half" else max(1, len(pairs) // 4) if pairs else 0
    elif not 0 <= predicates <= len(pairs):
        raise CepoptError(f"--predicates: must be in 0..{len(pairs)} ({what}), got {predicates}")
    chosen = sorted(rng.sample(pairs, predicates)) if graph == "random" else shape_pairs(graph, n)
    sels = {}
    for i, j in chosen:
        if steinbrunn:
            sels[f"{names[i]},{names[j]}"] = 1.0 / max(domains[i], domains[j])
            continue
        if cfg["sel_dist"] == "loguniform":
            s = math.exp(rng.uniform(math.log(cfg["sel_min"]), math.log(cfg["sel_max"])))
        else:
            s = rng.uniform(cfg["sel_min"], cfg["sel_max"])
        sels[f"{names[i]},{names[j]}"] = round(s, 6)
    kl = set(rng.sample(range(n), kleene))
    leaves: list = [Kleene(Type(t, v)) if i in kl else Type(t, v) for i, (t, v) in enumerate(zip(types, names,
                                                                                               strict=True))]
    for k in range(negation):
        t, v = f"N{k + 1}", f"n{k + 1}"
        rates[t] = round(rng.uniform(cfg["rate_min"], cfg["rate_max"]), 4)
        leaves.insert(rng.randint(0, len(leaves)), Not(Type(t, v)))
    if kind == "seq":
        pattern = Seq(tuple(leaves))
    elif kind == "and":
        pattern = And(tuple(leaves))
    elif kind == "nested":
        half = max(1, len(leaves) // 2)
        pattern = Seq((*leaves[:half], And(tuple(leaves[half:])))) if len(leaves) > half + 1 else Seq(
            tuple(leaves))
    else:
        # cut before each branch's first positive event, so that no branch holds negated events only
        positive = [i for i, leaf in enumerate(leaves) if not isinstance(leaf, Not)]
        cuts = [0, positive[bounds[1]], positive[bounds[2]], len(leaves)]
        pattern = Or(tuple(Seq(tuple(leaves[lo:hi])) for lo, hi in itertools.pairwise(cuts)))
    where = tuple(Condition(AttrRef(f"v{k + 1}", names[i]), "<", AttrRef(f"v{k + 1}", names[j]))
                  for k, (i, j) in enumerate(chosen))
    query = Query(pattern, Window(cfg["window"]), where=where, name="q1")
    desc = (f"random joinorder instance: n={n}, preset={preset}, kind={kind}, kleene={kleene}, "
            f"negation={negation}, seed={seed}" + (f", graph={graph}" if graph != "random" else ""))
    shape = "" if graph == "random" else f"-{graph}"
    return Instance("joinorder", Workload((query,)), Statistics(rates=rates, selectivities=sels),
                    name=f"joinorder-{preset}{shape}-{kind}-n{n}-s{seed}", description=desc)


def _check_graph(graph: str, kind: str, predicates: int | None) -> None:
    if graph not in GRAPHS:
        raise CepoptError(f"--graph: unknown query graph {graph!r} (use one of {', '.join(GRAPHS)})")
    if graph != "random" and (kind == "or" or predicates is not None):
        raise CepoptError(f"--graph {graph}: the shape fixes the predicate pairs; it takes no --predicates "
                          "and no --kind or (whose predicates stay within its branches)")


def _draw_rates(rng: random.Random, cfg: dict, types: list[str]) -> tuple[dict[str, float], list[int]]:
    """The rates and (steinbrunn preset only, else empty) the join attributes' domain sizes."""
    if cfg["sel_dist"] == "steinbrunn":
        rates = {t: float(_draw_class(rng, CARDINALITY_CLASSES)) for t in types}
        return rates, [_draw_class(rng, DOMAIN_CLASSES) for _ in types]
    return {t: round(rng.uniform(cfg["rate_min"], cfg["rate_max"]), 4) for t in types}, []


def shape_pairs(graph: str, n: int) -> list[tuple[int, int]]:
    """The predicate pairs (i < j) of a query-graph shape over events 0..n-1, sorted."""
    if graph == "chain":
        return [(i, i + 1) for i in range(n - 1)]
    if graph == "cycle":
        return [(i, i + 1) for i in range(n - 1)] + ([(0, n - 1)] if n >= 3 else [])
    if graph == "star":
        return [(0, j) for j in range(1, n)]
    if graph == "clique":
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    raise CepoptError(f"--graph: no fixed pairs for {graph!r}")


def _draw_class(rng: random.Random, classes) -> int:
    """An integer uniform within a class [low, high] drawn with the classes' probabilities."""
    u = rng.random()
    for p, low, high in classes:
        if u < p:
            return rng.randint(low, high)
        u -= p
    return rng.randint(classes[-1][1], classes[-1][2])


#: the largest value of each flag (checked by cepopt.instances.generate before the generator runs): the
#: generator draws among the n(n-1)/2 event pairs, so --size 99999 took 21.5 GB; n = 1000 takes 70 MB.
LIMITS = {"size": 1_000, "kleene": 1_000, "negation": 1_000, "predicates": 500_000}
