"""The scripts under examples/ run as their docstrings say."""

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


def test_quickstart_without_a_file_prints_its_usage():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "usage:" in proc.stderr
