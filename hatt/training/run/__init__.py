"""The plain run: the loop, its datasets, metrics, resume, interrupt, optimizers and strategies."""
