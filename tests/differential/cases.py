"""Random differential cases: an instance of a family (the project's generators at small sizes), a plan
of it (one per registered method that solves it), and a valid or hostile stream file.

Everything comes from one integer seed (:func:`make_case`), so a failing case is rebuilt from the seed
the suite prints; :func:`save_case` writes its instance and stream to a folder.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

FAMILIES = ("sharon", "hamlet", "gloria", "joinorder")
#: what a stream may do to the engines (a case draws a few of them)
HOSTILE = ("unsorted", "duplicate_ts", "huge_ts", "past_2_53", "negative_ts", "unicode_types", "missing",
           "quoting", "newline", "big_sums", "duplicate_header", "text_in_numbers", "parquet")
#: texts that a GROUP-BY column may hold: missing-value texts, quotes, commas, unicode
GROUP_TEXTS = ("NA", "null", "None", "x,y", 'say "hi"', "Zürich", "事件", " NA ", "n/a", "", "0x10")
BAD_NUMBERS = ("abc", "1e400", "0x10", "True", "1_000", "inf")
#: the most events a case's stream holds per family (brute force enumerates trends: keep them small)
MAX_EVENTS = {"sharon": 24, "hamlet": 14, "gloria": 14, "joinorder": 16}


@dataclass
class Case:
    seed: int
    family: str
    instance: Any
    plan_name: str
    plan: Any
    frame: pd.DataFrame          # the stream as written (cells as Python values or texts)
    traits: tuple[str, ...]
    fmt: str = "csv"
    header: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (f"seed={self.seed} family={self.family} plan={self.plan_name} format={self.fmt} "
                f"traits={','.join(self.traits) or 'valid'} events={len(self.frame)}")


# ---------------------------------------------------------------------------------------------
# instances and plans
# ---------------------------------------------------------------------------------------------


def _window(rng: random.Random) -> tuple[int, int]:
    slide = rng.choice((2, 3, 5))
    return slide * rng.choice((1, 2, 3)), slide


def _base_instance(family: str, seed: int, rng: random.Random):
    if family == "sharon":
        from cepopt.instances.sharon_generator import make_instance

        w, s = _window(rng)
        return make_instance(queries=rng.randint(2, 4), length=rng.randint(2, 3), seed=seed, window=w, slide=s,
                             types=rng.randint(3, 5), pool=3, piece_min=1, piece_max=2)
    if family == "hamlet":
        from cepopt.hamlet.generator import make_instance

        w, s = _window(rng)
        return make_instance(queries=rng.randint(2, 3), seed=seed, types=rng.randint(3, 4), window=w, slide=s)
    if family == "gloria":
        from cepopt.instances.gloria_generator import random_instance

        inst = random_instance(rng.randint(2, 4), seed, types=rng.randint(3, 5), max_length=3, kleene=0.5)
        w, s = _window(rng)
        return _rewindow(inst, w, s)
    from cepopt.instances.joinorder_generator import make_instance

    return make_instance(rng.randint(2, 4), seed=seed, window=rng.choice((10, 20)))


def _rewindow(inst, length: int, slide: int):
    from cepopt.model import Window, Workload

    queries = tuple(dataclasses.replace(q, window=Window(length * (i % 2 + 1), slide))
                    for i, q in enumerate(inst.workload.queries))
    return inst.replace(workload=Workload(queries))


def _with_aggregates(inst, rng: random.Random):
    """Some queries also return SUM / MIN / MAX of attribute ``v`` of one of their types, grouped by ``g``."""
    from cepopt.model import Aggregate, AttrRef, Workload

    queries = []
    for q in inst.workload.queries:
        if rng.random() < 0.6:
            t = rng.choice(sorted(q.pattern.event_types()))
            extra = tuple(Aggregate(f, t, "v") for f in rng.sample(("SUM", "MIN", "MAX"), rng.randint(1, 2)))
            group = (AttrRef("g"),) if rng.random() < 0.7 and not q.group_by else ()
            q = dataclasses.replace(q, returns=q.returns + extra, group_by=q.group_by + group)
        queries.append(q)
    return inst.replace(workload=Workload(tuple(queries)))


def _renamed_types(inst, rng: random.Random):
    """The instance with its event types renamed to unicode names (as text: queries and statistics)."""
    from cepopt.instance import from_json, to_json

    text = json.dumps(to_json(inst), ensure_ascii=False)
    names = sorted(inst.workload.event_types(), key=len, reverse=True)
    letters = ("Ä", "事件", "Ωμ", "ñ", "Ж")
    for i, name in enumerate(names):
        text = re.sub(rf"\b{re.escape(name)}\b", f"{letters[i % len(letters)]}{i}", text)
    return from_json(json.loads(text))


def make_instance(family: str, seed: int, rng: random.Random, unicode_types: bool):
    inst = _base_instance(family, seed, rng)
    if family != "joinorder" and rng.random() < 0.6:
        candidate = _with_aggregates(inst, rng)
        if _solvable(candidate):
            inst = candidate
    if unicode_types:
        inst = _renamed_types(inst, rng)
    return inst


def _solvable(inst) -> bool:
    from cepopt.errors import CepoptError
    from cepopt.registry import build_problem

    try:
        build_problem(inst)
        return True
    except CepoptError:
        return False


@lru_cache(maxsize=256)
def _plans(key: str) -> tuple[tuple[str, Any], ...]:
    from cepopt.instance import from_json
    from cepopt.registry import methods, solve

    inst = from_json(json.loads(key))
    found: dict[str, tuple[str, Any]] = {"None": ("nonshared", None)}
    for name in methods(inst.problem):
        try:
            sol = solve(inst, name, time_limit=2, seed=0)
        except Exception:  # noqa: BLE001 -- a method that refuses this instance has no plan to compare
            continue
        if getattr(sol, "plan", None) is not None:
            found.setdefault(repr(sol.plan), (name, sol.plan))
    return tuple(found.values())


def plans(inst) -> tuple[tuple[str, Any], ...]:
    """(method, plan) of every registered method that solves ``inst``, one per distinct plan, and the
    non-shared baseline (None)."""
    from cepopt.instance import to_json

    return _plans(json.dumps(to_json(inst), sort_keys=True, ensure_ascii=False))


# ---------------------------------------------------------------------------------------------
# streams
# ---------------------------------------------------------------------------------------------


def _attributes(inst) -> list[str]:
    """Every attribute the queries read (aggregates, GROUP-BY, predicates)."""
    from cepopt.model import AttrRef

    found: dict[str, None] = {}

    def walk(obj):
        if isinstance(obj, AttrRef):
            found[obj.attr] = None
        elif dataclasses.is_dataclass(obj):
            if getattr(obj, "attr", None) and isinstance(obj.attr, str):
                found[obj.attr] = None
            for f in dataclasses.fields(obj):
                walk(getattr(obj, f.name))
        elif isinstance(obj, tuple | list):
            for x in obj:
                walk(x)

    for q in inst.workload.queries:
        walk((q.returns, q.where, q.group_by))
    return list(found)


def _span(inst) -> int:
    longest = max(q.window.length for q in inst.workload.queries)
    return max(4, int(1.5 * longest))


def make_stream(inst, rng: random.Random, traits: tuple[str, ...]) -> tuple[pd.DataFrame, list[str]]:
    """A stream of the instance's types (and noise) over a few windows, with the traits applied; cells
    are Python values or texts exactly as the file will hold them."""
    types = sorted(inst.workload.event_types())
    n = rng.randint(3, MAX_EVENTS[inst.problem])
    span = _span(inst)
    rows = []
    attrs = _attributes(inst)
    for _ in range(n):
        row = {"ts": rng.randint(0, span), "type": "Noise" if rng.random() < 0.1 else rng.choice(types)}
        for a in attrs:
            row[a] = rng.randint(0, 3)
        rows.append(row)
    rows.sort(key=lambda r: r["ts"])
    if "unsorted" in traits:
        rng.shuffle(rows)
    if "duplicate_ts" in traits:
        for r in rows:
            r["ts"] = r["ts"] // 3 * 3
    if "unicode_types" in traits:
        rows.append({"ts": rng.randint(0, span), "type": "Ünïcødé_ñoise"})
    _spoil_values(rows, attrs, traits, rng)
    offset = 0
    if "huge_ts" in traits:
        offset = 2 ** 62 + rng.randint(0, 1000)
    elif "past_2_53" in traits:
        offset = 2 ** 53 + rng.randint(0, 1000)
    elif "negative_ts" in traits:
        offset = -rng.randint(1, 3 * span)
    for r in rows:
        r["ts"] += offset
    frame = pd.DataFrame(rows)
    header = list(frame.columns)
    if "duplicate_header" in traits:
        header = header + [header[-1]]
        frame[f"{header[-1]}__copy"] = frame[header[-1]]
    return frame, header


def _spoil_values(rows: list[dict], attrs: list[str], traits: tuple[str, ...], rng: random.Random) -> None:
    """Apply the traits that change attribute values: big sums, missing cells, texts, non-numbers."""
    if "big_sums" in traits and "v" in attrs:
        for r in rows:
            r["v"] = 2 ** 52 + rng.randint(0, 3)  # each below 2^53, their sums past it
    if "missing" in traits:
        for r in rows:
            for a in attrs:
                if rng.random() < 0.25:
                    r[a] = rng.choice(("", "NA", "null", None))
    groups = [a for a in attrs if a in ("g", "district")]  # the GROUP-BY columns of the generators
    if ("quoting" in traits or "newline" in traits) and groups:
        texts = GROUP_TEXTS + (("line\nbreak", "a\r\nb") if "newline" in traits else ())
        for r in rows:
            r[groups[0]] = rng.choice(texts)
    if "text_in_numbers" in traits and attrs:
        target = "v" if "v" in attrs else rng.choice(attrs)
        rng.choice(rows)[target] = rng.choice(BAD_NUMBERS)


def write_stream(case: Case, folder: Path) -> Path:
    """The case's stream file in ``folder``: CSV (RFC 4180, quoted as needed or always) or Parquet."""
    if case.fmt == "parquet":
        path = folder / "stream.parquet"
        frame = case.frame.copy()
        for col in frame.columns:
            frame[col] = frame[col].map(lambda v: None if v in ("", "NA", "null") else v)
            if col not in ("ts", "type") and frame[col].map(lambda v: isinstance(v, str)).any():
                frame[col] = frame[col].map(lambda v: None if v is None else str(v))
        frame.to_parquet(path, index=False)
        return path
    path = folder / "stream.csv"
    quoting = csv.QUOTE_ALL if "quoting" in case.traits and case.seed % 2 else csv.QUOTE_MINIMAL
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, quoting=quoting, lineterminator="\n")
        writer.writerow(case.header)
        for row in case.frame.itertuples(index=False):
            writer.writerow(["" if v is None or (isinstance(v, float) and v != v) else v for v in row])
    return path


