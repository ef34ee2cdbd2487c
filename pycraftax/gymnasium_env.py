"""gymnasium adapters for pycraftax: a single `gymnasium.Env`, a batched `gymnasium.vector.VectorEnv`,
and `register_envs()`, which registers every pycraftax env id under the `pycraftax/` namespace.

    import gymnasium, pycraftax
    env = gymnasium.make("pycraftax/Craftax-Symbolic-v1")
    envs = gymnasium.make_vec("pycraftax/Craftax-Symbolic-v1", num_envs=64,
                              vectorization_mode="vector_entry_point", backend="c")

Both adapters use only pycraftax's public env API (`pycraftax.make`, `reset`, `step`,
`reset_with_keys`, `step_with_keys`, `get_state`, `report_final_obs`), so they sit on either backend.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from pycraftax import jax_random, registry, rules
from pycraftax.vec_env import check_reset_options

NAMESPACE = "pycraftax"

# Info keys that hold a value for every env at every step; every other key of the env's step
# info describes the episode that just ended, so its vector-info mask is the done mask.
_PER_STEP_INFO_KEYS = ("done", "discount")


def gym_id(env_id: str) -> str:
    """The gymnasium id of a pycraftax env id: "Craftax-Symbolic-v1" -> "pycraftax/Craftax-Symbolic-v1"."""
    return f"{NAMESPACE}/{env_id}"


def register_envs() -> list[str]:
    """Register every id of `registry.list_envs()` with gymnasium (idempotent); returns the
    gymnasium ids. `gymnasium.make(id)` gives a `CraftaxGymEnv`, `gymnasium.make_vec(id,
    num_envs=N)` a `CraftaxVectorEnv` (its vector entry point).

    A build of modified rules (pycraftax.rules) registers its variant ids instead
    ("pycraftax/Craftax-Symbolic-v1-rules-<fingerprint>"), and the official ids raise, naming
    the variant's: a modified game cannot publish under the official name by accident."""
    from gymnasium.envs import registration

    try:
        fingerprint = rules.rules_fingerprint()
    except ImportError:
        fingerprint = None  # neither the C extension nor the CUDA library: nothing to tell apart
    ids = []
    for env_id in registry.list_envs():
        variant = rules.variant_id(env_id, fingerprint) if fingerprint else env_id
        name = gym_id(variant)
        if name not in registration.registry:
            gymnasium.register(
                id=name,
                entry_point=f"{__name__}:CraftaxGymEnv",
                vector_entry_point=f"{__name__}:CraftaxVectorEnv",
                kwargs={"env_id": env_id},
                # The env keeps order itself (step before reset raises) and passes check_env, so
                # gymnasium.make returns it unwrapped.
                order_enforce=False,
                disable_env_checker=True,
            )
        official = registration.registry.get(gym_id(env_id))
        if variant != env_id and (official is None or official.entry_point != f"{__name__}:refuse_official_id"):
            registration.registry.pop(gym_id(env_id), None)
            gymnasium.register(id=gym_id(env_id), entry_point=f"{__name__}:refuse_official_id",
                               vector_entry_point=f"{__name__}:refuse_official_id",
                               kwargs={"env_id": env_id, "variant": name}, order_enforce=False,
                               disable_env_checker=True)
        ids.append(name)
    return ids


def refuse_official_id(env_id: str, variant: str, **kwargs):
    """The entry point of an official id in a build of modified rules."""
    raise RuntimeError(f"this pycraftax build runs {rules.describe()}, not the released game: its gymnasium id for "
                       f"{env_id} is {variant!r} (pycraftax.rules.variant_id); {gym_id(env_id)!r} stays the released "
                       "rules' (docs/PORTING.md)")


# -- rendering ---------------------------------------------------------------------------------
RENDER_MODES = ("rgb_array",)
RENDER_FPS = 8
DEFAULT_RENDER_BLOCK = 16  # pixels a map cell of render(): a 208 x 176 picture of the full game


