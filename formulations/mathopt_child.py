"""One MathOpt solve in a child process that the parent can end at its deadline.

Why: HiGHS (as OR-Tools 9.15 bundles it) does not stop at its time limit in every step (measured: its
root "central rounding" ran 30-40 s past limits of 55-90 s on 20,000-query Sharon models), and ignores
MathOpt's SolveInterrupter (measured: an interrupt at 1 s of a 5 s limit changed nothing). Only ending
the process stops it. :func:`solve_in_child` writes the model, parameters and the absolute deadline to a
child (``python -m cepopt.formulations.mathopt_child``), which sets the solver's time limit to what is
left at its start and answers with the serialized result; the parent kills it ``grace`` seconds after
the deadline. While it runs, the child reads the dual bound off HiGHS's progress lines and sends each
one ahead of the result, so a killed solve still has the last bound HiGHS logged (the log prints it to
about 14 digits: the parent widens it by :data:`LOG_BOUND_SLACK` of itself), and HiGHS writes each
improving solution to a temporary file (``mip_improving_solution_file``), read back after a kill
(:func:`last_improving_solution`; MathOpt's HiGHS takes no solution callback). Solver output goes to
standard error when asked for (the child's standard output carries the answer).
"""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
import time

__all__ = ["ChildResult", "last_improving_solution", "solve_in_child"]

_HEADER = struct.Struct("<iqqqd?")  # solver type, three lengths, deadline (time.time()), echo the log
_BOUND = struct.Struct("<d")

#: relative width added to a dual bound read off HiGHS's log (printed, not exact)
LOG_BOUND_SLACK = 1e-6


def log_dual_bound(line: str) -> float | None:
    """The BestBound column of a HiGHS branch-and-bound progress line (``Src Proc. InQueue Leaves Expl.%
    BestBound BestSol Gap% Cuts InLp Confl. LpIters Time``), None for any other line or an infinite bound."""
    tokens = line.split()
    if len(tokens) < 11 or not tokens[-1].endswith("s"):
        return None
    for k in range(3, 5):  # Expl.% is the 4th or (with a source letter) the 5th token
        if tokens[k].endswith("%"):
            try:
                bound = float(tokens[k + 1])
            except ValueError:
                return None
            return bound if bound not in (float("inf"), float("-inf")) and bound == bound else None
    return None


class ChildResult:
    """What came back: ``result`` (a SolveResultProto) or None when the child was killed (``killed``) or
    failed (``error`` says how); ``log_bound`` the last dual bound of the solver's log (None if none, in
    the model's units as the solver saw them, not widened); ``cpu_s`` the child's CPU seconds."""

    def __init__(self, result=None, killed: bool = False, error: str = "", cpu_s: float = 0.0,
                 log_bound: float | None = None, incumbent: list[float] | None = None):
        self.result, self.killed, self.error, self.cpu_s = result, killed, error, cpu_s
        self.log_bound = log_bound
        #: a killed HiGHS's last improving solution (column values in model order), None if it had none
        self.incumbent = incumbent


def last_improving_solution(text: str, columns: int) -> list[float] | None:
    """The last complete solution HiGHS wrote with ``mip_improving_solution_save`` (blocks of ``Objective
    V`` / ``# Columns N`` / N lines ``name value``; a block cut off by the kill is skipped), or None when
    there is none of ``columns`` values."""
    lines = text.splitlines()
    for start in range(len(lines) - 2, -1, -1):
        if not (lines[start].startswith("Objective ") and lines[start + 1] == f"# Columns {columns}"):
            continue
        body = lines[start + 2:start + 2 + columns]
        if len(body) < columns:
            continue
        try:
            return [float(line.rsplit(None, 1)[1]) for line in body]
        except (IndexError, ValueError):
            continue
    return None


