"""Batched Craftax environments over the C reference (backend="c")."""

from __future__ import annotations

import numpy as np

from pycraftax import _state
from pycraftax._native import check, lib, ptr
from pycraftax import jax_random
from pycraftax.params import EnvParams, StaticEnvParams, to_c
from pycraftax.spaces import Box, Discrete

OBS_SIZE = int(lib.craftax_obs_size())
NUM_ACTIONS = 43


def check_keys(keys, num_envs: int) -> np.ndarray:
    """Validate raw JAX keys: uint32 [num_envs, 2]."""
    if not isinstance(keys, np.ndarray):
        raise TypeError(f"keys must be a numpy uint32 array of shape ({num_envs}, 2), got {type(keys).__name__}")
    if keys.dtype != np.uint32:
        raise TypeError(f"keys must have dtype uint32 (raw jax.random key data), got {keys.dtype}")
    if keys.shape != (num_envs, 2):
        raise ValueError(f"keys must have shape ({num_envs}, 2), got {keys.shape}")
    return np.ascontiguousarray(keys)


class CraftaxEnv:
    """`num_envs` full-Craftax envs stepped as one batch (Craftax-Symbolic-v1).

    Observations are float32 [num_envs, 8268], identical to craftax 1.6.1's
    render_craftax_symbolic for the same state.
    """

    env_id = "Craftax-Symbolic-v1"

    def __init__(self, num_envs: int, seed: int, params: EnvParams, static_params: StaticEnvParams):
        self.num_envs = num_envs
        self.params = params
        self.static_params = static_params
        self.backend = "c"
        self.single_observation_space = Box(0.0, 1.0, (OBS_SIZE,), np.float32)
        self.single_action_space = Discrete(NUM_ACTIONS)
        self._c_params = to_c(params)
        self._states = np.zeros((num_envs, _state.STATE_SIZE), dtype=np.uint8)
        self._key = jax_random.prng_key(seed)
        self._closed = False

    # -- episodes ---------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict]:
        """Reset every env. With `seed`, env i gets key split(PRNGKey(seed), num_envs)[i],
        exactly as `jax.vmap(env.reset)(jax.random.split(PRNGKey(seed), num_envs))`;
        without, fresh keys are drawn from the env's own key stream."""
        if seed is not None:
            keys = jax_random.split(jax_random.prng_key(seed), self.num_envs)
        else:
            self._key, sub = jax_random.split(self._key, 2)
            keys = jax_random.split(sub, self.num_envs)
        return self.reset_with_keys(keys)

    def reset_with_keys(self, keys: np.ndarray) -> tuple[np.ndarray, dict]:
        """`reset_env(keys[i], params)` of upstream's symbolic env for every env i."""
        self._check_open()
        keys = check_keys(keys, self.num_envs)
        obs = np.empty((self.num_envs, OBS_SIZE), dtype=np.float32)
        check(
            lib.craftax_reset_with_keys(
                ptr(self._states, "void *"),
                ptr(keys, "uint32_t *"),
                self.num_envs,
                self._c_params,
                ptr(obs, "float *"),
            ),
            "reset",
        )
        return obs, {}

    def observe(self) -> np.ndarray:
        """render_craftax_symbolic of the current states."""
        self._check_open()
        obs = np.empty((self.num_envs, OBS_SIZE), dtype=np.float32)
        check(lib.craftax_observe(ptr(self._states, "void *"), self.num_envs, ptr(obs, "float *")), "observe")
        return obs

    # -- parity hooks -----------------------------------------------------------------
    def get_state(self) -> dict[str, np.ndarray]:
        """Every EnvState leaf, [num_envs, *upstream shape], upstream dtype (a copy)."""
        self._check_open()
        return _state.get_state(self._states)

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Replace every env's state. Validates all leaves first; on error nothing changes."""
        self._check_open()
        converted = _state.validate_state(state, self.num_envs)
        _state.write_state(self._states, converted)

    # -- lifecycle --------------------------------------------------------------------
    def close(self) -> None:
        self._states = np.zeros((0, _state.STATE_SIZE), dtype=np.uint8)
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this env is closed")

    def __repr__(self) -> str:
        return f"CraftaxEnv({self.env_id!r}, num_envs={self.num_envs}, backend={self.backend!r})"
