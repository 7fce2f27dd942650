"""Test hygiene (issue 19 part 11): the tests cannot pass by hiding a failure.

No ``importorskip`` of cepopt's own modules, no skip on a CepoptError (a bundled instance that fails to
load is a failure), no wall-clock assertion outside the benchmarks (``pytest -m bench``), the package's
doctests collected by pytest (``--doctest-modules``), ruff pinned in the test extra.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = sorted(p for p in (ROOT / "tests").rglob("*.py") if "data" not in p.relative_to(ROOT / "tests").parts)
WALL_CLOCK = re.compile(r"^\s*assert\b.*(\btime_s\b\s*[<>]|perf_counter|process_time|time\.time\(\)|\bwall\w*\s*[<>])")


def _offenders(pattern: re.Pattern, skip_bench: bool = False) -> list[str]:
    out = []
    for path in TESTS:
        text = path.read_text()
        if skip_bench and "mark.bench" in text or path.name == "test_hygiene.py":
            continue
        out += [f"{path.relative_to(ROOT)}:{i}" for i, line in enumerate(text.splitlines(), 1) if pattern.search(line)]
    return out


def test_no_importorskip_of_cepopt():
    assert not _offenders(re.compile(r"importorskip\(\s*['\"]cepopt"))


def test_no_skip_on_a_cepopt_error():
    found = []
    for path in TESTS:
        if path.name == "test_hygiene.py":
            continue
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if re.search(r"except\s+\(?[\w, ]*(CepoptError|InstanceError)", line) and any(
                    "pytest.skip" in nxt for nxt in lines[i + 1:i + 3]):
                found.append(f"{path.relative_to(ROOT)}:{i + 1}")
    assert not found


def test_no_wall_clock_assertions_outside_benchmarks():
    assert not _offenders(WALL_CLOCK, skip_bench=True)


def test_doctests_are_collected_by_pytest_and_ruff_is_pinned():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    ini = conf["tool"]["pytest"]["ini_options"]
    assert "--doctest-modules" in ini["addopts"]
    packages = set(conf["tool"]["setuptools"]["package-dir"].values())
    assert packages <= set(ini["testpaths"])
    assert any(re.fullmatch(r"ruff==[\d.]+", dep) for dep in conf["project"]["optional-dependencies"]["test"])
    assert not list((ROOT / "tests").rglob("test_doctests*.py"))  # no hand-kept module lists