def _check_render_mode(render_mode):
    if render_mode is not None and render_mode not in RENDER_MODES:
        raise ValueError(f"render_mode must be None or one of {list(RENDER_MODES)}, got {render_mode!r}")
    return render_mode


def _check_render_block(block_size) -> int:
    from pycraftax import pixels

    return pixels.check_block_size(block_size)


# -- spaces ------------------------------------------------------------------------------------
def to_gymnasium_space(space) -> gymnasium.spaces.Space:
    """`space` as a gymnasium space: returned as is when it already is one, else converted from
    pycraftax's own Box/Discrete (low, high, shape, dtype / n, dtype)."""
    if isinstance(space, gymnasium.spaces.Space):
        return space
    if hasattr(space, "n"):
        return gymnasium.spaces.Discrete(int(space.n), dtype=np.dtype(getattr(space, "dtype", np.int64)))
    dtype = np.dtype(space.dtype)
    low = np.broadcast_to(np.asarray(space.low, dtype=dtype), space.shape).copy()
    high = np.broadcast_to(np.asarray(space.high, dtype=dtype), space.shape).copy()
    return gymnasium.spaces.Box(low=low, high=high, shape=tuple(space.shape), dtype=dtype)


def _host(array) -> np.ndarray:
    """A numpy array of an env output (numpy already, or a CUDA backend device array)."""
    return array if isinstance(array, np.ndarray) else np.asarray(array)


def _check_seed(seed) -> None:
    if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer))):
        raise TypeError(f"seed must be an int in [0, 2**32) or None, got {type(seed).__name__} {seed!r}")


# -- the single env ----------------------------------------------------------------------------
class CraftaxGymEnv(gymnasium.Env):
    """One Craftax env as a `gymnasium.Env`, stepped as upstream's EnvironmentNoAutoReset:
    an episode ends with terminated or truncated and the obs of its final state; `reset()`
    starts the next one.

    Seeding: `reset(seed=S)` builds the world `registry.make(env_id, num_envs=1).reset(seed=S)`
    builds (key split(PRNGKey(S), 1)[0]) and starts the step key stream at split(PRNGKey(S))[1];
    each step takes `stream, key = split(stream)` and runs upstream `step_env(key, ...)`; a reset
    without a seed takes its world key from the same stream. So (S, actions) fixes the whole
    trajectory. The first reset without any seed draws S from gymnasium's `np_random`.

    terminated: died or beat the necromancer; truncated: reached params.max_timesteps otherwise.
    """

    metadata = {"render_modes": list(RENDER_MODES), "render_fps": RENDER_FPS}

    def __init__(self, env_id: str = "Craftax-Symbolic-v1", backend: str = "c", render_mode: str | None = None,
                 render_block_size: int = DEFAULT_RENDER_BLOCK, **params):
        self.render_mode = _check_render_mode(render_mode)
        self.render_block_size = _check_render_block(render_block_size)
        if "num_envs" in params:
            raise TypeError(f"num_envs does not apply to the single env (gymnasium.make gives one env); for "
                            f"{params['num_envs']!r} envs use gymnasium.make_vec({gym_id(env_id)!r}, "
                            f"num_envs=..., vectorization_mode='vector_entry_point')")
        for name in ("seed", "resets", "reset_ratio"):
            if name in params:
                raise TypeError(f"{name!r} does not apply to the single env, which resets only on reset() "
                                f"(seed it with reset(seed=...))")
        self._env = registry.make(env_id, num_envs=1, backend=backend, **params)
        self.backend = self._env.backend
        self.observation_space = to_gymnasium_space(self._env.single_observation_space)
        self.action_space = to_gymnasium_space(self._env.single_action_space)
        self._stream = None  # the step key stream; None until the first reset
        self._needs_reset = True

    @property
    def craftax_env(self):
        """The wrapped one-env pycraftax env (its parity hooks: get_state, set_state, ...)."""
        return self._env

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        _check_seed(seed)
        check_reset_options(options, "gymnasium.make()")
        key = None if seed is None else jax_random.prng_key(seed)  # validates the seed before any change
        super().reset(seed=None if seed is None else int(seed))
        if key is None and self._stream is None:
            key = jax_random.prng_key(int(self.np_random.integers(2**32)))
        if key is not None:
            world_key = jax_random.split(key, 1)
            self._stream = jax_random.split(key, 2)[1]
        else:
            self._stream, world_key = jax_random.split(self._stream, 2)
            world_key = world_key[None]
        obs, _ = self._env.reset_with_keys(world_key)
        self._needs_reset = False
        return _host(obs)[0].copy(), {}

    def step(self, action):
        if self._needs_reset:
            raise RuntimeError("step() needs reset() first (before the first step and after an episode ends)")
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action[()]
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TypeError(f"action must be an integer in [0, {self.action_space.n}), got {type(action).__name__}")
        if not 0 <= action < self.action_space.n:
            raise ValueError(f"action must be an integer in [0, {self.action_space.n}), got {action!r}")
        self._stream, key = jax_random.split(self._stream, 2)
        obs, reward, done, info = self._env.step_with_keys(np.array([action], dtype=np.int32), key[None])
        done = bool(_host(done)[0])
        terminated = truncated = False
        if done:
            terminated = self._ended_by_rules()
            truncated = not terminated
            self._needs_reset = True
        step_info = {name: _host(value)[0].item() for name, value in info.items()}
        return _host(obs)[0].copy(), float(_host(reward)[0]), terminated, truncated, step_info

    def render(self):
        """With render_mode="rgb_array": uint8 [H, W, 3], the env as upstream's textured renderer
        draws it for people (its view with the inventory, render_block_size pixels a cell;
        pycraftax.pixels); None without a render_mode."""
        if self.render_mode is None:
            return None
        return self._env.render(index=0, block_size=self.render_block_size)

    def _ended_by_rules(self) -> bool:
        """Whether the ended episode ended by death or by beating the boss (upstream's
        is_game_over without its time limit), read from the final state."""
        return bool(self._env.ended_by_rules(self._env.get_state())[0])

    def close(self):
        self._env.close()
        super().close()

    def __repr__(self) -> str:
        return f"CraftaxGymEnv({self._env.env_id!r}, backend={self.backend!r})"


