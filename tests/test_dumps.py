"""Per-round dumps streamed to disk (refimpl.core.dumps): each dumped round is written as it
finishes, the size is announced and limited before anything is written, and a failure — a full
disk, no memory — leaves the finished rounds and the run's trace readable."""
import json
import os
import subprocess
import sys

import numpy as np

from refimpl import ssca
from refimpl.cli import main
from refimpl.core.replay import read_dump

SMALL = ["run", "ssca", "--batch", "10", "--hidden", "16", "--dump-rounds", "all", "--quiet"]

# a subprocess under resource limits: SIGXFSZ ignored (a write past RLIMIT_FSIZE fails with EFBIG),
# RLIMIT_AS caps the address space; the fault argument makes round FAULT allocate 128 GB
CHILD = """
import resource, signal, sys
import numpy as np
fsize, vmem, fault = (int(a) for a in sys.argv[1:4])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
if fsize:
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
if vmem:
    resource.setrlimit(resource.RLIMIT_AS, (vmem, vmem))
if fault:
    from refimpl.ssca.algorithms import SSCA
    apply = SSCA.apply
    def hungry(self, state, t, batch):
        if t == fault:
            np.ones(2 ** 34)
        return apply(self, state, t, batch)
    SSCA.apply = hungry
from refimpl.cli import main
code = main(sys.argv[4:])
print(next(l for l in open('/proc/self/status') if l.startswith('VmPeak')).split()[1], file=sys.stderr)
sys.exit(code)
"""


def _child(args, fsize=0, vmem=0, fault=0):
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(fsize), str(vmem), str(fault), *args],
                          capture_output=True, text=True, env=env, timeout=600)
    return proc.returncode, proc.stderr, int(proc.stderr.strip().splitlines()[-1])


