"""hatt.training.LazyAdam: Adam on the rows a sparse gradient touches, against NumPy."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from hatt import training
from hatt.training import LazyAdam, create_optimizer


def lazy_adam_reference(table, kernel, batches, lr=0.01, b1=0.9, b2=0.999, eps=1e-7):
    """NumPy: z = Σ_t table[ids_t] · kernel, loss = Σ_rows z; lazy rows, dense kernel."""
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
        table[touched] -= alpha * m_t[touched] / (np.sqrt(v_t[touched]) + eps)
        m_k = b1 * m_k + (1 - b1) * g_kernel  # dense: Adam's own update
        v_k = b2 * v_k + (1 - b2) * g_kernel**2
        kernel -= alpha * m_k / (np.sqrt(v_k) + eps)
    return table, kernel, m_t


def test_sparse_rows_follow_adam_and_untouched_rows_keep_their_moments():
    rng = np.random.default_rng(0)
    table0 = rng.normal(size=(10, 4)).astype("float32")
    kernel0 = rng.normal(size=(4, 1)).astype("float32")
    table = keras.Variable(table0)
    kernel = keras.Variable(kernel0)
    optimizer = LazyAdam(learning_rate=0.01)
    optimizer.build([table, kernel])
    batches = [np.array([[1, 2, 2], [3, 1, 1]]), np.array([[7, 8, 1]]), np.array([[2, 2, 2]])]
    for ids in batches:
        with tf.GradientTape() as tape:
            z = tf.matmul(tf.reduce_sum(tf.gather(table.value, ids), axis=1), kernel.value)
            loss = tf.reduce_sum(z)
        grads = tape.gradient(loss, [table.value, kernel.value])
        assert isinstance(grads[0], tf.IndexedSlices)  # the sparse path is exercised
        optimizer.apply(grads, [table, kernel])
    want_table, want_kernel, want_m = lazy_adam_reference(table0, kernel0, batches)
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
