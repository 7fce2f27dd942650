"""The docstring examples of the join-order modules run."""

import doctest
import importlib

import pytest

MODULES = ["cepopt.joinorder." + m for m in (
    "plans", "reduce", "cost", "negation", "trivial", "efreq", "greedy", "ii", "dp", "zstream", "bruteforce",
)] + ["cepopt.instances.joinorder_generator", "tests.joinorder.plain_cost"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
