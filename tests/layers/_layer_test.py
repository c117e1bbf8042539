"""Shared checks for hatt layers: construction, calls, config and `.keras` reload."""

import json
import textwrap

import keras
import numpy as np
import pytest

from tests._fresh_process import run_json_script


def to_numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


def gradients(loss_fn, inputs, variables):
    """Gradients of the scalar `loss_fn(inputs)` w.r.t. `inputs` and each of `variables`.

    Works under the TensorFlow and torch backends (skips under others). Returns
    NumPy arrays, the input's gradient first; an unused variable gets zeros.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.convert_to_tensor(inputs)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = loss_fn(x)
        grads = tape.gradient(loss, [x, *variables])
    elif backend == "torch":
        import torch

        x = keras.ops.convert_to_tensor(inputs).requires_grad_()
        loss = loss_fn(x)
        grads = torch.autograd.grad(loss, [x, *(v.value for v in variables)], allow_unused=True)
    else:
        pytest.skip(f"no gradient helper for the {backend} backend")
    targets = [inputs, *variables]
    return [
        np.zeros(tuple(t.shape), "float32") if g is None else to_numpy(g)
        for g, t in zip(grads, targets, strict=True)
    ]


def run_layer_test(
    cls,
    init_kwargs,
    input_shape,
    expected_output_shape,
    call_kwargs=None,
    mask=None,
):
    """Construct `cls(**init_kwargs)`; call it eagerly and symbolically; round-trip its config.

    `input_shape` is a concrete shape (batch first); the symbolic call uses
    `None` for the batch and time axes. Returns the eager output.
    """
    call_kwargs = call_kwargs or {}
    rng = np.random.default_rng(0)
    layer = cls(**init_kwargs)
    inputs = rng.standard_normal(input_shape).astype("float32")
    if mask is not None:
        call_kwargs = {**call_kwargs, "mask": mask}
    outputs = layer(inputs, **call_kwargs)
    flat = outputs if isinstance(outputs, tuple) else (outputs,)
    expected = (
        expected_output_shape
        if isinstance(expected_output_shape, list)
        else [expected_output_shape]
    )
    assert [tuple(o.shape) for o in flat] == [tuple(s) for s in expected]
    for o in flat:
        assert np.isfinite(to_numpy(o)).all()

    # Symbolic: the spec must agree with the eager shapes on the known axes.
    symbolic_in = keras.Input(shape=(None, *input_shape[2:]))
    symbolic_kwargs = {k: v for k, v in call_kwargs.items() if k != "mask"}
    symbolic_out = cls(**init_kwargs)(symbolic_in, **symbolic_kwargs)
    symbolic_flat = symbolic_out if isinstance(symbolic_out, tuple) else (symbolic_out,)
    for spec, eager in zip(symbolic_flat, expected, strict=True):
        assert len(spec.shape) == len(eager)
        for s, e in zip(spec.shape[1:], eager[1:], strict=True):
            assert s is None or s == e

    # Config round trip: get_config mirrors __init__ and rebuilds an equal layer.
    config = layer.get_config()
    clone = cls.from_config(config)
    assert clone.get_config() == config
    assert json.loads(json.dumps(config)) == config
    return outputs


RELOAD_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import keras
    import hatt  # registers the layers; no custom_objects below

    failures = []
    for case in json.loads(sys.argv[1]):
        model = keras.saving.load_model(case["model"])
        inputs = [np.load(p) for p in case["inputs"]]
        outputs = model(inputs if len(inputs) > 1 else inputs[0], training=False)
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        for got, path in zip(outputs, case["outputs"], strict=True):
            got = np.asarray(keras.ops.convert_to_numpy(got))
            want = np.load(path)
            if got.shape != want.shape or not np.allclose(got, want, atol=1e-6, rtol=0):
                failures.append(f"{case['model']}: max diff {np.abs(got - want).max()}")
    print(json.dumps({"backend": keras.backend.backend(), "failures": failures}))
    """
)


def assert_reload_in_fresh_process(tmp_path, models):
    """Save each `(name, model, inputs)` to `.keras`; reload all in one fresh process.

    The subprocess only does `import hatt` (no `custom_objects`) and must
    reproduce each model's outputs. One subprocess serves all models, since
    starting one costs several seconds.
    """
    cases = []
    for name, model, inputs in models:
        inputs = inputs if isinstance(inputs, list) else [inputs]
        outputs = model(inputs if len(inputs) > 1 else inputs[0], training=False)
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        case = {"model": str(tmp_path / f"{name}.keras"), "inputs": [], "outputs": []}
        model.save(case["model"])
        for i, x in enumerate(inputs):
            case["inputs"].append(str(tmp_path / f"{name}_in{i}.npy"))
            np.save(case["inputs"][-1], np.asarray(x))
        for i, y in enumerate(outputs):
            case["outputs"].append(str(tmp_path / f"{name}_out{i}.npy"))
            np.save(case["outputs"][-1], to_numpy(y))
        cases.append(case)
    report = run_json_script(RELOAD_SCRIPT, json.dumps(cases))
    assert report["backend"] == keras.backend.backend()
    assert report["failures"] == []
