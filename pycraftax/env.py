"""Batched Craftax environments over the C reference (backend="c"): the native calls of
pycraftax.vec_env.CraftaxVecEnv through the cffi extension pycraftax._craftax_c."""

from __future__ import annotations

import numpy as np

from pycraftax import _state
from pycraftax._native import check, ffi, lib, ptr
from pycraftax.achievements import NUM_ACHIEVEMENTS, log_achievements_to_info
from pycraftax.params import EnvParams, StaticEnvParams, to_c
from pycraftax.vec_env import NUM_ACTIONS, OBS_SIZE, CraftaxVecEnv, available_host_memory

__all__ = ["CraftaxEnv", "HOST_BYTES_PER_ENV", "NUM_ACTIONS", "OBS_SIZE"]

if int(lib.craftax_state_size()) != _state.STATE_SIZE:  # the buffers below are sized by the table
    raise ImportError(f"pycraftax: the C extension's state is {int(lib.craftax_state_size())} bytes but "
                      f"pycraftax/_leaf_table.py says {_state.STATE_SIZE}; rebuild the extension, or regenerate the "
                      "table with `python reference_c/tools/write_leaf_table.py` after a layout change")

# Host bytes per env of one step: the state, the obs step() returns and the one the caller
# may still hold from the step before, and the per-env outputs (rewards, flags, 67 achievements).
HOST_BYTES_PER_ENV = _state.STATE_SIZE + 2 * 4 * OBS_SIZE + 4 * 4 + 3 + 2 * NUM_ACHIEVEMENTS


class CraftaxEnv(CraftaxVecEnv):
    """`num_envs` full-Craftax envs on the CPU (OpenMP over the envs of a batch).

    Observations are float32 [num_envs, 8268] numpy arrays, identical to craftax 1.6.1's
    render_craftax_symbolic for the same state. See CraftaxVecEnv for seeding and threads.
    """

    backend = "c"

    def __init__(self, num_envs: int, seed: int, params: EnvParams, static_params: StaticEnvParams,
                 resets: str = "auto", reset_ratio: int | None = None):
        super().__init__(num_envs, seed, params, static_params, obs="float", resets=resets, reset_ratio=reset_ratio)
        n = self.num_envs
        need, free = n * HOST_BYTES_PER_ENV, available_host_memory()
        if free is not None and need > free:
            raise MemoryError(
                f"backend='c': {n} envs need about {need / 2**30:.2f} GiB of memory ({HOST_BYTES_PER_ENV} bytes "
                f"per env) but only {free / 2**30:.2f} GiB are available; use at most about "
                f"{free // HOST_BYTES_PER_ENV} envs"
            )
        self._c_params = to_c(params)
        self._states = np.zeros((n, _state.STATE_SIZE), dtype=np.uint8)
        self._episode_return = np.zeros(n, dtype=np.float32)
        self._episode_length = np.zeros(n, dtype=np.int32)

    def _native_reset(self, keys: np.ndarray) -> np.ndarray:
        obs = np.empty((self.num_envs, OBS_SIZE), dtype=np.float32)
        check(lib.craftax_reset_with_keys(ptr(self._states, "void *"), ptr(keys, "uint32_t *"), self.num_envs,
                                          self._c_params, ptr(obs, "float *")), "reset")
        self._episode_return[:] = 0.0
        self._episode_length[:] = 0
        return obs

    def _native_step(self, actions: np.ndarray, sub_key: np.ndarray):
        n = self.num_envs
        obs = np.empty((n, OBS_SIZE), dtype=np.float32)
        reward = np.empty(n, dtype=np.float32)
        done = np.empty(n, dtype=np.uint8)
        terminated = np.empty(n, dtype=np.uint8)
        truncated = np.empty(n, dtype=np.uint8)
        final_ach = np.empty((n, NUM_ACHIEVEMENTS), dtype=np.uint8)
        outputs = (ptr(obs, "float *"), ptr(reward, "float *"), ptr(done, "uint8_t *"), ptr(terminated, "uint8_t *"),
                   ptr(truncated, "uint8_t *"), ptr(final_ach, "uint8_t *"))
        if self.resets == "optimistic":
            sub_key = np.ascontiguousarray(sub_key)
            check(lib.craftax_step_optimistic(ptr(self._states, "void *"), ptr(actions, "int32_t *"),
                                              ptr(sub_key, "uint32_t *"), n, self.reset_ratio, self._c_params,
                                              *outputs, ffi.NULL), "step")
        else:
            from pycraftax import jax_random

            keys = jax_random.split(sub_key, n)
            check(lib.craftax_step_autoreset(ptr(self._states, "void *"), ptr(actions, "int32_t *"),
                                             ptr(keys, "uint32_t *"), n, self._c_params, *outputs), "step")
        done = done.astype(bool)
        self._episode_return += reward
        self._episode_length += 1
        episode_return = np.where(done, self._episode_return, np.float32(0)).astype(np.float32)
        episode_length = np.where(done, self._episode_length, 0).astype(np.int32)
        self._episode_return[done] = 0.0
        self._episode_length[done] = 0
        achievements = final_ach.astype(bool)
        info = log_achievements_to_info(achievements, done)
        info.update(
            done=done,
            discount=(1.0 - done.astype(np.float32)).astype(np.float32),
            episode_return=episode_return,
            episode_length=episode_length,
            achievements=achievements,
        )
        return obs, reward, terminated.astype(bool), truncated.astype(bool), info

    def _native_step_with_keys(self, actions: np.ndarray, keys: np.ndarray):
        n = self.num_envs
        obs = np.empty((n, OBS_SIZE), dtype=np.float32)
        reward = np.empty(n, dtype=np.float32)
        done = np.empty(n, dtype=np.uint8)
        check(
            lib.craftax_step_with_keys(
                ptr(self._states, "void *"), ptr(actions, "int32_t *"), ptr(keys, "uint32_t *"), n,
                self._c_params, ptr(obs, "float *"), ptr(reward, "float *"), ptr(done, "uint8_t *"),
            ),
            "step_with_keys",
        )
        done = done.astype(bool)
        achievements = _state.LEAF_BY_NAME["achievements"].view(self._states).astype(bool)
        info = log_achievements_to_info(achievements, done)
        info["discount"] = (1.0 - done.astype(np.float32)).astype(np.float32)
        return obs, reward, done, info

    def _native_observe(self) -> np.ndarray:
        obs = np.empty((self.num_envs, OBS_SIZE), dtype=np.float32)
        check(lib.craftax_observe(ptr(self._states, "void *"), self.num_envs, ptr(obs, "float *")), "observe")
        return obs

    def observe_compact(self) -> np.ndarray:
        """The compact observation records of the current states, uint8 [N, 1008]
        (pycraftax.obs_compact; what backend="cuda" returns with obs="compact"):
        obs_compact.expand(records) is observe() bit for bit, in 1/33 of the bytes."""
        with self._lock:
            self._check_open()
            records = np.empty((self.num_envs, int(lib.craftax_obs_compact_size())), dtype=np.uint8)
            check(lib.craftax_observe_compact(ptr(self._states, "void *"), self.num_envs, ptr(records, "uint8_t *")),
                  "observe_compact")
            return records

    def _native_host_states(self) -> np.ndarray:
        return self._states

    def _native_write_states(self, converted: dict[str, np.ndarray]) -> None:
        _state.write_state(self._states, converted)

    def _native_close(self) -> None:
        self._states = np.zeros((0, _state.STATE_SIZE), dtype=np.uint8)
