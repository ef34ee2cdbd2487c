"""Batched Craftax environments over the C reference (backend="c")."""

from __future__ import annotations

import numpy as np

from pycraftax import _state
from pycraftax._native import check, ffi, lib, ptr
from pycraftax import jax_random
from pycraftax.achievements import NUM_ACHIEVEMENTS, log_achievements_to_info
from pycraftax.params import EnvParams, StaticEnvParams, to_c
from pycraftax.spaces import Box, Discrete

OBS_SIZE = int(lib.craftax_obs_size())
NUM_ACTIONS = 43


def check_actions(actions, num_envs: int) -> np.ndarray:
    """Validate actions: a numpy integer array of shape (num_envs,) with values in [0, 43)."""
    if not isinstance(actions, np.ndarray):
        raise TypeError(
            f"actions must be a numpy integer array of shape ({num_envs},), got {type(actions).__name__}"
        )
    if not np.issubdtype(actions.dtype, np.integer):
        raise TypeError(f"actions must have an integer dtype, got {actions.dtype}")
    if actions.shape != (num_envs,):
        raise ValueError(f"actions must have shape ({num_envs},), got {actions.shape}")
    if actions.size and (actions.min() < 0 or actions.max() >= NUM_ACTIONS):
        bad = int(np.flatnonzero((actions < 0) | (actions >= NUM_ACTIONS))[0])
        raise ValueError(f"actions[{bad}] = {actions[bad]} is outside [0, {NUM_ACTIONS})")
    return np.ascontiguousarray(actions, dtype=np.int32)


def reset_keys(env_key: np.ndarray, seed: int | None, num_envs: int) -> tuple[np.ndarray, np.ndarray]:
    """(the env's next key, the reset keys) of reset(seed=...) on every backend: with a seed,
    env i gets split(PRNGKey(seed), num_envs)[i] and the env's key stream is untouched;
    without, keys are split from the next key of that stream."""
    if seed is not None:
        return env_key, jax_random.split(jax_random.prng_key(seed), num_envs)
    env_key, sub = jax_random.split(env_key, 2)
    return env_key, jax_random.split(sub, num_envs)


def check_keys(keys, num_envs: int) -> np.ndarray:
    """Validate raw JAX keys: uint32 [num_envs, 2]."""
    if not isinstance(keys, np.ndarray):
        raise TypeError(f"keys must be a numpy uint32 array of shape ({num_envs}, 2), got {type(keys).__name__}")
    if keys.dtype != np.uint32:
        raise TypeError(f"keys must have dtype uint32 (raw jax.random key data), got {keys.dtype}")
    if keys.shape != (num_envs, 2):
        raise ValueError(f"keys must have shape ({num_envs}, 2), got {keys.shape}")
    return np.ascontiguousarray(keys)


RESET_MODES = ("auto", "optimistic")
DEFAULT_RESET_RATIO = 16


def check_resets(resets: str, reset_ratio, num_envs: int) -> tuple[str, int | None]:
    """Validate make()'s reset strategy; returns (resets, reset_ratio or None for "auto").

    "auto": upstream CraftaxSymbolicEnv.step, a fresh world per ended episode.
    "optimistic": Craftax_Baselines' OptimisticResetVecEnvWrapper (the official PPO-RNN's
    default): num_envs / reset_ratio fresh worlds per step, shared by the envs that ended;
    reset_ratio defaults to min(16, num_envs), as ppo_rnn.py sets it, and must divide num_envs.
    """
    if resets not in RESET_MODES:
        raise ValueError(f"resets must be one of {list(RESET_MODES)}, got {resets!r}")
    if resets == "auto":
        if reset_ratio is not None:
            raise ValueError("reset_ratio applies to resets='optimistic' only")
        return resets, None
    if reset_ratio is None:
        reset_ratio = min(DEFAULT_RESET_RATIO, num_envs)
    if isinstance(reset_ratio, bool) or not isinstance(reset_ratio, (int, np.integer)):
        raise TypeError(f"reset_ratio must be an int, got {type(reset_ratio).__name__}")
    if reset_ratio < 1 or num_envs % reset_ratio:
        raise ValueError(f"reset_ratio must be >= 1 and divide num_envs={num_envs}, got {reset_ratio}")
    return resets, int(reset_ratio)


