"""hatt.training's optimizers against NumPy: LazyAdam (Adam on the rows a sparse gradient
touches), the learning-rate schedules, and a learning-rate factor per layer."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from hatt import training
from hatt.training import LazyAdam, create_optimizer


def lazy_adam_reference(
    table, kernel, batches, lr=0.01, b1=0.9, b2=0.999, eps=1e-7, table_rate=1.0
):
    """NumPy: z = Σ_t table[ids_t] · kernel, loss = Σ_rows z; lazy rows, dense kernel
    (the table's rate ``table_rate`` times the kernel's)."""
    table, kernel = table.astype(np.float64).copy(), kernel.astype(np.float64).copy()
    m_t, v_t = np.zeros_like(table), np.zeros_like(table)
    m_k, v_k = np.zeros_like(kernel), np.zeros_like(kernel)
    for step, ids in enumerate(batches, start=1):
        alpha = lr * np.sqrt(1 - b2**step) / (1 - b1**step)
        g_table = np.zeros_like(table)
        for row in ids:
            for i in row:
                g_table[i] += kernel[:, 0]
        g_kernel = table[ids].sum(axis=(0, 1))[:, None]
        touched = np.unique(ids)
        m_t[touched] = b1 * m_t[touched] + (1 - b1) * g_table[touched]
        v_t[touched] = b2 * v_t[touched] + (1 - b2) * g_table[touched] ** 2
        table[touched] -= table_rate * alpha * m_t[touched] / (np.sqrt(v_t[touched]) + eps)
        m_k = b1 * m_k + (1 - b1) * g_kernel  # dense: Adam's own update
        v_k = b2 * v_k + (1 - b2) * g_kernel**2
        kernel -= alpha * m_k / (np.sqrt(v_k) + eps)
    return table, kernel, m_t


@pytest.mark.parametrize("table_rate", [1.0, 0.25])
def test_sparse_rows_follow_adam_and_untouched_rows_keep_their_moments(table_rate):
    """With ``table_rate`` 0.25 the table's layer ("a") has that factor (discriminative rates)."""
    rng = np.random.default_rng(0)
    table0 = rng.normal(size=(10, 4)).astype("float32")
    kernel0 = rng.normal(size=(4, 1)).astype("float32")
    with keras.name_scope("a"):
        table = keras.Variable(table0, name="table")
    with keras.name_scope("b"):
        kernel = keras.Variable(kernel0, name="kernel")
    optimizer = LazyAdam(learning_rate=0.01, layer_rates={"a": table_rate})
    optimizer.build([table, kernel])
    batches = [np.array([[1, 2, 2], [3, 1, 1]]), np.array([[7, 8, 1]]), np.array([[2, 2, 2]])]
    for ids in batches:
        with tf.GradientTape() as tape:
            z = tf.matmul(tf.reduce_sum(tf.gather(table.value, ids), axis=1), kernel.value)
            loss = tf.reduce_sum(z)
        grads = tape.gradient(loss, [table.value, kernel.value])
        assert isinstance(grads[0], tf.IndexedSlices)  # the sparse path is exercised
        optimizer.apply(grads, [table, kernel])
    want_table, want_kernel, want_m = lazy_adam_reference(
        table0, kernel0, batches, table_rate=table_rate
    )
    np.testing.assert_allclose(table.numpy(), want_table, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kernel.numpy(), want_kernel, rtol=1e-5, atol=1e-6)
    m = optimizer._momentums[optimizer._get_variable_index(table)].numpy()
    np.testing.assert_allclose(m, want_m, rtol=1e-5, atol=1e-7)
    untouched = [0, 4, 5, 6, 9]
    np.testing.assert_array_equal(table.numpy()[untouched], table0[untouched])
    assert not m[untouched].any()


