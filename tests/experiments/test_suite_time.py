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
