"""The benchmark grid: instances x method entries x seeds x repeats, one :class:`Cell` each.

Instance specs (``cepopt benchmark INSTANCE...``):

* a file path or a glob (``runs/*.json``; a glob that matches nothing is an error);
* a bundled instance name (``sharon-example3``), or ``bundled`` / ``bundled:FAMILY`` for all of them;
* ``library:TIER`` (``easy``, ``medium``, ``hard``; ``library`` alone: all): the instance library
  (:mod:`cepopt.benchmarking.library`);
* a generator range ``gen:FAMILY:KEY=V1|V2,KEY=A..B,...``: every combination of the values (``|`` lists
  alternatives, ``A..B`` an inclusive integer range; ``seed`` is the generator's seed), for example
  ``gen:sharon:queries=100|500,preset=default|stress,seed=0..9`` (40 instances).

Method specs (``--method``, repeatable): ``[FAMILY/]NAME[:KEY=VALUE,...][@LABEL]``. Without FAMILY the
entry applies to every benchmarked family that has a method NAME. Several settings of one method are
separate entries, told apart by their labels (default: NAME, or NAME:KEY=VALUE,... with options), e.g.
``cpsat:workers=1@cpsat1``. Without any ``--method`` each family runs its default methods.
"""

from __future__ import annotations

import glob
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cepopt.errors import CepoptError
from cepopt.params import MAX_SEED, parse_param

__all__ = ["Cell", "InstanceRef", "MethodEntry", "build_cells", "cell_key", "parse_methods", "parse_seeds",
           "resolve_instances"]

_GLOB = re.compile(r"[*?\[]")
_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)$")
#: more generated instances than this from one spec is almost surely a typo in a range
MAX_GENERATED = 100_000


@dataclass(frozen=True)
class InstanceRef:
    """An instance of the grid: its stable id (the key of its cells in the results) and the instance."""

    id: str
    instance: Any

    @property
    def family(self) -> str:
        return self.instance.problem


@dataclass(frozen=True)
class MethodEntry:
    """One benchmarked setting: a method of ``family`` (None: any family that has it) with its options."""

    label: str
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)
    family: str | None = None


@dataclass(frozen=True)
class Cell:
    """One task: an instance solved by one method entry with one seed (``repeat``: which repetition)."""

    instance_id: str
    family: str
    label: str
    method: str
    params: Mapping[str, Any]
    seed: int
    repeat: int

    @property
    def key(self) -> tuple[str, str, int, int]:
        return cell_key(self.instance_id, self.label, self.seed, self.repeat)


def cell_key(instance_id: Any, label: Any, seed: Any, repeat: Any) -> tuple[str, str, int, int]:
    """The identity of a cell in the results file (a resumed run skips the keys it finds there)."""
    return str(instance_id), str(label), int(seed), int(repeat)


# ------------------------------------------------------------------------------------------- instances
def _values(key: str, text: str) -> list[Any]:
    """``A|B|C`` or ``A..B`` (inclusive integers) as a list of values, each read as --param reads it."""
    out: list[Any] = []
    for alt in text.split("|"):
        found = _RANGE.match(alt.strip())
        if found:
            low, high = int(found.group(1)), int(found.group(2))
            if high < low:
                raise CepoptError(f"gen spec: {key}={alt}: empty range")
            out.extend(range(low, high + 1))
        else:
            out.append(parse_param(f"{key}={alt}")[1])
    return out