def test_dense_gradients_are_adams_and_the_optimizer_round_trips():
    rng = np.random.default_rng(1)
    start = rng.normal(size=(3, 2)).astype("float32")
    grads = [rng.normal(size=(3, 2)).astype("float32") for _ in range(3)]
    results = []
    for cls in (LazyAdam, keras.optimizers.Adam):
        variable = keras.Variable(start)
        optimizer = cls(learning_rate=0.05)
        for g in grads:
            optimizer.apply([g], [variable])
        results.append(variable.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
    config = keras.saving.serialize_keras_object(LazyAdam(learning_rate=0.003))
    clone = keras.saving.deserialize_keras_object(json.loads(json.dumps(config)))
    assert isinstance(clone, LazyAdam) and clone.learning_rate.numpy() == pytest.approx(0.003)
    with pytest.raises(ValueError, match="amsgrad"):
        LazyAdam(amsgrad=True)


def test_the_config_chooses_it():
    config = training.TrainConfig(model="cnn", optimizer="lazy_adam", learning_rate=0.002)
    optimizer = create_optimizer(config, steps_per_epoch=10)
    assert isinstance(optimizer, LazyAdam)
    assert float(optimizer.learning_rate.numpy()) == pytest.approx(0.002)
    with pytest.raises(ValueError, match="optimizer"):
        training.TrainConfig(model="cnn", optimizer="lazy")


def schedule_reference(step, lr, steps_per_epoch, epochs, warmup_epochs, decay):
    """NumPy: linear rise over the warm-up, then cosine to 0 (or flat) by the last epoch."""
    warmup = round(warmup_epochs * steps_per_epoch)
    total = epochs * steps_per_epoch
    if step < warmup:
        return lr * step / warmup
    if decay == "constant":
        return lr
    done = min(step - warmup, total - warmup) / (total - warmup)
    return lr * 0.5 * (1 + np.cos(np.pi * done))


@pytest.mark.parametrize(
    "decay, warmup_epochs", [("cosine", 0.0), ("cosine", 1.5), ("constant", 1.0)]
)
def test_learning_rate_schedule_against_numpy(decay, warmup_epochs):
    config = training.TrainConfig(
        model="cnn",
        learning_rate=0.002,
        epochs=4,
        learning_rate_decay=decay,
        warmup_epochs=warmup_epochs,
    )
    for optimizer_name in ("adam", "lazy_adam"):
        config.optimizer = optimizer_name
        optimizer = create_optimizer(config, steps_per_epoch=10)
        schedule = optimizer._learning_rate
        assert isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule)
        got = [float(schedule(step)) for step in range(0, 46)]
        want = [schedule_reference(s, 0.002, 10, 4, warmup_epochs, decay) for s in range(46)]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-9)
        # the schedule travels with the optimizer (saved models, resumed runs)
        config_json = json.dumps(keras.saving.serialize_keras_object(optimizer))
        clone = keras.saving.deserialize_keras_object(json.loads(config_json))
        np.testing.assert_allclose(float(clone._learning_rate(17)), want[17], rtol=1e-5)


def test_constant_rate_stays_a_float_and_bad_schedules_are_refused():
    optimizer = create_optimizer(training.TrainConfig(model="cnn"), steps_per_epoch=10)
    assert not isinstance(optimizer._learning_rate, keras.optimizers.schedules.LearningRateSchedule)
    with pytest.raises(ValueError, match="learning_rate_decay"):
        training.TrainConfig(model="cnn", learning_rate_decay="linear")
    with pytest.raises(ValueError, match="warmup_epochs"):
        training.TrainConfig(model="cnn", epochs=3, warmup_epochs=3)
    with pytest.raises(ValueError, match="warmup_epochs"):
        training.TrainConfig(model="cnn", warmup_epochs=-1)
    with pytest.raises(ValueError, match="clr"):
        training.TrainConfig(model="cnn", optimizer="clr", learning_rate_decay="cosine")


# === A learning-rate factor per layer (discriminative rates) =========================


def adam_reference(start, grads, lr, b1=0.9, b2=0.999, eps=1e-7):
    """NumPy: Keras' Adam over ``grads``, from ``start``."""
    value, m, v = start.astype(np.float64), np.zeros(start.shape), np.zeros(start.shape)
    for step, g in enumerate(grads, start=1):
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g**2
        value = value - lr * np.sqrt(1 - b2**step) / (1 - b1**step) * m / (np.sqrt(v) + eps)
    return value


def _layer_variables(start):
    """One variable in each of the layers "low", "high" and "head", all from ``start``."""
    variables = []
    for name in ("low", "high", "head"):
        with keras.name_scope(name):
            variables.append(keras.Variable(start, name="kernel"))
    return variables


