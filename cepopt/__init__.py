"""cepopt: exact plan selection for complex event processing, checked on Spark.

The public API is re-exported here; see README.md for the tour.
"""

from cepopt.errors import CepoptError
from cepopt.model import (
    Aggregate,
    And,
    AttrRef,
    Condition,
    Equivalence,
    Filter,
    Kleene,
    Not,
    Or,
    Query,
    Seq,
    Statistics,
    Type,
    Window,
    Workload,
)

__all__ = [
    "Aggregate", "And", "AttrRef", "CepoptError", "Condition", "Equivalence", "Filter", "Kleene",
    "Not", "Or", "Query", "Seq", "Statistics", "Type", "Window", "Workload",
]
__version__ = "0.1.0"