class CraftaxEnv:
    """`num_envs` full-Craftax envs stepped as one batch (Craftax-Symbolic-v1).

    Observations are float32 [num_envs, 8268], identical to craftax 1.6.1's
    render_craftax_symbolic for the same state.
    """

    env_id = "Craftax-Symbolic-v1"

    def __init__(self, num_envs: int, seed: int, params: EnvParams, static_params: StaticEnvParams,
                 resets: str = "auto", reset_ratio: int | None = None):
        self.num_envs = num_envs
        self.resets, self.reset_ratio = check_resets(resets, reset_ratio, num_envs)
        self.params = params
        self.static_params = static_params
        self.backend = "c"
        self.single_observation_space = Box(0.0, 1.0, (OBS_SIZE,), np.float32)
        self.single_action_space = Discrete(NUM_ACTIONS)
        self._c_params = to_c(params)
        self._states = np.zeros((num_envs, _state.STATE_SIZE), dtype=np.uint8)
        self._key = jax_random.prng_key(seed)
        self._closed = False
        self._episode_return = np.zeros(num_envs, dtype=np.float32)
        self._episode_length = np.zeros(num_envs, dtype=np.int32)

    # -- episodes ---------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict]:
        """Reset every env. With `seed`, env i gets key split(PRNGKey(seed), num_envs)[i],
        exactly as `jax.vmap(env.reset)(jax.random.split(PRNGKey(seed), num_envs))`;
        without, fresh keys are drawn from the env's own key stream."""
        self._key, keys = reset_keys(self._key, seed, self.num_envs)
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
        self._episode_return[:] = 0.0
        self._episode_length[:] = 0
        return obs, {}

    def step(self, actions: np.ndarray):
        """One step of every env with same-step auto-reset, like upstream CraftaxSymbolicEnv.step.

        `self._key, sub = split(self._key)`. resets="auto": env i steps with key k_i, where
        k = split(sub, num_envs); inside, key_step, key_reset = split(k_i) exactly as upstream's
        auto-reset env. resets="optimistic": OptimisticResetVecEnvWrapper.step(sub, ...)
        (see check_resets). Where an episode ended, obs is the first obs of the next episode.

        Returns (obs float32 [N, 8268], reward float32 [N], terminated bool [N],
        truncated bool [N], info). terminated: died or beat the necromancer; truncated:
        timestep reached max_timesteps (and not terminated). info holds, for every env,
        "episode_return" (float32) and "episode_length" (int32) of the episode that just
        ended (0 where none ended), "achievements" bool [N, 67] of the finished episode,
        "done", "discount" and upstream's "Achievements/<name>" entries.
        """
        self._check_open()
        actions = check_actions(actions, self.num_envs)
        self._key, sub = jax_random.split(self._key, 2)
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
            sub = np.ascontiguousarray(sub)
            check(lib.craftax_step_optimistic(ptr(self._states, "void *"), ptr(actions, "int32_t *"),
                                              ptr(sub, "uint32_t *"), n, self.reset_ratio, self._c_params,
                                              *outputs, ffi.NULL), "step")
        else:
            keys = jax_random.split(sub, n)
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

    def step_with_keys(self, actions: np.ndarray, keys: np.ndarray):
        """Exactly upstream `step_env(keys[i], state_i, actions[i], params)` of the symbolic
        env for every env: no auto-reset (a finished episode keeps evolving).

        Returns (obs float32 [N, 8268], reward float32 [N], done bool [N], info) with
        upstream's info: "Achievements/<name>" = achievements * done * 100 and
        "discount" = 1 - done.
        """
        self._check_open()
        actions = check_actions(actions, self.num_envs)
        keys = check_keys(keys, self.num_envs)
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

    def observe(self) -> np.ndarray:
        """render_craftax_symbolic of the current states."""
        self._check_open()
        obs = np.empty((self.num_envs, OBS_SIZE), dtype=np.float32)
        check(lib.craftax_observe(ptr(self._states, "void *"), self.num_envs, ptr(obs, "float *")), "observe")
        return obs

    def observe_compact(self) -> np.ndarray:
        """The compact observation records of the current states, uint8 [N, 1008]
        (pycraftax.obs_compact; what backend="cuda" returns with obs="compact"):
        obs_compact.expand(records) is observe() bit for bit, in 1/33 of the bytes."""
        self._check_open()
        records = np.empty((self.num_envs, int(lib.craftax_obs_compact_size())), dtype=np.uint8)
        check(lib.craftax_observe_compact(ptr(self._states, "void *"), self.num_envs, ptr(records, "uint8_t *")),
              "observe_compact")
        return records

    # -- parity hooks -----------------------------------------------------------------
    def get_state(self) -> dict[str, np.ndarray]:
        """Every EnvState leaf, [num_envs, *upstream shape], upstream dtype (a copy)."""
        self._check_open()
        return _state.get_state(self._states)

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Replace every env's state. Validates all leaves first (dtypes, shapes, value domains,
        and health > 0 at every masked melee, passive and ranged mob, as in every state
        reachable from reset); on error nothing changes."""
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
        resets = "" if self.resets == "auto" else f", resets='optimistic', reset_ratio={self.reset_ratio}"
        return f"CraftaxEnv({self.env_id!r}, num_envs={self.num_envs}, backend={self.backend!r}{resets})"
