"""Questions answered: scripts no current results table needs, kept runnable
(``python -m experiments.archive.NAME``); see README.md here for each one's question and
where its figures live under ``experiments/results/``."""
