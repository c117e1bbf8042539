"""Document-classifier families built on :mod:`hatt.layers`."""

__all__: list[str] = []