#: consecutive case seeds that share one instance (and its plans, solved once)
CASES_PER_INSTANCE = 8


@lru_cache(maxsize=64)
def instance_of(instance_seed: int) -> tuple[str, Any, bool]:
    """(family, instance, unicode types) of an instance seed."""
    rng = random.Random(instance_seed)
    family = FAMILIES[instance_seed % len(FAMILIES)]
    unicode_types = rng.random() < 0.2
    return family, make_instance(family, rng.randrange(10 ** 6), rng, unicode_types), unicode_types


def make_case(seed: int) -> Case:
    """The case of ``seed``: family, instance, plan, stream."""
    family, inst, unicode_types = instance_of(seed // CASES_PER_INSTANCE)
    rng = random.Random(seed)
    traits = set(rng.sample([t for t in HOSTILE if t != "unicode_types"], rng.choice((0, 1, 1, 2, 3))))
    traits |= {"unicode_types"} if unicode_types else set()
    fmt = "parquet" if "parquet" in traits else "csv"
    if fmt == "parquet":  # the CSV dialect's traits mean nothing there
        traits -= {"duplicate_header", "newline", "quoting"}
    traits = tuple(sorted(traits))
    options = plans(inst)
    plan_name, plan = options[rng.randrange(len(options))]
    frame, header = make_stream(inst, rng, traits)
    return Case(seed, family, inst, plan_name, plan, frame, traits, fmt, header)


def save_case(case: Case, folder: Path) -> Path:
    """Write the case's instance (JSON), stream and description to ``folder`` (to reproduce a difference)."""
    from cepopt.instance import save

    folder.mkdir(parents=True, exist_ok=True)
    save(case.instance, folder / "instance.json")
    write_stream(case, folder)
    (folder / "case.txt").write_text(case.describe() + "\n", encoding="utf-8")
    return folder
