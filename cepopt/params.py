"""Reading family options (``params.KEY`` / ``--param KEY=VALUE``) with one-line user errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cepopt.errors import CepoptError

__all__ = ["parse_choice"]


def parse_choice(key: str, value: Any, choices: Mapping[str, str] | tuple) -> str:
    """``value`` as one of ``choices`` (case and surrounding blanks ignored); a mapping also renames
    (alias -> canonical name). Anything else raises a CepoptError naming ``params.KEY``."""
    table = choices if isinstance(choices, Mapping) else {c: c for c in choices}
    if not isinstance(value, str) or value.strip().lower() not in table:
        raise CepoptError(f"params.{key}: expected one of {', '.join(dict.fromkeys(table))}, got {value!r}")
    return table[value.strip().lower()]
