"""Every layer's models saved to ``.keras`` and reloaded in one fresh process.

Each layer's test module says which models show its saving (``reload_cases()``:
each option that changes the saved config or weights); a fresh interpreter that
only imports ``hatt`` must rebuild every one of them and reproduce its outputs.
One process serves them all, since each start imports the backend again.
"""

from . import (
    test_context_attention,
    test_position_embedding,
    test_region_sum,
    test_transformer_block,
)
from ._layer_test import assert_reload_in_fresh_process

MODULES = (test_context_attention, test_position_embedding, test_region_sum, test_transformer_block)


def test_every_layers_models_reload_in_one_fresh_process(tmp_path):
    cases = [case for module in MODULES for case in module.reload_cases()]
    names = [name for name, _, _ in cases]
    assert len(set(names)) == len(names)  # one file each
    assert_reload_in_fresh_process(tmp_path, cases)
