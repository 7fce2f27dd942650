"""A small experiment framework: a parameter grid, a run function, a report.

An experiment module defines ``EXPERIMENT = Experiment(...)``. :func:`run_experiment`

* walks the grid with a progress bar;
* records each finished grid point, all its rows at once, as one line of a journal
  (``<out>/<name>.points.jsonl``), then rewrites ``<out>/<name>.csv`` from the journal atomically (a
  temporary file renamed over it): a SIGKILL at any moment leaves the CSV holding complete grid points
  only, and at most a partial last journal line, which the next run drops;
* resumes: a grid point recorded in the journal is not run again; an interrupted point is redone;
* can run the remaining points as Spark tasks (one point per task) when given a cluster master;
* records with every row where and how it ran (columns ``meta_version``, ``meta_commit``,
  ``meta_cores``, ``meta_load``, ``meta_date``, ``meta_command``: the cepopt version, the git commit
  when there is one, the host's core count, its 1-minute load average, the UTC date, the command line);
* calls ``report(df, out_dir)`` (``df`` without the meta columns), which writes PNGs and returns a
  markdown text saved as ``<name>.md`` under a header that states how many grid points are complete,
  the inputs the grid had to skip (data that is absent) and the run's metadata.

Results go to ``./cepopt-results/<name>`` (``<name>-quick`` for the quick grid) unless ``out_dir`` says
otherwise; never into the installed package.

A grid whose input data is missing returns a :class:`Grid` that says what it skipped; the framework
prints it on stderr and in the report.

>>> exp = Experiment("square", "x squared", grid=lambda quick: [{"x": x} for x in range(3)],
...                  run=lambda p: {"y": p["x"] ** 2})
>>> import tempfile; out = run_experiment(exp, out_dir=tempfile.mkdtemp(), progress=False)
>>> list(out.frame["y"]), out.complete, out.total
([0, 1, 4], 3, 3)
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import math
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cepopt import entry_points
from cepopt.errors import CepoptError
from cepopt.params import number_from_text

__all__ = ["META_COLUMNS", "Experiment", "ExperimentOutput", "Grid", "cpu_seconds", "default_out_dir",
           "get_experiment", "markdown_table", "run_experiment", "run_metadata"]

#: the folder (under the current directory) that experiments write to by default
RESULTS_DIR_NAME = "cepopt-results"
META_COLUMNS = ("meta_version", "meta_commit", "meta_cores", "meta_load", "meta_date", "meta_command")
_WALL = "row_wall_s"


@dataclass
class Experiment:
    """name; description; grid(quick) -> list of dicts (or a :class:`Grid`), one per row key;
    run(point) -> dict or list of dicts (merged with the point's keys); report(df, out_dir) -> markdown
    (may write PNGs); paper_claim: what the paper reports, printed beside our measurement."""

    name: str
    description: str
    grid: Callable[[bool], list[dict]]
    run: Callable[[dict], dict | list[dict]]
    report: Callable[[Any, Path], str] | None = None
    paper_claim: str = ""
    uses_spark: bool = False


class Grid(list):
    """A grid (a list of points) that also says which inputs it had to leave out: ``skipped`` instances
    because ``missing`` (for example "the published Gloria workloads: ../shared/anchors-data/gloria is
    absent"). The framework prints it on stderr and in the report."""

    def __init__(self, points: Iterable[dict] = (), *, skipped: int = 0, missing: str = ""):
        super().__init__(points)
        self.skipped = skipped
        self.missing = missing

    def __add__(self, other):  # keep the note through grid + grid
        out = Grid(list(self) + list(other), skipped=self.skipped + getattr(other, "skipped", 0),
                   missing="; ".join(m for m in (self.missing, getattr(other, "missing", "")) if m))
        return out

    def __radd__(self, other):
        return Grid(list(other)) + self


@dataclass
class ExperimentOutput:
    csv_path: Path
    markdown_path: Path | None
    frame: Any
    ran: int
    skipped: int
    extra: dict = field(default_factory=dict)
    complete: int = 0  # grid points with all their rows in the CSV
    total: int = 0  # grid points
    skipped_inputs: int = 0  # instances the grid left out because their data is missing
    missing: str = ""


def cpu_seconds() -> float:
    """CPU seconds of this process (all its threads) and of its finished child processes: a large HiGHS
    model is solved in a child process (formulations/mathopt_child.py), whose time the process's own
    clock does not see. The difference of two readings around a call is the call's CPU time."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def get_experiment(name: str) -> Experiment:
    """The experiment ``name``: the ``EXPERIMENT`` of its module in the ``cepopt.experiments``
    entry-point group (or the object the entry point names)."""
    found = entry_points.load("experiments", name, "experiment")
    return getattr(found, "EXPERIMENT", found)


def default_out_dir(name: str, quick: bool = False) -> Path:
    """``./cepopt-results/NAME`` (``NAME-quick`` for the quick grid), under the current directory."""
    return Path.cwd() / RESULTS_DIR_NAME / (name + ("-quick" if quick else ""))


# ---------------------------------------------------------------------------------------------
# Metadata
# ---------------------------------------------------------------------------------------------


def _git_commit() -> str:
    """The commit of the source checkout cepopt is imported from, with ``+dirty`` when it has local
    changes; "" for an installed package (no git, or not a checkout)."""
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return ""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return ""
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return ""


def run_metadata(command: str | None = None) -> dict[str, Any]:
    """Where and how this run happens: the ``meta_*`` columns of every row."""
    from cepopt import __version__

    try:
        load = round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):  # not available on every platform
        load = math.nan
    return {
        "meta_version": __version__,
        "meta_commit": _git_commit(),
        "meta_cores": os.cpu_count() or 0,
        "meta_load": load,
        "meta_date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "meta_command": command if command is not None else shlex.join(["cepopt" if i == 0 else a
                                                                         for i, a in enumerate(sys.argv)]),
    }


# ---------------------------------------------------------------------------------------------
# Grid points and the journal
# ---------------------------------------------------------------------------------------------


def _key(point: dict) -> str:
    return json.dumps({k: point[k] for k in sorted(point)}, sort_keys=True, default=str)


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


def _plain(value: Any) -> Any:
    """A row value as JSON keeps it: numpy scalars become Python numbers, anything else its str()
    (what the CSV writer would print)."""
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        try:
            return value.item()
        except (ValueError, TypeError):
            pass
    return str(value)


class _Journal:
    """``<name>.points.jsonl``: one line per complete grid point, ``{"key": ..., "rows": [...]}``, each
    written with one ``write`` after the point finished; ``<name>.csv`` is rewritten from it."""

    def __init__(self, path: Path, csv_path: Path, key_columns: list[str], resume: bool):
        self.path = path
        self.csv_path = csv_path
        self.points: dict[str, list[dict]] = {}
        self._columns: list[str] = []
        self._body: list[str] = []
        if not resume:
            for p in (path, csv_path):
                p.unlink(missing_ok=True)
        elif path.exists():
            self._read()
        elif csv_path.exists():
            self._import_csv(key_columns)

    def _read(self) -> None:
        data = self.path.read_bytes()
        good = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break  # the last line was cut by a kill: that point is redone
            try:
                entry = json.loads(line)
                key, rows = entry["key"], entry["rows"]
            except (ValueError, KeyError, TypeError):
                break
            self.points[key] = rows
            good += len(line)
        if good != len(data):  # drop the partial tail, so that the next line starts clean
            with self.path.open("r+b") as fh:
                fh.truncate(good)

    def _import_csv(self, key_columns: list[str]) -> None:
        """A CSV written before the journal existed: its points count as complete (as they did)."""
        import pandas as pd

        try:
            df = pd.read_csv(self.csv_path, keep_default_na=False)
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError):
            return
        if df.empty or not set(key_columns) <= set(df.columns):
            return
        for record in df.to_dict("records"):
            row = {k: _restore(v) for k, v in record.items()}
            self.points.setdefault(_key({k: row[k] for k in key_columns}), []).append(row)
        self._rewrite_journal()

    def _rewrite_journal(self) -> None:
        text = "".join(json.dumps({"key": k, "rows": rows}, default=_plain) + "\n" for k, rows in self.points.items())
        _atomic_write(self.path, text)

    def add(self, key: str, rows: list[dict]) -> None:
        line = (json.dumps({"key": key, "rows": rows}, default=_plain) + "\n").encode()
        rows = json.loads(line)["rows"]  # the values as the journal holds them (and a resumed run reads)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        self.points[key] = rows
        self.write_csv(new=rows)

    def write_csv(self, new: list[dict] | None = None) -> None:
        """The CSV of every complete point, written atomically; ``new``: the rows just added (their text
        is appended to the cached text when they bring no new column)."""
        columns = dict.fromkeys(self._columns)
        for row in new if new is not None else (r for rows in self.points.values() for r in rows):
            columns.update(dict.fromkeys(row))
        if new is None or list(columns) != self._columns:
            self._columns = list(columns)
            self._body = [self._rows_text([r for rows in self.points.values() for r in rows], header=True)]
        else:
            self._body.append(self._rows_text(new, header=False))
        _atomic_write(self.csv_path, "".join(self._body) if self._columns else "")

    def _rows_text(self, rows: list[dict], header: bool) -> str:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, self._columns, extrasaction="ignore")
        if header:
            writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue()


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8", newline="")
    os.replace(tmp, path)


def _run_point(exp: Experiment, point: dict, meta: dict) -> list[dict]:
    start = time.perf_counter()
    out = exp.run(dict(point))
    elapsed = time.perf_counter() - start
    rows = out if isinstance(out, list) else [out]
    return [{**point, **row, _WALL: round(elapsed, 6), **meta} for row in rows]


def _output_dir(exp: Experiment, quick: bool, out_dir: str | Path | None) -> Path:
    out = Path(out_dir) if out_dir is not None else default_out_dir(exp.name, quick)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".{exp.name}.{os.getpid()}.probe"
        probe.write_text("")  # writable? (found before any point runs, not after the first one)
        probe.unlink()
    except OSError as exc:  # e.g. --out names an existing file, or a read-only folder
        raise CepoptError(f"{out}: cannot write the results there: {exc.strerror or exc}") from None
    return out


def _warn_missing(exp: Experiment, grid: list[dict]) -> tuple[int, str]:
    skipped, missing = getattr(grid, "skipped", 0), getattr(grid, "missing", "")
    if skipped or missing:
        print(f"cepopt: warning: {exp.name}: input data missing: {skipped} instance(s) skipped "
              f"({missing or 'not found'}); running {len(grid)} of {len(grid) + skipped}", file=sys.stderr)
    return skipped, missing


def run_experiment(exp: Experiment, *, quick: bool = False, out_dir: str | Path | None = None,
                   resume: bool = True, progress: bool = True, master: str | None = None,
                   command: str | None = None) -> ExperimentOutput:
    """Run ``exp`` and write ``<name>.csv`` (+ ``.md``, PNGs, the journal) under ``out_dir``.

    ``out_dir`` defaults to ``./cepopt-results/<name>`` (``<name>-quick`` for the quick grid).
    With ``master`` the pending grid points run as Spark tasks on that cluster (one point per task),
    except for experiments that use Spark themselves. ``command`` is the command line recorded with
    the rows (default: this process's).
    """
    from tqdm import tqdm

    out = _output_dir(exp, quick, out_dir)
    csv_path = out / f"{exp.name}.csv"
    raw_grid = exp.grid(quick)
    skipped_inputs, missing = _warn_missing(exp, raw_grid)
    grid = [_normal_point(p) for p in raw_grid]
    key_columns = sorted({k for p in grid for k in p})
    journal = _Journal(out / f"{exp.name}.points.jsonl", csv_path, key_columns, resume)
    journal.write_csv()  # the CSV holds exactly the complete points, also after a kill
    pending = [p for p in grid if _key(p) not in journal.points]
    meta = run_metadata(command)
    ran = 0
    if master and exp.uses_spark:
        # the experiment's own get_spark() calls (and its subprocesses) run on this master
        from cepopt.executor.session import get_spark

        os.environ["CEPOPT_SPARK_MASTER"] = master
        get_spark(master)
    if master and pending and not exp.uses_spark:
        from cepopt.executor.session import get_spark

        sc = get_spark(master).sparkContext
        results = sc.parallelize(pending, len(pending)).map(lambda p: _run_point(exp, p, meta)).toLocalIterator()
        for point, rows in zip(pending, tqdm(results, total=len(pending), desc=exp.name, disable=not progress),
                               strict=True):
            journal.add(_key(point), rows)
            ran += 1
    else:
        for point in tqdm(pending, desc=exp.name, disable=not progress):
            journal.add(_key(point), _run_point(exp, point, meta))
            ran += 1
    complete = sum(_key(p) in journal.points for p in grid)
    result = ExperimentOutput(csv_path, None, None, ran, len(grid) - len(pending), complete=complete,
                              total=len(grid), skipped_inputs=skipped_inputs, missing=missing)
    result.frame, result.markdown_path = _report(exp, out, csv_path, result, meta)
    return result


def _report(exp: Experiment, out: Path, csv_path: Path, result: ExperimentOutput, meta: dict):
    import pandas as pd

    try:
        frame = pd.read_csv(csv_path)
    except (pd.errors.EmptyDataError, FileNotFoundError):
        frame = pd.DataFrame()
    frame = frame.drop(columns=[c for c in META_COLUMNS if c in frame.columns])
    if exp.report is None or frame.empty:
        return frame, None
    text = exp.report(frame, out)
    header = f"# {exp.name}\n\n{exp.description}\n\n"
    if exp.paper_claim:
        header += f"**Paper:** {exp.paper_claim}\n\n"
    header += (f"**Grid points:** {result.complete} of {result.total} complete "
               f"({result.ran} run now, {result.skipped} resumed).\n\n")
    if result.skipped_inputs or result.missing:
        header += (f"**Input data missing:** {result.skipped_inputs} instance(s) skipped "
                   f"({result.missing or 'not found'}); this report covers {result.total} of "
                   f"{result.total + result.skipped_inputs}.\n\n")
    footer = ("\n\n**Run:** cepopt {meta_version}{commit}, {meta_cores} cores, load {meta_load}, {meta_date}, "
              "`{meta_command}`\n").format(**meta, commit=f" ({meta['meta_commit']})" if meta["meta_commit"] else "")
    md_path = out / f"{exp.name}.md"
    md_path.write_text(header + text.strip() + footer)
    return frame, md_path


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
