"""Loading of the compiled C reference and helpers around its ffi."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import numpy as np


def _shadowing_note() -> str:
    """Why the extension is missing when this package is a source tree that shadows an installed copy."""
    here = Path(__file__).resolve().parent
    if not (here.parent / "setup.py").is_file() or not (here.parent / "reference_c").is_dir():
        return ""
    # another pycraftax on sys.path that has the extension: the install this tree hides (the
    # clone's own pycraftax.egg-info, left by pip's build, would name the tree itself)
    installed = None
    for entry in sys.path:
        candidate = Path(entry or ".").resolve() / "pycraftax"
        if candidate != here and candidate.is_dir() and any(candidate.glob("_craftax_c.*")):
            installed = candidate
            break
    if installed is None:
        return ""
    return (
        f"Python imported the source tree {here}, which shadows the installed pycraftax ({installed}): "
        f"the current directory (or sys.path) puts the repository {here.parent} first, and its pycraftax/ "
        "holds no compiled extension. Run Python from any other directory (e.g. `cd ..`), or install the "
        "clone in place with `pip install -e .` so that the source tree is the installed package."
    )


# The CPU variants of the extension (pycraftax/_build.py builds them): PYCRAFTAX_CPU_VARIANT
# picks one by name; "auto" takes the fastest this CPU runs.
CPU_VARIANTS = ("baseline", "x86-64-v3")


def _load_extension():
    """(module, variant) of the C extension this CPU runs best."""
    requested = os.environ.get("PYCRAFTAX_CPU_VARIANT", "auto")
    if requested not in ("auto",) + CPU_VARIANTS:
        raise ImportError(f"PYCRAFTAX_CPU_VARIANT must be one of {('auto',) + CPU_VARIANTS}, got {requested!r}")
    try:
        baseline = importlib.import_module("pycraftax._craftax_c")
    except ImportError as exc:
        note = _shadowing_note()
        raise ImportError(
            note or "pycraftax's C extension (pycraftax._craftax_c) is not built. From the repository root, install "
            "the package with `pip install .` (or `pip install -e .`); building it needs a C compiler."
        ) from exc
    if requested == "baseline":
        return baseline, "baseline"
    runs_v3 = bool(getattr(baseline.lib, "pycraftax_cpu_runs_x86_64_v3", lambda: 0)())
    try:
        v3 = importlib.import_module("pycraftax._craftax_c_x86_64_v3")
    except ImportError:
        v3 = None
    if requested == "x86-64-v3" and not (runs_v3 and v3):
        why = ("this CPU lacks its instructions (AVX2, FMA, BMI2)" if not runs_v3 else
               "this build has no pycraftax._craftax_c_x86_64_v3 (built only for x86-64, without PYCRAFTAX_NATIVE "
               "and PYCRAFTAX_SANITIZE)")
        raise ImportError(f"PYCRAFTAX_CPU_VARIANT=x86-64-v3: {why}; unset it to pick automatically")
    return (v3, "x86-64-v3") if runs_v3 and v3 is not None else (baseline, "baseline")


_extension, CPU_VARIANT = _load_extension()
ffi, lib = _extension.ffi, _extension.lib
EXTENSION_MODULE = _extension.__name__


def compile_args() -> str:
    """The compiler flags of the loaded extension."""
    if not hasattr(lib, "pycraftax_compile_args"):
        return "unknown (an extension built before pycraftax_compile_args existed)"
    return ffi.string(lib.pycraftax_compile_args()).decode()


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
