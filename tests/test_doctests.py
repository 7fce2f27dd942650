"""The examples in the docstrings of the foundation modules run."""

import doctest
import importlib

import pytest

MODULES = ["cepopt.model", "cepopt.entry_points", "cepopt.instance", "cepopt.cli", "cepopt.syntax",
           "cepopt.predicates", "cepopt.formulations.milp", "cepopt.formulations.model", "cepopt.experiments.framework",
           "cepopt.instances", "cepopt.instances.generate"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
