"""Scaling out: ``tf.distribute`` strategies, per-worker run directories, data sharding.

Keras / TensorFlow workarounds — every use of a private API, in this module
only, so that they can be deleted together on an upgrade. Checked on
Keras 3.15.1 and TensorFlow 2.21:

- :func:`build_before_fit` calls ``model._symbolic_build`` and replaces
  ``model._maybe_symbolic_build`` (Keras' TensorFlow trainer): under
  ``MultiWorkerMirroredStrategy`` Keras builds the compiled state from fit's
  first batch with ``strategy.reduce`` on an ``(x, y)`` tuple, which fails
  ("Attempt to convert a value (PerReplica ...) to a Tensor"), and the drawn
  batch is lost to training (tensorflow#72388). Without a strategy Keras
  builds the optimizer and the metrics inside the first trace of the train
  step, and TensorFlow traces a function that creates variables twice.
- :func:`rank_one_logs_for_multiworker` wraps ``model.train_step`` and
  ``model.test_step``: Keras reduces a step's logs across workers with
  ``strategy.reduce("MEAN", value, axis=0)``, which fails on scalars
  ("Invalid reduction dimension 0 for input with 0 dimensions",
  tensorflow#72388).
- :func:`create_strategy` uses ``ReductionToOneDevice`` for ``MirroredStrategy``
  over logical CPUs: the default collective all-reduce aborts on the HAN's
  gradients ("Shape mismatch in the collective instance").

Delete a workaround when its test (tests/training/test_distribute.py) passes
without it.
"""

import os
from pathlib import Path

import keras

from hatt import names

# `hatt train --strategy`: tf.distribute strategies (see create_strategy).
STRATEGIES = names.STRATEGIES


def create_strategy(name="default"):
    """The ``tf.distribute`` strategy ``hatt train --strategy NAME`` trains under.

    - ``"default"``: one device (TensorFlow's default strategy).
    - ``"mirrored"``: ``MirroredStrategy`` over the machine's GPUs, or over its
      logical CPU devices when there is no GPU (split a CPU into several with
      ``tf.config.set_logical_device_configuration`` before TensorFlow starts).
    - ``"multiworker"``: ``MultiWorkerMirroredStrategy``; the cluster and this
      worker's place in it come from the ``TF_CONFIG`` environment variable.
      Create it before any other TensorFlow operation runs.

    Every batch of ``batch_size`` reviews (the global batch) is split across
    the replicas.
    """
    import tensorflow as tf

    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        if gpus:
            return tf.distribute.MirroredStrategy([d.name for d in gpus])
        # Over logical CPUs the default collective all-reduce aborts on the HAN's
        # gradients ("Shape mismatch in the collective instance ... expected shape
        # [841] but another member ... [1585]"); reducing on one device works.
        return tf.distribute.MirroredStrategy(
            [d.name for d in tf.config.list_logical_devices("CPU")],
            cross_device_ops=tf.distribute.ReductionToOneDevice(),
        )
    if name == "multiworker":
        if not os.environ.get("TF_CONFIG"):
            raise ValueError(
                "Expected the TF_CONFIG environment variable with --strategy multiworker "
                '(e.g. TF_CONFIG=\'{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
                '"task": {"type": "worker", "index": 0}}\'). Received: TF_CONFIG unset.'
            )
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise ValueError(f"Expected strategy to be one of {STRATEGIES}. Received: strategy={name!r}")


def worker_run_dir(run_dir, strategy):
    """Where this worker writes: ``run_dir`` on the chief, ``run_dir/worker-N`` elsewhere.

    Every worker of a multi-worker run trains, evaluates and saves (those are
    collective operations); only the chief's files are the run's results.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type or strategy.extended.should_checkpoint:
        return Path(run_dir)
    return Path(run_dir) / f"worker-{resolver.task_id}"


def distribute_options(dataset, strategy, policy="DATA"):
    """Multi-worker: shard by data (every worker sees its slice of every global batch).

    Sharding by file would give workers different numbers of batches from
    bucketed or sharded input; by data, the step counts agree (and
    ``predict`` gathers the workers' slices back in the split's order).
    """
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return dataset
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = getattr(
        tf.data.experimental.AutoShardPolicy, policy
    )
    return dataset.with_options(options)


def build_before_fit(model, dataset, strategy):
    """Build the compiled model's state on one local batch, before ``fit`` traces its step.

    Keras 3.15's TensorFlow trainer builds the optimizer's and the metrics'
    variables lazily: for a model created without a strategy, inside the first
    trace of the train step. TensorFlow traces a ``tf.function`` that creates
    variables twice (once to create them, once more to run), so the step, the
    costliest trace of a run, was traced twice (a tiny HAN's run: 23 s, of which
    about 8 s the second trace). For a model created under a strategy
    (``_maybe_symbolic_build``), Keras draws the first batch from ``fit``'s own
    iterator and averages it across replicas with ``strategy.reduce``; under
    ``MultiWorkerMirroredStrategy`` that fails ("Attempt to convert a value
    (PerReplica ...) to a Tensor": the reduction gets the ``(x, y)`` tuple, see
    tensorflow#72388), and with ``steps_per_epoch`` the drawn batch is lost to
    training. Here the metrics, loss and optimizer are built from one batch of
    ``dataset`` (symbolically: no step runs), and the trainer's own build is
    skipped for this model.
    """
    batch = next(iter(dataset.take(1)))
    with strategy.scope():
        model._symbolic_build(data_batch=batch)
    model._maybe_symbolic_build = lambda iterator=None, data_batch=None: None


def rank_one_logs_for_multiworker(model, strategy):
    """Let ``fit`` / ``evaluate`` reduce their logs under ``MultiWorkerMirroredStrategy``.

    Keras 3.15's TensorFlow trainer reduces a step's logs across workers with
    ``strategy.reduce("MEAN", value, axis=0)``, which fails on the scalar loss
    and metrics ("Invalid reduction dimension 0 for input with 0 dimensions",
    tensorflow#72388). Returning each log as a ``[1]`` tensor makes the same
    reduction average the workers' values into a scalar.
    """
    import tensorflow as tf

    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return

    def rank_one(step):
        def wrapped(data):
            return {k: keras.ops.reshape(v, [1]) for k, v in step(data).items()}

        return wrapped

    model.train_step = rank_one(model.train_step)
    model.test_step = rank_one(model.test_step)


def evaluation_batch_size(batch_size, size, replicas):
    """``batch_size``, or a little more, so that no in-order batch has fewer than ``replicas``.

    An empty replica batch breaks some CPU kernels; the last batch of a split
    in order must hold at least one review per replica.
    """
    if replicas <= 1:
        return batch_size
    if size < replicas:
        raise ValueError(
            f"Expected every split to hold at least one review per replica ({replicas}). "
            f"Received: a split of {size} reviews."
        )
    for candidate in range(batch_size, batch_size + size + 1):
        if size % candidate == 0 or size % candidate >= replicas:
            return candidate
    return size
