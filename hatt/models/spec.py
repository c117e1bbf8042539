"""What the rest of hatt knows about a model family, declared once by the family itself.

Each family module (`hatt.models.cnn`, `rnn`, `transformer`, `han`) ends with
its `SPEC`, a `FamilySpec`; `hatt.models.family_spec(name)` finds it. Other
folders ask the spec a question ("is its input nested?", "which layer does the
language model pretrain?") instead of comparing a family's name, so a new
family is its module, its spec and its preset.
"""

import dataclasses
from collections.abc import Callable

FLAT = "flat"  # ids `[batch, T]`: a review is one sequence of words
NESTED = "nested"  # ids `[batch, S, W]` (or the packed layout): sentences of words
LAYOUTS = (FLAT, NESTED)


@dataclasses.dataclass(frozen=True)
class FamilySpec:
    """A model family: how to build it and what it is, for the folders that use it.

    The values describe the model the builder makes with its default
    arguments (e.g. the CNN's words are pooled by max over time unless
    `pooling="attention"`; its one-hot variant has no word embedding).

    Attributes:
        name: The family's name (`hatt.models.build(name, ...)`, the built
            model's default name).
        builder: `build_<name>`: keyword arguments → the backbone (ids → the
            document vector); `hatt.models.build` adds the head.
        layout: `"flat"` (ids `[batch, T]`) or `"nested"` (`[batch, S, W]`,
            or the packed dict): how `hatt.data` must feed it.
        preset: The preset `hatt train NAME` starts from (`hatt/presets/
            PRESET.json`), or `None`.
        takes_word_vectors: Whether its words are looked up in a
            `keras.layers.Embedding` that word vectors (word2vec, GloVe) can
            fill.
        word_encoder: The name of its first bidirectional recurrent layer over
            words, the one a language model pretrains (with the embedding), or
            `None` when it has none (no language-model start).
        sentence_encoder: The name of the encoder over sentence vectors that
            the sentence stage pretrains after the language model, or `None`.
        word_attention: Whether its words are pooled by a `ContextAttention`
            (its word view is attention, not saliency).
        sentence_attention: Whether it also pools sentences by attention: its
            attention view and exported results hold `"sentence_attention"`
            `[batch, S]`.
        positional: Whether its builder's `sequence_length` sizes a position
            table, so that a run passes its window length.
        xla_predict: Whether its prediction path is compiled by XLA (flat ids
            padded to a fixed window; padding changes no output), which fuses
            its lookups and convolutions.
        imdb_minutes: The minutes its preset trained on IMDB's training split on
            two cores (docs/results.md's main table), or `None`: said before hatt
            builds the family's IMDB start (`hatt.training.starts.imdb`).
        imdb_unlabeled_minutes: The minutes that start took to build with IMDB's
            unlabeled reviews too (word vectors, the language model), or `None`.
    """

    name: str
    builder: Callable
    layout: str
    preset: str | None
    takes_word_vectors: bool = True
    word_encoder: str | None = None
    sentence_encoder: str | None = None
    word_attention: bool = True
    sentence_attention: bool = False
    positional: bool = False
    xla_predict: bool = False
    imdb_minutes: float | None = None
    imdb_unlabeled_minutes: float | None = None

    def __post_init__(self):
        if self.layout not in LAYOUTS:
            raise ValueError(
                f"Expected layout to be one of {LAYOUTS}. Received: layout={self.layout!r}"
            )
        if self.sentence_attention and self.layout != NESTED:
            raise ValueError(
                "Expected layout='nested' with sentence_attention=True (sentences are pooled "
                f"only where the ids hold sentences). Received: layout={self.layout!r}"
            )

    @property
    def nested(self):
        """Whether its ids are `[batch, S, W]` (sentences of words), not `[batch, T]`."""
        return self.layout == NESTED
