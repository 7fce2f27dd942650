"""Writing a model for another solver: free MPS, CPLEX LP, or the solver's proto in text.

:func:`write_model` takes a :class:`~cepopt.formulations.model.Model` (any format), a CP-SAT
``CpModel`` (its proto in text only: CP-SAT models may hold constraints MPS cannot state) or a PuLP
problem. Numbers are written exactly as Python prints them (integers in full, floats with every digit);
MPS states the sense with ``OBJSENSE`` and an objective constant as a column fixed at 1 (``OBJ_CONSTANT``),
which every reader takes (a right-hand side on the objective row is read differently, or refused).
"""

from __future__ import annotations

import os
import re
from fractions import Fraction
from pathlib import Path

from cepopt.errors import CepoptError
from cepopt.formulations.convert import from_pulp, mathopt_proto, to_cpsat
from cepopt.formulations.linear import Model
from cepopt.formulations.native import Export, check_export_path, settings

__all__ = ["export_now", "lp_text", "mps_text", "offer_export", "write_model"]


def _num(x) -> str:
    if isinstance(x, bool):
        return str(int(x))
    if isinstance(x, int):
        return str(x)
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else repr(float(x))
    return repr(float(x))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\[\]()#$%&~@-]", "_", name) or "_"


def _names(model) -> tuple[list[str], list[str]]:
    cols = [_safe(n) for n in model.names]
    if len(set(cols)) != len(cols):
        cols = [f"{n}__{i}" for i, n in enumerate(cols)]
    rows = [_safe(n) for n in (model.row_names or [f"r{k}" for k in range(len(model.rows))])]
    if len(set(rows)) != len(rows):
        rows = [f"{n}__{k}" for k, n in enumerate(rows)]
    return cols, rows


def mps_text(model) -> str:
    """Free-format MPS of a Model."""
    cols, rnames = _names(model)
    out = [f"NAME {_safe(model.name)}", "OBJSENSE", "    MAX" if model.sense == "max" else "    MIN", "ROWS", " N  OBJ"]
    kept = []  # (row index, type)
    for k, (_, _, lo, hi) in enumerate(model.rows):
        if lo is None and hi is None:
            continue
        kind = "E" if lo is not None and lo == hi else ("L" if hi is not None else "G")
        kept.append((k, kind))
        out.append(f" {kind}  {rnames[k]}")
    entries: list[list[tuple[str, object]]] = [[] for _ in model.names]
    for j, c in enumerate(model.objective):
        if c:
            entries[j].append(("OBJ", c))
    for k, _ in kept:
        cidx, coefs, _, _ = model.rows[k]
        for j, c in zip(cidx, coefs, strict=True):
            if c:
                entries[j].append((rnames[k], c))
    out.append("COLUMNS")
    in_int = False
    for j, name in enumerate(cols):
        if model.integer[j] != in_int:
            in_int = model.integer[j]
            out.append(f"    MARKER  'MARKER'  '{'INTORG' if in_int else 'INTEND'}'")
        if not entries[j]:
            out.append(f"    {name}  OBJ  0")
        out.extend(f"    {name}  {r}  {_num(c)}" for r, c in entries[j])
    if in_int:
        out.append("    MARKER  'MARKER'  'INTEND'")
    if model.constant:
        out.append(f"    OBJ_CONSTANT  OBJ  {_num(model.constant)}")
    out.append("RHS")
    ranges = []
    for k, kind in kept:
        _, _, lo, hi = model.rows[k]
        rhs = lo if kind in ("E", "G") else hi
        if rhs:
            out.append(f"    RHS  {rnames[k]}  {_num(rhs)}")
        if kind == "L" and lo is not None:
            ranges.append(f"    RNG  {rnames[k]}  {_num(hi - lo)}")
    if ranges:
        out.append("RANGES")
        out.extend(ranges)
    out.append("BOUNDS")
    for j, name in enumerate(cols):
        out.extend(_mps_bounds(name, model.lb[j], model.ub[j], model.integer[j]))
    if model.constant:
        out.append(" FX BND  OBJ_CONSTANT  1")
    out.append("ENDATA")
    return "\n".join(out) + "\n"


def _mps_bounds(name: str, lb, ub, integer: bool) -> list[str]:
    if integer and lb == 0 and ub == 1:
        return [f" BV BND  {name}"]
    if lb is not None and ub is not None and lb == ub:
        return [f" FX BND  {name}  {_num(lb)}"]
    if lb is None and ub is None:
        return [f" FR BND  {name}"]
    lines = [f" MI BND  {name}" if lb is None else f" LO BND  {name}  {_num(lb)}"]
    lines.append(f" PL BND  {name}" if ub is None else f" UP BND  {name}  {_num(ub)}")
    return lines


