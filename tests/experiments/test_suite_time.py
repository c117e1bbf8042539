"""experiments/benchmarks/suite_time.py: a junit report read into per-folder, module and test seconds."""

import json

from experiments.benchmarks import suite_time

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4" time="12.5">
<testcase classname="tests.training.test_loop" name="test_a" time="5.0"/>
<testcase classname="tests.training.test_loop" name="test_b[han]" time="2.5"/>
<testcase classname="tests.test_cli.TestHelp" name="test_c" time="1.0"/>
<testcase classname="tests.models.test_han" name="test_d" time="3.0"/>
</testsuite></testsuites>
"""


def test_a_report_is_summed_by_folder_module_and_test(tmp_path):
    report = tmp_path / "junit.xml"
    report.write_text(REPORT)
    results = tmp_path / "results"
    argv = ["--junit", str(report), "--label", "x", "--commit", "abc", "--results", str(results)]
    assert suite_time.main(argv) == 0
    result = json.loads((results / "x.json").read_text())
    assert result["wall_seconds"] == 12.5 and result["summed_seconds"] == 11.5
    assert result["tests"] == 4 and result["commit"] == "abc"
    assert result["modules"][0] == {
        "module": "tests/training/test_loop.py",
        "seconds": 7.5,
        "tests": 2,
    }
    # a test class belongs to its module; folders add their modules up
    assert {"module": "tests/test_cli.py", "seconds": 1.0, "tests": 1} in result["modules"]
    assert result["folders"][0] == {"folder": "tests/training", "seconds": 7.5}
    assert result["slowest"][0] == {"test": "tests/training/test_loop.py::test_a", "seconds": 5.0}
    table = (results / "x.md").read_text()
    assert "| tests/training/test_loop.py | 2 | 7.5 |" in table and "**12 s**" in table


def test_the_census_counts_by_module_and_joins_the_module_table(tmp_path, monkeypatch):
    """Each worker's counts by module (suite_census), summed over workers into the report."""
    from types import SimpleNamespace

    from experiments.benchmarks import suite_census

    monkeypatch.setattr(
        suite_census,
        "_counts",
        suite_census.collections.defaultdict(suite_census.collections.Counter),
    )
    owner = SimpleNamespace(fit=lambda x: x + 1)
    suite_census._wrap(owner, "fit", "keras_fits")
    item = SimpleNamespace(nodeid="tests/training/test_loop.py::test_a[han]")
    suite_census.pytest_runtest_protocol(item, None)
    assert owner.fit(1) == 2 and owner.fit(2) == 3
    monkeypatch.setenv("HATT_CENSUS_DIR", str(tmp_path))
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    suite_census.pytest_runtest_logfinish(item.nodeid, None)
    other = {"tests/training/test_loop.py": {"keras_fits": 1, "traces": 4, "trace_seconds": 2.5}}
    (tmp_path / "census-gw1.json").write_text(json.dumps(other))
    census = suite_census.read(tmp_path)
    assert census["tests/training/test_loop.py"] == {
        "training_runs": 0,
        "keras_fits": 3,
        "fresh_processes": 0,
        "traces": 4,
        "trace_seconds": 2.5,
    }
    report = tmp_path / "junit.xml"
    report.write_text(REPORT)
    argv = ["--junit", str(report), "--label", "c", "--census-from", str(tmp_path)]
    assert suite_time.main([*argv, "--results", str(tmp_path / "results")]) == 0
    result = json.loads((tmp_path / "results" / "c.json").read_text())
    assert result["modules"][0]["keras_fits"] == 3 and result["census_totals"]["traces"] == 4
    table = (tmp_path / "results" / "c.md").read_text()
    assert "| tests/training/test_loop.py | 2 | 7.5 | 0 | 3 | 0 | 4 | 2.5 |" in table


def test_a_measurement_of_the_suite_writes_the_order_its_modules_start_in(tmp_path, monkeypatch):
    """Into the project's results, a run at this checkout's commit also writes each module's
    seconds for tests/conftest.py (heaviest first under xdist); a test's own results folder
    and the report of another commit do not."""
    report = tmp_path / "junit.xml"
    report.write_text(REPORT)
    monkeypatch.setattr(suite_time, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(suite_time, "ORDER", tmp_path / "module_seconds.json")
    monkeypatch.setattr(suite_time.harness, "commit", lambda: "abc")
    argv = ["--junit", str(report), "--label", "x", "--commit", "abc"]
    assert suite_time.main([*argv, "--results", str(tmp_path / "elsewhere")]) == 0
    assert not suite_time.ORDER.exists()
    older = ["--junit", str(report), "--label", "x", "--commit", "d9fc706"]
    assert suite_time.main([*older, "--results", str(tmp_path / "results")]) == 0
    assert not suite_time.ORDER.exists()
    assert suite_time.main([*argv, "--results", str(tmp_path / "results")]) == 0
    order = json.loads(suite_time.ORDER.read_text())
    assert order["measured"] == "x at abc"
    assert order["seconds"] == {
        "tests/training/test_loop.py": 7.5,
        "tests/models/test_han.py": 3.0,
        "tests/test_cli.py": 1.0,
    }


def test_under_xdist_the_modules_start_heaviest_first_and_unmeasured_ones_before_them(
    tmp_path, monkeypatch
):
    """tests/conftest.py's ordering by tests/module_seconds.json; a module keeps its order."""
    from types import SimpleNamespace

    from tests import conftest

    order = tmp_path / "module_seconds.json"
    order.write_text(json.dumps({"seconds": {"tests/a.py": 1.0, "tests/b.py": 9.0}}))
    monkeypatch.setattr(conftest, "MODULE_SECONDS", order)
    ids = ["tests/a.py::one", "tests/b.py::two", "tests/new.py::three", "tests/b.py::four"]
    items = [SimpleNamespace(nodeid=i) for i in ids]
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    conftest.pytest_collection_modifyitems(None, items)
    assert [item.nodeid for item in items] == ids  # without xdist: as collected
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    conftest.pytest_collection_modifyitems(None, items)
    assert [item.nodeid for item in items] == [
        "tests/new.py::three",
        "tests/b.py::two",
        "tests/b.py::four",
        "tests/a.py::one",
    ]
