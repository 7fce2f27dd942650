"""Fuzzing streams: CSV and Parquet files (valid, damaged, garbage) and generator specs
(``gen:NAME:k=v,...``) give a time-ordered DataFrame or a CepoptError. The pandas readers are the
local engine's; the Spark engine's reading is the spark helper's (tests/executor)."""

from __future__ import annotations

import decimal
import io

import pandas as pd
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cepopt.executor import streams as stream_readers
from cepopt.executor.streams import read_stream_pandas, resolve_stream_pandas
from cepopt.instances import load
from cepopt.instances.streams import MAX_STREAM_EVENTS, names, parameters
from tests.fuzz.budget import budget
from tests.fuzz.strategies import nasty_ints, nasty_text, outcome, value_words

COLUMNS = ["ts", "type", "v", "x", "district"]

#: executor/streams.py is the spark helper's, rewritten on h-spark (which adds ``is_local``); until it is
#: merged, the pandas reader casts a non-finite or out-of-range ts to int64 without a check
#: (IntCastingNaNError on inf, a silent wrap beyond 2^63). The mark goes away with the rewrite.
OLD_READER = not hasattr(stream_readers, "is_local")
spark_reader_bug = pytest.mark.xfail(
    OLD_READER, strict=True, raises=AssertionError,
    reason="spark: executor/streams.py _check_pandas casts ts = inf / beyond int64 to int64 unchecked "
           "(fixed on h-spark)")
cells = st.one_of(nasty_ints.map(str), value_words, st.sampled_from(["", '"', '""', "a,b", "\n", "1\r\n2", "NaN"]))


def check_frame(result, source=None) -> None:
    if isinstance(result, Exception):
        return
    assert isinstance(result, pd.DataFrame)
    assert {"ts", "type"} <= set(result.columns)
    assert result["ts"].dtype == "int64"
    if source is not None:  # every time stamp read is the one written, in file order (no wrap, no rounding)
        written = pd.read_csv(source, dtype=str, keep_default_na=False)["ts"] if str(source).endswith(".csv") else None
        if written is not None:
            assert [int(decimal.Decimal(t.strip())) for t in written] == list(result["ts"])  # exact


@st.composite
def csv_texts(draw) -> str:
    header = draw(st.lists(st.sampled_from(COLUMNS), min_size=0, max_size=5))
    if draw(st.booleans()):
        header = ["ts", "type"] + [c for c in header if c not in ("ts", "type")]
    rows = draw(st.lists(st.lists(cells, min_size=0, max_size=len(header) + 1), max_size=8))
    lines = [",".join(header)] + [",".join(r) for r in rows]
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines) + draw(st.sampled_from(["", "\n"]))


@spark_reader_bug
@budget(80)
@given(csv_texts())
@example("ts,type\n1e400,A\n")
@example("ts,type\n99999999999999999999,A\n")
def test_csv_streams(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("csv") / "s.csv"
    path.write_text(text, encoding="utf-8", errors="surrogatepass") if text.isascii() else path.write_bytes(
        text.encode("utf-8", "surrogatepass"))
    check_frame(outcome(read_stream_pandas, path), path)


column_values = st.one_of(
    st.lists(st.integers(-(2**63), 2**63 - 1), min_size=3, max_size=3),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=3, max_size=3),
    st.lists(nasty_text, min_size=3, max_size=3),
    st.lists(st.none() | st.booleans(), min_size=3, max_size=3),
)


@spark_reader_bug
@budget(40)
@given(st.dictionaries(st.sampled_from(COLUMNS), column_values, max_size=5), st.integers(0, 3))
@example({"ts": [0.0, 0.0, float("inf")], "type": ["A", "A", "A"]}, 0)
def test_parquet_streams(tmp_path_factory, columns, damage):
    path = tmp_path_factory.mktemp("pq") / "s.parquet"
    try:
        pd.DataFrame(columns).to_parquet(path)
    except Exception:  # noqa: BLE001 -- a frame pyarrow cannot write is no stream: write garbage instead
        path.write_bytes(b"PAR1 not really")
    if damage == 1:  # cut in the middle
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif damage == 2:
        path.write_bytes(b"\x00" * 64)
    check_frame(outcome(read_stream_pandas, path))


@budget(15)
@given(st.binary(max_size=300), st.sampled_from(["s.csv", "s.parquet", "s.pq", "s.txt", "dir.parquet/"]))
def test_garbage_files(tmp_path_factory, data, name):
    folder = tmp_path_factory.mktemp("raw")
    path = folder / name.rstrip("/")
    if name.endswith("/"):
        path.mkdir()
        (path / "part-0.parquet").write_bytes(data)
    else:
        path.write_bytes(data)
    check_frame(outcome(read_stream_pandas, path))


#: parameter values that stay cheap when valid: small sizes, boundary values that must be refused
sizes = st.one_of(st.integers(-2, 300), st.sampled_from([MAX_STREAM_EVENTS + 1, 99999999999, 10**400, -(10**400)]))


@st.composite
def generator_specs(draw) -> str:
    name = draw(st.sampled_from([*names(), "nope", "", "workload:"]))
    known = list(parameters(name)) if name in names() else []
    items = []
    for _ in range(draw(st.integers(0, 4))):
        key = draw(st.sampled_from([*known, "seed", "bogus", ""]) if known else st.sampled_from(["seed", "x", ""]))
        value = draw(st.one_of(sizes.map(str), value_words, st.just("")))
        if key in ("path", "file") and draw(st.booleans()):
            value = draw(st.sampled_from(["/nonexistent", "/dev/null", "x" * 300, "/etc/hostname"]))
        items.append(f"{key}={value}" if draw(st.integers(0, 9)) else key)
    return f"gen:{name}" + (":" + ",".join(items) if items else "")


@budget(120)
@given(generator_specs())
def test_generator_specs(spec):
    result = outcome(resolve_stream_pandas, spec, load("sharon-fig4"))
    if not isinstance(result, Exception):
        check_frame(result)
        assert len(result) <= MAX_STREAM_EVENTS


def test_a_frame_written_to_csv_reads_back(tmp_path):
    df = pd.DataFrame({"ts": [3, 1, 2], "type": ["A", "B", "A"], "v": [1.5, None, 2.0]})
    buf = io.StringIO()
    df.to_csv(buf, index=False)
    (tmp_path / "s.csv").write_text(buf.getvalue())
    got = read_stream_pandas(tmp_path / "s.csv")
    assert list(got["ts"]) == [3, 1, 2] and list(got["type"]) == ["A", "B", "A"]  # file order
