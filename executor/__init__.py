"""cepopt.executor: reference enumerators, per-partition kernels, the Spark driver, cost metering.

Exact results travel as decimal text (partials, results, CSV output) however many digits they have:
a trend count over n events can have 0.3 n digits, past Python's default limit of 4,300 digits for
int <-> str conversion, so importing the executor (in the driver and in every Spark worker) lifts
that limit.
"""

import sys

if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)
