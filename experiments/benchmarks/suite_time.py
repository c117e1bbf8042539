"""Where the test suite's time goes: wall time, and seconds per folder, module and test.

    python -m experiments.benchmarks.suite_time [--junit PATH] [--label NAME] [--census]
        [-- PYTEST ARGS]

Without ``--junit`` it runs the TensorFlow suite as ``make test-tf`` does
(``python -m pytest -q -n auto --dist loadfile``, the extra arguments after
``--`` appended), timing its wall clock; with ``--junit`` it reads the
``--junitxml`` report of a run made before (its wall time then comes from the
report's ``time``). A test's seconds are pytest's: its setup (the fixtures it is
the first to ask for, e.g. a module's shared runs), call and teardown, so a
module's sum is what it costs whichever test pays. Under pytest-xdist the sum
over the workers is about ``workers x wall``: the suite's 10-minute goal on two
cores is a sum of about 1,200 s.

With ``--census`` each module's row also counts what its time went to
(:mod:`experiments.benchmarks.suite_census`: whole training runs, Keras fits,
fresh Python processes, graph traces and their seconds); ``--census-from DIR``
reads the census files of a run made before.

Writes ``experiments/results/suite_time/LABEL.json`` and ``LABEL.md`` and, when
they go there and measure this checkout's commit, ``tests/module_seconds.json``: each
module's seconds, by which tests/conftest.py starts the heaviest modules first under
pytest-xdist (a report of an older commit, read with ``--junit``, leaves it alone). Timings
on these machines are noisy, so compare labels measured the same way (a quiet
machine, the load average at the start is recorded).
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from experiments import harness
from experiments.benchmarks import suite_census

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "experiments" / "results" / "suite_time"
ORDER = ROOT / "tests" / "module_seconds.json"  # read by tests/conftest.py
PYTEST = ["-m", "pytest", "-q", "-n", "auto", "--dist", "loadfile"]


def read_junit(path):
    """``(wall seconds, [(seconds, module path, test name)])`` of a ``--junitxml`` report."""
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    tests = []
    for case in suite.iter("testcase"):
        tests.append(
            (float(case.get("time", 0)), module_of(case.get("classname")), case.get("name"))
        )
    return float(suite.get("time", 0)), tests


def module_of(classname):
    """``tests/training/test_loop.py`` for ``tests.training.test_loop`` (or its ``.TestClass``)."""
    parts = classname.split(".")
    if parts[-1][:1].isupper():  # a test class
        parts = parts[:-1]
    return "/".join(parts) + ".py"


def summarize(wall, tests, top=30, census=None):
    """The report: totals, then seconds and test counts per folder and module, the slowest tests
    (with ``census``, :func:`experiments.benchmarks.suite_census.read`'s counts by module)."""
    census = census or {}
    per_module, per_folder, counts = (collections.Counter() for _ in range(3))
    for seconds, module, _ in tests:
        per_module[module] += seconds
        per_folder[module.rsplit("/", 1)[0]] += seconds
        counts[module] += 1
    return {
        "wall_seconds": round(wall, 1),
        "summed_seconds": round(sum(seconds for seconds, _, _ in tests), 1),
        "tests": len(tests),
        "folders": [{"folder": f, "seconds": round(s, 1)} for f, s in per_folder.most_common()],
        "modules": [
            {"module": m, "seconds": round(s, 1), "tests": counts[m], **census.get(m, {})}
            for m, s in per_module.most_common()
        ],
        "census_totals": {
            name: round(sum(row.get(name, 0) for row in census.values()), 1)
            for name in suite_census.COUNTERS
        }
        if census
        else None,
        "slowest": [
            {"test": f"{module}::{name}", "seconds": round(seconds, 1)}
            for seconds, module, name in sorted(tests, reverse=True)[:top]
        ],
    }


def _module_table(result):
    rows = result["modules"][:40]
    if not result.get("census_totals"):
        return [
            "| module | tests | seconds |",
            "|---|---:|---:|",
            *(f"| {row['module']} | {row['tests']} | {row['seconds']:.1f} |" for row in rows),
        ]
    names = suite_census.COUNTERS
    totals = result["census_totals"]
    return [
        f"Over the suite: {', '.join(f'{totals[n]:g} {n}' for n in names)}.",
        "",
        "| module | tests | seconds | " + " | ".join(names) + " |",
        "|---|---:|---:|" + "---:|" * len(names),
        *(
            f"| {row['module']} | {row['tests']} | {row['seconds']:.1f} | "
            + " | ".join(f"{row.get(n, 0):g}" for n in names)
            + " |"
            for row in rows
        ),
    ]


def markdown(result):
    lines = [
        f"# Test suite time: {result['label']}",
        "",
        f"Commit {result['commit']}, load average {result['load_average']} at the start; "
        f"`{result['command']}`.",
        "",
        f"- wall: **{result['wall_seconds']:.0f} s** for {result['tests']} tests",
        f"- summed over the workers: {result['summed_seconds']:.0f} s",
        "",
        "| folder | seconds |",
        "|---|---:|",
        *(f"| {row['folder']} | {row['seconds']:.1f} |" for row in result["folders"]),
        "",
        *_module_table(result),
        "",
        "| slowest test | seconds |",
        "|---|---:|",
        *(f"| `{row['test']}` | {row['seconds']:.1f} |" for row in result["slowest"]),
        "",
    ]
    return "\n".join(lines)


def run_suite(extra, census_dir=None):
    """Run the suite with a junit report (and the census into ``census_dir``);
    ``(wall seconds, report path, command)``."""
    report = Path(tempfile.mkdtemp()) / "junit.xml"
    env = dict(os.environ)
    if census_dir:
        env["HATT_CENSUS_DIR"] = str(census_dir)
        extra = ["-p", "experiments.benchmarks.suite_census", *extra]
    argv = [sys.executable, *PYTEST, f"--junitxml={report}", *extra]
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, check=False, env=env)
    return time.perf_counter() - start, report, " ".join(["python", *PYTEST, *extra])


