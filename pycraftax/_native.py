"""Loading of the compiled C reference and helpers around its ffi."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import numpy as np


def _shadowing_note() -> str:
    """Why the extension is missing when this package is a source tree that shadows an installed copy."""
    here = Path(__file__).resolve().parent
    if not (here.parent / "setup.py").is_file() or not (here.parent / "reference_c").is_dir():
        return ""
    try:
        installed = Path(importlib.metadata.distribution("pycraftax").locate_file("pycraftax")).resolve()
    except importlib.metadata.PackageNotFoundError:
        return ""
    if installed == here:
        return ""
    return (
        f" Python imported the source tree {here}, not the installed package ({installed}): the current "
        "directory (or sys.path) puts the repository first and its pycraftax/ has no compiled extension. "
        "Run Python from another directory, or install in place with `pip install -e .`."
    )


try:
    from pycraftax._craftax_c import ffi, lib
except ImportError as exc:
    raise ImportError(
        "pycraftax's C extension (pycraftax._craftax_c) is not built. Install the package with `pip install .` "
        "(or `pip install -e .`) from the repository root; it needs a C compiler." + _shadowing_note()
    ) from exc

ERRORS = {
    lib.CRAFTAX_ERR_NULL: "a required pointer was NULL",
    lib.CRAFTAX_ERR_NUM_ENVS: "num_envs must be >= 0",
    lib.CRAFTAX_ERR_NO_MEMORY: "out of memory",
    lib.CRAFTAX_ERR_ARGUMENT: "invalid argument",
}


def check(code: int, what: str, arguments: str | None = None, table=None) -> None:
    """Turn a negative return code of the C API into an exception. `arguments` says what the
    call's arguments must be (for CRAFTAX_ERR_ARGUMENT); `table` is the game's
    pycraftax._state.LeafTable, which names the leaf of a CRAFTAX_ERR_STATE."""
    if code >= 0:
        return
    if code == lib.CRAFTAX_ERR_ARGUMENT and arguments:
        raise ValueError(f"{what} failed: {arguments}; nothing changed")
    if code == lib.CRAFTAX_ERR_STATE and table is not None:
        error = ffi.new("CraftaxStateError *")
        lib.craftax_last_state_error(error)
        raise RuntimeError(f"{what} refused, nothing changed: {table.error_message(error)}. reset, step and "
                           "set_state keep every state inside this domain, so the env's state buffer was written "
                           "some other way")
    message = f"{what} failed: {ERRORS.get(code, f'error {code}')}"
    if code == lib.CRAFTAX_ERR_NO_MEMORY:
        raise MemoryError(message)
    raise RuntimeError(message)


def ptr(array: np.ndarray, ctype: str):
    """A C pointer to a C-contiguous numpy array (no copy)."""
    assert array.flags.c_contiguous, "internal error: non-contiguous buffer passed to C"
    return ffi.cast(ctype, ffi.from_buffer(array, require_writable=False))