def test_rounds_are_written_as_files_equal_to_the_in_memory_dump(tmp_path, capsys):
    out = tmp_path / "o"
    assert main([*SMALL[:-1], "--rounds", "4", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "dump: 4 round(s) ×" in err and "free at" in err                 # the estimate, announced
    assert sorted(os.listdir(out / "dump")) == ["r1.npz", "r2.npz", "r3.npz", "r4.npz"]
    with np.load(out / "trace.npz") as z:
        assert not [k for k in z.files if k.startswith("array_r") and k[7].isdigit()]   # not buffered into the trace
    files, mat = read_dump(str(out)), read_dump(str(out / "dump.mat"))
    mem = ssca.run(ssca.Config(algorithm="ssca", batch=10, hidden=16, rounds=4, dump_rounds="all"))
    assert sorted(files) == sorted(mat) == [1, 2, 3, 4]
    for t, q in files.items():
        for name, v in q.items():
            np.testing.assert_array_equal(v, mem.arrays[f"r{t}_{name}"])
            np.testing.assert_array_equal(np.squeeze(mat[t][name]), np.squeeze(v))
    doc = json.loads((out / "trace.json").read_text())
    assert doc["config"]["dump_files"]["rounds"] == 4 and "dump_stopped" not in doc["config"]


def test_a_dump_beyond_the_limit_is_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "o"
    assert main([*SMALL, "--rounds", "6", "--max-dump-gb", "0.002", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "beyond the limit of 2.0 MB" in err and "--max-dump-gb" in err and "6 rounds ×" in err
    assert not out.exists()                                             # nothing written, no empty directory
    assert main([*SMALL, "--rounds", "2", "--max-dump-gb", "-1", "--out", str(out)]) == 2
    assert "--max-dump-gb must be a size in GB > 0" in capsys.readouterr().err


def test_overwrite_replaces_an_earlier_longer_dump(tmp_path):
    out = tmp_path / "o"
    assert main([*SMALL, "--rounds", "4", "--out", str(out)]) == 0
    assert main([*SMALL, "--rounds", "2", "--out", str(out), "--overwrite"]) == 0
    assert sorted(os.listdir(out / "dump")) == ["r1.npz", "r2.npz"]
    assert sorted(read_dump(str(out / "dump.mat"))) == [1, 2]
    # written uncompressed (refimpl.core.dumps says why): round files stored, dump.mat without
    # miCOMPRESSED elements, each file about the size of its arrays
    import zipfile
    from scipy.io.matlab import whosmat
    with zipfile.ZipFile(out / "dump" / "r1.npz") as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
    raw = sum(v.nbytes for v in read_dump(str(out))[1].values())
    assert raw < os.path.getsize(out / "dump" / "r1.npz") < raw + 10_000
    assert 2 * raw < os.path.getsize(out / "dump.mat") < 2 * raw + 10_000 and len(whosmat(str(out / "dump.mat"))) > 0


def test_a_full_disk_stops_the_dump_and_keeps_the_finished_rounds_and_the_trace(tmp_path):
    """Files capped at 5 MB (a round adds 1.5 MB to dump.mat): the fourth round no longer fits it.
    Rounds 1-3 stay readable in both forms, the run goes on to its end, its trace says where the
    dump stopped, exit 3."""
    out = tmp_path / "o"
    code, err, _ = _child([*SMALL, "--rounds", "8", "--out", str(out)], fsize=5_000_000)
    assert code == 3, err
    assert "the dump stopped at round 4" in err and "File too large" in err and "rounds 1–3" in err
    assert sorted(read_dump(str(out))) == sorted(read_dump(str(out / "dump.mat"))) == [1, 2, 3]
    doc = json.loads((out / "trace.json").read_text())
    assert doc["status"] == "finished" and doc["metrics"]["round"][-1] == 8
    assert doc["config"]["dump_stopped"].startswith("round 4:")
    assert not [f for f in os.listdir(out / "dump") if f.endswith(".tmp")]


def test_a_dump_larger_than_memory_finishes_with_every_round(tmp_path):
    """The address space capped 150 MB above what a 2-round run needs: 20 rounds of the default
    network dump about 245 MB, which a buffered dump could not hold; streamed, every round is kept."""
    args = ["run", "ssca", "--batch", "10", "--dump-rounds", "all", "--quiet"]
    code, err, peak_kb = _child([*args, "--rounds", "2", "--out", str(tmp_path / "two")])
    assert code == 0, err
    limit = peak_kb * 1024 + 150 * 2 ** 20
    code, err, _ = _child([*args, "--rounds", "20", "--out", str(tmp_path / "o")], vmem=limit)
    assert code == 0, err[-800:]
    per_round = sum(v.nbytes for v in read_dump(str(tmp_path / "two"))[1].values())
    assert 20 * per_round > 1.5 * 150 * 2 ** 20                          # the whole dump would not have fitted
    assert sorted(read_dump(str(tmp_path / "o"))) == list(range(1, 21))


def test_memory_running_out_mid_run_keeps_the_rounds_before_it(tmp_path):
    out = tmp_path / "o"
    code, err, _ = _child([*SMALL, "--rounds", "8", "--out", str(out)], fault=6)
    assert code == 3, err
    assert "stopped: out of memory in round 6; trace holds rounds 0..5" in err
    assert sorted(read_dump(str(out))) == sorted(read_dump(str(out / "dump.mat"))) == [1, 2, 3, 4, 5]
    doc = json.loads((out / "trace.json").read_text())
    assert doc["metrics"]["round"][-1] == 5 and 5 in doc["snapshot_rounds"]


def test_a_damaged_round_file_is_one_line(tmp_path, capsys):
    out = tmp_path / "o"
    assert main([*SMALL, "--rounds", "2", "--out", str(out)]) == 0
    (out / "dump" / "r2.npz").write_bytes(b"PK\x03\x04 truncated")
    assert main(["diagnose", str(out), str(out)]) == 2
    err = capsys.readouterr().err
    assert "r2.npz: a damaged dump round file" in err and "Traceback" not in err


def test_each_run_of_a_constraint_study_keeps_its_own_dump(tmp_path):
    out = tmp_path / "study"
    assert main(["run", "ssca-constrained", "--U", "0.1,0.2", "--rounds", "2", "--batch", "10", "--hidden", "8",
                 "--dump-rounds", "1,2", "--quiet", "--out", str(out)]) == 0
    assert not (out / "dump").exists() and not (out / "dump.mat").exists()
    for run in ("U=0.1", "U=0.2"):
        assert sorted(read_dump(str(out / run))) == sorted(read_dump(str(out / run / "dump.mat"))) == [1, 2]
    # the two runs differ in U, so their dumps are their own
    a, b = read_dump(str(out / "U=0.1"))[2], read_dump(str(out / "U=0.2"))[2]
    assert any(not np.array_equal(a[k], b[k]) for k in a)
