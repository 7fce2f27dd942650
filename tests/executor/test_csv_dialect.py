"""One CSV dialect for both engines (docs/FORMATS.md, executor/csv_dialect.py): the same answer on the
local engine and on Spark, or the same one-line CepoptError naming file, line and column (issue 30,
item 5)."""

from __future__ import annotations

import math

import pytest

from cepopt.errors import CepoptError
from cepopt.executor import csv_dialect as dialect
from cepopt.instance import from_json

QUERIES = [
    "q1: RETURN district, COUNT(*), SUM(A.v) PATTERN SEQ(A, B+) GROUP-BY district WITHIN 10 SLIDE 5",
    "q2: RETURN district, COUNT(*), MAX(B.v) PATTERN SEQ(A, B+, C) GROUP-BY district WITHIN 10 SLIDE 5",
]
HEADER = "ts,type,district,v\n"
#: text GROUP-BY values: missing-value texts, quoting, a quoted line break, booleans, unicode
ROWS = ['1,A,NA,1', '2,B,NA,2', '3,B,null,3', '4,A,null,4', '5,B,x,5', '6,C,NA,1', '7,A,"x\ny",2',
        '8,B,"x\ny",3', '9,A,"say ""hi""",1', '10,B,"say ""hi""",2', '11,A,True,1', '12,B,TRUE,2', '13,B,true,1',
        '14,A,Zürich,1', '15,B,Zürich,2', '16,B,,3', '17,A,None,2', '18,B,,4', '19,C,n/a,1', '20,A,"a,b",1',
        '21,B,"a,b",2', '22,A,back\\slash,1', '23,B,"back\\slash",2']


def _instance(problem: str = "gloria"):
    return from_json({"problem": problem, "name": "dialect", "queries": QUERIES,
                      "statistics": {"rates": {"A": 1, "B": 2, "C": 1}}})


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


def _local(path, problem: str = "gloria"):
    from cepopt.pipeline import execute

    return execute(_instance(problem), None, str(path), engine="local", max_work=math.inf)


def _error(fn) -> str:
    with pytest.raises(CepoptError) as info:
        fn()
    return str(info.value)


def test_missing_values_quoting_and_booleans_in_a_text_column(tmp_path):
    """NA, null, None, n/a and empty are one missing group; a quoted line break, "" and a comma are text;
    True / TRUE / true stay three texts (pandas would read a column of them as booleans)."""
    from cepopt.executor.reference import reference_results
    from cepopt.executor.results import compare_results
    from cepopt.executor.streams import read_stream_pandas

    path = _write(tmp_path, "s.csv", HEADER + "\n".join(ROWS) + "\n")
    events = read_stream_pandas(path)
    assert len(events) == len(ROWS)
    groups = events["district"].tolist()
    assert groups[6] == "x\ny" and groups[8] == 'say "hi"' and groups[19] == "a,b"
    assert groups[10:13] == ["True", "TRUE", "true"]
    assert groups[21:23] == ["back\\slash"] * 2
    missing = events["district"].isna().tolist()
    assert [i for i, m in enumerate(missing) if m] == [0, 1, 2, 3, 5, 15, 16, 17, 18]
    got = _local(path).to_pandas()
    assert compare_results(got, reference_results(_instance().workload, events)) == []
    assert len(got) > 0


@pytest.mark.parametrize("text", ["abc", "1e400", "0x10", "True", "1_000", "inf"])
def test_text_in_an_aggregated_column_is_one_line_naming_line_and_column(tmp_path, text):
    path = _write(tmp_path, "s.csv", HEADER + f"1,A,x,1\n2,B,x,{text}\n3,B,x,3\n")
    message = _error(lambda: _local(path))
    assert message.startswith(f"{path}, line 3, column v: {text!r} is not a")
    assert "aggregates" in message


def test_text_after_the_sampled_records_of_a_number_column(tmp_path):
    rows = [f"{i},B,x,{i % 7}" for i in range(1, dialect.SAMPLE_RECORDS + 5)] + ["9999,B,x,abc"]
    path = _write(tmp_path, "s.csv", HEADER + "\n".join(rows) + "\n")
    assert _error(lambda: _local(path)) == f"{path}, line {len(rows) + 1}, column v: 'abc' is not a number"


def test_a_column_named_twice_is_refused_before_any_work(tmp_path):
    path = _write(tmp_path, "s.csv", "ts,type,district,v,v\n1,A,x,1,2\n2,B,x,2,3\n")
    assert _error(lambda: _local(path)) == (f"{path}, line 1: the header names column 'v' twice "
                                            "(columns: ts, type, district, v, v)")


