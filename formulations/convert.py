"""A :class:`~cepopt.formulations.linear.Model` in each solver's own form: CP-SAT's proto (objective scaled to
integers), MathOpt's ModelProto (filled from flat lists), and PuLP problems both ways. No solve here: the
solving modules (:mod:`~cepopt.formulations.cpsat`, :mod:`~cepopt.formulations.milp`) and the writer
(:mod:`~cepopt.formulations.export`) build on these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from cepopt.errors import CepoptError
from cepopt.formulations.linear import Model
from cepopt.formulations.scaling import coefficient_total, integer_scale, milp_scale

__all__ = ["BIG", "from_pulp", "mathopt_proto", "to_cpsat", "to_pulp"]


#: stands for an absent bound in CP-SAT (its domains are int64)
BIG = 2**62


def _int_bound(value, up: bool) -> int:
    if value is None:
        return BIG if up else -BIG
    return math.floor(value) if up else math.ceil(value)


def _int_row(coefs: Sequence, lo, hi) -> tuple[list[int], object, object]:
    """A row with integer coefficients: fractional ones times the lcm of their denominators (exact)."""
    if all(type(c) is int for c in coefs):
        return coefs, lo, hi
    if all(isinstance(c, int) or (isinstance(c, float) and c.is_integer()) for c in coefs):
        return [int(c) for c in coefs], lo, hi
    fr = [Fraction(c) for c in coefs]
    m = math.lcm(*(f.denominator for f in fr))
    if m > 2**20:
        raise CepoptError("CP-SAT takes integer constraint coefficients: a row's fractions need a multiplier "
                          f"of {m}; use a MILP backend")
    return ([int(f * m) for f in fr], None if lo is None else Fraction(lo) * m,
            None if hi is None else Fraction(hi) * m)


def to_cpsat(model: Model):
    """The CP-SAT model of a :class:`~cepopt.formulations.model.Model` and the objective's IntScale.
    Rows of ones over binaries with upper side 1 become native at-most-one constraints; the rest stay
    linear (as an implication, x <= y would not reach the LP relaxation when presolve is off)."""
    from ortools.sat.python import cp_model

    if not all(model.integer):
        raise CepoptError(f"CP-SAT takes integer variables only: model {model.name!r} has continuous ones "
                          "(use a MILP backend)")
    m = cp_model.CpModel()
    proto = m.Proto()
    lbs = [_int_bound(v, False) for v in model.lb]
    ubs = [_int_bound(v, True) for v in model.ub]
    non_binary = {j for j, (lb, ub) in enumerate(zip(lbs, ubs, strict=True)) if lb != 0 or ub != 1}
    for name, lb, ub in zip(model.names, lbs, ubs, strict=True):
        var = proto.variables.add()
        var.name = name
        var.domain.extend([lb, ub])
    for cols, coefs, lo, hi in model.rows:
        ct = proto.constraints.add()
        if hi == 1 and (lo is None or lo <= 0) and coefs.count(1) == len(coefs) and \
                (not non_binary or non_binary.isdisjoint(cols)):
            ct.at_most_one.literals.extend(cols)
            continue
        ints, lo, hi = _int_row(coefs, lo, hi)
        ct.linear.vars.extend(cols)
        ct.linear.coeffs.extend(ints)
        if non_binary and not non_binary.isdisjoint(cols):
            low = sum(min(c * lbs[j], c * ubs[j]) for j, c in zip(cols, ints, strict=True))
            high = sum(max(c * lbs[j], c * ubs[j]) for j, c in zip(cols, ints, strict=True))
        else:  # binaries: the activity lies between the negative and the positive coefficients' sums
            low, high = sum(c for c in ints if c < 0), sum(c for c in ints if c > 0)
        ct.linear.domain.extend([max(_int_bound(lo, False), -BIG, low) if lo is not None else max(low, -BIG),
                                 min(_int_bound(hi, True), BIG, high) if hi is not None else min(high, BIG)])
    scale = integer_scale(model.objective)
    ints = [scale.to_int(c) for c in model.objective]
    nz = [i for i, c in enumerate(ints) if c]
    sign = -1 if model.sense == "max" else 1
    # maximise = minimise the negated objective with scaling factor -1 (as CpModel.maximize writes it)
    proto.objective.vars.extend(nz)
    proto.objective.coeffs.extend([sign * ints[i] for i in nz])
    proto.objective.scaling_factor = float(sign)
    return m, scale


def mathopt_proto(model, factor: float | None = None):
    """(MathOpt ModelProto of ``model``, the objective factor used)."""
    from ortools.math_opt import model_pb2

    if factor is None:
        factor = milp_scale(coefficient_total([c for c in model.objective if c]))
    n = len(model.names)
    proto = model_pb2.ModelProto(name=model.name)
    var = proto.variables
    var.ids.extend(range(n))
    var.lower_bounds.extend(-math.inf if v is None else float(v) for v in model.lb)
    var.upper_bounds.extend(math.inf if v is None else float(v) for v in model.ub)
    var.integers.extend(model.integer)
    var.names.extend(model.names)
    proto.objective.maximize = model.sense == "max"
    proto.objective.offset = float(model.constant) * factor
    nz = [(i, float(c) * factor) for i, c in enumerate(model.objective) if c]
    proto.objective.linear_coefficients.ids.extend(i for i, _ in nz)
    proto.objective.linear_coefficients.values.extend(c for _, c in nz)
    cons, mat = proto.linear_constraints, proto.linear_constraint_matrix
    cons.ids.extend(range(len(model.rows)))
    cons.lower_bounds.extend(-math.inf if r[2] is None else float(r[2]) for r in model.rows)
    cons.upper_bounds.extend(math.inf if r[3] is None else float(r[3]) for r in model.rows)
    rows, cols, vals = model.matrix()  # sorted by row, then column, as MathOpt wants
    mat.row_ids.extend(rows.tolist())
    mat.column_ids.extend(cols.tolist())
    mat.coefficients.extend(vals.tolist())
    if model.row_names is not None:
        cons.names.extend(model.row_names)
    return proto, factor


def to_pulp(model, factor: float = 1):
    """(a PuLP problem of ``model`` with its objective times ``factor``, its variables by index)."""
    import pulp

    prob = pulp.LpProblem(model.name, pulp.LpMaximize if model.sense == "max" else pulp.LpMinimize)
    xs = [pulp.LpVariable(nm, None if lb is None else lb, None if ub is None else ub,
                          cat=pulp.LpInteger if integer else pulp.LpContinuous)
          for nm, lb, ub, integer in zip(model.names, model.lb, model.ub, model.integer, strict=True)]
    prob += pulp.LpAffineExpression([(xs[i], float(c) * factor) for i, c in enumerate(model.objective) if c],
                                    constant=float(model.constant) * factor)
    names = model.row_names or [f"r{k}" for k in range(len(model.rows))]
    for k, (cols, coefs, lo, hi) in enumerate(model.rows):
        expr = pulp.LpAffineExpression([(xs[j], float(c)) for j, c in zip(cols, coefs, strict=True)])
        if lo is not None and lo == hi:
            prob += expr == float(hi), names[k]
            continue
        if hi is not None:
            prob += expr <= float(hi), names[k]
        if lo is not None:
            prob += expr >= float(lo), names[k] + ("_lo" if hi is not None else "")
    return prob, xs


def from_pulp(prob):
    """A :class:`~cepopt.formulations.model.Model` of a PuLP problem (variables keep their names)."""
    import pulp

    model = Model(prob.name or "cepopt", "max" if prob.sense == pulp.LpMaximize else "min")
    index = {}
    for v in prob.variables():
        index[v.name] = model.add_var(v.name, v.lowBound, v.upBound, v.cat == pulp.LpInteger)
    objective = prob.objective if prob.objective is not None else pulp.LpAffineExpression()
    for v, c in objective.items():
        model.objective[index[v.name]] += c
    model.constant = objective.constant
    for name, con in prob.constraints.items():
        cols = [index[v.name] for v in con]
        coefs = list(con.values())
        rhs = -con.constant
        lo = rhs if con.sense in (pulp.LpConstraintGE, pulp.LpConstraintEQ) else None
        hi = rhs if con.sense in (pulp.LpConstraintLE, pulp.LpConstraintEQ) else None
        model.add_row(cols, coefs, lo, hi, name=name)
    return model


