"""The instance library's data: the tiers, the exact methods that certify an optimum, and the shipped
solution file ``library.json`` (:mod:`cepopt.benchmarking.library` builds and verifies it; the grid reads
``library:TIER`` from here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cepopt.errors import CepoptError

__all__ = ["AGREE", "EXACT", "LIBRARY_PATH", "SEEDS", "TIERS", "TIER_NAMES", "entries", "tier_specs"]

LIBRARY_PATH = Path(__file__).with_name("library.json")
TIER_NAMES = ("easy", "medium", "hard")
SEEDS = "0..9"

#: family -> tier -> generator options (each with seeds 0..9)
TIERS: dict[str, dict[str, str]] = {
    "sharon": {"easy": "queries=20", "medium": "queries=100", "hard": "queries=1500,preset=stress"},
    "joinorder": {"easy": "size=8", "medium": "size=16", "hard": "size=40"},
    "gloria": {"easy": "queries=8", "medium": "queries=20", "hard": "queries=800"},
    "hamlet": {"easy": "queries=3", "medium": "queries=5", "hard": "queries=12"},
}
#: family -> the exact methods that certify an optimum (method specs of cepopt.benchmarking.grid)
EXACT: dict[str, tuple[str, ...]] = {
    "sharon": ("cpsat-compact", "milp-compact:backend=highs@milp-compact"),
    "joinorder": ("dp-ld", "milp-order:backend=highs@milp-order"),
    "gloria": ("cpsat:candidates=full@cpsat-full", "milp:candidates=full,backend=highs@milp-full"),
    "hamlet": ("optimal",),
}
AGREE = 1e-6


def tier_specs(tier: str) -> list[str]:
    """The instance specs of a tier (the easy tier also holds the bundled paper examples)."""
    specs = [f"gen:{fam}:{options},seed={SEEDS}" for fam, tiers in TIERS.items() for options in [tiers[tier]]]
    return specs + (["bundled"] if tier == "easy" else [])


def entries(tier: str | None = None) -> list[dict[str, Any]]:
    """The library's entries (of one tier), as shipped."""
    if tier is not None and tier not in TIER_NAMES:
        raise CepoptError(f"library tier {tier!r}: expected one of {', '.join(TIER_NAMES)}")
    if not LIBRARY_PATH.is_file():
        raise CepoptError(f"{LIBRARY_PATH}: the instance library is not installed")
    rows = json.loads(LIBRARY_PATH.read_text())["instances"]
    return [r for r in rows if tier is None or r["tier"] == tier]
