"""The compiled GLORIA modules (setup.py, cepopt/gloria/compiled.py): same answers as the Python
sources, in use after a normal install, and never run when stale."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import cepopt
from cepopt.gloria.compiled import (
    COMPILED_MODULES,
    MANIFEST,
    PURE_PYTHON_ENV,
    SHARED_LIBRARY,
    available_modules,
    compiled_modules,
    source_hash,
)

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(cepopt.__file__).resolve().parent  # the installed package (the checkout, when editable)
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


#: one hash seed for every process of a test run (the same set orders in the two processes compared),
#: a new one each run (other orders over time); the failure message names it
HASH_SEED = str(random.randrange(2**32))


def _env(pure: bool, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != PURE_PYTHON_ENV}
    env.update(PYTHONHASHSEED=HASH_SEED, **extra)
    if pure:
        env[PURE_PYTHON_ENV] = "1"
    return env


def _digest(pure: bool, shared: Path | None) -> dict:
    done = subprocess.run([sys.executable, "-m", "tests.gloria.compiled_digest", *([str(shared)] if shared else [])],
                          cwd=REPO,
                          env=_env(pure), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _same(shared: Path | None) -> None:
    """Every graph (nodes, edges, weights, d_s, arg-min edges, trace), search value, cost and plan,
    written by a process running the Python sources and by one running what this install runs."""
    pure, default = _digest(True, shared), _digest(False, shared)
    assert pure["compiled_modules"] == []
    assert default["compiled_modules"] == list(available_modules())  # compiled when this install is
    assert pure["digest"].keys() == default["digest"].keys()
    for name, expected in pure["digest"].items():
        got = default["digest"][name]
        for key in expected:
            assert got[key] == expected[key], (name, key, f"PYTHONHASHSEED={HASH_SEED}")


def test_compiled_and_pure_code_agree_on_random_instances():
    """Random instances under three problem option sets (Fraction costs under fork_accounting=once)."""
    _same(None)


def test_compiled_and_pure_code_agree_on_published_files(shared_dir):
    _same(shared_dir)


def _compiler_available() -> bool:
    cc = sysconfig.get_config_var("CC") or "cc"
    return shutil.which(shlex.split(cc)[0]) is not None


def test_a_normal_install_runs_the_compiled_modules():
    if not _compiler_available():
        pytest.skip("no C compiler: the install falls back to pure Python")
    assert available_modules() == COMPILED_MODULES, (
        "a C compiler is available but cepopt.gloria is not compiled: reinstall (pip install -e .)")
    expected = () if os.environ.get(PURE_PYTHON_ENV) else COMPILED_MODULES  # unless asked for pure Python
    assert compiled_modules() == expected


def test_the_method_stats_say_which_code_ran():
    from cepopt.instances.gloria_generator import random_instance
    from cepopt.registry import solve

    sol = solve(random_instance(5, seed=1), "gloria")
    assert sol.stats["compiled_modules"] == list(compiled_modules())


def _copy_package(tmp_path: Path, with_extensions: bool) -> Path:
    """cepopt/ (and, with the extensions, mypyc's shared library) copied into tmp_path."""
    skip = shutil.ignore_patterns("__pycache__", *(() if with_extensions else ("*.so", "*.pyd", MANIFEST)))
    shutil.copytree(PACKAGE, tmp_path / "cepopt", ignore=skip)
    if with_extensions:
        shutil.copy(importlib.util.find_spec(SHARED_LIBRARY).origin, tmp_path)
    return tmp_path / "cepopt" / "gloria"


def _import(root: Path, pure: bool = False) -> subprocess.CompletedProcess:
    code = ("import cepopt.gloria as g, cepopt.gloria.cost as c, cepopt.gloria.graph as gr; "
            "print(c.__file__); print(gr.__file__); print(','.join(g.compiled_modules()))")
    done = subprocess.run([sys.executable, "-W", "default", "-c", code], cwd=root,
                          env=_env(pure, PYTHONPATH=str(root)), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def _write_manifest(gloria: Path) -> None:
    modules = {m: source_hash(gloria / f"{m}.py") for m in COMPILED_MODULES}
    (gloria / MANIFEST).write_text(json.dumps({"modules": modules}))


def test_the_guard_loads_the_sources_when_one_changed(tmp_path):
    """A (fake) extension beside every module and a manifest; then cost.py is edited: every module
    loads from its source (the fake extensions would fail to load), with one warning naming cost."""
    gloria = _copy_package(tmp_path, with_extensions=False)
    for module in COMPILED_MODULES:
        (gloria / f"{module}{SUFFIX}").write_bytes(b"not an extension")
    _write_manifest(gloria)
    with open(gloria / "cost.py", "a") as fh:
        fh.write("# edited after the build\n")
    done = _import(tmp_path)
    cost_file, graph_file, used = done.stdout.splitlines()
    assert (cost_file, graph_file, used) == (str(gloria / "cost.py"), str(gloria / "graph.py"), "")
    assert done.stderr.count("RuntimeWarning") == 1, done.stderr
    assert "cepopt.gloria.cost " in done.stderr and "cepopt.gloria.graph" not in done.stderr


def test_the_guard_honours_pure_python_at_run_time(tmp_path):
    gloria = _copy_package(tmp_path, with_extensions=False)
    for module in COMPILED_MODULES:
        (gloria / f"{module}{SUFFIX}").write_bytes(b"not an extension")
    _write_manifest(gloria)  # up to date: only the variable keeps the (fake) extensions out
    done = _import(tmp_path, pure=True)
    assert done.stdout.splitlines() == [str(gloria / "cost.py"), str(gloria / "graph.py"), ""]
    assert "Warning" not in done.stderr


def test_the_guard_on_a_real_build(tmp_path):
    if not available_modules():
        pytest.skip("this install runs pure Python (no C compiler, or built with CEPOPT_PURE_PYTHON=1): "
                    "nothing compiled to guard")
    gloria = _copy_package(tmp_path, with_extensions=True)
    cost_file, graph_file, used = _import(tmp_path).stdout.splitlines()
    assert cost_file.endswith(SUFFIX) and graph_file.endswith(SUFFIX)
    assert used.split(",") == list(COMPILED_MODULES)
    with open(gloria / "cost.py", "a") as fh:
        fh.write("# edited after the build\n")
    done = _import(tmp_path)
    assert done.stdout.splitlines() == [str(gloria / "cost.py"), str(gloria / "graph.py"), ""]
    assert done.stderr.count("RuntimeWarning") == 1 and "cepopt.gloria.cost " in done.stderr