def solve_in_child(proto, solver_type: int, params, model_params, deadline: float, grace: float,
                   echo: bool = False) -> ChildResult:
    """Solve in a child process; ``deadline`` is a ``time.time()`` value, ``grace`` the seconds after it
    at which the child is killed; ``echo`` copies the solver's log to standard error."""
    import tempfile

    from ortools.math_opt import parameters_pb2

    with tempfile.TemporaryDirectory(prefix="cepopt-highs-") as folder:
        solutions = os.path.join(folder, "improving.sol")
        if solver_type == parameters_pb2.SOLVER_TYPE_HIGHS:  # so that a kill keeps HiGHS's incumbent
            params = type(params).FromString(params.SerializeToString())
            params.highs.bool_options["mip_improving_solution_save"] = True
            params.highs.string_options["mip_improving_solution_file"] = solutions
        return _run_child(proto, solver_type, params, model_params, deadline, grace, echo, solutions)


def _run_child(proto, solver_type, params, model_params, deadline, grace, echo, solutions) -> ChildResult:
    from ortools.math_opt import result_pb2

    blobs = [proto.SerializeToString(), params.SerializeToString(), model_params.SerializeToString()]
    payload = _HEADER.pack(solver_type, *map(len, blobs), deadline, echo) + b"".join(blobs)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen([sys.executable, "-m", "cepopt.formulations.mathopt_child"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    killed = False
    try:
        out, _ = proc.communicate(payload, timeout=max(deadline + grace - time.time(), 0.0))
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()  # what the child wrote before the kill
        killed = True
    except BaseException:  # Ctrl-C, ...: leave no solver running
        proc.kill()
        proc.wait()
        raise
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    at, bound = 0, None
    while out[at:at + 1] == b"B" and at + 1 + _BOUND.size <= len(out):
        (bound,) = _BOUND.unpack_from(out, at + 1)
        at += 1 + _BOUND.size
    out = out[at:]
    if killed:
        incumbent = None
        if os.path.exists(solutions):
            with open(solutions, errors="replace") as fh:
                incumbent = last_improving_solution(fh.read(), len(proto.variables.ids))
        return ChildResult(killed=True, cpu_s=cpu, log_bound=bound, incumbent=incumbent)
    if proc.returncode != 0 or not out:
        return ChildResult(error=f"solver process ended with code {proc.returncode}", cpu_s=cpu, log_bound=bound)
    if out[:1] == b"E":  # the solver raised: its message
        return ChildResult(error=out[1:].decode(errors="replace"), cpu_s=cpu, log_bound=bound)
    return ChildResult(result_pb2.SolveResultProto.FromString(out[1:]), cpu_s=cpu, log_bound=bound)


def _main() -> None:
    from ortools.math_opt import callback_pb2, model_parameters_pb2, model_pb2, parameters_pb2
    from ortools.math_opt.core.python import solver as core

    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the solver's own output goes to standard error
    data = sys.stdin.buffer.read()
    solver_type, n_model, n_params, n_model_params, deadline, echo = _HEADER.unpack_from(data)
    at = _HEADER.size
    proto = model_pb2.ModelProto.FromString(data[at:at + n_model])
    at += n_model
    params = parameters_pb2.SolveParametersProto.FromString(data[at:at + n_params])
    at += n_params
    model_params = model_parameters_pb2.ModelSolveParametersProto.FromString(data[at:at + n_model_params])
    params.time_limit.FromNanoseconds(int(max(deadline - time.time(), 0.001) * 1e9))

    def on_lines(lines: list[str]) -> None:
        for line in lines:
            if echo:
                sys.stderr.write(line + "\n")
            bound = log_dual_bound(line)
            if bound is not None:
                answer.write(b"B" + _BOUND.pack(bound))
                answer.flush()

    try:
        res = core.solve(proto, solver_type, parameters_pb2.SolverInitializerProto(), params, model_params,
                         on_lines, callback_pb2.CallbackRegistrationProto(), None, None)
    except Exception as exc:  # noqa: BLE001 - handed to the parent, which reports it as the solver's failure
        from cepopt.formulations.native import solver_reason

        answer.write(b"E" + solver_reason(exc).encode()[:300])
    else:
        answer.write(b"R" + res.SerializeToString())
    answer.close()


if __name__ == "__main__":
    _main()
