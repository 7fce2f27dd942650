"""The user's cache folder and the compiled-kernel cache that the driver and Spark's Python workers share.

``$CEPOPT_CACHE`` (default ``~/.cache/cepopt``) holds the fetched workloads, Spark's logs and class-data
archive, and ``numba/``: Numba's ``cache=True`` kernels. Numba's default puts them beside the sources
(``__pycache__``), or, where those are read-only (a system or wheel install), in a folder a Spark worker
started with another user or ``HOME`` does not look in: each process then compiles every kernel again,
seconds per kernel. One folder, set as ``NUMBA_CACHE_DIR`` when cepopt is imported (before Numba is) and
passed to the workers' environment, is filled once (``cepopt warmup``) and read by every process.
A ``NUMBA_CACHE_DIR`` the user set is kept.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["cache_dir", "numba_cache_dir", "share_numba_cache"]


def cache_dir() -> Path:
    """``$CEPOPT_CACHE`` or ``~/.cache/cepopt`` (not created here)."""
    return Path(os.environ.get("CEPOPT_CACHE") or Path.home() / ".cache" / "cepopt")


def numba_cache_dir() -> Path:
    """The compiled kernels' folder: ``NUMBA_CACHE_DIR`` when set, else ``CACHE/numba``."""
    return Path(os.environ.get("NUMBA_CACHE_DIR") or cache_dir() / "numba")


def share_numba_cache() -> Path:
    """Point Numba's cache at :func:`numba_cache_dir` in this process and in the processes it starts
    (Spark's JVM and its Python workers inherit the environment); returns the folder."""
    folder = numba_cache_dir()
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    config = sys.modules.get("numba.core.config")
    if config is not None:  # Numba imported already (by the caller): its kernels not yet declared see it
        config.CACHE_DIR = str(folder)
    return folder
