"""Shared fixtures: one SparkSession per test run, and the path of ../shared (skip when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "cepopt", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("cepopt")

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CEPOPT_SHARED", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def spark():
    from cepopt.executor.session import get_spark, stop_spark

    session = get_spark(os.environ.get("CEPOPT_SPARK_MASTER", "local[2]"))
    yield session
    stop_spark()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not (SHARED / "anchors-data").is_dir():
        pytest.skip(f"{SHARED} is absent: the published data cannot be read")
    return SHARED


def pytest_collection_modifyitems(config, items):
    """Benchmarks run only when asked for (``pytest -m bench``): deselected, not skipped, otherwise."""
    if "bench" in (config.option.markexpr or ""):
        return
    benches = [item for item in items if "bench" in item.keywords]
    if benches:
        config.hook.pytest_deselected(items=benches)
        items[:] = [item for item in items if "bench" not in item.keywords]
