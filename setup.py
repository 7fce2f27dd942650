"""Build step: compile GLORIA's hot modules with mypyc; the package's metadata lives in pyproject.toml.

Why and which modules: cepopt/gloria/compiled.py (its COMPILED_MODULES, loaded here by path so the
build imports nothing of cepopt). The build never fails for want of a compiler: if mypyc cannot type
or translate the modules, or the C compiler is missing or fails, it warns once and installs the pure
Python sources, which give the same results. ``CEPOPT_PURE_PYTHON=1`` skips compiling (and removes
the compiled files an earlier in-place build left beside the sources, which would shadow them).

After a successful build the manifest (compiled_sources.json, beside the modules) records the SHA-256
of each compiled source; at import the guard in compiled.py loads the sources instead of any compiled
module whose source has changed since (an editable checkout being edited).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
PACKAGE_DIR = ROOT / "cepopt" / "gloria"


def _load_compiled_module():
    spec = importlib.util.spec_from_file_location("_cepopt_compiled", PACKAGE_DIR / "compiled.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


COMPILED = _load_compiled_module()
#: mypyc's name for the group of compiled modules; their shared library is GROUP + "__mypyc"
GROUP = COMPILED.SHARED_LIBRARY.removesuffix("__mypyc")


def _warn(message: str) -> None:
    print(f"WARNING: cepopt: {message}; installing the pure-Python GLORIA modules (same results, slower)",
          file=sys.stderr)


def _remove_in_place_builds() -> None:
    """The compiled files of an earlier in-place (editable) build: they would shadow the sources."""
    for module in COMPILED.COMPILED_MODULES:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            (PACKAGE_DIR / f"{module}{suffix}").unlink(missing_ok=True)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        (ROOT / f"{COMPILED.SHARED_LIBRARY}{suffix}").unlink(missing_ok=True)
    (PACKAGE_DIR / COMPILED.MANIFEST).unlink(missing_ok=True)


def _manifest() -> str:
    modules = {m: COMPILED.source_hash(PACKAGE_DIR / f"{m}.py") for m in COMPILED.COMPILED_MODULES}
    return json.dumps({"modules": modules}, indent=1, sort_keys=True) + "\n"


class OptionalBuildExt(build_ext):
    """build_ext that falls back to pure Python when compiling fails, and writes the manifest beside
    the compiled modules when it succeeds."""

    def run(self) -> None:
        if not self.extensions:
            return
        try:
            super().run()
        except Exception as exc:  # no compiler, missing Python headers, a compile error
            _warn(f"compiling the GLORIA modules failed ({type(exc).__name__}: {exc})")
            self._drop_outputs()
            return
        self._write_manifest()

    def _targets(self) -> list[Path]:
        """Where the compiled modules went: the build tree (a wheel) and, in place, the sources."""
        dirs = {Path(self.get_ext_fullpath("cepopt.gloria.cost")).parent}
        if self.inplace or getattr(self, "editable_mode", False):
            dirs.add(PACKAGE_DIR)
        return sorted(dirs)

    def _write_manifest(self) -> None:
        text = _manifest()
        for directory in self._targets():
            directory.mkdir(parents=True, exist_ok=True)
            (directory / COMPILED.MANIFEST).write_text(text)

    def _drop_outputs(self) -> None:
        for ext in self.extensions:
            Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
        if self.inplace or getattr(self, "editable_mode", False):
            _remove_in_place_builds()
        self.extensions = []

    def get_outputs(self) -> list[str]:
        outputs = super().get_outputs()
        if self.extensions:
            outputs.append(str(Path(self.get_ext_fullpath("cepopt.gloria.cost")).parent / COMPILED.MANIFEST))
        return outputs


def _metadata_only() -> bool:
    """pip asks for the build requirements and the metadata (``egg_info``, ``dist_info``) before it
    builds: mypyc's type check and C generation (seconds) are then skipped."""
    commands = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
    return bool(commands) and all(c in ("egg_info", "dist_info", "sdist") or os.sep in c for c in commands)


def _extensions() -> list:
    if _metadata_only():
        return []
    if COMPILED.pure_python_requested():
        print(f"cepopt: {COMPILED.PURE_PYTHON_ENV}=1: not compiling the GLORIA modules", file=sys.stderr)
        _remove_in_place_builds()
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as exc:
        _warn(f"mypyc is not available ({exc})")
        return []
    cwd = os.getcwd()
    os.chdir(ROOT)  # mypyc takes paths relative to the project and writes its C files to build/
    try:
        paths = [f"cepopt/gloria/{m}.py" for m in COMPILED.COMPILED_MODULES]
        return mypycify(["--ignore-missing-imports", "--follow-imports=silent", *paths],
                        opt_level="3", group_name=GROUP)
    except (Exception, SystemExit) as exc:  # mypy reports type errors by exiting
        _warn(f"mypyc could not translate the GLORIA modules ({type(exc).__name__}: {exc})")
        return []
    finally:
        os.chdir(cwd)


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