def _lp_terms(pairs, names) -> str:
    parts = []
    for k, (j, c) in enumerate(pairs):
        text = _num(c)
        sign = "-" if text.startswith("-") else "+"
        text = text.lstrip("-")
        parts.append(("" if k == 0 and sign == "+" else f"{sign} ") + f"{text} {names[j]}")
        if k % 8 == 7:
            parts.append("\n   ")
    return " ".join(parts).replace(" \n   ", "\n   ") if parts else "0 " + (names[0] if names else "")


def lp_text(model) -> str:
    """CPLEX LP format of a Model (a ranged row becomes two rows, ``NAME_lo`` and ``NAME_hi``)."""
    cols, rnames = _names(model)
    out = [f"\\ {model.name}", "Maximize" if model.sense == "max" else "Minimize"]
    obj = _lp_terms([(j, c) for j, c in enumerate(model.objective) if c], cols)
    if model.constant:
        obj += f" {'-' if model.constant < 0 else '+'} {_num(abs(model.constant))}"
    out.append(f" OBJ: {obj}")
    out.append("Subject To")
    for k, (cidx, coefs, lo, hi) in enumerate(model.rows):
        terms = _lp_terms([(j, c) for j, c in zip(cidx, coefs, strict=True) if c], cols)
        if lo is not None and lo == hi:
            out.append(f" {rnames[k]}: {terms} = {_num(hi)}")
        elif lo is not None and hi is not None:
            out.append(f" {rnames[k]}_lo: {terms} >= {_num(lo)}")
            out.append(f" {rnames[k]}_hi: {terms} <= {_num(hi)}")
        elif hi is not None:
            out.append(f" {rnames[k]}: {terms} <= {_num(hi)}")
        elif lo is not None:
            out.append(f" {rnames[k]}: {terms} >= {_num(lo)}")
    out.append("Bounds")
    generals, binaries = [], []
    for j, name in enumerate(cols):
        lb, ub = model.lb[j], model.ub[j]
        if model.integer[j] and lb == 0 and ub == 1:
            binaries.append(name)
            continue
        if model.integer[j]:
            generals.append(name)
        if lb is None and ub is None:
            out.append(f" {name} free")
        else:
            out.append(f" {'-inf' if lb is None else _num(lb)} <= {name} <= {'+inf' if ub is None else _num(ub)}")
    for title, names in (("Generals", generals), ("Binaries", binaries)):
        if names:
            out.append(title)
            out.extend(f" {' '.join(names[k:k + 10])}" for k in range(0, len(names), 10))
    out.append("End")
    return "\n".join(out) + "\n"


def _proto_text(model, backend: str | None) -> str:
    from google.protobuf import text_format

    if backend == "cpsat":
        cp, scale = to_cpsat(model)
        head = (f"# cepopt model {model.name!r} for CP-SAT: objective coefficients times {scale.factor!r} "
                f"({'exact' if scale.exact else 'rounded'})\n")
        return head + str(cp.Proto())
    proto, factor = mathopt_proto(model)
    head = f"# cepopt model {model.name!r} as a MathOpt ModelProto (objective times {factor!r})\n"
    return head + text_format.MessageToString(proto)


def write_model(model, path: str | os.PathLike, backend: str | None = None) -> str:
    """Write ``model`` to ``path`` in the format its extension names; returns that format."""
    fmt = check_export_path(path)
    if not isinstance(model, Model):
        model = _foreign(model, fmt)
        if isinstance(model, str):
            Path(path).write_text(model)
            return fmt
    if fmt == "mps":
        text = mps_text(model)
    elif fmt == "lp":
        text = lp_text(model)
    else:
        text = _proto_text(model, backend)
    Path(path).write_text(text)
    return fmt


def _foreign(model, fmt: str):
    """A CP-SAT or PuLP model: its text (CP-SAT) or a Model (PuLP)."""
    from ortools.sat.python import cp_model

    if isinstance(model, cp_model.CpModel):
        if fmt != "proto":
            raise CepoptError("this method solves a CP-SAT model, which exports as its proto in text "
                              "(--export FILE.pbtxt), not as MPS or LP")
        return "# cepopt: a CP-SAT model\n" + str(model.Proto())
    return from_pulp(model)


def _write(model, backend: str, exp: Export) -> None:
    try:
        fmt = write_model(model, exp.path, backend)
    except CepoptError as exc:
        exp.error = str(exc)
        return
    exp.written += 1
    exp.formats.append(fmt)
    exp.error = ""


def offer_export(model, backend: str) -> None:
    """Called by every solve: write ``model`` when an export is requested (the session's settings,
    :func:`cepopt.formulations.native.solver_settings`) and not locked."""
    exp = settings().export
    if exp is not None and not exp.locked:
        _write(model, backend, exp)


def export_now(model, backend: str) -> None:
    """A formulation's whole model (before it splits it into blocks or runs a first stage): written
    when an export is requested, and locked so that the solves that follow do not overwrite it."""
    exp = settings().export
    if exp is not None and not exp.locked:
        _write(model, backend, exp)
        exp.locked = exp.written > 0