# -- the vector env ----------------------------------------------------------------------------
class CraftaxVectorEnv(VectorEnv):
    """`num_envs` Craftax envs as one `gymnasium.vector.VectorEnv` over `pycraftax.make`
    (backend "c", "cuda" or "auto"), same-step auto-reset as upstream
    (`metadata["autoreset_mode"]` is AutoresetMode.SAME_STEP): where an env ends, the step's
    obs is the first obs of its next episode.

    Outputs are numpy arrays on every backend. infos are in gymnasium's vector form: every key
    `k` of the env's step info comes with a bool mask `_k` ("done" and "discount" hold for every
    env; "episode_return", "episode_length", "achievements" and "Achievements/<name>" for the
    envs that ended). When any env ends, infos also hold "final_info" (those episode keys with
    their masks) and "final_obs", float32 [N, *obs shape]: where "_final_obs" (the done mask),
    the obs of the state env i's episode ended in, which the native step renders before the
    reset replaces it (the wrapped env's `report_final_obs`, on for this adapter); zeros
    elsewhere. `final_obs_is_terminal` is True (kept for code that checks it). A truncated
    episode bootstraps from it exactly: docs/GYMNASIUM.md.
    """

    def __init__(self, num_envs: int, env_id: str = "Craftax-Symbolic-v1", backend: str = "auto", seed: int = 0,
                 render_mode: str | None = None, render_block_size: int = DEFAULT_RENDER_BLOCK, **make_kwargs):
        self.render_mode = _check_render_mode(render_mode)
        self.render_block_size = _check_render_block(render_block_size)
        if isinstance(num_envs, np.integer):
            num_envs = int(num_envs)
        self._env = registry.make(env_id, num_envs=num_envs, backend=backend, seed=seed, **make_kwargs)
        self.num_envs = self._env.num_envs
        self.backend = self._env.backend
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": list(RENDER_MODES),
                         "render_fps": RENDER_FPS}
        self.single_observation_space = to_gymnasium_space(self._env.single_observation_space)
        self.single_action_space = to_gymnasium_space(self._env.single_action_space)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._env.report_final_obs = True
        self.final_obs_is_terminal = True
        self._needs_reset = True

    @property
    def craftax_env(self):
        """The wrapped pycraftax env (its parity hooks: get_state, set_state, step_with_keys...)."""
        return self._env

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset every env: with `seed`, env i gets `pycraftax` reset(seed=seed)'s world i."""
        _check_seed(seed)
        check_reset_options(options, "gymnasium.make_vec()")
        obs, info = self._env.reset(seed=None if seed is None else int(seed))
        self._needs_reset = False
        return _host(obs).copy(), self._vector_info(info, np.zeros(self.num_envs, dtype=bool))

    def step(self, actions):
        if self._needs_reset:
            raise RuntimeError("step() needs reset() first")
        obs, reward, terminated, truncated, info = self._env.step(self._env_actions(actions))
        terminated = _host(terminated).astype(bool)
        truncated = _host(truncated).astype(bool)
        info = dict(info)
        final_obs = info.pop("final_obs")
        done = terminated | truncated
        infos = self._vector_info(info, done)
        if done.any():
            infos["final_info"] = {name: value for name, value in infos.items()
                                   if name.lstrip("_") not in _PER_STEP_INFO_KEYS}
            infos["_final_info"] = done.copy()
            infos["final_obs"] = _host(final_obs).copy()
            infos["_final_obs"] = done.copy()
        return _host(obs).copy(), _host(reward).astype(np.float32, copy=True), terminated, truncated, infos

    def _env_actions(self, actions):
        """Actions as the env takes them: device arrays pass through to the CUDA backend;
        anything else (numpy, lists, CPU torch tensors, JAX arrays) becomes numpy int32."""
        if self.backend == "cuda" and hasattr(actions, "__cuda_array_interface__"):
            return actions
        if hasattr(actions, "__cuda_array_interface__") and hasattr(actions, "cpu"):
            actions = actions.cpu()
        array = np.asarray(actions)
        if not np.issubdtype(array.dtype, np.integer):
            raise TypeError(f"actions must be integers in [0, {self.single_action_space.n}), got dtype {array.dtype}")
        if array.dtype != np.int32:  # range first, so that the cast cannot wrap a bad action into range
            bad = (array < 0) | (array >= self.single_action_space.n)
            if bad.any():
                index = np.unravel_index(int(np.flatnonzero(bad)[0]), array.shape)
                raise ValueError(f"actions{list(index)} = {array[index]} is outside [0, {self.single_action_space.n})")
            array = np.ascontiguousarray(array, dtype=np.int32)
        return array

    def _vector_info(self, info: dict, done: np.ndarray) -> dict:
        """The env's batched info with gymnasium's `_key` masks (a mask the env gives is kept)."""
        out = {name: _host(value) for name, value in info.items()}
        all_envs = np.ones(self.num_envs, dtype=bool)
        for name in info:
            if not name.startswith("_") and f"_{name}" not in out:
                out[f"_{name}"] = (all_envs if name in _PER_STEP_INFO_KEYS else done).copy()
        return out

    def render(self):
        """With render_mode="rgb_array": a tuple of num_envs uint8 [H, W, 3] pictures (as the
        single env's render()); None without a render_mode."""
        if self.render_mode is None:
            return None
        return tuple(self._env.render(index=i, block_size=self.render_block_size) for i in range(self.num_envs))

    def close_extras(self, **kwargs):
        self._env.close()

    def __repr__(self) -> str:
        return f"CraftaxVectorEnv({self._env.env_id!r}, num_envs={self.num_envs}, backend={self.backend!r})"
