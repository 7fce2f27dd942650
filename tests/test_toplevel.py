"""The top-level API: ``cepopt.load``, ``cepopt.Instance``, ``cepopt.compare``, ``cepopt.generate`` and
``cepopt.execute`` come from ``cepopt`` itself, imported on first use: ``import cepopt`` stays light."""

import subprocess
import sys

HEAVY = ("ortools", "pyspark", "pulp", "scipy", "numba")


def test_the_top_level_api_is_lazy_and_light():
    code = ("import sys, cepopt\n"
            f"heavy = {HEAVY!r}\n"
            "before = [m for m in heavy if m in sys.modules]\n"
            "api = [cepopt.Instance, cepopt.load, cepopt.compare, cepopt.generate, cepopt.execute]\n"
            "after = [m for m in heavy if m in sys.modules]\n"
            "print(before, after, all(callable(f) for f in api), sorted(set(cepopt.__all__) - set(dir(cepopt))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[]", "[]", "True", "[]"]


def test_the_top_level_api_runs():
    import cepopt
    from cepopt.instance import to_json

    inst = cepopt.load("sharon-fig4")
    assert isinstance(inst, cepopt.Instance)
    assert cepopt.compare(inst, ["greedy"])[0].status == "feasible"
    generated = cepopt.generate("joinorder", size=4, seed=2)
    same = cepopt.generate("joinorder", ["--size", "4", "--seed", "2"])
    assert generated.problem == "joinorder" and to_json(generated) == to_json(same)
