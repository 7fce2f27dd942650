"""``cepopt fetch gloria-workloads``, offline: a file:// URL to a small archive shaped like the authors'
repository, built here."""

import io
import json
import tarfile

import pytest

from cepopt.cli import main

WORKLOAD = """q0
RETURN TOQ.Line_ID, COUNT(*)
PATTERN SEQ(HUE, TOQ, WBA)
GROUP-BY TOQ.Line_ID
WITHIN 15 min SLIDE 5 min
"""
FREQUENCIES = "dataset,class,event_type,frequency\nbus,high,HUE,3\nbus,high,TOQ,5\nbus,low,WBA,2\n"


def archive(path, members: dict[str, str]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path.as_uri()


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_fetch_takes_the_workloads_into_the_cache_and_import_reads_them(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("CEPOPT_CACHE", str(tmp_path / "cache"))
    url = archive(tmp_path / "gloria.tar.gz", {
        "Gloria-main/src/main/resources/bus/SEQWorkload/workload_1.txt": WORKLOAD,
        "Gloria-main/src/main/resources/bus/SEQWorkload/../../../../../escaped/workload_2.txt": WORKLOAD,
        "Gloria-main/src/main/java/Main.java": "class Main {}",
        "Gloria-main/src/main/java/gloria/users/busUser/busHighFrequencyEventEnum.java":
            "public enum busHighFrequencyEventEnum {\n    TOQ(5),\n    HUE(3);\n"
            "    busHighFrequencyEventEnum(int f) {}\n}\n",
        "Gloria-main/src/main/java/gloria/users/busUser/busLowFrequencyEventEnum.java":
            "public enum busLowFrequencyEventEnum {\n    WBA(2);\n    public Integer frequency;\n}\n",
    })
    code, out, err = run(capsys, "fetch", "gloria-workloads", "--url", url, "--json")
    assert code == 0, err
    got = json.loads(out)
    folder = tmp_path / "cache" / "gloria-workloads"
    assert got == {"dataset": "gloria-workloads", "folder": str(folder), "files": 2, "downloaded": True}
    workload = folder / "workloads" / "bus" / "SEQWorkload" / "workload_1.txt"
    assert workload.read_text() == WORKLOAD
    frequencies = folder / "event_type_frequencies.csv"
    assert sorted(frequencies.read_text().splitlines()) == sorted(FREQUENCIES.splitlines())
    assert sorted(p.name for p in tmp_path.rglob("workload_*.txt")) == ["workload_1.txt"]  # nothing escaped
    # once cached, not downloaded again (the archive is gone)
    (tmp_path / "gloria.tar.gz").unlink()
    code, out, err = run(capsys, "fetch", "gloria-workloads", "--url", url)
    assert code == 0 and out.strip() == f"gloria-workloads: 2 files in {folder} (cached)"
    code, out, err = run(capsys, "import", "gloria", str(workload), "--frequencies", str(frequencies),
                         "--dataset", "bus", "-o", str(tmp_path / "w.json"))
    assert code == 0, err
    imported = json.loads((tmp_path / "w.json").read_text())
    assert imported["problem"] == "gloria" and imported["statistics"]["rates"] == {"HUE": 3, "TOQ": 5, "WBA": 2}


@pytest.mark.parametrize("content,fragment", [
    (None, "cannot download"),
    (b"not an archive", "not a tar.gz archive"),
    ({"repo/README.md": "no workloads"}, "holds no src/main/resources"),
], ids=["missing", "not-an-archive", "another-repository"])
def test_fetch_failures_are_one_line(capsys, tmp_path, content, fragment):
    source = tmp_path / "a.tar.gz"
    if isinstance(content, bytes):
        source.write_bytes(content)
    elif isinstance(content, dict):
        archive(source, content)
    code, out, err = run(capsys, "fetch", "gloria-workloads", "--url", source.as_uri(), "--cache", str(tmp_path / "c"))
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cepopt: error: --url ") and fragment in lines[0], err
    assert not (tmp_path / "c" / "gloria-workloads").exists()
