"""Batched Craftax environments over the C reference (backend="c"): the native calls of
pycraftax.vec_env.CraftaxVecEnv through the cffi extension pycraftax._craftax_c.
CBackendEnv holds them for any game whose C API has the craftax_* call set (full Craftax
here, Craftax-Classic's craftax_classic_* in pycraftax.classic_env)."""

from __future__ import annotations

import numpy as np

from pycraftax import _state
from pycraftax._native import check, ffi, lib, ptr
from pycraftax.achievements import ACHIEVEMENTS, NUM_ACHIEVEMENTS, log_achievements_to_info
from pycraftax.params import to_c
from pycraftax.vec_env import NUM_ACTIONS, OBS_SIZE, CraftaxVecEnv, available_host_memory, plain_copy

__all__ = ["CBackendEnv", "CraftaxEnv", "HOST_BYTES_PER_ENV", "NUM_ACTIONS", "OBS_SIZE"]

if int(lib.craftax_state_size()) != _state.STATE_SIZE:  # the buffers below are sized by the table
    raise ImportError(f"pycraftax: the C extension's state is {int(lib.craftax_state_size())} bytes but "
                      f"pycraftax/_leaf_table.py says {_state.STATE_SIZE}; rebuild the extension, or regenerate the "
                      "table with `python reference_c/tools/write_leaf_table.py` after a layout change")


def host_bytes_per_env(state_size: int, obs_size: int, num_achievements: int) -> int:
    """Host bytes per env of one step: the state, the obs step() returns and the one the caller
    may still hold from the step before, and the per-env outputs (rewards, flags, achievements)."""
    return state_size + 2 * 4 * obs_size + 4 * 4 + 3 + 2 * num_achievements


HOST_BYTES_PER_ENV = host_bytes_per_env(_state.STATE_SIZE, OBS_SIZE, NUM_ACHIEVEMENTS)


