"""The scripts under examples/ run as their docstrings say."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quickstart_runs_and_writes_its_plot(tmp_path):
    png = tmp_path / "plans.png"
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py"), str(png)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sharon-fig4 with cpsat: optimal, score 50" in proc.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    runs = {m["plan"]: {k: int(v.replace(",", "")) for k, v in m.groupdict().items() if k != "plan"}
            for m in re.finditer(r"^(?P<plan>[\w-]+) +predicted +(?P<predicted>[\d,]+) +measured +(?P<measured>[\d,]+)"
                                 r" +\(updates (?P<updates>[\d,]+), combines (?P<combines>[\d,]+)\)$",
                                 proc.stdout, re.M)}
    assert set(runs) == {"nonshared", "greedy", "cpsat-compact"}, proc.stdout
    # the optimal plan, priced on the statistics of the stream it runs on, measures no more than greedy's
    assert runs["cpsat-compact"]["measured"] <= runs["greedy"]["measured"] < runs["nonshared"]["measured"]
    # the prediction is in the unit of the measured operations: the updates it prices agree within 25 %,
    # and the non-shared plan (no combination term) within 35 % in total
    for plan, run in runs.items():
        assert 0.75 <= run["updates"] / run["predicted"] <= 1.25, (plan, run)
    assert 0.65 <= runs["nonshared"]["measured"] / runs["nonshared"]["predicted"] <= 1.35


def test_quickstart_without_a_file_prints_its_usage():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "usage:" in proc.stderr
