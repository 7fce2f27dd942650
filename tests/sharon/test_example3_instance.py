"""The bundled executor example (spec §7.5, §9.3): its "expected" numbers, re-derived here by brute
force over the embedded stream, so the executor's tests can trust them."""

from __future__ import annotations

from itertools import combinations

from cepopt.instance import load
from cepopt.registry import solve
from cepopt.sharon.plan import SharonPlan


def matches(stream, pattern):
    """Every match of a SEQ pattern (strictly increasing time stamps, skip-till-any-match)."""
    for combo in combinations(stream, len(pattern)):
        if all(e["type"] == t for e, t in zip(combo, pattern, strict=True)) and all(
                a["ts"] < b["ts"] for a, b in zip(combo, combo[1:], strict=False)):
            yield combo


def test_example3_expected_by_brute_force():
    inst = load("sharon-example3")
    stream = list(inst.stream)
    exp = inst.expected
    q1 = list(matches(stream, "ABCD"))
    assert len(q1) == exp["results"]["q1"]["COUNT(*)"] == exp["example3"]["count_ABCD"] == 7
    assert sum(m[0]["v"] for m in q1) == exp["results"]["q1"]["SUM(A.v)"]
    assert sum(m[3]["v"] for m in q1) == exp["results"]["q1"]["SUM(D.v)"]
    assert min(m[3]["v"] for m in q1) == exp["results"]["q1"]["MIN(D.v)"]
    assert max(m[3]["v"] for m in q1) == exp["results"]["q1"]["MAX(D.v)"]
    q2 = list(matches(stream, "AB"))
    assert len(q2) == exp["results"]["q2"]["COUNT(*)"]
    assert sum(m[0]["v"] for m in q2) == exp["results"]["q2"]["SUM(A.v)"]
    assert len(list(matches([e for e in stream if e["ts"] <= 4], "AB"))) == exp["example1_count_AB_after_b4"]
    for vec in exp["window_vectors"]:
        W, S, pattern = vec["within"], vec["slide"], "".join(vec["pattern"])
        got = {}
        for k in range(0, 10):
            inside = [m for m in matches(stream, pattern) if m[0]["ts"] >= k * S and m[-1]["ts"] < k * S + W]
            if inside:
                got[str(k)] = [len(inside), sum(m[0]["v"] for m in inside)]
        want = {k: v for k, v in vec["windows"].items()}
        assert set(got) == set(want), vec
        for k, (count, total) in want.items():
            assert got[k][0] == count and (total is None or got[k][1] == total), (vec, k)


def test_example3_shared_plan_is_valid_and_optimal():
    inst = load("sharon-example3")
    plan = SharonPlan.from_json(inst.expected["shared_plan"])
    sol = solve(inst, "bruteforce")
    assert sol.plan == plan and sol.objective > 0
