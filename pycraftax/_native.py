"""Loading of the compiled C reference and helpers around its ffi."""

from __future__ import annotations

import numpy as np

try:
    from pycraftax._craftax_c import ffi, lib
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "pycraftax's C extension is not built. Install the package with `pip install .` "
        "(or `pip install -e .`) from the repository root; it needs a C compiler."
    ) from exc

ERRORS = {
    lib.CRAFTAX_ERR_NULL: "a required pointer was NULL",
    lib.CRAFTAX_ERR_NUM_ENVS: "num_envs must be >= 0",
    lib.CRAFTAX_ERR_NO_MEMORY: "out of memory",
    lib.CRAFTAX_ERR_ARGUMENT: "invalid argument",
}


def check(code: int, what: str) -> None:
    """Turn a negative return code of the C API into an exception."""
    if code >= 0:
        return
    message = f"{what} failed: {ERRORS.get(code, f'error {code}')}"
    if code == lib.CRAFTAX_ERR_NO_MEMORY:
        raise MemoryError(message)
    raise RuntimeError(message)


def ptr(array: np.ndarray, ctype: str):
    """A C pointer to a C-contiguous numpy array (no copy)."""
    assert array.flags.c_contiguous, "internal error: non-contiguous buffer passed to C"
    return ffi.cast(ctype, ffi.from_buffer(array, require_writable=False))
