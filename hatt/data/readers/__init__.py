"""One reader per source format, and the one dispatcher that picks it: ``reader_for(source)``.

- :mod:`~hatt.data.readers.folder`: a folder per class (``DIR/CLASS/*``,
  ``DIR/train/CLASS/*``), Keras' ``text_dataset_from_directory`` convention, or every
  ``.txt`` file under it (unlabeled documents);
- :mod:`~hatt.data.readers.table`: ``.csv`` / ``.tsv`` / ``.jsonl`` (optionally ``.gz``);
- :mod:`~hatt.data.readers.archive`: ``.tar.gz`` / ``.zip`` extracted once into the cache,
  or its ``.txt`` members streamed;
- :mod:`~hatt.data.readers.tfds`: ``tfds:NAME``;
- :mod:`~hatt.data.readers.files`: a text file, one document a line.

:func:`hatt.data.readers.load.reader_for` picks the reader, for labelled data, unlabeled
data and ``hatt predict --file`` alike; :mod:`hatt.data.imdb` builds on the readers.
"""
