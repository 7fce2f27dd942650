"""Reading a user's text or JSON file with one-line user errors (:func:`read_text`, :func:`read_json`).

An unreadable file, a byte that is not UTF-8 and malformed JSON each raise a :class:`CepoptError`
(or the subclass the caller names) whose message starts with the file's name; never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cepopt.errors import CepoptError

__all__ = ["probe_path", "read_json", "read_text"]


def read_text(path: str | Path, name: str | None = None, *, error: type[CepoptError] = CepoptError) -> str:
    """The file at ``path`` as UTF-8 text.

    Messages call the file ``name`` (default: the path); ``error`` is the class raised. A bad byte is
    reported as ``NAME:LINE: not UTF-8 text (byte 0xNN)``.
    """
    path = Path(path)
    name = str(path) if name is None else name
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Decoding the whole file at once makes exc.start an offset in the file, so the line is exact.
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(f"{name}:{line}: not UTF-8 text (byte {data[exc.start]:#04x})") from None


def read_json(path: str | Path, name: str | None = None, *, error: type[CepoptError] = CepoptError) -> Any:
    """The JSON value in the file at ``path`` (UTF-8); ``name`` and ``error`` as in :func:`read_text`."""
    name = str(Path(path)) if name is None else name
    text = read_text(path, name, error=error)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{name}: malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise error(f"{name}: JSON nested too deeply") from None
    except ValueError:  # json parses integers with int(), which refuses more than 4300 digits
        raise error(f"{name}: a JSON integer has too many digits") from None


def probe_path(path: str | Path, test: str = "exists", name: str | None = None) -> bool:
    """``Path(path).exists()`` (or ``is_file`` / ``is_dir``), where a name the system refuses (longer than
    the file-name limit, a NUL byte) is a CepoptError naming it instead of an OSError."""
    try:
        return bool(getattr(Path(path), test)())
    except (OSError, ValueError) as exc:
        shown = str(name or path)
        shown = shown if len(shown) <= 80 else shown[:60] + "..." + shown[-10:]
        reason = getattr(exc, "strerror", None) or "not a valid file name"
        raise CepoptError(f"{shown}: cannot read: {reason}") from None

