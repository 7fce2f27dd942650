"""One MathOpt solve in a child process that the parent can end at its deadline.

Why: HiGHS (as OR-Tools 9.15 bundles it) does not stop at its time limit in every step (measured: its
root "central rounding" ran 30-40 s past limits of 55-90 s on 20,000-query Sharon models), and ignores
MathOpt's SolveInterrupter (measured: an interrupt at 1 s of a 5 s limit changed nothing). Only ending
the process stops it. :func:`solve_in_child` writes the model, parameters and the absolute deadline to a
child (``python -m cepopt.formulations.mathopt_child``), which sets the solver's time limit to what is
left at its start and answers with the serialized result; the parent kills it ``grace`` seconds after
the deadline. Solver output goes to standard error (the child's standard output carries the result).
"""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
import time

__all__ = ["ChildResult", "solve_in_child"]

_HEADER = struct.Struct("<iqqqd")  # solver type, three lengths, deadline (time.time())


class ChildResult:
    """What came back: ``result`` (a SolveResultProto) or None when the child was killed (``killed``) or
    failed (``error`` says how); ``cpu_s`` the child's CPU seconds."""

    def __init__(self, result=None, killed: bool = False, error: str = "", cpu_s: float = 0.0):
        self.result, self.killed, self.error, self.cpu_s = result, killed, error, cpu_s


def solve_in_child(proto, solver_type: int, params, model_params, deadline: float, grace: float) -> ChildResult:
    """Solve in a child process; ``deadline`` is a ``time.time()`` value, ``grace`` the seconds after it
    at which the child is killed."""
    from ortools.math_opt import result_pb2

    blobs = [proto.SerializeToString(), params.SerializeToString(), model_params.SerializeToString()]
    payload = _HEADER.pack(solver_type, *map(len, blobs), deadline) + b"".join(blobs)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen([sys.executable, "-m", "cepopt.formulations.mathopt_child"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    killed = False
    try:
        out, _ = proc.communicate(payload, timeout=max(deadline + grace - time.time(), 0.0))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        killed, out = True, b""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if killed:
        return ChildResult(killed=True, cpu_s=cpu)
    if proc.returncode != 0 or not out:
        return ChildResult(error=f"solver process ended with code {proc.returncode}", cpu_s=cpu)
    if out[:1] == b"E":  # the solver raised: its message
        return ChildResult(error=out[1:].decode(errors="replace"), cpu_s=cpu)
    return ChildResult(result_pb2.SolveResultProto.FromString(out[1:]), cpu_s=cpu)


def _main() -> None:
    from ortools.math_opt import callback_pb2, model_parameters_pb2, model_pb2, parameters_pb2
    from ortools.math_opt.core.python import solver as core

    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the solver's own output goes to standard error
    data = sys.stdin.buffer.read()
    solver_type, n_model, n_params, n_model_params, deadline = _HEADER.unpack_from(data)
    at = _HEADER.size
    proto = model_pb2.ModelProto.FromString(data[at:at + n_model])
    at += n_model
    params = parameters_pb2.SolveParametersProto.FromString(data[at:at + n_params])
    at += n_params
    model_params = model_parameters_pb2.ModelSolveParametersProto.FromString(data[at:at + n_model_params])
    params.time_limit.FromNanoseconds(int(max(deadline - time.time(), 0.001) * 1e9))
    try:
        res = core.solve(proto, solver_type, parameters_pb2.SolverInitializerProto(), params, model_params,
                         None, callback_pb2.CallbackRegistrationProto(), None, None)
    except Exception as exc:  # noqa: BLE001 - handed to the parent, which reports it as the solver's failure
        from cepopt.formulations.milp import _solver_reason

        answer.write(b"E" + _solver_reason(exc).encode()[:300])
    else:
        answer.write(b"R" + res.SerializeToString())
    answer.close()


if __name__ == "__main__":
    _main()
