"""One reader per source format, each giving a :class:`hatt.data.corpus.RawCorpus`.

- :mod:`~hatt.data.readers.folder`: a folder per class (``DIR/CLASS/*``,
  ``DIR/train/CLASS/*``), Keras' ``text_dataset_from_directory`` convention;
- :mod:`~hatt.data.readers.table`: ``.csv`` / ``.tsv`` / ``.jsonl`` (optionally ``.gz``);
- :mod:`~hatt.data.readers.archive`: ``.tar.gz`` / ``.zip`` extracted once into the cache;
- :mod:`~hatt.data.readers.tfds`: ``tfds:NAME``.

:mod:`hatt.data.readers.load` picks the reader; :mod:`hatt.data.imdb` builds on them.
"""
