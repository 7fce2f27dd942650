"""Random Hamlet instances: the paper's bursty stream setup (``cepopt generate hamlet``).

Hamlet §5 (specs/hamlet.md §6.2-6.3, Workload 1): queries with different patterns but the same sharable
Kleene sub-pattern, window, GROUP-BY and aggregate: query i is ``SEQ(X_i, E+)`` (or, with
``--prefix 2``, ``SEQ(X_i, Y_i, E+)``) where E is the shared Kleene type (``--kleene-type``, default
``T0``) and X_i, Y_i are other types. ``--filtered F``: a share F of the queries keeps only the E events
with ``speed`` below its own bound (a filter on E: sharing those queries needs event-level snapshots,
Def. 3.11). ``--aggregate mixed`` gives COUNT(*), SUM(E.duration) and AVG(E.duration) in turn (all
linear, so all sharable).

The stream is :mod:`cepopt.instances.bursty_stream` (a run is a burst of E with probability
``--frequency``, of mean length ``--burst``; else 1-3 events of another type; ``--rate`` events per
minute; attributes driver, rider, district, speed, duration): the paper's ridesharing setting with
20 types at 10K events per minute. The instance embeds the stream (``cepopt execute`` runs it; the
optimizer prices the stream's bursts), or, with ``--bursts``, holds only the burst statistics
(``params.bursts``, the bursts of that stream: type, queries, b, n, snapshot classes), for planning
without a stream. All randomness comes from ``--seed``.
"""

from __future__ import annotations

import argparse

from cepopt.errors import CepoptError
from cepopt.instance import Instance
from cepopt.model import Aggregate, AttrRef, Filter, Kleene, Query, Seq, Statistics, Type, Window, Workload
from cepopt.params import read_flags

__all__ = ["LIMITS", "configure", "generate", "make_instance"]

#: the largest value of each flag (checked by cepopt.instances.generate before the generator runs): the
#: stream is embedded in the JSON file (about 100 bytes an event)
LIMITS = {"queries": 1_000, "types": 1_000, "events": 200_000, "burst": 100_000, "rate": 1e9,
          "window": 1e9, "slide": 1e9, "prefix": 2}
AGGREGATES = ("count", "mixed")
#: the most windows the stream may span: the bursts are found window by window (about 8 ms each, for
#: every GROUP-BY key), when the instance is generated with --bursts and each time it is solved
MAX_WINDOWS = 200
#: the most queries x events: the burst statistics hold a snapshot class per query and burst event
MAX_QUERY_EVENTS = 2_000_000


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queries", type=int, default=10, help="number of queries (default 10)")
    parser.add_argument("--types", type=int, default=20, help="event types T0..T{k-1} (default 20)")
    parser.add_argument("--kleene-type", default="T0", metavar="TYPE", help="the shared Kleene type (default T0)")
    parser.add_argument("--prefix", type=int, default=1, help="types before E+ in each pattern: 1 or 2 (default 1)")
    parser.add_argument("--burst", type=float, default=40.0, help="mean burst length (default 40)")
    parser.add_argument("--frequency", type=float, default=0.2,
                        help="probability that a run is a burst of the Kleene type (default 0.2)")
    parser.add_argument("--events", type=int, default=2000, help="events in the stream (default 2000)")
    parser.add_argument("--rate", type=float, default=10_000.0, help="events per minute (default 10000)")
    parser.add_argument("--window", type=float, default=60.0, help="WITHIN, seconds (default 60)")
    parser.add_argument("--slide", type=float, default=None, help="SLIDE, seconds (default: the window)")
    parser.add_argument("--filtered", type=float, default=0.0,
                        help="share of queries with their own filter on the Kleene type (default 0)")
    parser.add_argument("--aggregate", choices=AGGREGATES, default="count",
                        help="count (COUNT(*), default) or mixed (COUNT, SUM, AVG in turn)")
    parser.add_argument("--bursts", action="store_true",
                        help="write the stream's burst statistics (params.bursts) instead of the stream")


def _check(queries: int, types: int, kleene_type: str, prefix: int, filtered: float, window: float,
           slide: float) -> None:
    if queries < 2:
        raise CepoptError("--queries: must be >= 2 (sharing needs two queries)")
    if not 1 <= prefix <= 2:
        raise CepoptError(f"--prefix: must be 1 or 2, got {prefix}")
    if types < prefix + 1:
        raise CepoptError(f"--types: must be >= {prefix + 1} (the Kleene type and {prefix} other(s)), got {types}")
    if not 0 <= filtered <= 1:
        raise CepoptError(f"--filtered: must be a share in [0, 1], got {filtered}")
    if not 0 < slide <= window:
        raise CepoptError(f"--window, --slide: need 0 < slide <= window, got {window:g}, {slide:g}")
    try:
        Type(kleene_type)
    except CepoptError as exc:
        raise CepoptError(f"--kleene-type: {exc}") from None


