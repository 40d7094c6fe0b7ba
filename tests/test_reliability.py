"""The runner never mixes, loses or silently corrupts results (issue 17, runner points 6-12).

Each test goes through the real entry point (``alprbf`` via Typer's runner, or a subprocess
where a signal or the umask is the point).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from alprbf.cli import app
from alprbf.errors import DataWarning
from alprbf.store.fileio import exclusive_lock
from alprbf.store.results import checksum_file, read_results, task_files

#: process-level runs (signals, concurrent runs): left out of `make test-quick`
pytestmark = pytest.mark.slow

runner = CliRunner()

TINY = """\
name: {name}
dataset: {dataset}
model: {model}
strategy: random
protocol: {{folds: 2, stratified: false, seed: 3, initial: {{method: random, size: 4}},
           budget: 2}}
"""


def config(tmp_path: Path, name="tiny", dataset="{name: iris}", model="gaussian_nb",
           text: str | None = None) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text if text is not None else
                    TINY.format(name=name, dataset=dataset, model=model))
    return str(path)


def csv(tmp_path: Path, body: str) -> str:
    path = tmp_path / "data.csv"
    path.write_text(body)
    return str(path)


def refused(args, *words):
    """Run ``alprbf args``: exit 2, one line on stderr containing every word, no traceback."""
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in result.output
    for w in words:
        assert w in err, err
    return err


def refused_by_validate_and_run(tmp_path, cfg, *words):
    refused(["validate", cfg], *words)
    refused(["run", cfg, "--out", str(tmp_path / "out")], *words)
    assert not task_files(tmp_path / "out")


# ----------------------------------------------------------------- 6. inputs validate must refuse

FILE_DATASET = "{{name: file, params: {{path: {path}, target: label}}}}"


def test_single_class_data_file_is_refused(tmp_path):
    path = csv(tmp_path, "a,b,label\n" + "".join(f"{i},{i % 3},x\n" for i in range(12)))
    cfg = config(tmp_path, dataset=FILE_DATASET.format(path=path))
    refused_by_validate_and_run(tmp_path, cfg, "single class", "'x'")


def test_infinite_feature_is_refused(tmp_path):
    rows = "".join(f"{i},{'inf' if i == 5 else i % 3},{'xy'[i % 2]}\n" for i in range(12))
    cfg = config(tmp_path, dataset=FILE_DATASET.format(path=csv(tmp_path, "a,b,label\n" + rows)))
    refused_by_validate_and_run(tmp_path, cfg, "feature 'b'", "infinite")


def test_label_too_long_for_a_file_name_is_refused(tmp_path):
    cfg = config(tmp_path, dataset="{name: iris, label: " + "x" * 240 + "}")
    refused_by_validate_and_run(tmp_path, cfg, "bytes long", "shorter label")


def test_labels_that_give_one_file_name_are_refused(tmp_path):
    cfg = config(tmp_path, dataset="[{name: iris, label: a/b}, {name: wine, label: a-b}]")
    refused_by_validate_and_run(tmp_path, cfg, "'a/b'", "'a-b'", "same task file")


def test_duplicate_yaml_keys_and_grid_entries_are_refused(tmp_path):
    text = TINY.format(name="k", dataset="{name: iris}", model="gaussian_nb")
    cfg = config(tmp_path, name="k", text=text + "name: other\n")
    refused_by_validate_and_run(tmp_path, cfg, "the key 'name' is given twice")
    cfg = config(tmp_path, name="d", dataset="[iris, iris]")
    refused_by_validate_and_run(tmp_path, cfg, "dataset entry 'iris' appears twice")
    cfg = config(tmp_path, name="m", model="[gaussian_nb, gaussian_nb]")
    refused_by_validate_and_run(tmp_path, cfg, "method 'gaussian_nb / random' appears twice")


def test_rows_dropped_for_missing_values_are_one_warning_line(tmp_path):
    rows = "".join(f"{i},{'' if i in (2, 7) else i % 3},{'xy'[i % 2]}\n" for i in range(16))
    cfg = config(tmp_path, dataset=FILE_DATASET.format(path=csv(tmp_path, "a,b,label\n" + rows)))
    out = subprocess.run([sys.executable, "-m", "alprbf", "validate", cfg],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if line.strip()]
    assert warnings == [f"warning: dataset file {tmp_path / 'data.csv'}: 2 of 16 rows with "
                        "missing values dropped"]


# ----------------------------------------------------------------- 7. one writer per directory

def test_a_second_run_on_a_locked_directory_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with exclusive_lock(out, "alprbf run of config 'first' (pid 1 on host)"):
        err = refused(["run", config(tmp_path), "--out", str(out)], "in use by another",
                      "config 'first'")
    assert "pid 1" in err
    assert not task_files(out)
    result = runner.invoke(app, ["run", config(tmp_path), "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output   # the lock goes with its holder


def test_two_runs_started_together_never_mix(tmp_path):
    out = tmp_path / "out"
    a = config(tmp_path, name="a")
    b = config(tmp_path, name="b", model="logistic_regression")
    procs = [subprocess.Popen([sys.executable, "-m", "alprbf", "run", c, "--out", str(out),
                               "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in (a, b)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results          # one ran, the other was refused in one line
    assert set(read_results(out)["experiment"]) in ({"a"}, {"b"})


# ----------------------------------------------------------------- 8. corruption is detected

def _tiny_run(tmp_path) -> tuple[str, Path]:
    cfg, out = config(tmp_path), tmp_path / "out"
    assert runner.invoke(app, ["run", cfg, "--out", str(out), "-q"]).exit_code == 0
    return cfg, out


def test_damaged_task_files_are_run_again_and_refused_by_the_report(tmp_path):
    cfg, out = _tiny_run(tmp_path)
    before = read_results(out)
    flipped, truncated = task_files(out)[:2]
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0x01
    flipped.write_bytes(bytes(data))
    truncated.write_bytes(truncated.read_bytes()[:100])

    refused(["report", str(out), "--out", str(tmp_path / "rep")], flipped.name, "checksum")

    with pytest.warns(DataWarning) as caught:
        result = runner.invoke(app, ["run", cfg, "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    said = " ".join(str(w.message) for w in caught)
    assert flipped.name in said and truncated.name in said and "running the task again" in said
    assert "2 tasks run" in result.output
    after = read_results(out)        # verified again, and the same rows as before
    cols = [c for c in before.columns if not c.endswith("seconds")]
    assert before[cols].astype(str).equals(after[cols].astype(str))


@pytest.mark.parametrize("where", [10, -20])      # in the data pages; in the Parquet footer
def test_a_damaged_file_is_named_by_its_checksum_wherever_the_damage_is(tmp_path, where):
    """The checksum is checked before the file is parsed: a flip that breaks Parquet's own
    metadata gets the same message as one that leaves the file readable."""
    _, out = _tiny_run(tmp_path)
    path = task_files(out)[0]
    data = bytearray(path.read_bytes())
    data[where] ^= 0x01
    path.write_bytes(bytes(data))
    refused(["report", str(out), "--out", str(tmp_path / "rep")], path.name, "checksum")


def test_a_task_file_without_its_checksum_counts_as_unfinished(tmp_path):
    cfg, out = _tiny_run(tmp_path)
    checksum_file(task_files(out)[0]).unlink()
    result = runner.invoke(app, ["run", cfg, "--out", str(out), "-q"])
    assert result.exit_code == 0 and "1 tasks run" in result.output


# ----------------------------------------------------------------- 9. output problems

def unwritable(tmp_path: Path) -> Path:
    """A directory this process cannot create files in (root ignores permission bits, so
    root gets a path under /sys)."""
    if os.geteuid() == 0:
        target = Path("/sys/alprbf-results")
    else:
        target = tmp_path / "ro"
        target.mkdir()
        target.chmod(0o500)
    with pytest.raises(OSError):
        (target / "probe").mkdir(parents=True)
    return target


def test_output_problems_are_one_line_errors(tmp_path):
    cfg = config(tmp_path)
    plain = tmp_path / "plain-file"
    plain.write_text("x")
    refused(["run", cfg, "--out", str(plain / "sub")], "cannot write results", "--out")
    refused(["run", cfg, "--out", str(unwritable(tmp_path) / "out")], "cannot write results")


# ----------------------------------------------------------------- 10. clean shutdown

def _descendants(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True,
                         check=True).stdout.split()
    children: dict[int, list[int]] = {}
    for p, pp in zip(out[::2], out[1::2], strict=True):
        children.setdefault(int(pp), []).append(int(p))
    found, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            found.add(c)
            todo.append(c)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


def test_sigterm_stops_the_workers_and_stale_temporaries_are_removed(tmp_path):
    out = tmp_path / "out"
    (out / "tasks").mkdir(parents=True)
    (out / "checkpoints").mkdir()
    stale = [out / "tasks" / ".x.parquet.abc.tmp", out / "checkpoints" / ".y.pkl.def.tmp"]
    for p in stale:
        p.write_bytes(b"partial")
    cfg = config(tmp_path, dataset="{name: waveform, params: {n_samples: 3000}}",
                 model="{name: svc, params: {C: 10.0}}",
                 text=None)
    text = Path(cfg).read_text().replace("budget: 2", "budget: 200")
    Path(cfg).write_text(text)
    proc = subprocess.Popen([sys.executable, "-m", "alprbf", "run", cfg, "--out", str(out),
                             "--jobs", "2", "-q"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 60
    workers: set[int] = set()
    while time.time() < deadline and len(workers) < 2:
        time.sleep(0.5)
        workers = _descendants(proc.pid)
    assert workers, "no worker started"
    assert not any(p.exists() for p in stale)          # removed at the start of the run
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    time.sleep(2)
    assert not [w for w in workers if _alive(w)]


# ----------------------------------------------------------------- 11. shared results

def test_result_files_respect_the_umask(tmp_path):
    cfg, out = config(tmp_path), tmp_path / "out"
    code = ("import os, sys; os.umask(0o002); from alprbf.cli import main; "
            f"sys.argv = ['alprbf', 'run', {cfg!r}, '--out', {str(out)!r}, '-q']; main()")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    files = [*task_files(out), out / "run.json", checksum_file(task_files(out)[0])]
    assert {oct(p.stat().st_mode & 0o777) for p in files} == {oct(0o664)}


# ----------------------------------------------------------------- 12. one experiment per folder

def test_a_directory_mixing_two_configs_is_refused_by_the_report(tmp_path):
    _, out = _tiny_run(tmp_path)
    other = tmp_path / "other"
    cfg_b = config(tmp_path, name="b", model="logistic_regression")
    assert runner.invoke(app, ["run", cfg_b, "--out", str(other), "-q"]).exit_code == 0
    stray = task_files(other)[0]
    for p in (stray, checksum_file(stray)):
        (out / "tasks" / p.name).write_bytes(p.read_bytes())
    refused(["report", str(out), "--out", str(tmp_path / "rep")], "mixes the results of two "
            "configs", stray.name)


# ----------------------------------------------------------------- 2. references map to methods

def test_a_reference_row_without_a_method_is_refused_by_validate_and_run(tmp_path):
    ref = tmp_path / "ref.csv"
    ref.write_text("dataset,method,metric,mean,std,source\n"
                   "iris,gaussian_nb,error_at_budget,5.0,1.0,made up\n"
                   "iris,svm_nobody,error_at_budget,4.0,1.0,made up\n")
    text = TINY.format(name="r", dataset="{name: iris}", model="gaussian_nb")
    cfg = config(tmp_path, name="r", text=text + f"reference: {ref}\n")
    refused_by_validate_and_run(tmp_path, cfg, "reference file", "line 3", "svm_nobody")
