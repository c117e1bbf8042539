"""Speed, memory and load scripts: ``python -m experiments.benchmarks.NAME`` from the project root."""
