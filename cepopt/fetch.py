"""``cepopt fetch``: download published data into a local cache, as scikit-learn's ``fetch_*`` do.

``gloria-workloads``: the workload files of the Gloria paper's experiments, from the authors' public
repository (LeiMa0324/Gloria), into ``CACHE/gloria-workloads/`` (``CACHE``: ``$CEPOPT_CACHE``, default
``~/.cache/cepopt``), laid out as ``cepopt import gloria`` reads them:

* ``workloads/{bus,stock,taxi}/**/workload_N.txt``: the repository's
  ``src/main/resources/{bus,stock,taxi}/**/workload_N.txt``;
* ``event_type_frequencies.csv`` (``dataset,class,event_type,frequency``): the per-type frequencies the
  authors' optimizer uses, read from the constants ``TYPE(frequency)`` of their
  ``{bus,stock,taxi}User/*{High,Low}Frequency*Enum.java`` (data only; no code is taken).

``url`` is any tar.gz archive of that repository (``https://``, ``file://`` or a local path); only those
files are read, each written under the cache by its own checked relative path, whatever the archive
says. A data set in the cache is not fetched again (``force`` fetches anyway).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from cepopt.errors import CepoptError

__all__ = ["DATASETS", "GLORIA_URL", "Fetched", "cache_dir", "fetch"]

#: the authors' repository as a tar.gz (its default branch)
GLORIA_URL = "https://github.com/LeiMa0324/Gloria/archive/HEAD.tar.gz"
#: what ``cepopt fetch`` knows: name -> default URL
DATASETS = {"gloria-workloads": GLORIA_URL}
#: a member of the archive taken, and the path it gets under the cache
_WORKLOAD = re.compile(r"(?:^|/)src/main/resources/((?:bus|stock|taxi)/(?:\w[\w.-]*/)*workload_\d+\.txt)$")
#: an enum of the frequencies: (data set, class) from its path
_FREQUENCIES = re.compile(r"(?:^|/)(bus|stock|taxi)User/\1(High|Low)Frequency\w*Enum\.java$")
_CONSTANT = re.compile(r"\b([A-Za-z_]\w*)\s*\(\s*(\d+)\s*\)\s*[,;]")
#: the largest archive read (the repository is a few MB)
MAX_BYTES = 200 << 20


@dataclass(frozen=True)
class Fetched:
    name: str
    folder: Path
    files: int
    downloaded: bool


def cache_dir() -> Path:
    """``$CEPOPT_CACHE`` or ``~/.cache/cepopt``."""
    return Path(os.environ.get("CEPOPT_CACHE", Path.home() / ".cache" / "cepopt"))


def _download(url: str) -> bytes:
    if "://" not in url:
        url = Path(url).resolve().as_uri()
    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 -- a URL the user gives
            data = response.read(MAX_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise CepoptError(f"--url {url}: cannot download: {reason}") from None
    if len(data) > MAX_BYTES:
        raise CepoptError(f"--url {url}: larger than {MAX_BYTES >> 20} MB: not the workloads' archive")
    return data


def _frequency_rows(dataset: str, level: str, source: str) -> list[str]:
    """The CSV rows of one frequency enum: the constants before its first ``;``."""
    body = source.split("{", 1)[-1].split(";", 1)[0] + ";"
    return [f"{dataset},{level.lower()},{name},{value}" for name, value in _CONSTANT.findall(body)]


def _contents(data: bytes, url: str) -> dict[str, bytes]:
    """Relative path under the cache -> content: each workload file of the archive and the frequency
    table made from the enums."""
    found: dict[str, bytes] = {}
    rows: dict[tuple[str, str], list[str]] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            for member in archive:
                workload, enum = _WORKLOAD.search(member.name), _FREQUENCIES.search(member.name)
                handle = archive.extractfile(member) if member.isfile() and (workload or enum) else None
                if handle is None:
                    continue
                if workload:
                    found["workloads/" + workload.group(1)] = handle.read()
                else:
                    rows.setdefault(enum.groups(), _frequency_rows(*enum.groups(), handle.read().decode()))
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as exc:
        raise CepoptError(f"--url {url}: not a tar.gz archive ({exc})") from None
    if not found:
        raise CepoptError(f"--url {url}: the archive holds no src/main/resources/{{bus,stock,taxi}}/.../"
                          "workload_N.txt: not the Gloria repository")
    if rows:
        table = ["dataset,class,event_type,frequency", *(r for key in sorted(rows) for r in rows[key])]
        found["event_type_frequencies.csv"] = ("\n".join(table) + "\n").encode()
    return found


def fetch(name: str = "gloria-workloads", *, url: str | None = None, cache: str | Path | None = None,
          force: bool = False) -> Fetched:
    """Fetch data set ``name`` into the cache (module docstring); returns where it is."""
    if name not in DATASETS:
        raise CepoptError(f"unknown data set {name!r} (known: {', '.join(DATASETS)})")
    folder = Path(cache) if cache is not None else cache_dir()
    target = folder / name
    done = target / ".complete"
    if done.is_file() and not force:
        return Fetched(name, target, sum(1 for p in target.rglob("*") if p.is_file()) - 1, False)
    url = url or DATASETS[name]
    files = _contents(_download(url), url)
    partial = folder / f".{name}.{os.getpid()}.tmp"
    try:
        shutil.rmtree(partial, ignore_errors=True)
        for relative, content in files.items():
            path = partial / relative  # matched by _WORKLOAD: plain names, no "..", no absolute path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        (partial / ".complete").write_text(f"{url}\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(partial, target)
    except OSError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise CepoptError(f"{target}: cannot write the cache: {exc.strerror or exc}") from None
    return Fetched(name, target, len(files), True)
