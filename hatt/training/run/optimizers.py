"""Optimizers: Adam, lazy Adam, or the cyclical learning rate with cyclical momentum.

The cyclical policy of Smith (2017, 2018) — triangular, SGD with Nesterov
momentum — is computed in the graph from the optimizer's step counter. The
classes keep their registered names (``hatt>TriangularSchedule``,
``hatt>CyclicalSGD``) so saved models load.

Each of hatt's optimizers takes ``layer_rates`` (:class:`LayerRates`): a
learning-rate factor per layer, for discriminative fine-tuning (ULMFiT: the
layers started elsewhere train slower the lower they are;
:func:`hatt.training.starts.transfer.fine_tuning` sets them). Keras 3 has no
per-variable rate, and Adam's step does not change when a gradient is scaled,
so the factor multiplies the rate inside the optimizer's step.
"""

import keras

# === A learning-rate factor per layer ===============================================


class LayerRates:
    """Mixin: each variable's learning rate times its layer's factor (discriminative rates).

    ``layer_rates`` maps a layer's name to a factor; a variable belongs to the
    layer its path names (``"word_encoder/forward_word_encoder_gru/..."``), and
    variables of layers not named keep the optimizer's rate. The factor multiplies
    the rate (a schedule's value at the step included) in ``update_step``, so every
    update rule takes it exactly: Adam's step, SGD's, the lazy rows'. It can be set
    after the optimizer is built, before the train step is traced; it is part of the
    config, so a saved model's optimizer keeps it. Each class's ``update_step`` calls
    :meth:`rated` first (a mixin's own ``update_step`` would be passed over by the
    classes whose update does not call ``super()``).

    Args:
        layer_rates: ``{layer name: factor > 0}``, or ``None`` for none.
    """

    def __init__(self, *args, layer_rates=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.layer_rates = check_layer_rates(layer_rates)

    def rate_of_path(self, path):
        """The factor of the variable at ``path``: its first scope that names a layer
        of ``layer_rates`` (a model built inside another scope included), else 1."""
        return next((self.layer_rates[p] for p in path.split("/") if p in self.layer_rates), 1.0)

    def layer_rate(self, variable):
        """The factor of ``variable`` (an optimizer's variable or its backend value)."""
        if not self.layer_rates:
            return 1.0
        return self.rate_of_path(self._trainable_variables[self._get_variable_index(variable)].path)

    def rated(self, learning_rate, variable):
        """``learning_rate`` times ``variable``'s factor: each ``update_step`` starts here."""
        factor = self.layer_rate(variable)
        return learning_rate if factor == 1.0 else keras.ops.multiply(learning_rate, factor)

    def get_config(self):
        return {**super().get_config(), "layer_rates": dict(self.layer_rates)}


def check_layer_rates(layer_rates):
    """``layer_rates`` as ``{str: float}``; a factor that is not a number > 0 is refused."""
    rates = {}
    for name, factor in dict(layer_rates or {}).items():
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not factor > 0:
            raise ValueError(
                f"Expected each layer rate to be a number > 0. Received: {name!r}: {factor!r}"
            )
        rates[str(name)] = float(factor)
    return rates


@keras.saving.register_keras_serializable(package="hatt")
class DiscriminativeAdam(LayerRates, keras.optimizers.Adam):
    """Keras' Adam with a learning-rate factor per layer (:class:`LayerRates`).

    Args:
        learning_rate: float or schedule.
        layer_rates: ``{layer name: factor}``; other layers train at ``learning_rate``.
        **kwargs: other `keras.optimizers.Adam` arguments.

    Example:

    >>> optimizer = DiscriminativeAdam(1e-3, layer_rates={"word_encoder": 1 / 2.6})

    References:
        - [Howard & Ruder, 2018. Universal Language Model Fine-tuning](
          https://arxiv.org/abs/1801.06146) (discriminative fine-tuning)
    """

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = self.rated(learning_rate, variable)
        return super().update_step(gradient, variable, learning_rate)


# === Adam that updates only the embedding rows a batch touches ======================


@keras.saving.register_keras_serializable(package="hatt")
class LazyAdam(LayerRates, keras.optimizers.Adam):
    """Adam whose sparse gradients update only the rows they touch (as LazyAdam does).

    An embedding's gradient names the rows its batch looked up
    (`tf.IndexedSlices`); Keras' Adam turns it into a dense update of every
    row, and of every row's two moment estimates, at each step. For a wide
    table (Johnson & Zhang's one-hot CNN: 30,000 words × 3,000) that is most
    of a step's time. Here a sparse gradient is summed per distinct row, and
    only those rows' moments and values are updated, each exactly as Adam
    updates it (the step's bias correction included); rows a batch does not
    touch keep their moments (they do not decay), which is what makes it
    lazy and not Adam. Dense gradients take Adam's own update. Under the
    TensorFlow backend only (its sparse gradients); elsewhere it is Adam.

    Args:
        **kwargs: `keras.optimizers.Adam` arguments (`amsgrad` is not
            supported for the sparse update), and ``layer_rates``
            (:class:`LayerRates`).

    Example:

    >>> model.compile(optimizer=hatt.training.LazyAdam(1e-3), loss="binary_crossentropy")

    References:
        - [Kingma & Ba, 2015. Adam](https://arxiv.org/abs/1412.6980)
        - TensorFlow Addons' `LazyAdam`.
    """

    def __init__(self, learning_rate=0.001, **kwargs):
        if kwargs.get("amsgrad"):
            raise ValueError("LazyAdam does not support amsgrad=True. Received: amsgrad=True")
        super().__init__(learning_rate=learning_rate, **kwargs)

    def update_step(self, gradient, variable, learning_rate):
        import tensorflow as tf

        learning_rate = self.rated(learning_rate, variable)
        if not isinstance(gradient, tf.IndexedSlices):
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        rows, positions = tf.unique(gradient.indices)
        values = tf.math.unsorted_segment_sum(
            tf.cast(gradient.values, dtype), positions, tf.shape(rows)[0]
        )
        lr = keras.ops.cast(learning_rate, dtype)
        step = keras.ops.cast(self.iterations + 1, dtype)
        beta_1_power = keras.ops.power(keras.ops.cast(self.beta_1, dtype), step)
        beta_2_power = keras.ops.power(keras.ops.cast(self.beta_2, dtype), step)
        alpha = lr * keras.ops.sqrt(1 - beta_2_power) / (1 - beta_1_power)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        m_rows = self.beta_1 * tf.gather(m.value, rows) + (1 - self.beta_1) * values
        v_rows = self.beta_2 * tf.gather(v.value, rows) + (1 - self.beta_2) * tf.square(values)
        self.assign(m, tf.IndexedSlices(m_rows, rows))
        self.assign(v, tf.IndexedSlices(v_rows, rows))
        step_rows = alpha * m_rows / (tf.sqrt(v_rows) + self.epsilon)
        self.assign_sub(variable, tf.IndexedSlices(step_rows, rows))


# === Cyclical learning rate and momentum ============================================


def _triangle(step, step_size):
    """0 → 1 → 0 over ``2 * step_size`` steps (Smith's triangular policy)."""
    step = keras.ops.cast(step, "float32")
    cycle = keras.ops.floor(1.0 + step / (2.0 * step_size))
    return keras.ops.maximum(0.0, 1.0 - keras.ops.abs(step / step_size - 2.0 * cycle + 1.0))


@keras.saving.register_keras_serializable(package="hatt")
class TriangularSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Cyclical value between ``low`` and ``high`` (triangular policy).

    With ``inverse=True`` the cycle goes from ``high`` down to ``low`` and
    back (cyclical momentum falls while the learning rate rises).

    Args:
        low: smallest value.
        high: largest value.
        step_size: optimizer steps from ``low`` to ``high`` (half a cycle).
        inverse: start at ``high`` instead of ``low``.

    References:
        Smith, "Cyclical Learning Rates for Training Neural Networks", 2017;
        Smith, "A disciplined approach to neural network hyper-parameters", 2018.
    """

    def __init__(self, low, high, step_size, inverse=False):
        if not 0 <= low <= high:
            raise ValueError(f"Expected 0 <= low <= high. Received: low={low!r}, high={high!r}")
        if step_size <= 0:
            raise ValueError(f"Expected step_size > 0. Received: step_size={step_size!r}")
        self.low = float(low)
        self.high = float(high)
        self.step_size = float(step_size)
        self.inverse = bool(inverse)

    def __call__(self, step):
        phase = _triangle(step, self.step_size)
        if self.inverse:
            return self.high - (self.high - self.low) * phase
        return self.low + (self.high - self.low) * phase

    def get_config(self):
        return {
            "low": self.low,
            "high": self.high,
            "step_size": self.step_size,
            "inverse": self.inverse,
        }


@keras.saving.register_keras_serializable(package="hatt")
class CyclicalSGD(LayerRates, keras.optimizers.SGD):
    """SGD with Nesterov momentum whose momentum follows a schedule.

    The learning rate can be any schedule (e.g. :class:`TriangularSchedule`);
    the momentum is ``momentum_schedule(iterations)``, evaluated in the graph
    at every step (Keras' ``SGD`` takes momentum as a constant).

    Args:
        learning_rate: float or schedule.
        momentum_schedule: a :class:`TriangularSchedule` (or any serializable
            schedule) giving the momentum at each step.
        nesterov: Nesterov momentum.
        **kwargs: other ``keras.optimizers.SGD`` arguments, and ``layer_rates``
            (:class:`LayerRates`).
    """

    def __init__(self, learning_rate=0.01, momentum_schedule=None, nesterov=True, **kwargs):
        kwargs.pop("momentum", None)
        # A non-zero constant makes SGD create its momentum slots; the value used
        # at each step comes from momentum_schedule.
        super().__init__(learning_rate=learning_rate, momentum=0.9, nesterov=nesterov, **kwargs)
        if isinstance(momentum_schedule, dict):
            momentum_schedule = keras.saving.deserialize_keras_object(momentum_schedule)
        self.momentum_schedule = momentum_schedule or TriangularSchedule(0.85, 0.95, 1000, True)

    def current_momentum(self):
        return self.momentum_schedule(self.iterations)

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = keras.ops.cast(self.rated(learning_rate, variable), variable.dtype)
        gradient = keras.ops.cast(gradient, variable.dtype)
        momentum = keras.ops.cast(self.current_momentum(), variable.dtype)
        m = self.momentums[self._get_variable_index(variable)]
        scaled = keras.ops.multiply(gradient, learning_rate)
        self.assign(m, keras.ops.subtract(keras.ops.multiply(m, momentum), scaled))
        if self.nesterov:  # look ahead along the updated velocity
            self.assign_add(variable, keras.ops.subtract(keras.ops.multiply(m, momentum), scaled))
        else:
            self.assign_add(variable, m)

    def get_config(self):
        config = super().get_config()
        config.pop("momentum", None)
        config["momentum_schedule"] = keras.saving.serialize_keras_object(self.momentum_schedule)
        return config


def learning_rate_of(config, steps_per_epoch):
    """``config.learning_rate``, or its schedule (warm-up, cosine decay) in optimizer steps.

    The cosine runs from the end of the warm-up to the end of ``config.epochs``,
    where it reaches 0; a constant rate with a warm-up rises linearly to
    ``learning_rate`` and stays there.
    """
    if config.learning_rate_decay == "constant" and config.warmup_epochs == 0:
        return config.learning_rate
    warmup = int(round(config.warmup_epochs * steps_per_epoch))
    decay_steps = max(1, int(config.epochs * steps_per_epoch) - warmup)
    # alpha = 1: the "decay" keeps the full rate (a constant rate after the warm-up)
    alpha = 0.0 if config.learning_rate_decay == "cosine" else 1.0
    if warmup == 0:
        return keras.optimizers.schedules.CosineDecay(config.learning_rate, decay_steps, alpha)
    return keras.optimizers.schedules.CosineDecay(
        0.0,
        decay_steps,
        alpha,
        warmup_target=config.learning_rate,
        warmup_steps=warmup,
    )


def create_optimizer(config, steps_per_epoch):
    """The optimizer ``config.optimizer`` names, with its learning rate (schedule).

    With ``config.discriminative_decay`` above 1, ``"adam"`` is
    :class:`DiscriminativeAdam`, whose layer factors are set once the layers
    started elsewhere are known (:func:`hatt.training.starts.transfer.fine_tuning`).
    """
    if config.optimizer in ("adam", "lazy_adam"):
        optimizer = LazyAdam
        if config.optimizer == "adam":
            discriminative = config.discriminative_decay != 1.0
            optimizer = DiscriminativeAdam if discriminative else keras.optimizers.Adam
        return optimizer(learning_rate=learning_rate_of(config, steps_per_epoch))
    step_size = max(1.0, config.clr_step_epochs * steps_per_epoch)
    return CyclicalSGD(
        learning_rate=TriangularSchedule(
            config.clr_min_learning_rate, config.clr_max_learning_rate, step_size
        ),
        momentum_schedule=TriangularSchedule(
            config.clr_min_momentum, config.clr_max_momentum, step_size, inverse=True
        ),
        nesterov=True,
    )
