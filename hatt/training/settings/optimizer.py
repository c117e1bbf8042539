"""The optimizer's settings: the names a run may choose and the checks they need no data for.

:mod:`hatt.training.run.optimizers` builds what these name.
"""

OPTIMIZERS = ("adam", "lazy_adam", "clr")
DECAYS = ("constant", "cosine")


def check_learning_rate_decay(config):
    """Refuses a warm-up outside ``[0, epochs)``, or a schedule for ``clr`` (it has its own).

    The name ``config.learning_rate_decay`` is checked by the config, among ``DECAYS``.
    """
    if not 0 <= config.warmup_epochs < config.epochs:
        raise ValueError(
            "Expected warmup_epochs to be >= 0 and below epochs "
            f"({config.epochs}). Received: warmup_epochs={config.warmup_epochs!r}"
        )
    schedule = config.learning_rate_decay != "constant" or config.warmup_epochs > 0
    if config.optimizer == "clr" and schedule:
        raise ValueError(
            "optimizer='clr' has its own cyclical schedule; learning_rate_decay and "
            "warmup_epochs are for 'adam' and 'lazy_adam'. Received: "
            f"learning_rate_decay={config.learning_rate_decay!r}, "
            f"warmup_epochs={config.warmup_epochs!r}"
        )
