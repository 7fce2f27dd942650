"""Every shell command of README.md, docs/*.md and experiments/README.md runs as written, and so does
README.md's Python example.

The commands are read from the fenced ``bash`` blocks (continuation lines joined, comments dropped) and
run in order, one document at a time, with the venv's ``cepopt`` in an empty folder that has the
published data beside it as ``../shared`` when it exists (the commands that read it skip otherwise,
or fail under ``CEPOPT_REQUIRE_SHARED=1``, as in CI). Each must exit with status 0; under ``--json`` its
standard output must be one JSON document, a file it writes with ``-o`` / ``--save-stats`` must be
JSON, and the figures the README quotes must be in the output of the command that shows them.

The two quick-start commands (tests/test_readme.py) and the commands in :data:`NOT_RUN` are documented
but not run here, each for the reason given.
"""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "experiments" / "README.md"]
SHARED = Path(os.environ.get("CEPOPT_SHARED", ROOT.parent / "shared"))
CEPOPT = Path(sys.executable).parent / "cepopt"

#: commands shown but not run by this test, with the reason
NOT_RUN = {
    "python3 -m venv .venv && .venv/bin/pip install -e .": "installs cepopt into a new venv: .ci/run does that",
    "cepopt experiment sharon-optimizers --quick": "an experiment's quick grid runs for a minute or more; "
    "tests/sharon/test_generator_and_experiment.py runs this one",
    "cepopt experiment NAME [--quick] [--out DIR] [--no-resume] [--master URL]": "a template (NAME is a placeholder)",
    "export CEPOPT_SPARK_MASTER=spark://master:7077": "cluster: needs a Spark master",
    "export PYSPARK_PYTHON=/opt/cepopt/bin/python": "cluster: needs the workers' Python",
    "cepopt fetch gloria-workloads --cache data": "downloads from GitHub: tests/test_fetch.py runs it offline; "
    "here ../shared stands in for its cache (FETCHED)",
    "cepopt execute sh20.json --plan cpsat-compact --stream hdfs://nn/streams/day1.parquet "
    "--output hdfs://nn/results/day1.parquet --json": "cluster: needs HDFS and a Spark master",
}

#: figures a document quotes -> the command whose output shows them (regular expressions on stdout)
QUOTED = {
    "cepopt compare sharon-fig4 --methods greedy,sharon,cpsat,milp": [
        r"greedy\s+feasible\s+43\b", r"sharon\s+optimal\s+50\s+50\b", r"cpsat\s+optimal\s+50\s+50\b"],
    "cepopt solve sharon-fig4 --method sharon --param reduction=literal --json": [
        r'"status": "feasible"', r'"objective": 50\b'],
}

#: the cache `cepopt fetch gloria-workloads --cache data` fills: the published data has its layout
FETCHED = "data/gloria-workloads"

MAX_SPARK_COMMANDS = 3   # a Spark start costs about 10 s: the rest use --engine local


def fenced_words(path: Path) -> list[list[str]]:
    """The commands of the fenced bash blocks of ``path`` as word lists (comments dropped,
    continuation lines joined)."""
    commands: list[list[str]] = []
    for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", path.read_text(), flags=re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(words)
    return commands


def fenced_commands(path: Path) -> list[str]:
    """The commands of ``path`` as text: their words joined by single spaces."""
    return [" ".join(words) for words in fenced_words(path)]


def quick_start() -> list[str]:
    return fenced_commands(ROOT / "README.md")[:2]


def to_run(path: Path) -> list[list[str]]:
    skip = set(quick_start()) | set(NOT_RUN)
    return [words for words in fenced_words(path) if " ".join(words) not in skip]


def is_spark(words: list[str]) -> bool:
    return words[:2] in (["cepopt", "execute"], ["cepopt", "demo"]) and "--engine" not in words


def written_files(words: list[str]) -> list[str]:
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--save-stats")]


def check_output(command: str, words: list[str], proc: subprocess.CompletedProcess, cwd: Path) -> list[str]:
    """What is wrong with the output of ``command`` (an empty list when nothing is)."""
    problems = []
    if "--json" in words:
        try:
            json.loads(proc.stdout)
        except json.JSONDecodeError as exc:
            problems.append(f"stdout is not one JSON document ({exc}): {proc.stdout[:200]!r}")
    elif not proc.stdout.strip():
        problems.append("printed nothing")
    for name in written_files(words):
        try:
            json.loads((cwd / name).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            problems.append(f"{name}: not a JSON file ({exc})")
    if "--version" in words and not proc.stdout.startswith("cepopt "):
        problems.append(f"--version printed {proc.stdout!r}")
    for pattern in QUOTED.get(command, ()):
        if not re.search(pattern, proc.stdout):
            problems.append(f"the quoted figure {pattern!r} is not in its output")
    return problems


def test_the_documents_have_commands_and_no_stale_exceptions():
    every = {c for path in DOCS for c in fenced_commands(path)}
    assert len(quick_start()) == 2 and quick_start()[0].endswith("cepopt demo")
    assert set(NOT_RUN) <= every, f"NOT_RUN names commands no document shows: {set(NOT_RUN) - every}"
    assert set(QUOTED) <= every, f"QUOTED names commands no document shows: {set(QUOTED) - every}"
    assert all(w[0] in ("cepopt", ".venv/bin/cepopt") for p in DOCS for w in to_run(p)), \
        "a command to run is not a cepopt command: add it to NOT_RUN with the reason"
    spark = [" ".join(w) for path in DOCS for w in to_run(path) if is_spark(w)]
    assert len(spark) <= MAX_SPARK_COMMANDS, f"too many Spark commands (use --engine local): {spark}"


WITH_COMMANDS = [path for path in DOCS if to_run(path)]


@pytest.mark.spark
@pytest.mark.parametrize("path", WITH_COMMANDS, ids=[str(p.relative_to(ROOT)) for p in WITH_COMMANDS])
def test_every_documented_command_runs(path, tmp_path):
    commands = to_run(path)
    cwd = tmp_path / "work"
    cwd.mkdir()
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED.resolve(), target_is_directory=True)
        (cwd / FETCHED).parent.mkdir(parents=True)
        (cwd / FETCHED).symlink_to((SHARED / "anchors-data" / "gloria").resolve(), target_is_directory=True)
    env = {**os.environ, "PATH": f"{CEPOPT.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    needs_shared: set[str] = set()   # files written by commands that read ../shared
    failures, skipped = [], []
    for words in commands:
        command = " ".join(words)
        if "../shared" in command or FETCHED in command or needs_shared & set(words):
            needs_shared.update(written_files(words))
            if not SHARED.is_dir():
                skipped.append(command)
                continue
        argv = [str(CEPOPT), *words[1:]]
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
        if proc.returncode != 0:
            failures.append(f"{command}\n  exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
            continue
        failures += [f"{command}\n  {p}" for p in check_output(command, words, proc, cwd)]
    assert not failures, "\n".join(failures)
    if skipped:
        reason = f"../shared is absent ({SHARED}): not run: {skipped}"
        if os.environ.get("CEPOPT_REQUIRE_SHARED", "") not in ("", "0"):
            pytest.fail(reason)
        pytest.skip(reason)


def test_the_readme_python_example_runs(tmp_path):
    blocks = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), flags=re.S | re.M)
    assert blocks, "README.md shows no Python example"
    for code in blocks:
        proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert "optimal 50 " in proc.stdout, "the README quotes 'optimal 50' for cepopt.solve on sharon-fig4"
