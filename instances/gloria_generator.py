"""Random Gloria workloads: ``cepopt generate gloria --queries N --seed S -o FILE``.

Event types ``E0 .. E{k-1}`` follow one global order (so no two queries order two types differently
and the pool graph stays acyclic); each query is a SEQ of a random increasing subset of them
(``--min-length`` .. ``--max-length`` types) and, with probability ``--kleene``, a contiguous slice of
at least two types (or one type) is wrapped in a flat Kleene plus; with probability ``--nested`` a
second Kleene wraps a slice around the first. Few types (``--types``, default about N/2 + 3) make
queries overlap, so there is something to share. Frequencies are integers in
``[1, --max-frequency]``. All randomness comes from ``--seed``.
"""

from __future__ import annotations

import argparse
import random

from cepopt.model import Kleene, Query, Seq, Statistics, Type, Window, Workload

__all__ = ["LIMITS", "configure", "generate", "random_instance"]

#: the largest value of each flag (checked by cepopt.instances.generate before the generator runs)
LIMITS = {"queries": 100_000, "types": 1_000_000, "min_length": 1_000, "max_length": 1_000,
          "max_frequency": 10**9}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queries", type=int, default=8, help="number of queries (default 8)")
    parser.add_argument("--types", type=int, default=None,
                        help="number of event types (default N/2 + 3; at least --max-length)")
    parser.add_argument("--min-length", type=int, default=2, help="fewest types per query (default 2)")
    parser.add_argument("--max-length", type=int, default=5, help="most types per query (default 5)")
    parser.add_argument("--kleene", type=float, default=0.3, help="share of Kleene queries (default 0.3)")
    parser.add_argument("--nested", type=float, default=0.0, help="share of nested Kleene among them")
    parser.add_argument("--max-frequency", type=int, default=20, help="largest frequency (default 20)")


def _pattern(types: list[str], rng: random.Random, kleene: float, nested: float):
    items: list = [Type(t) for t in types]
    if len(types) >= 2 and rng.random() < kleene:
        i = rng.randrange(len(items))
        j = rng.randrange(i, len(items))
        inner = items[i] if i == j else Seq(tuple(items[i:j + 1]))
        node = Kleene(inner)
        if rng.random() < nested and (i > 0 or j < len(items) - 1):
            lo = rng.randrange(0, i + 1)
            hi = rng.randrange(j, len(items))
            if (lo, hi) != (i, j):
                node = Kleene(Seq(tuple(items[lo:i]) + (node,) + tuple(items[j + 1:hi + 1])))
                i, j = lo, hi
        items = items[:i] + [node] + items[j + 1:]
    return items[0] if len(items) == 1 else Seq(tuple(items))


def random_instance(queries: int = 8, seed: int = 0, *, types: int | None = None, min_length: int = 2,
                    max_length: int = 5, kleene: float = 0.3, nested: float = 0.0,
                    max_frequency: int = 20):
    """A random ``gloria`` Instance (see the module docstring)."""
    from cepopt.errors import CepoptError
    from cepopt.instance import Instance

    if queries < 1:
        raise CepoptError("--queries: must be >= 1")
    if not 2 <= min_length <= max_length:
        raise CepoptError("--min-length/--max-length: need 2 <= min <= max")
    if max_frequency < 1:
        raise CepoptError("--max-frequency: must be >= 1")
    if types is not None and types < 1:
        raise CepoptError(f"--types: must be >= 1, got {types}")
    for flag, share in (("--kleene", kleene), ("--nested", nested)):
        if not 0 <= share <= 1:  # also rejects nan
            raise CepoptError(f"{flag}: must be a probability in [0, 1], got {share}")
    rng = random.Random(seed)
    k = types if types is not None else queries // 2 + 3
    k = max(k, max_length)
    names = [f"E{i}" for i in range(k)]
    qs = []
    for n in range(queries):
        length = rng.randint(min_length, max_length)
        chosen = sorted(rng.sample(range(k), length))
        pattern = _pattern([names[i] for i in chosen], rng, kleene, nested)
        window = Window(rng.choice((600, 900)), 300)
        qs.append(Query(pattern, window, name=f"q{n + 1}"))
    workload = Workload(tuple(qs))
    used = workload.event_types()
    rates = {t: rng.randint(1, max_frequency) for t in names if t in used}
    return Instance(problem="gloria", workload=workload, statistics=Statistics(rates=rates),
                    name=f"gloria-random-{queries}-s{seed}",
                    description=f"random Gloria workload: {queries} queries over {k} types, seed {seed}")


def generate(args: argparse.Namespace):
    return random_instance(args.queries, args.seed, types=args.types, min_length=args.min_length,
                           max_length=args.max_length, kleene=args.kleene, nested=args.nested,
                           max_frequency=args.max_frequency)
