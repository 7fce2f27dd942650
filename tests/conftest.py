"""Shared fixtures: one SparkSession per test run, and the path of ../shared (skip when absent).

The tests that read the published data (those using the ``shared_dir`` fixture) are marked ``shared``
(``pytest -m "not shared"`` leaves them out). They skip when ../shared is absent, except where the data
must be there: with ``CEPOPT_REQUIRE_SHARED=1`` (set by .ci/run) the absence is a failure, so CI cannot
pass by skipping them.
"""

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
        reason = f"{SHARED} is absent: the published data cannot be read"
        if os.environ.get("CEPOPT_REQUIRE_SHARED", "") not in ("", "0"):
            pytest.fail(f"{reason} (CEPOPT_REQUIRE_SHARED is set: set CEPOPT_SHARED to the data)")
        pytest.skip(reason)
    return SHARED


def pytest_collection_modifyitems(config, items):
    """Benchmarks run only when asked for (``pytest -m bench``): deselected, not skipped, otherwise.
    The tests that use the published data are marked ``shared``."""
    for item in items:
        if "shared_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared)
    if "bench" in (config.option.markexpr or ""):
        return
    benches = [item for item in items if "bench" in item.keywords]
    if benches:
        config.hook.pytest_deselected(items=benches)
        items[:] = [item for item in items if "bench" not in item.keywords]
