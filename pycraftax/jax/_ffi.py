"""Loading and registration of the XLA FFI handlers, and the jax.ffi calls over them.

CPU: _craftax_xla.so (reference_c/xla/craftax_xla_ffi.cc over the C reference), always.
CUDA: _craftax_xla_cuda.so (cuda/xla/craftax_xla_ffi.cu over libcraftax_cuda.so), where the
install built it; it has reset and step, and the auto-reset step is composed from them on
the GPU (CUDA_AVAILABLE tells pycraftax/jax/env.py).

Each call takes one env's operands (states uint8 [STATE_SIZE], key uint32 [2], action int32 [],
params uint32 [PARAMS_WORDS]); under jax.vmap, vmap_method="broadcast_all" gives every
operand the batch axes in front (unbatched ones broadcast), at any vmap depth, and the handler
runs the whole batch as one native call. The states operand is aliased to the states result.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import jax
import jax.numpy as jnp

from pycraftax import _state
from pycraftax._native import lib
from pycraftax.jax.params import PARAMS_WORDS

LIBRARY = Path(__file__).with_name("_craftax_xla.so")
CUDA_LIBRARY = Path(__file__).with_name("_craftax_xla_cuda.so")
OBS_SIZE = int(lib.craftax_obs_size())
NUM_ACHIEVEMENTS = 67
_CPU_TARGETS = {
    "pycraftax_reset": "PycraftaxResetCpu",
    "pycraftax_step": "PycraftaxStepCpu",
    "pycraftax_step_autoreset": "PycraftaxStepAutoResetCpu",
}
_CUDA_TARGETS = {"pycraftax_reset": "PycraftaxResetCuda", "pycraftax_step": "PycraftaxStepCuda"}


def _load() -> ctypes.CDLL:
    if not LIBRARY.exists():
        raise ImportError(
            f"pycraftax.jax needs the XLA FFI library {LIBRARY.name}, which this install does not have: "
            "it is built when jax is importable at build time. Install the [jax] extra, then rebuild "
            "pycraftax with it visible: pip install 'pycraftax[jax]' && pip install --no-build-isolation "
            "--force-reinstall --no-deps pycraftax (PYCRAFTAX_JAX_FFI=1 makes a failed build an error)"
        )
    library = ctypes.CDLL(str(LIBRARY))
    _check_abi(library.pycraftax_xla_abi, LIBRARY.name)
    for target, symbol in _CPU_TARGETS.items():
        jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(getattr(library, symbol)), platform="cpu")
    return library


def _check_abi(abi, name: str) -> None:
    abi.restype = ctypes.c_int
    sizes = [ctypes.c_int64() for _ in range(3)]
    version = abi(*(ctypes.byref(s) for s in sizes))
    built = (version, sizes[0].value, sizes[1].value, sizes[2].value)
    expected = (int(lib.craftax_api_version()), _state.STATE_SIZE, PARAMS_WORDS, OBS_SIZE)
    # the CUDA library has its own API version; only the layout must agree
    if built[1:] != expected[1:] or (name == LIBRARY.name and built[0] != expected[0]):
        raise ImportError(
            f"{name} was built from another version of the C reference (api, state size, params words, "
            f"obs size = {built}, this package {expected}); rebuild pycraftax"
        )


def _load_cuda() -> ctypes.CDLL | None:
    """Register the CUDA handlers where they were built; None where not (CPU-only installs)."""
    if not CUDA_LIBRARY.exists():
        return None
    library = ctypes.CDLL(str(CUDA_LIBRARY))
    _check_abi(library.pycraftax_xla_cuda_abi, CUDA_LIBRARY.name)
    for target, symbol in _CUDA_TARGETS.items():
        jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(getattr(library, symbol)), platform="CUDA")
    return library


_LIBRARY = _load()
_CUDA_LIBRARY = _load_cuda()
CUDA_AVAILABLE = _CUDA_LIBRARY is not None


def _call(target: str, result_shapes, operands, alias_states: bool):
    call = jax.ffi.ffi_call(
        target,
        result_shapes,
        vmap_method="broadcast_all",
        input_output_aliases={0: 0} if alias_states else None,
    )
    return call(*operands)


def reset(keys: jax.Array, params_words: jax.Array):
    batch = keys.shape[:-1]
    return _call(
        "pycraftax_reset",
        (
            jax.ShapeDtypeStruct(batch + (_state.STATE_SIZE,), jnp.uint8),
            jax.ShapeDtypeStruct(batch + (OBS_SIZE,), jnp.float32),
        ),
        (keys, params_words),
        alias_states=False,
    )


def step(states: jax.Array, actions: jax.Array, keys: jax.Array, params_words: jax.Array, auto_reset: bool):
    """(states, obs, rewards, dones[, final_achievements]) after one step of every env."""
    batch = actions.shape
    shapes = [
        jax.ShapeDtypeStruct(states.shape, jnp.uint8),
        jax.ShapeDtypeStruct(batch + (OBS_SIZE,), jnp.float32),
        jax.ShapeDtypeStruct(batch, jnp.float32),
        jax.ShapeDtypeStruct(batch, jnp.bool_),
    ]
    if auto_reset:
        shapes.append(jax.ShapeDtypeStruct(batch + (NUM_ACHIEVEMENTS,), jnp.uint8))
    target = "pycraftax_step_autoreset" if auto_reset else "pycraftax_step"
    return _call(target, tuple(shapes), (states, actions, keys, params_words), alias_states=True)
