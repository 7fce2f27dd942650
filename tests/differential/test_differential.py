"""The differential suite: random instances of every family, every plan of them, random valid and hostile
streams (tests/differential/cases.py), run on the local engine, on Spark (one task) and on Spark's
partitioned path (forced): the same digest and row count, or the same one-line CepoptError on all;
and the local engine's results equal brute-force enumeration (executor/reference.py,
executor/join_reference.py).

Short mode (the default run): :data:`SHORT_CASES` cases, Spark on every :data:`SHORT_SPARK_EVERY`-th and
on those whose stream tries the CSV dialect.
Long mode: ``CEPOPT_DIFF_CASES=10000 pytest tests/differential -s`` (``CEPOPT_DIFF_SEED`` the first
seed, ``CEPOPT_DIFF_SPARK_EVERY`` how often Spark runs, 1 = every case); it prints a summary. A case
that differs is printed with its seed (rebuilt by ``cases.make_case(seed)``) and written to
``CEPOPT_DIFF_DIR`` (default: the test's temporary folder) as instance.json + stream file.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from pathlib import Path

import pytest

from cepopt.errors import CepoptError
from tests.differential.cases import Case, make_case, save_case, write_stream

SHORT_CASES = 32
SHORT_SPARK_EVERY = 8  # one case of each family (8 consecutive seeds share an instance) ...
#: ... and, in the short mode, every case whose stream tries the CSV dialect
DIALECT_TRAITS = frozenset({"duplicate_header", "missing", "newline", "quoting", "text_in_numbers"})
LONG_CASES = int(os.environ.get("CEPOPT_DIFF_CASES", "0"))
FIRST_SEED = int(os.environ.get("CEPOPT_DIFF_SEED", "0"))


def _outcome(fn) -> tuple:
    """("ok", digest, rows) and the result, or ("error", message) for a CepoptError; any other exception
    is a crash (a traceback where a user error must be one line)."""
    try:
        res = fn()
    except CepoptError as exc:
        return ("error", str(exc)), None
    except Exception as exc:  # noqa: BLE001 -- a crash is a finding, reported with its case
        return ("crash", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"), None
    out = ("ok", res.digest(), res.row_count())
    return out, res


def _run(case: Case, path: Path, engine: str, spark=None, forced: bool = False):
    from cepopt.executor import api
    from cepopt.pipeline import execute

    def call():
        return execute(case.instance, case.plan, str(path), engine=engine, spark=spark, max_work=math.inf)

    if not forced:
        return _outcome(call)
    tiny = api._tiny
    api._tiny = lambda size: False  # the partitioned path (groupBy + applyInPandas), as on a big stream
    try:
        return _outcome(call)
    finally:
        api._tiny = tiny


def _reference_differences(case: Case, path: Path, local) -> list[str]:
    """Differences between the local engine's results and brute-force enumeration."""
    from cepopt.executor.streams import read_stream_pandas

    events = read_stream_pandas(path)
    got = local.to_pandas()
    if case.family == "joinorder":
        from cepopt.executor.join_reference import reference_matches

        out = []
        for q in case.instance.workload.queries:
            mine = sorted(got.loc[got["query"] == q.name, "value"].astype(str))
            truth = reference_matches(q, events)
            if mine != truth:
                out.append(f"{q.name}: {len(mine)} matches, brute force {len(truth)}")
        return out
    from cepopt.executor.reference import reference_results
    from cepopt.executor.results import compare_results

    return compare_results(got, reference_results(case.instance.workload, events))[:5]


#: per outcome of the local engine ("ok", "error", "crash"), the cases seen (for the summary)
OUTCOMES: Counter = Counter()


def check_case(seed: int, folder: Path, spark=None) -> list[tuple[str, str]]:
    """(kind, detail) of every difference of case ``seed``; the case
    is saved to ``folder/seed`` when there is one."""
    case = make_case(seed)
    work = folder / f"case-{seed}"
    work.mkdir(parents=True, exist_ok=True)
    path = write_stream(case, work)
    local, res = _run(case, path, "local")
    OUTCOMES[local[0]] += 1
    found = []
    if local[0] == "crash":
        found.append(("local-crash", local[1]))
    if local[0] == "ok" and max(len(case.frame), 1) <= 40:
        try:
            diffs = _reference_differences(case, path, res)
        except Exception as exc:  # noqa: BLE001
            diffs = [f"the reference failed: {type(exc).__name__}: {exc}"]
        found += [("reference", d) for d in diffs]
    if spark is not None:
        for kind, forced in (("spark-single", False), ("spark-partitioned", True)):
            remote, rres = _run(case, path, "spark", spark, forced)
            if rres is not None:
                rres.release()
            if remote != local:
                found.append((kind, f"local {local} != spark {remote}"))
    if found:
        save_case(case, work)
    return found


def _report(results: dict[int, list[tuple[str, str]]], elapsed: float) -> str:
    kinds = Counter(k for found in results.values() for k, _ in found)
    lines = [f"differential: {len(results)} cases in {elapsed:.0f} s, {sum(bool(f) for f in results.values())} "
             f"with a difference ({dict(kinds) or 'none'}); local outcomes so far {dict(OUTCOMES)}"]
    for seed, found in results.items():
        for kind, detail in found:
            lines.append(f"  seed {seed} [{make_case(seed).describe()}] {kind}: {detail[:300]}")
    return "\n".join(lines)


#: a long run prints a progress line (cases, differences) every this many cases
PROGRESS_EVERY = 500


def run_cases(seeds, folder: Path, spark, spark_every: int, dialect_on_spark: bool = False) -> tuple[dict, str]:
    """Every case of ``seeds``; Spark on every ``spark_every``-th and (``dialect_on_spark``) on every case
    whose stream tries the CSV dialect."""
    start = time.perf_counter()
    results = {}
    for n, seed in enumerate(seeds, start=1):
        wanted = (seed - FIRST_SEED) % spark_every == 0 or (dialect_on_spark
                                                           and bool(DIALECT_TRAITS & set(make_case(seed).traits)))
        results[seed] = check_case(seed, folder, spark if wanted else None)
        if n % PROGRESS_EVERY == 0:
            print(f"differential: {n} cases, {sum(bool(f) for f in results.values())} with a difference, "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
    return results, _report(results, time.perf_counter() - start)


def _unexplained(results: dict) -> list[str]:
    return [f"seed {seed} {kind}: {detail}" for seed, found in results.items() for kind, detail in found]


@pytest.mark.spark
def test_engines_plans_and_brute_force_agree(spark, tmp_path):
    """Short mode: every family, plans of every method, hostile streams, three engine paths."""
    folder = Path(os.environ.get("CEPOPT_DIFF_DIR", tmp_path))
    results, summary = run_cases(range(FIRST_SEED, FIRST_SEED + SHORT_CASES), folder, spark, SHORT_SPARK_EVERY,
                                 dialect_on_spark=True)
    print(summary)
    assert not _unexplained(results), summary


@pytest.mark.skipif(not LONG_CASES, reason="long mode: set CEPOPT_DIFF_CASES (e.g. 10000)")
@pytest.mark.spark
def test_long_mode(spark, tmp_path):
    folder = Path(os.environ.get("CEPOPT_DIFF_DIR", tmp_path))
    every = int(os.environ.get("CEPOPT_DIFF_SPARK_EVERY", "10"))
    results, summary = run_cases(range(FIRST_SEED, FIRST_SEED + LONG_CASES), folder, spark, every)
    print(summary)
    assert not _unexplained(results), summary