def _workload(queries: int, names: list[str], kleene: str, prefix: int, filtered: float, aggregate: str,
              window: Window, rng) -> Workload:
    others = [n for n in names if n != kleene]
    out = []
    for i in range(queries):
        head = [others[(i + k * 7) % len(others)] for k in range(prefix)]
        if len(set(head)) < len(head):
            head = head[:1]
        pattern = Seq((*(Type(t) for t in head), Kleene(Type(kleene))))
        kind = ("count", "sum", "avg")[i % 3] if aggregate == "mixed" else "count"
        returns = (Aggregate("COUNT"),) if kind == "count" else (Aggregate(kind.upper(), kleene, "duration"),)
        bound = round(float(rng.uniform(20, 100)), 1)
        where = (Filter(kleene, "speed", "<", bound),) if rng.random() < filtered else ()
        out.append(Query(pattern, window, returns, where, (AttrRef("district"),), f"q{i + 1}"))
    return Workload(tuple(out))


def make_instance(*, queries: int = 10, seed: int = 0, types: int = 20, kleene_type: str = "T0", prefix: int = 1,
                  burst: float = 40.0, frequency: float = 0.2, events: int = 2000, rate: float = 10_000.0,
                  window: float = 60.0, slide: float | None = None, filtered: float = 0.0,
                  aggregate: str = "count", bursts: bool = False) -> Instance:
    """A random Hamlet instance (see the module docstring); deterministic in ``seed``."""
    import numpy as np

    from cepopt.instances.bursty_stream import generate as bursty

    slide = window if slide is None else slide
    # the stream's flags against the bounds the stream generator declares (burst >= 1, rate > 0, ...),
    # before anything below divides by them
    read_flags(bursty, {"events": events, "types": types, "burst": burst, "frequency": frequency, "rate": rate})
    _check(queries, types, kleene_type, prefix, filtered, window, slide)
    if queries * events > MAX_QUERY_EVENTS:
        raise CepoptError(f"--queries x --events = {queries * events} is above the generator's maximum "
                          f"({MAX_QUERY_EVENTS:g})")
    windows = events * 60.0 / rate / slide + 1
    if windows > MAX_WINDOWS:
        raise CepoptError(f"--events, --rate, --slide: the stream would span about {windows:.0f} windows (at most "
                          f"{MAX_WINDOWS}): raise --rate or --window, or lower --events")
    stream = bursty(seed=seed, events=events, types=types, kleene=kleene_type, burst=burst, frequency=frequency,
                    rate=rate)
    names = [f"T{i}" for i in range(types)]
    if kleene_type not in names:
        names[0] = kleene_type
    rng = np.random.default_rng([seed, 1])
    win = Window(int(window) if float(window).is_integer() else window,
                 int(slide) if float(slide).is_integer() else slide)
    workload = _workload(queries, names, kleene_type, prefix, filtered, aggregate, win, rng)
    counts = stream["type"].value_counts()
    rates = {t: round(float(counts.get(t, 0)) * rate / 60.0 / max(len(stream), 1), 6) for t in names}
    events_json = [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
                   for row in stream.to_dict("records")]
    settings = {"queries": queries, "seed": seed, "types": types, "kleene_type": kleene_type, "prefix": prefix,
                "burst": burst, "frequency": frequency, "events": events, "rate": rate, "filtered": filtered,
                "aggregate": aggregate}
    instance = Instance(
        problem="hamlet", workload=workload, statistics=Statistics(rates=rates),
        name=f"hamlet-random-n{queries}-b{burst:g}-s{seed}",
        description=(f"random Hamlet workload: {queries} queries SEQ(X, {kleene_type}+) sharing {kleene_type}+, "
                     f"over a bursty stream of {len(stream)} events ({types} types, mean burst {burst:g}, "
                     f"burst frequency {frequency:g}, {rate:g} events/min)"),
        params={}, stream=tuple(events_json), event_types=tuple(names))
    if not bursts:
        return instance
    return _with_bursts(instance, settings)


def _with_bursts(instance: Instance, settings: dict) -> Instance:
    """The instance with the burst statistics of its stream (params.bursts) in place of the stream."""
    from cepopt.hamlet.graphlets import burst_to_json
    from cepopt.hamlet.problem import build

    found = build(instance).bursts
    if not found:
        raise CepoptError("--bursts: the stream has no sharable burst (raise --events, --frequency or --burst)")
    return instance.replace(stream=None, params={"bursts": [burst_to_json(b) for b in found]},
                            description=instance.description + f"; {len(found)} bursts (the stream is not kept); "
                            f"generator settings {settings}")


def generate(args: argparse.Namespace) -> Instance:
    return make_instance(queries=args.queries, seed=args.seed, types=args.types, kleene_type=args.kleene_type,
                         prefix=args.prefix, burst=args.burst, frequency=args.frequency, events=args.events,
                         rate=args.rate, window=args.window, slide=args.slide, filtered=args.filtered,
                         aggregate=args.aggregate, bursts=args.bursts)
