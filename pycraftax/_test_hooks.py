"""The test extension pycraftax._craftax_test (or its CPU variant's twin): the parity hooks of reference_c/testing/
(craftax_test_* functions and CRAFTAX_SUB_* ids), which the shipped extension leaves out.

It exists only in a build made with PYCRAFTAX_TEST_HOOKS=1; importing this module without it
raises ImportError saying how to build it, so a test that needs the hooks fails, never skips.
"""

from __future__ import annotations

import importlib

import numpy as np

from pycraftax._native import EXTENSION_MODULE, check

# the test extension of the CPU variant pycraftax._native loaded: it shares that one's types
_TEST_MODULE = EXTENSION_MODULE.replace("_craftax_c", "_craftax_test", 1)
try:
    _test = importlib.import_module(_TEST_MODULE)
except ImportError as exc:
    raise ImportError(
        f"pycraftax's test extension ({_TEST_MODULE}) is not built; the parity tests need it. "
        "Build it from the repository root with: PYCRAFTAX_TEST_HOOKS=1 PYCRAFTAX_CUDA=0 "
        "pip install -e \".[test,jax]\"  (nox -s tests does this)"
    ) from exc
ffi, lib = _test.ffi, _test.lib


def ptr(array: np.ndarray, ctype: str):
    """A C pointer of the test extension's ffi to a C-contiguous numpy array (no copy)."""
    assert array.flags.c_contiguous, "internal error: non-contiguous buffer passed to C"
    return ffi.cast(ctype, ffi.from_buffer(array, require_writable=False))


__all__ = ["check", "ffi", "lib", "ptr"]
