"""Run a Python snippet in a fresh interpreter (same Keras backend) and read its JSON report."""

import json
import os
import subprocess
import sys

import keras


def run_json_script(script, *args, timeout=300):
    """Run ``python -c script *args``; assert it succeeds; return its last stdout line as JSON.

    The child gets the parent's Keras backend, so a reload test checks the
    backend it runs under.
    """
    env = {**os.environ, "KERAS_BACKEND": keras.backend.backend(), "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
