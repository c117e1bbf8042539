"""The tuned settings per model family: ``hatt train FAMILY`` starts from ``FAMILY.json``.

Each file holds :class:`hatt.training.TrainConfig` keys (the ``ngram`` section
included); read them with :func:`hatt.training.load_preset`.
"""
