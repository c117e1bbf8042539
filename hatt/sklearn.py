"""hatt.sklearn.HattClassifier: :class:`hatt.TextClassifier` as a scikit-learn estimator.

``HattClassifier(family="cnn", epochs=3).fit(texts, labels)`` trains a
:class:`hatt.TextClassifier` (``TextClassifier(family, preset=preset, **params)``:
the family's tuned preset by default, as ``hatt train FAMILY``) and follows scikit-learn's conventions:
``get_params`` / ``set_params`` (every setting of ``TextClassifier`` is a
parameter, stored as given), ``fit`` / ``predict`` / ``predict_proba`` /
``score``, ``classes_`` in ``np.unique(y)`` order (the order scikit-learn
expects, whatever order the classifier keeps: its columns are mapped), so that
``cross_val_score``, ``GridSearchCV`` and ``Pipeline`` take it. ``X`` is a list,
1-D array or pandas Series of raw documents.

scikit-learn's ``check_estimator``: the checks that apply pass
(``tests/test_sklearn.py`` runs them): ``check_estimator_cloneable``,
``check_estimator_repr``, ``check_no_attributes_set_in_init``,
``check_parameters_default_constructible``, ``check_get_params_invariance``,
``check_set_params``, ``check_do_not_raise_errors_in_init_or_set_params``,
``check_estimators_unfitted``, ``check_mixin_order``, ``check_valid_tag_types``,
``check_estimator_tags_renamed``, ``check_requires_y_none``,
``check_supervised_y_no_nan`` and ``check_classifiers_regression_target`` (the
labels are checked before the documents). The rest cannot apply: every other
check that fits or predicts feeds numeric 2-D arrays (``make_blobs`` and the like: floats as
features, sparse matrices, NaN / inf features, 1-feature or 1-sample arrays,
F-contiguous or memory-mapped arrays, pandas frames of numbers), and a text
classifier refuses them (``X`` must be one document a row, each a string); its
tags say so (``input_tags.two_d_array=False``, ``string=True``), and scikit-learn
skips them. What those checks ask of a fitted estimator (``fit`` returns
``self``, ``classes_``, ``predict`` agrees with ``predict_proba``, a clone of
the parameters refits, ``score``, errors for one class or bad labels) is tested
on text instead.
"""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from hatt.classifier import TextClassifier
from hatt.data.documents import check_documents, check_texts, label_names, warn_empty
from hatt.models import DEFAULT_FAMILY
from hatt.training.settings.config import DEFAULT_PRESET


class HattClassifier(ClassifierMixin, BaseEstimator):
    """A hatt text classifier with scikit-learn's estimator interface.

    Args:
        family: ``"cnn"``, ``"rnn"``, ``"transformer"`` or ``"han"``.
        preset: ``"default"``: the family's own preset (the tuned settings of
            ``hatt train FAMILY``); a preset's name; or ``None`` for the bare
            defaults.
        epochs: the most epochs (``None``: the settings').
        verbose: Keras ``fit``'s verbosity (``0``: quiet).
        **params: settings of :class:`hatt.TextClassifier` (``dropout``,
            ``batch_size``, ``learning_rate``, ``ngram``, ``validation_size``,
            ...), each a parameter for ``get_params`` / ``set_params`` /
            ``GridSearchCV``.

    Attributes:
        classes_: the class labels as given in ``y``, in ``np.unique`` order
            (the columns of :meth:`predict_proba`).
        classifier_: the trained :class:`hatt.TextClassifier`.

    Example:

    >>> from sklearn.model_selection import GridSearchCV
    >>> search = GridSearchCV(HattClassifier("cnn", epochs=3), {"dropout": [0.2, 0.5]}, cv=3)
    >>> search.fit(texts, labels).best_params_
    """

    def __init__(
        self, family=DEFAULT_FAMILY, preset=DEFAULT_PRESET, epochs=None, verbose=0, **params
    ):
        self.family = family
        self.preset = preset
        self.epochs = epochs
        self.verbose = verbose
        self._params = dict(params)  # private: scikit-learn's checks allow no other attribute

    def get_params(self, deep=True):
        return {**super().get_params(deep=deep), **self._params}

    def set_params(self, **params):
        """Set parameters; a name that is no setting fails at ``fit`` (listing the known ones).

        Lenient as scikit-learn's check_do_not_raise_errors_in_init_or_set_params asks:
        ``TextClassifier`` checks names and values when ``fit`` builds it.
        """
        own = self._get_param_names()
        for key, value in params.items():
            if key in own:
                setattr(self, key, value)
            else:
                self._params[key] = value
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.one_d_array = True
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.non_deterministic = True  # seeded, but float sums differ across machines
        return tags

    def _classifier(self):
        if self.preset not in (None, DEFAULT_PRESET):  # a preset by name names its family
            return TextClassifier.from_preset(self.preset, **self._params)
        return TextClassifier(self.family, preset=self.preset, **self._params)

    def fit(self, X, y):
        """Train a new :class:`hatt.TextClassifier` on documents ``X`` and labels ``y``.

        The labels are checked first (scikit-learn's target checks: a continuous
        ``y`` is refused as scikit-learn refuses it), then the documents.
        """
        if y is None:
            raise ValueError(
                "HattClassifier requires y to be passed, but the target y is None. Received: y=None"
            )
        names = label_names(y, "y")
        check_classification_targets(np.asarray(y))
        classes = np.unique(np.asarray(y))
        class_names = label_names(classes, "classes")
        if len(set(class_names)) != len(class_names):
            raise ValueError(
                "Expected each label of y to name its own class. Received labels that name the "
                f"same class (3, 3.0, '3' and '3.0' are one class): {classes.tolist()}"
            )
        texts, kept = check_documents(X, names, "X", "y")  # empty texts skipped, counted
        emptied = sorted(set(class_names) - set(kept))
        if emptied:
            raise ValueError(
                f"Expected documents with text in every class of y. Received: every document "
                f"of the class(es) {emptied} has an empty or missing text in X"
            )
        classifier = self._classifier()
        classifier.fit(texts, kept, epochs=self.epochs, verbose=self.verbose)
        self.classifier_ = classifier
        self.classes_ = classes
        self._columns = [classifier.class_names.index(name) for name in class_names]
        return self

    def predict_proba(self, X):
        """Class probabilities ``[N, len(classes_)]``, columns in ``classes_`` order."""
        check_is_fitted(self)
        texts = check_texts(X, "X", allow_empty=True)
        warn_empty(texts, "X")  # once, naming X's rows
        return self.classifier_._probabilities(texts, batch_size=64)[:, self._columns]

    def predict(self, X):
        """The most probable class of each document, as a label of ``classes_``."""
        probabilities = self.predict_proba(X)
        return self.classes_[np.argmax(probabilities, axis=1)]


__all__ = ["HattClassifier"]