def write_order(result, path):
    """``{"measured": ..., "seconds": {module: seconds}}``: the order tests/conftest.py
    gives the modules under pytest-xdist, heaviest first."""
    seconds = {row["module"]: row["seconds"] for row in result["modules"]}
    measured = f"{result['label']} at {result['commit']}"
    path.write_text(json.dumps({"measured": measured, "seconds": seconds}, indent=1) + "\n")


def _same_commit(a, b):
    """Whether two commit names (short or long, ``+dirty`` or not) name one commit."""
    a, b = (str(name).removesuffix("+dirty") for name in (a, b))
    return bool(a and b) and (a.startswith(b) or b.startswith(a))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--junit", help="read this --junitxml report instead of running")
    parser.add_argument("--label", default="latest", help="the results' file name")
    parser.add_argument("--commit", help="with --junit: the commit the report was made at")
    parser.add_argument("--load", type=float, help="with --junit: the load average at its start")
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--census", action="store_true", help="count runs, fits, processes, traces")
    parser.add_argument("--census-from", help="with --junit: the census folder of that run")
    args, extra = parser.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    if args.junit:
        wall, tests = read_junit(args.junit)
        command = "python " + " ".join(PYTEST) + " --junitxml=REPORT (read afterwards)"
        commit, load = args.commit or "unknown", args.load
        census_dir = args.census_from
    else:
        commit, load = harness.commit(), round(os.getloadavg()[0], 2)
        census_dir = tempfile.mkdtemp() if args.census else None
        measured, report, command = run_suite(extra, census_dir)
        _, tests = read_junit(report)
        wall = measured
    census = suite_census.read(census_dir) if census_dir else None
    result = {
        "label": args.label,
        "commit": commit,
        "load_average": load,
        "command": command,
        **summarize(wall, tests, census=census),
    }
    out = Path(args.results)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.label}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / f"{args.label}.md").write_text(markdown(result))
    # a measurement of this suite (not a test's), at this commit (not an old one's report)
    if out.resolve() == RESULTS.resolve() and _same_commit(commit, harness.commit()):
        write_order(result, ORDER)
    print(
        f"{args.label}: wall {result['wall_seconds']:.0f} s, summed {result['summed_seconds']:.0f} s, "
        f"{result['tests']} tests -> {out / args.label}.md"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
