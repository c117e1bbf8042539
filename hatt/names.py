"""Names and limits the command line offers before any model code loads (no Keras, no TF).

The modules that own them (:mod:`hatt.models.registry`, :mod:`hatt.training.run.distribute`,
:mod:`hatt.export.attribution`, :mod:`hatt.inspect.html`, :mod:`hatt.presets`) take them from
here, so ``hatt --help`` lists the same choices without importing TensorFlow.
"""

FAMILIES = ("cnn", "rnn", "transformer", "han")  # hatt.models.build's families
STRATEGIES = ("default", "mirrored", "multiworker")  # hatt.training's tf.distribute choices
# The explanation methods, in the order pages and the explain signature show them.
METHODS = ("attention", "total", "gradient_x_input", "integrated_gradients", "ngram")
MAX_REVIEWS = 100  # reviews a page of write_html (100 IMDB reviews, 4 methods: about 6 MB)
SPLIT_CHOICES = ("auto", "test", "train", "all")  # what hatt evaluate reads of a source