class CBackendEnv(CraftaxVecEnv):
    """The C backend of one game: a subclass names the game's C functions (`_c_prefix`:
    craftax_reset_with_keys, ..._step_autoreset, ..._step_optimistic, ..._step_with_keys,
    ..._observe), its sizes, leaf table, achievement table and params struct."""

    backend = "c"
    _c_prefix = ""
    state_size = 0
    achievement_table: tuple[tuple[str, int], ...] = ()

    def __init__(self, num_envs: int, seed: int, params, static_params, resets: str = "auto",
                 reset_ratio: int | None = None):
        super().__init__(num_envs, seed, params, static_params, obs="float", resets=resets, reset_ratio=reset_ratio)
        n = self.num_envs
        per_env = host_bytes_per_env(self.state_size, self.obs_size, len(self.achievement_table))
        need, free = n * per_env, available_host_memory()
        if free is not None and need > free:
            raise MemoryError(
                f"backend='c': {n} envs need about {need / 2**30:.2f} GiB of memory ({per_env} bytes "
                f"per env) but only {free / 2**30:.2f} GiB are available; use at most about "
                f"{free // per_env} envs"
            )
        self._c_params = self._make_c_params(params)
        self._states = np.zeros((n, self.state_size), dtype=np.uint8)
        self._episode_return = np.zeros(n, dtype=np.float32)
        self._episode_length = np.zeros(n, dtype=np.int32)

    @property
    def episode_progress(self) -> dict[str, np.ndarray]:
        """The running "episode_return" (float32 [N]) and "episode_length" (int32 [N]) of each
        env's current episode, the totals step() reports in info when it ends (copies). A
        trainer's checkpoint keeps them with get_state() and sets them back on resume."""
        with self._lock:
            return dict(episode_return=self._episode_return.copy(), episode_length=self._episode_length.copy())

    @episode_progress.setter
    def episode_progress(self, value: dict) -> None:
        n = self.num_envs
        expected = {"episode_return", "episode_length"}
        if not isinstance(value, dict) or set(value) != expected:
            keys = sorted(map(repr, value)) if isinstance(value, dict) else type(value).__name__
            raise ValueError(f"episode_progress must be a dict with exactly the keys {sorted(expected)}, got {keys}")
        ret = plain_copy(value["episode_return"], "episode_progress['episode_return']",
                         f"a numpy float array of shape ({n},)")
        length = plain_copy(value["episode_length"], "episode_progress['episode_length']",
                            f"a numpy integer array of shape ({n},)")
        for name, arr in (("episode_return", ret), ("episode_length", length)):
            if arr.shape != (n,):
                raise ValueError(f"episode_progress[{name!r}] must have shape ({n},), got {arr.shape}")
        if ret.dtype.kind != "f":
            raise ValueError(f"episode_progress['episode_return'] must be finite floats, got dtype {ret.dtype}")
        with np.errstate(over="ignore"):  # stored as float32: checked as such (1e300 becomes inf)
            ret = ret.astype(np.float32)
        if not np.all(np.isfinite(ret)):
            raise ValueError("episode_progress['episode_return'] must be finite floats (as float32), got "
                             f"{ret[~np.isfinite(ret)][0]}")
        int32_max = int(np.iinfo(np.int32).max)
        if length.dtype.kind not in "iu":
            raise ValueError(f"episode_progress['episode_length'] must be integers >= 0 (and <= {int32_max}), got "
                             f"dtype {length.dtype}")
        if np.any((length < 0) | (length > int32_max)):
            raise ValueError(f"episode_progress['episode_length'] must be integers >= 0 (and <= {int32_max}: stored "
                             f"as int32), got min {length.min()} max {length.max()}")
        with self._lock:
            self._episode_return[:] = ret
            self._episode_length[:] = length

    def _make_c_params(self, params):
        raise NotImplementedError

    def _c(self, name: str):
        return getattr(lib, f"{self._c_prefix}_{name}")

    def _check(self, code: int, what: str, arguments: str | None = None) -> None:
        """check() of a C call of this env: for a refused argument, what the arguments must be
        (default: the step's action range; actions and params are validated before they reach
        C), and the env's leaf table for a refused state."""
        if arguments is None:
            arguments = f"actions must be integers in [0, {self.num_actions})"
        check(code, what, arguments=arguments, table=self._state_table())

    def _obs_args(self) -> tuple:
        """Trailing arguments of the game's C calls that say how to render the obs (the pixel
        envs' atlas); none for the symbolic obs."""
        return ()

    def _native_reset(self, keys: np.ndarray) -> np.ndarray:
        obs = np.empty((self.num_envs, *self.obs_shape), dtype=np.float32)
        self._check(self._c("reset_with_keys")(ptr(self._states, "void *"), ptr(keys, "uint32_t *"), self.num_envs,
                                                self._c_params, ptr(obs, "float *"), *self._obs_args()), "reset",
                    arguments="params.day_length must be >= 1")
        self._episode_return[:] = 0.0
        self._episode_length[:] = 0
        return obs

    def _step_obs(self) -> np.ndarray:
        """The array a step() writes its obs into: a fresh one (the pixel envs reuse theirs)."""
        return np.empty((self.num_envs, *self.obs_shape), dtype=np.float32)

    def _native_step(self, actions: np.ndarray, sub_key: np.ndarray):
        n = self.num_envs
        obs = self._step_obs()
        reward = np.empty(n, dtype=np.float32)
        done = np.empty(n, dtype=np.uint8)
        terminated = np.empty(n, dtype=np.uint8)
        truncated = np.empty(n, dtype=np.uint8)
        final_ach = np.empty((n, len(self.achievement_table)), dtype=np.uint8)
        # zeros where no episode ends (the C step writes only the ended envs' rows)
        final_obs = np.zeros((n, *self.obs_shape), dtype=np.float32) if self.report_final_obs else None
        outputs = (ptr(obs, "float *"), ffi.NULL if final_obs is None else ptr(final_obs, "float *"),
                   ptr(reward, "float *"), ptr(done, "uint8_t *"), ptr(terminated, "uint8_t *"),
                   ptr(truncated, "uint8_t *"), ptr(final_ach, "uint8_t *"))
        if self.resets == "optimistic":
            sub_key = np.ascontiguousarray(sub_key)
            self._check(self._c("step_optimistic")(ptr(self._states, "void *"), ptr(actions, "int32_t *"),
                                                    ptr(sub_key, "uint32_t *"), n, self.reset_ratio, self._c_params,
                                                    *outputs, ffi.NULL, *self._obs_args()), "step")
        else:
            from pycraftax import jax_random

            keys = jax_random.split(sub_key, n)
            self._check(self._c("step_autoreset")(ptr(self._states, "void *"), ptr(actions, "int32_t *"),
                                                   ptr(keys, "uint32_t *"), n, self._c_params, *outputs,
                                                   *self._obs_args()), "step")
        done = done.astype(bool)
        self._episode_return += reward
        self._episode_length += 1
        episode_return = np.where(done, self._episode_return, np.float32(0)).astype(np.float32)
        episode_length = np.where(done, self._episode_length, 0).astype(np.int32)
        self._episode_return[done] = 0.0
        self._episode_length[done] = 0
        achievements = final_ach.astype(bool)
        info = log_achievements_to_info(achievements, done, self.achievement_table)
        info.update(
            done=done,
            discount=(1.0 - done.astype(np.float32)).astype(np.float32),
            episode_return=episode_return,
            episode_length=episode_length,
            achievements=achievements,
        )
        if final_obs is not None:
            info["final_obs"] = final_obs
        return obs, reward, terminated.astype(bool), truncated.astype(bool), info

    def _native_step_with_keys(self, actions: np.ndarray, keys: np.ndarray):
        n = self.num_envs
        obs = np.empty((n, *self.obs_shape), dtype=np.float32)
        reward = np.empty(n, dtype=np.float32)
        done = np.empty(n, dtype=np.uint8)
        self._check(
            self._c("step_with_keys")(
                ptr(self._states, "void *"), ptr(actions, "int32_t *"), ptr(keys, "uint32_t *"), n,
                self._c_params, ptr(obs, "float *"), ptr(reward, "float *"), ptr(done, "uint8_t *"),
                *self._obs_args(),
            ),
            "step_with_keys",
        )
        done = done.astype(bool)
        achievements = self._state_table().by_name["achievements"].view(self._states).astype(bool)
        info = log_achievements_to_info(achievements, done, self.achievement_table)
        info["discount"] = (1.0 - done.astype(np.float32)).astype(np.float32)
        return obs, reward, done, info

    def _native_observe(self) -> np.ndarray:
        obs = np.empty((self.num_envs, *self.obs_shape), dtype=np.float32)
        self._check(self._c("observe")(ptr(self._states, "void *"), self.num_envs, ptr(obs, "float *"),
                                       *self._obs_args()), "observe")
        return obs

    def _native_host_states(self) -> np.ndarray:
        return self._states

    def _native_write_states(self, converted: dict[str, np.ndarray]) -> None:
        self._state_table().write_state(self._states, converted)

    def _native_close(self) -> None:
        self._states = np.zeros((0, self.state_size), dtype=np.uint8)


class CraftaxEnv(CBackendEnv):
    """`num_envs` full-Craftax envs on the CPU (OpenMP over the envs of a batch).

    Observations are float32 [num_envs, 8268] numpy arrays, identical to craftax 1.6.1's
    render_craftax_symbolic for the same state. See CraftaxVecEnv for seeding and threads.
    """

    _c_prefix = "craftax"
    state_size = _state.STATE_SIZE
    achievement_table = ACHIEVEMENTS

    def _make_c_params(self, params):
        return to_c(params)

    def observe_compact(self) -> np.ndarray:
        """The compact observation records of the current states, uint8 [N, 1008]
        (pycraftax.obs_compact; what backend="cuda" returns with obs="compact"):
        obs_compact.expand(records) is observe() bit for bit, in 1/33 of the bytes."""
        with self._lock:
            self._check_has_states("observe_compact")
            records = np.empty((self.num_envs, int(lib.craftax_obs_compact_size())), dtype=np.uint8)
            self._check(lib.craftax_observe_compact(ptr(self._states, "void *"), self.num_envs,
                                                    ptr(records, "uint8_t *")), "observe_compact")
            return records
