"""Settings: the training configuration, its presets, checks and the keys of older files."""
