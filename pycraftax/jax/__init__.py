"""pycraftax inside JAX: craftax 1.6.1's environment interface over the C reference, callable
inside jax.jit, jax.lax.scan and jax.vmap through XLA FFI handlers (CPU; the GPU too where the
install built the CUDA handlers).

    from pycraftax.jax import make_craftax_env_from_name
    env = make_craftax_env_from_name("Craftax-Symbolic-v1", auto_reset=True)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, env.default_params)

Every env of upstream's make_craftax_env_from_name: Craftax-Symbolic-v1, Craftax-Pixels-v1,
Craftax-Classic-Symbolic-v1 and Craftax-Classic-Pixels-v1 (and their -AutoReset-v1 aliases).
The Classic and pixel envs run on the CPU handlers; the CUDA handlers serve Craftax-Symbolic-v1.

Needs the [jax] extra (from the clone's root: pip install ".[jax]"); the FFI library comes with
the install where jaxlib was there at build time, else the first import builds it (ffi_build.py).
On the GPU an out-of-range action is reported by a later call or by raise_if_invalid_actions()
(pycraftax/jax/_ffi.py says why).
"""

from __future__ import annotations

try:
    import jax  # noqa: F401
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "pycraftax.jax needs jax: install the [jax] extra (from the clone's root: pip install \".[jax]\"; "
        "its FFI library is then built at the first import)"
    ) from exc

from pycraftax.jax import _ffi  # noqa: F401  (loads and registers the FFI handlers, or says why not)
from pycraftax.jax._ffi import raise_if_invalid_actions
from pycraftax.jax.env import (
    CLASSIC_NUM_ACTIONS,
    NUM_ACTIONS,
    CraftaxClassicPixelsEnv,
    CraftaxClassicPixelsEnvNoAutoReset,
    CraftaxClassicSymbolicEnv,
    CraftaxClassicSymbolicEnvNoAutoReset,
    CraftaxPixelsEnv,
    CraftaxPixelsEnvNoAutoReset,
    CraftaxSymbolicEnv,
    CraftaxSymbolicEnvNoAutoReset,
    make_craftax_env_from_name,
)
from pycraftax.jax.params import ClassicEnvParams, EnvParams
from pycraftax.jax.state import CLASSIC_STATE_SIZE, STATE_SIZE, CraftaxState, from_upstream_state, to_upstream_state

__all__ = [
    "make_craftax_env_from_name",
    "CraftaxSymbolicEnv",
    "CraftaxSymbolicEnvNoAutoReset",
    "CraftaxPixelsEnv",
    "CraftaxPixelsEnvNoAutoReset",
    "CraftaxClassicSymbolicEnv",
    "CraftaxClassicSymbolicEnvNoAutoReset",
    "CraftaxClassicPixelsEnv",
    "CraftaxClassicPixelsEnvNoAutoReset",
    "CraftaxState",
    "EnvParams",
    "ClassicEnvParams",
    "to_upstream_state",
    "from_upstream_state",
    "raise_if_invalid_actions",
    "NUM_ACTIONS",
    "CLASSIC_NUM_ACTIONS",
    "STATE_SIZE",
    "CLASSIC_STATE_SIZE",
]
