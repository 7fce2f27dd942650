"""A small experiment framework: a parameter grid, a run function, a report.

An experiment module defines ``EXPERIMENT = Experiment(...)``. :func:`run_experiment`

* walks the grid with a progress bar,
* appends each finished row to ``<out>/<name>.csv`` at once (nothing is lost on interruption),
* resumes: a grid point whose key columns are already in the CSV is not run again,
* can run the remaining points as Spark tasks (one point per task) when given a cluster master,
* calls ``report(df, out_dir)``, which writes PNGs and returns a markdown text saved as ``<name>.md``.

>>> exp = Experiment("square", "x squared", grid=lambda quick: [{"x": x} for x in range(3)],
...                  run=lambda p: {"y": p["x"] ** 2})
>>> import tempfile; out = run_experiment(exp, out_dir=tempfile.mkdtemp(), progress=False)
>>> list(out.frame["y"])
[0, 1, 4]
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cepopt import entry_points
from cepopt.errors import CepoptError
from cepopt.params import number_from_text

__all__ = ["Experiment", "ExperimentOutput", "get_experiment", "markdown_table", "run_experiment"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass
class Experiment:
    """name; description; grid(quick) -> list of dicts, one per row key; run(point) -> dict or list of
    dicts (merged with the point's keys); report(df, out_dir) -> markdown (may write PNGs);
    paper_claim: what the paper reports, printed beside our measurement."""

    name: str
    description: str
    grid: Callable[[bool], list[dict]]
    run: Callable[[dict], dict | list[dict]]
    report: Callable[[Any, Path], str] | None = None
    paper_claim: str = ""
    uses_spark: bool = False


@dataclass
class ExperimentOutput:
    csv_path: Path
    markdown_path: Path | None
    frame: Any
    ran: int
    skipped: int
    extra: dict = field(default_factory=dict)


def get_experiment(name: str) -> Experiment:
    """The experiment ``name``: the ``EXPERIMENT`` of its module in the ``cepopt.experiments``
    entry-point group (or the object the entry point names)."""
    found = entry_points.load("experiments", name, "experiment")
    return getattr(found, "EXPERIMENT", found)


def _key(point: dict) -> str:
    return json.dumps({k: point[k] for k in sorted(point)}, sort_keys=True, default=str)


def _read_done(csv_path: Path, key_columns: list[str]) -> set[str]:
    if not csv_path.exists():
        return set()
    import pandas as pd

    try:
        df = pd.read_csv(csv_path, keep_default_na=False)
    except pd.errors.EmptyDataError:
        return set()
    if not set(key_columns) <= set(df.columns):
        return set()
    done = set()
    for record in df[key_columns].to_dict("records"):
        done.add(_key({k: _restore(v) for k, v in record.items()}))
    return done


def _restore(value: Any) -> Any:
    """CSV cells come back as text or numpy scalars; make them compare with the grid's values."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, str):
        if value in ("True", "False"):
            return value == "True"
        value = number_from_text(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _normal_point(point: dict) -> dict:
    return {k: _restore(v) if not isinstance(v, bool) else v for k, v in point.items()}


class _CsvAppender:
    """Appends rows; the header is fixed by the first row written (later new columns extend it by
    rewriting the file once)."""

    def __init__(self, path: Path):
        self.path = path
        self.columns: list[str] | None = None
        if path.exists() and path.stat().st_size > 0:
            with path.open(newline="") as fh:
                header = next(csv.reader(fh), None)
            self.columns = header

    def append(self, row: dict) -> None:
        if self.columns is None:
            self.columns = list(row)
            with self.path.open("w", newline="") as fh:
                csv.DictWriter(fh, self.columns).writeheader()
        new = [c for c in row if c not in self.columns]
        if new:
            self._extend(new)
        with self.path.open("a", newline="") as fh:
            csv.DictWriter(fh, self.columns, extrasaction="ignore").writerow(row)

    def _extend(self, new: list[str]) -> None:
        with self.path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        self.columns = self.columns + new
        with self.path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, self.columns)
            writer.writeheader()
            writer.writerows(rows)


def _run_point(exp: Experiment, point: dict) -> list[dict]:
    start = time.perf_counter()
    out = exp.run(dict(point))
    elapsed = time.perf_counter() - start
    rows = out if isinstance(out, list) else [out]
    return [{**point, **row, "row_wall_s": round(elapsed, 6)} for row in rows]


def run_experiment(exp: Experiment, *, quick: bool = False, out_dir: str | Path | None = None,
                   resume: bool = True, progress: bool = True, master: str | None = None) -> ExperimentOutput:
    """Run ``exp`` and write ``<name>.csv`` (+ ``.md``, PNGs) under ``out_dir``.

    ``out_dir`` defaults to ``experiments/results/<name>`` (``<name>-quick`` for the quick grid).
    With ``master`` the pending grid points run as Spark tasks on that cluster (one point per task),
    except for experiments that use Spark themselves.
    """
    import pandas as pd
    from tqdm import tqdm

    out = Path(out_dir) if out_dir is not None else RESULTS_DIR / (exp.name + ("-quick" if quick else ""))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # e.g. --out names an existing file
        raise CepoptError(f"{out}: cannot create the output folder: {exc.strerror or exc}") from None
    csv_path = out / f"{exp.name}.csv"
    if not resume and csv_path.exists():
        csv_path.unlink()
    grid = [_normal_point(p) for p in exp.grid(quick)]
    key_columns = sorted({k for p in grid for k in p})
    done = _read_done(csv_path, key_columns) if resume else set()
    pending = [p for p in grid if _key(p) not in done]
    appender = _CsvAppender(csv_path)
    ran = 0
    if master and pending and not exp.uses_spark:
        from cepopt.executor.session import get_spark

        sc = get_spark(master).sparkContext
        results = sc.parallelize(pending, len(pending)).map(lambda p: _run_point(exp, p)).toLocalIterator()
        for rows in tqdm(results, total=len(pending), desc=exp.name, disable=not progress):
            for row in rows:
                appender.append(row)
            ran += 1
    else:
        for point in tqdm(pending, desc=exp.name, disable=not progress):
            for row in _run_point(exp, point):
                appender.append(row)
            ran += 1
    frame = pd.read_csv(csv_path) if csv_path.exists() else pd.DataFrame()
    md_path = None
    if exp.report is not None and not frame.empty:
        text = exp.report(frame, out)
        header = f"# {exp.name}\n\n{exp.description}\n\n"
        if exp.paper_claim:
            header += f"**Paper:** {exp.paper_claim}\n\n"
        md_path = out / f"{exp.name}.md"
        md_path.write_text(header + text.strip() + "\n")
    return ExperimentOutput(csv_path, md_path, frame, ran, len(grid) - len(pending))


def markdown_table(df, columns: list[str] | None = None, floatfmt: str = ".4g") -> str:
    """A GitHub markdown table of ``df`` (no extra dependency)."""
    cols = columns or list(df.columns)

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return format(v, floatfmt)
        return str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for _, row in df[cols].iterrows():
        lines.append("| " + " | ".join(fmt(row[c]) for c in cols) + " |")
    return "\n".join(lines)