@pytest.mark.parametrize("decay", ["constant", "cosine"])
def test_each_layer_steps_at_its_rate_against_numpy(decay):
    """Adam's step for the layer of factor f is Adam's at rate f × the rate (the
    schedule's value at the step, too); layers not named keep the rate."""
    rng = np.random.default_rng(2)
    start = rng.normal(size=(3, 2)).astype("float32")
    grads = [rng.normal(size=(3, 2)).astype("float32") for _ in range(3)]
    rates = {"low": 1 / 2.6**2, "high": 1 / 2.6}
    config = training.TrainConfig(
        model="han", init="some_model", discriminative_decay=2.6, learning_rate=0.05
    )
    config.learning_rate_decay = decay
    optimizer = create_optimizer(config, steps_per_epoch=1)
    assert isinstance(optimizer, training.DiscriminativeAdam)
    variables = _layer_variables(start)
    optimizer.build(variables)
    optimizer.layer_rates = rates  # set after it is built, before the first step
    for g in grads:
        optimizer.apply([g, g, g], variables)
    schedule = optimizer._learning_rate
    for variable, factor in zip(variables, (*rates.values(), 1.0), strict=True):
        if decay == "constant":
            want = adam_reference(start, grads, 0.05 * factor)
            np.testing.assert_allclose(variable.numpy(), want, rtol=1e-5, atol=1e-6)
        else:  # a schedule: the same optimizer without factors, at factor × its rates
            reference = keras.Variable(start)
            plain = keras.optimizers.Adam(learning_rate=0.0)
            for step, g in enumerate(grads):
                plain.learning_rate = float(schedule(step)) * factor
                plain.apply([g], [reference])
            np.testing.assert_allclose(variable.numpy(), reference.numpy(), rtol=1e-5)
    assert not np.allclose(variables[0].numpy(), variables[2].numpy())


def test_cyclical_sgd_takes_the_factor_on_its_cyclical_rate():
    rng = np.random.default_rng(3)
    start = rng.normal(size=(4,)).astype("float32")
    grads = [rng.normal(size=(4,)).astype("float32") for _ in range(5)]

    def cyclical(low, high, **kwargs):
        return training.CyclicalSGD(
            learning_rate=training.TriangularSchedule(low, high, 2),
            momentum_schedule=training.TriangularSchedule(0.85, 0.95, 2, inverse=True),
            **kwargs,
        )

    variables = _layer_variables(start)
    rated = cyclical(0.01, 0.1, layer_rates={"low": 0.25})
    slow, fast = keras.Variable(start), keras.Variable(start)
    slow_sgd, fast_sgd = cyclical(0.0025, 0.025), cyclical(0.01, 0.1)
    for g in grads:
        rated.apply([g, g, g], variables)
        slow_sgd.apply([g], [slow])
        fast_sgd.apply([g], [fast])
    np.testing.assert_allclose(variables[0].numpy(), slow.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(variables[1].numpy(), fast.numpy(), rtol=1e-5, atol=1e-7)


def test_layer_rates_travel_with_the_optimizer_and_bad_ones_are_refused():
    for optimizer in (
        training.DiscriminativeAdam(0.003, layer_rates={"word_encoder": 0.5}),
        LazyAdam(0.003, layer_rates={"word_encoder": 0.5}),
        training.CyclicalSGD(layer_rates={"word_encoder": 0.5}),
    ):
        config = json.dumps(keras.saving.serialize_keras_object(optimizer))
        clone = keras.saving.deserialize_keras_object(json.loads(config))
        assert type(clone) is type(optimizer) and clone.layer_rates == {"word_encoder": 0.5}
    for bad in ({"a": 0}, {"a": -1.0}, {"a": "fast"}, {"a": True}):
        with pytest.raises(ValueError, match="Expected each layer rate to be a number > 0"):
            LazyAdam(layer_rates=bad)
    # without discriminative rates, "adam" stays Keras' own
    assert type(create_optimizer(training.TrainConfig(model="han"), 10)) is keras.optimizers.Adam


def test_a_layer_built_inside_another_scope_still_gets_its_rate():
    rng = np.random.default_rng(4)
    start = rng.normal(size=(2,)).astype("float32")
    grads = [rng.normal(size=(2,)).astype("float32") for _ in range(2)]
    with keras.name_scope("outer"):
        (low, _, head) = _layer_variables(start)
    assert low.path == "outer/low/kernel"
    optimizer = training.DiscriminativeAdam(0.05, layer_rates={"low": 0.5})
    for g in grads:
        optimizer.apply([g, g], [low, head])
    np.testing.assert_allclose(low.numpy(), adam_reference(start, grads, 0.025), rtol=1e-5)
    np.testing.assert_allclose(head.numpy(), adam_reference(start, grads, 0.05), rtol=1e-5)
    assert optimizer.rate_of_path("lower/kernel") == 1.0  # a name, not a prefix, matches
