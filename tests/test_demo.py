"""`cepopt demo --quick` runs end to end: every family solved, plans executed, answers agree."""

import re

import pytest


@pytest.mark.spark
def test_quick_demo_agrees_on_every_family(spark, capsys):
    from cepopt.experiments.demo import DEMOS, run_demo

    status = run_demo(quick=True, time_limit=10)
    out = capsys.readouterr().out
    assert status == 0, out
    for demo in DEMOS:
        assert f"{demo.family}: paper example {demo.example}" in out
    assert out.count("answers agree under every plan: yes") == len(DEMOS)
    assert "NO" not in out.split("answers agree")[-1]
    # join order is planned on the statistics measured on its stream: the DP plan then creates
    # fewer partial matches on that stream than the pattern's written order
    ratio = re.search(r"measured operations best: dp-ld / trivial = ([0-9.]+)", out)
    assert ratio is not None, out
    assert float(ratio.group(1)) < 1.0
    # Sharon runs on a stream at its rates per window, the cost model's unit: the optimal plan measures no
    # more than greedy's, and the per-window prediction is scaled to the stream's windows
    ratio = re.search(r"measured operations best: [\w-]+ / greedy = ([0-9.]+)", out)
    assert ratio is not None and float(ratio.group(1)) <= 1.0, out
    sharon = out.split("sharon: execute")[1]
    scaled = re.search(r"predicted ([0-9.]+) per window x ([0-9.]+) windows = ([0-9,]+) ", sharon)
    assert scaled is not None, sharon
    per_window, windows, total = float(scaled.group(1)), float(scaled.group(2)), int(scaled.group(3).replace(",", ""))
    assert windows > 10 and abs(total - per_window * windows) <= 0.01 * total
