"""Extension through entry points: a package that declares cepopt entry points (here
``tests/data/plugin``, made visible by putting it on the path of a fresh interpreter: its
``*.dist-info/entry_points.txt`` is what ``pip install`` would write) adds a method, a stream generator
and an experiment, without any table of cepopt naming them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PLUGIN = Path(__file__).resolve().parent / "data" / "plugin"


def _run(*code_or_cli: str, cli: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, "-m", "cepopt.cli", *code_or_cli] if cli else [sys.executable, "-c", *code_or_cli]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def test_a_plugin_method_is_listed_and_solves():
    listed = _run("methods")
    assert listed.returncode == 0, listed.stderr
    assert "plugin-empty" in listed.stdout and "a plug-in's method" in listed.stdout
    solved = _run("solve", "sharon-fig4", "--method", "plugin-empty", "--json")
    assert solved.returncode == 0, solved.stderr
    doc = json.loads(solved.stdout)
    assert (doc["method"], doc["status"], doc["objective"]) == ("plugin-empty", "feasible", 0)


def test_a_plugin_stream_generator_and_experiment_are_found():
    proc = _run("from cepopt.instances.streams import generate, names\n"
                "from cepopt.experiments.framework import get_experiment\n"
                "print('tiny' in names(), len(generate('tiny', events=4)), get_experiment('plugin-exp').name)",
                cli=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "4", "plugin-exp"]
    listed = _run("experiment")
    assert "plugin-exp" in listed.stdout and "a plug-in's experiment" in listed.stdout


def test_without_the_plugin_nothing_is_added():
    from cepopt.solve import methods

    assert "plugin-empty" not in methods("sharon")