def _generated(spec: str) -> list[InstanceRef]:
    from cepopt.instances.generate import generate

    parts = spec.split(":", 2)
    if len(parts) < 2 or not parts[1]:
        raise CepoptError(f"instance {spec!r}: expected gen:FAMILY[:KEY=V1|V2,KEY=A..B,...]")
    family = parts[1]
    axes: dict[str, list[Any]] = {}
    for item in filter(None, (p.strip() for p in (parts[2] if len(parts) > 2 else "").split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CepoptError(f"instance {spec!r}: {item!r} is not KEY=VALUES")
        axes[key.strip()] = _values(key.strip(), value)
    count = 1
    for values in axes.values():
        count *= len(values)
    if count > MAX_GENERATED:
        raise CepoptError(f"instance {spec!r}: {count} combinations (more than {MAX_GENERATED})")
    keys = sorted(axes)
    out = []
    for combo in itertools.product(*(axes[k] for k in keys)):
        options = dict(zip(keys, combo))
        ident = f"gen:{family}:" + ",".join(f"{k}={options[k]}" for k in keys)
        instance = generate(family, **options)
        out.append(InstanceRef(ident, instance.replace(name=instance.name or ident)))
    return out


def _bundled(spec: str) -> list[InstanceRef]:
    from cepopt.instance import bundled_names, load

    family = spec.partition(":")[2]
    refs = [InstanceRef(name, load(name)) for name in bundled_names()]
    refs = [r for r in refs if not family or r.family == family]
    if not refs:
        raise CepoptError(f"instance {spec!r}: no bundled instance of family {family!r}")
    return refs


def _library(tier: str) -> list[InstanceRef]:
    """The instances of a library tier (every tier when ``tier`` is empty), by their library ids."""
    from cepopt.benchmarking import library_data

    wanted = {e["instance"] for e in library_data.entries(tier or None)}
    tiers = [tier] if tier else list(library_data.TIER_NAMES)
    refs = [r for t in tiers for spec in library_data.tier_specs(t) for r in _one(spec)]
    return [r for r in refs if r.id in wanted]


def _one(spec: str) -> list[InstanceRef]:
    from cepopt.instance import load

    if spec.startswith("gen:"):
        return _generated(spec)
    if spec == "bundled" or spec.startswith("bundled:"):
        return _bundled(spec)
    if spec == "library" or spec.startswith("library:"):
        return _library(spec.partition(":")[2])
    if _GLOB.search(spec) and not Path(spec).exists():
        paths = sorted(glob.glob(spec, recursive=True))
        if not paths:
            raise CepoptError(f"instance {spec!r}: the glob matches no file")
        return [InstanceRef(p, load(p)) for p in paths]
    return [InstanceRef(spec, load(spec))]


def resolve_instances(specs: Iterable[Any]) -> list[InstanceRef]:
    """Every instance the specs (or :class:`~cepopt.instance.Instance` objects, by name) name, each once
    (the first spec that names it wins), in order."""
    from cepopt.instance import Instance

    seen: dict[str, InstanceRef] = {}
    for spec in specs:
        if isinstance(spec, Instance) and not spec.name:
            raise CepoptError("benchmark: an Instance object needs a name (its cells' key)")
        for ref in [InstanceRef(spec.name, spec)] if isinstance(spec, Instance) else _one(str(spec)):
            seen.setdefault(ref.id, ref)
    if not seen:
        raise CepoptError("benchmark: no instance given")
    return list(seen.values())


# ------------------------------------------------------------------------------------------- methods
def parse_method(spec: str) -> MethodEntry:
    """``[FAMILY/]NAME[:KEY=VALUE,...][@LABEL]`` as a :class:`MethodEntry`.

    >>> parse_method("cpsat:workers=1@cpsat1")
    MethodEntry(label='cpsat1', method='cpsat', params={'workers': 1}, family=None)
    >>> parse_method("sharon/gwmin").label, parse_method("dp:k=2,fast=false").label
    ('gwmin', 'dp:k=2,fast=false')
    """
    body, _, label = spec.partition("@")
    head, _, options = body.partition(":")
    family, _, name = head.rpartition("/")
    if not name.strip():
        raise CepoptError(f"--method {spec!r}: expected [FAMILY/]NAME[:KEY=VALUE,...][@LABEL]")
    params = dict(parse_param(item) for item in filter(None, (o.strip() for o in options.split(","))))
    label = label.strip() or (name.strip() + (":" + options.strip() if params else ""))
    return MethodEntry(label, name.strip(), params, family.strip() or None)


def parse_methods(specs: Sequence[str] | None) -> list[MethodEntry]:
    return [parse_method(s) for s in specs or ()]


def _entries_for(family: str, entries: list[MethodEntry]) -> list[MethodEntry]:
    from cepopt.registry import family as family_of
    from cepopt.registry import methods

    table = methods(family)
    if not entries:
        fam = family_of(family)
        return [MethodEntry(name, name, {}, family) for name in (fam.default_methods or table)]
    chosen = [e for e in entries if (e.family or family) == family and e.method in table]
    for e in entries:
        if e.family == family and e.method not in table:
            raise CepoptError(f"--method {e.label}: family {family!r} has no method {e.method!r} "
                              f"(known: {', '.join(table)})")
    return chosen


def parse_seeds(text: str | int | Sequence[int] | None) -> list[int]:
    """``"0..4"``, ``"0,3,7"``, a count ``N`` (seeds 0..N-1) or a list of seeds.

    >>> parse_seeds("2"), parse_seeds("3..5"), parse_seeds("1,7"), parse_seeds(None)
    ([0, 1], [3, 4, 5], [1, 7], [0])
    """
    if text is None:
        return [0]
    if isinstance(text, int):
        seeds = list(range(text))
    elif isinstance(text, str):
        text = text.strip()
        found = _RANGE.match(text)
        if found:
            seeds = list(range(int(found.group(1)), int(found.group(2)) + 1))
        elif "," in text:
            seeds = [_int_seed(t) for t in text.split(",") if t.strip()]
        else:
            seeds = list(range(_int_seed(text)))
    else:
        seeds = [_int_seed(s) for s in text]
    if not seeds or any(not 0 <= s <= MAX_SEED for s in seeds):
        raise CepoptError(f"--seeds {text!r}: expected N, A..B or A,B,... with seeds in [0, {MAX_SEED}]")
    return list(dict.fromkeys(seeds))


def _int_seed(text: Any) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise CepoptError(f"--seeds: {text!r} is not an integer") from None


def build_cells(instances: list[InstanceRef], entries: list[MethodEntry], seeds: list[int],
                repeats: int = 1) -> list[Cell]:
    """Every (instance, method entry, seed, repeat), instance-major. A method entry that no instance's
    family has, or two entries of one family with one label, is a user error."""
    if repeats < 1:
        raise CepoptError(f"--repeats: expected a positive integer, got {repeats}")
    per_family = {f: _entries_for(f, entries) for f in dict.fromkeys(r.family for r in instances)}
    used = {id(e) for chosen in per_family.values() for e in chosen}
    unused = [e.label for e in entries if id(e) not in used]
    if unused:
        raise CepoptError(f"--method {unused[0]}: no benchmarked family ({', '.join(per_family)}) has it")
    for family, chosen in per_family.items():
        labels = [e.label for e in chosen]
        dup = next((lab for lab in labels if labels.count(lab) > 1), None)
        if dup:
            raise CepoptError(f"--method: two entries of family {family!r} are labelled {dup!r} (add @LABEL)")
    return [Cell(ref.id, ref.family, e.label, e.method, dict(e.params), seed, rep)
            for ref in instances for e in per_family[ref.family] for seed in seeds for rep in range(repeats)]
