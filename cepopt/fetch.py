"""``cepopt fetch``: download published data into a local cache, as scikit-learn's ``fetch_*`` do.

``gloria-workloads``: the workload files of the Gloria paper's experiments, from the authors' public
repository (LeiMa0324/Gloria, ``src/main/resources/{bus,stock,taxi}/**/workload_N.txt``), into
``$CEPOPT_CACHE/gloria-workloads/{bus,stock,taxi}/...`` (default ``~/.cache/cepopt``). ``url`` is any
tar.gz archive of that repository (``https://``, ``file://`` or a local path); only its workload text
files are taken, each written under the cache by its own checked relative path, whatever the archive
says. A data set whose files are all in the cache is not fetched again (``force`` fetches anyway).
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


def _workloads(data: bytes, url: str) -> dict[str, bytes]:
    """Relative path under the cache -> content of each workload file in the archive."""
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            for member in archive:
                match = _WORKLOAD.search(member.name)
                if not member.isfile() or match is None:
                    continue
                handle = archive.extractfile(member)
                if handle is not None:
                    found[match.group(1)] = handle.read()
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise CepoptError(f"--url {url}: not a tar.gz archive ({exc})") from None
    if not found:
        raise CepoptError(f"--url {url}: the archive holds no src/main/resources/{{bus,stock,taxi}}/.../"
                          "workload_N.txt: not the Gloria repository")
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
        return Fetched(name, target, sum(1 for _ in target.rglob("workload_*.txt")), False)
    url = url or DATASETS[name]
    files = _workloads(_download(url), url)
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
