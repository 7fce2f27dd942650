"""The docstring examples of the Hamlet modules run."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["cepopt.hamlet.cost", "cepopt.hamlet.decide"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
