"""The results file of a benchmark: one CSV row per finished cell, appended as the cell finishes.

Each row is written with a single ``write`` of one line (text fields carry no line break), so a SIGKILL
leaves complete rows and at most a cut last line, which the next run drops before appending; a resumed
run skips every cell whose key (instance, method, seed, repeat) it finds, so a changed grid runs only the
cells it lacks. The columns are fixed (:data:`COLUMNS`); ``progress`` holds the cell's bound-over-time
trajectory as JSON (:mod:`cepopt.benchmarking.progress`), the ``meta_*`` columns where and how it ran.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Any

from cepopt.benchmarking.grid import cell_key
from cepopt.errors import CepoptError

__all__ = ["COLUMNS", "FAILED", "ResultsFile", "read_results"]

META = ("meta_version", "meta_commit", "meta_host", "meta_cores", "meta_load", "meta_date", "meta_command")
COLUMNS = ("instance", "family", "sense", "method", "method_name", "params", "seed", "repeat", "status",
           "objective", "objective_name", "bound", "gap", "time_s", "method_time_s", "wall_s", "time_limit",
           "peak_rss_mb", "progress", "message", *META)
#: statuses of a cell that produced no plan through a fault of its own (besides "timeout" and "error")
FAILED = ("error", "crashed", "killed", "memory")


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), default=str)
    if isinstance(value, str):
        return " ".join(value.split())  # one physical line per row
    return repr(value) if isinstance(value, float) else str(value)


class ResultsFile:
    """Appends rows to ``path`` (created with its header) and knows the keys of the rows already there."""

    def __init__(self, path: str | Path, resume: bool = True):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not resume:
            self.path.unlink(missing_ok=True)
        self.keys: set[tuple[str, str, int, int]] = set()
        if self.path.exists():
            self._repair_and_read()
        if not self.path.exists() or self.path.stat().st_size == 0:
            self._write(_line(COLUMNS))

    def _repair_and_read(self) -> None:
        data = self.path.read_bytes()
        cut = data.rfind(b"\n") + 1
        if cut != len(data):  # a line cut by a kill: that cell is run again
            with self.path.open("r+b") as fh:
                fh.truncate(cut)
        if cut == 0:
            return
        rows = list(csv.reader(io.StringIO(data[:cut].decode())))
        if tuple(rows[0]) != COLUMNS:
            raise CepoptError(f"{self.path}: not a results file of this cepopt version (its columns differ); "
                              "use another --out or --no-resume")
        at = {c: i for i, c in enumerate(COLUMNS)}
        for row in rows[1:]:
            self.keys.add(cell_key(row[at["instance"]], row[at["method"]], row[at["seed"]], row[at["repeat"]]))

    def _write(self, line: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(line.encode())
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)

    def append(self, row: dict[str, Any]) -> None:
        self._write(_line([row.get(c) for c in COLUMNS]))
        self.keys.add(cell_key(row["instance"], row["method"], row["seed"], row["repeat"]))


def _line(values) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([_text(v) for v in values])
    return buf.getvalue()


def read_results(path: str | Path):
    """The results as a DataFrame (complete rows only; a duplicated key keeps its last row)."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise CepoptError(f"{path}: no results file (run `cepopt benchmark ... --out DIR` first)")
    data = path.read_bytes()
    data = data[: data.rfind(b"\n") + 1]
    if not data:
        return pd.DataFrame(columns=list(COLUMNS))
    text = {c: str for c in ("instance", "method", "message", "params", "progress", "objective_name")}
    frame = pd.read_csv(io.BytesIO(data), dtype=text, keep_default_na=False, na_values=[""])
    for col in COLUMNS:  # a file of an earlier version lacks the newer columns
        if col not in frame:
            frame[col] = None
    for col in ("message", "params", "progress", "objective_name"):
        frame[col] = frame[col].fillna("").astype(str)
    return frame.drop_duplicates(["instance", "method", "seed", "repeat"], keep="last").reset_index(drop=True)
