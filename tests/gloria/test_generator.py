"""`cepopt generate gloria` rejects out-of-range options."""

import math

import pytest

from cepopt.errors import CepoptError
from cepopt.instances.gloria_generator import random_instance


@pytest.mark.parametrize("option,value,match", [
    ("kleene", 5, "--kleene: must be a probability in"),
    ("kleene", -1, "--kleene: must be a probability in"),
    ("kleene", math.nan, "--kleene: must be a probability in"),
    ("nested", 7, "--nested: must be a probability in"),
    ("types", 0, "--types: must be >= 1"),
    ("types", -3, "--types: must be >= 1"),
])
def test_out_of_range_options(option, value, match):
    with pytest.raises(CepoptError, match=match):
        random_instance(4, 0, **{option: value})


def test_probability_bounds_are_accepted():
    assert len(random_instance(4, 0, kleene=1, nested=1).workload) == 4
    assert len(random_instance(4, 0, kleene=0, nested=0, types=1).workload) == 4  # types raised to --max-length
