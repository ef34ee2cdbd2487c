"""The root conftest's guard against the process mapping limit: XLA:CPU's compiled kernels hold
memory mappings until their executables are dropped, and the guard drops them when crowded."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not Path("/proc/sys/vm/max_map_count").exists(), reason="needs Linux's /proc mapping limit")
def test_crowded_process_drops_compiled_kernels_and_their_mappings():
    if "jax" not in sys.modules:
        from pycraftax.porting import set_reference_jax_flags

        set_reference_jax_flags()
    jax = pytest.importorskip("jax")
    guard = _root_conftest()

    @jax.jit
    def many_kernels(x):
        for i in range(40):  # a loop XLA cannot fuse into one kernel
            x = jax.numpy.sort(x * (i + 1.5)) + jax.numpy.cumsum(x)
        return x

    x = np.arange(64, dtype=np.float32)
    before = guard._maps_in_use()
    many_kernels(x).block_until_ready()
    compiled = guard._maps_in_use()
    assert compiled > before + 10  # the kernels hold mappings while their executable lives
    assert not guard.release_compiled_executables_if_crowded(share=1.0)  # under the limit: kept
    assert guard.release_compiled_executables_if_crowded(share=0.0)
    assert guard._maps_in_use() < compiled - 10
    np.testing.assert_array_equal(many_kernels(x), many_kernels(x))  # and it compiles again