def test_time_stamps_before_0_under_a_slide_are_refused_not_lost(tmp_path):
    path = _write(tmp_path, "s.csv", HEADER + "3,A,x,1\n-6,B,x,2\n-5,B,x,3\n4,C,x,1\n")
    message = _error(lambda: _local(path))
    assert message.startswith(f"{path}, line 3: time stamp ts is before 0 (-6)")


def test_time_stamps_before_0_without_a_slide_are_events(tmp_path):
    from cepopt.executor.join_reference import reference_matches
    from cepopt.executor.streams import read_stream_pandas
    from cepopt.pipeline import execute

    inst = from_json({"problem": "joinorder", "name": "j", "queries": ["PATTERN SEQ(A a, B b) WITHIN 10"],
                      "statistics": {"rates": {"A": 1, "B": 1}}})
    path = _write(tmp_path, "s.csv", "ts,type\n-7,A\n-3,B\n2,B\n30,B\n")
    got = execute(inst, None, str(path), engine="local").to_pandas()
    assert sorted(got["value"]) == reference_matches(inst.workload.queries[0], read_stream_pandas(path))
    assert len(got) == 2


def test_the_cli_prints_one_line_and_exits_2(tmp_path, capsys):
    from cepopt.cli import main
    from cepopt.instance import save

    inst = save(_instance(), tmp_path / "g.json")
    path = _write(tmp_path, "s.csv", HEADER + "1,A,x,1\n2,B,x,0x10\n")
    assert main(["execute", str(inst), "--stream", str(path), "--engine", "local"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "line 3, column v: '0x10' is not a number" in err[0]


def test_records_know_their_first_line():
    lines = ["ts,type,g\n", '1,A,"x\n', 'y"\n', "\n", "2,B,z\n"]
    assert list(dialect.records(lines)) == [(1, ["ts", "type", "g"]), (2, ["1", "A", "x\ny"]), (5, ["2", "B", "z"])]
    rows = [["1", "A", "1.5e3", "x", ""], ["2", "B", " -2 ", "3", "NA"]]
    assert dialect.number_columns(["ts", "type", "v", "w", "u"], rows) == ("v", "u")


@pytest.mark.spark
def test_both_engines_read_one_dialect(spark, tmp_path):
    """Every case above on Spark too: the same digest, or the same message (one Spark session)."""
    from cepopt.pipeline import execute

    def both(path, problem="gloria"):
        out = []
        for engine in ("local", "spark"):
            try:
                res = execute(_instance(problem), None, str(path), engine=engine, spark=spark, max_work=math.inf)
                out.append((res.digest(), res.row_count()))
            except CepoptError as exc:
                out.append(str(exc))
        return out

    streams = {
        "text.csv": HEADER + "\n".join(ROWS) + "\n",
        "bom.csv": "\ufeff" + HEADER + "\n".join(ROWS) + "\n",
        "abc.csv": HEADER + "1,A,x,1\n2,B,x,abc\n3,B,x,3\n",
        "inf.csv": HEADER + "1,A,x,1\n2,B,x,1e400\n",
        "late.csv": HEADER + "".join(f"{i},B,x,{i % 7}\n" for i in range(1, 1005)) + "9999,B,x,0x10\n",
        "dup.csv": "ts,type,district,v,v\n1,A,x,1,2\n2,B,x,2,3\n",
        "neg.csv": HEADER + "3,A,x,1\n-6,B,x,2\n-5,B,x,3\n4,C,x,1\n",
        "emptytype.csv": HEADER + '1,A,x,1\n2,"",x,2\n',
    }
    for name, text in streams.items():
        local, remote = both(_write(tmp_path, name, text))
        assert local == remote, name
        assert isinstance(local, tuple) == (name in ("text.csv", "bom.csv")), (name, local)


def test_numbers_are_correctly_rounded_as_spark_reads_them(tmp_path):
    """A number with many digits reads as the nearest double (Python's float, Java's parseDouble), not
    pandas' default approximation (1 ulp off for about a third of such texts)."""
    import random

    from cepopt.executor.streams import read_stream_pandas

    rng = random.Random(7)
    texts = [f"{rng.randrange(10 ** 20)}.{rng.randrange(10 ** 20)}e{rng.randint(-30, 30)}" for _ in range(2000)]
    path = _write(tmp_path, "s.csv", "ts,type,w\n" + "".join(f"{i},A,{t}\n" for i, t in enumerate(texts)))
    assert read_stream_pandas(path)["w"].tolist() == [float(t) for t in texts]
