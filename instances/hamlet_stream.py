"""Reader for the Hamlet synthetic stream format (anchors-data/hamlet, see its README).

One event per line, ``time,type,value`` with an integer type; blank lines are skipped. Types become
``{prefix}{type}`` (``T2`` for type 2, so patterns like ``2+`` read as ``T2+``). The files' time
column is not monotonic (the authors process events in file order), so by default ``ts`` is the
event's position in the file (``time="file"``); ``time="column"`` keeps the file's time (sorted
stably) and both keep it in ``time_col``. ``value`` is kept as an int attribute.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from cepopt.errors import CepoptError
from cepopt.params import NonNegativeInt

__all__ = ["generate", "read", "KNOWN"]

#: file names under the shared anchors data
KNOWN = {
    "Syn_TestStream": "hamlet/src/test/Resources/Syn_TestStream.txt",
    "Paper_TestStream": "hamlet/src/test/Resources/Paper_TestStream.txt",
    "Stream_shared_5": "hamlet/oldSubmission/Synthetic/Streams/Stream_shared_5.txt",
}


def _shared_root() -> Path:
    env = os.environ.get("CEPOPT_SHARED")
    if env:
        return Path(env) / "anchors-data"
    return Path(__file__).resolve().parent.parent.parent / "shared" / "anchors-data"


def read(path: str | Path, *, events: int | None = None, prefix: str = "T", time: str = "file") -> pd.DataFrame:
    """Read a Hamlet stream file; ``events`` keeps only the first N events."""
    path = Path(path)
    try:
        found = path.is_file()
    except (OSError, ValueError):  # a name the system refuses (too long, a NUL byte)
        found = False
    if not found:
        raise CepoptError(f"{str(path)[:200]}: no such Hamlet stream file")
    if time not in ("file", "column"):
        raise CepoptError(f"hamlet stream: time must be 'file' or 'column', got {time!r}")
    rows = []
    with path.open() as fh:
        for lineno, line in enumerate(fh, start=1):
            line = line.strip()
            if not line:
                continue
            parts = line.split(",")
            if len(parts) < 2:
                raise CepoptError(f"{path}:{lineno}: expected time,type[,value], got {line!r}")
            try:
                rows.append((int(parts[0]), int(parts[1]), int(parts[2]) if len(parts) > 2 and parts[2] else 0))
            except ValueError:
                raise CepoptError(f"{path}:{lineno}: non-integer field in {line!r}") from None
            if events is not None and len(rows) >= events:
                break
    arr = np.array(rows, dtype=np.int64).reshape(-1, 3)
    df = pd.DataFrame({"ts": np.arange(len(arr), dtype=np.int64) if time == "file" else arr[:, 0],
                       "type": [f"{prefix}{t}" for t in arr[:, 1]],
                       "time_col": arr[:, 0], "value": arr[:, 2]})
    if time == "column":
        df = df.sort_values("ts", kind="stable").reset_index(drop=True)
    return df


def generate(*, seed: int = 0, file: str = "Syn_TestStream", path: str | None = None,
             events: NonNegativeInt | None = None,
             prefix: str = "T", time: str = "file") -> pd.DataFrame:
    """The Hamlet stream ``file`` (a name of :data:`KNOWN` under ../shared/anchors-data, or ``path``).
    ``seed`` is unused: the stream is data."""
    del seed
    if path is None:
        if file not in KNOWN:
            raise CepoptError(f"hamlet stream: unknown file {file!r} (known: {', '.join(KNOWN)}; or give path=)")
        path = str(_shared_root() / KNOWN[file])
    return read(path, events=events, prefix=prefix, time=time)
