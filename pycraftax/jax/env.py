"""Full Craftax (symbolic, and pixels) with craftax 1.6.1's environment interface, stepped by
the C reference through XLA FFI: usable inside jax.jit, jax.lax.scan and jax.vmap.

CraftaxPixelsEnv / CraftaxPixelsEnvNoAutoReset are craftax's pixel envs of the full game: the
same game and states, the obs upstream's picture / 255, float32 [130, 110, 3] (textures from
the installed craftax distribution, pycraftax.textures), worlds generated from reset_env's key
itself as upstream's pixel env does.

CraftaxSymbolicEnv / CraftaxSymbolicEnvNoAutoReset mirror craftax/craftax/envs/
craftax_symbolic_env.py over the gymnax-style bases of craftax/environment_base: same
methods, same returns (obs float32 [8268], state, reward float32, done bool, info with
"Achievements/<name>" and "discount"), same use of the key. The state is a CraftaxState
(pycraftax/jax/state.py), not craftax's EnvState; to_upstream_state converts.

step and reset are jitted as upstream's are, with one difference that keeps the GPU free of
host synchronisation: params that are concrete when the call is traced (None, EnvParams of
Python values, params closed over by the caller's jitted function) are packed on the host and
passed as a static argument, becoming an attribute of the FFI call; traced params go to the
handlers as an operand (pycraftax/jax/_ffi.py).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from pycraftax import params as _host_params
from pycraftax.achievements import ACHIEVEMENTS
from pycraftax.jax import _ffi
from pycraftax.jax.params import EnvParams, pack_on_host
from pycraftax.jax.state import ENV_ID, CraftaxState, check_state
from pycraftax.params import CRAFTAX_PIXELS_ENV_ID as PIXELS_ENV_ID

NUM_ACTIONS = 43
_ACHIEVEMENT_INDEX = np.array([index for _, index in ACHIEVEMENTS], dtype=np.int32)
_ACHIEVEMENT_KEYS = tuple(f"Achievements/{name}" for name, _ in ACHIEVEMENTS)


def _raw_key(key, argument: str = "key") -> jax.Array:
    """The two uint32 words of a threefry key (raw uint32 [2] or a typed jax.random.key)."""
    dtype = getattr(key, "dtype", None)
    if dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key):
        impl = str(jax.random.key_impl(key))
        if "threefry" not in impl:
            raise TypeError(f"{argument} must be a threefry2x32 key (craftax's), got a {impl} key")
        key = jax.random.key_data(key)
        dtype = key.dtype
    if dtype != jnp.uint32 or tuple(key.shape) != (2,):
        raise TypeError(
            f"{argument} must be one PRNG key: uint32 [2] (jax.random.PRNGKey) or a typed threefry key, got "
            f"{dtype} {tuple(getattr(key, 'shape', ()))}"
        )
    return key


def _action(action) -> jax.Array:
    if isinstance(action, (bool, np.bool_)):
        raise TypeError(f"action must be an integer in [0, {NUM_ACTIONS}), got the bool {action!r}")
    if isinstance(action, (int, np.integer)):
        if not 0 <= int(action) < NUM_ACTIONS:
            raise ValueError(f"action must be in [0, {NUM_ACTIONS}), got {action}")
        return jnp.int32(action)
    dtype, shape = getattr(action, "dtype", None), tuple(getattr(action, "shape", (None,)))
    if dtype is None or not jnp.issubdtype(dtype, jnp.integer) or shape != ():
        raise TypeError(f"action must be one integer action (int32 scalar) in [0, {NUM_ACTIONS}), got {dtype} {shape}")
    # out-of-range traced actions are rejected by the native call (pycraftax/jax/_ffi.py)
    return jnp.asarray(action).astype(jnp.int32)


def _info(achievements: jax.Array, done: jax.Array) -> dict:
    """log_achievements_to_info(state, done) plus "discount", from the achievements bits."""
    scaled = achievements.astype(jnp.float32) * done.astype(jnp.float32) * jnp.float32(100.0)
    info = {key: scaled[..., i] for key, i in zip(_ACHIEVEMENT_KEYS, _ACHIEVEMENT_INDEX)}
    info["discount"] = jnp.where(done, jnp.float32(0.0), jnp.float32(1.0))
    return info


class CraftaxSymbolicEnvNoAutoReset:
    """craftax's CraftaxSymbolicEnvNoAutoReset: step is step_env, with the key as given."""

    auto_reset = False
    pixels = False  # the pixel env's obs and worlds (CraftaxPixelsEnv*)

    def __init__(self, static_env_params=None):
        if static_env_params is not None:
            kwargs = {name: getattr(static_env_params, name) for name in _host_params.STATIC_PARAM_NAMES}
            _host_params.split_params(kwargs)  # raises unless they are upstream's defaults
        self.static_env_params = _host_params.StaticEnvParams()
        self.env_id = PIXELS_ENV_ID if self.pixels else ENV_ID
        if self.pixels:
            _ffi.set_pixel_atlas()  # before anything is traced: a missing craftax distribution fails here

    @property
    def default_params(self) -> EnvParams:
        return EnvParams()

    @staticmethod
    def default_static_params() -> _host_params.StaticEnvParams:
        return _host_params.StaticEnvParams()

    def step(self, key, state, action, params=None):
        params = self.default_params if params is None else params
        packed = pack_on_host(params)
        if packed is not None:
            return self._step_static_params(key, state, action, packed)
        return self._step_traced_params(key, state, action, params)

    def reset(self, key, params=None):
        params = self.default_params if params is None else params
        packed = pack_on_host(params)
        if packed is not None:
            return self._reset_static_params(key, packed)
        return self._reset_traced_params(key, params)

    def _step(self, key, state, action, params):
        return self.step_env(key, state, action, params)

    def _reset(self, key, params):
        return self.reset_env(key, params)

    def step_env(self, key, state, action, params):
        check_state(state, self.env_id)
        data, obs, reward, done = _ffi.step(state.data, _action(action), _raw_key(key), params, auto_reset=False,
                                            pixels=self.pixels)
        new_state = CraftaxState(data, self.env_id)
        return obs, new_state, reward, done, _info(new_state.leaf("achievements"), done)

    def reset_env(self, key, params):
        data, obs = _ffi.reset(_raw_key(key), params, pixels=self.pixels)
        return obs, CraftaxState(data, self.env_id)

    @property
    def name(self) -> str:
        return "Craftax-Symbolic-NoAutoReset-v1"

    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    def action_space(self, params=None):
        return _spaces().Discrete(NUM_ACTIONS)

    def observation_space(self, params=None):
        return _spaces().Box(0.0, 1.0, _ffi.PIXEL_OBS_SHAPE if self.pixels else (_ffi.OBS_SIZE,), dtype=jnp.float32)


class CraftaxSymbolicEnv(CraftaxSymbolicEnvNoAutoReset):
    """craftax's CraftaxSymbolicEnv: step splits the key into (step, reset) keys and, where the
    episode ends, returns the reset state and obs (reward, done and info stay the step's). One
    native call does both, so worlds are generated only where an episode ended."""

    auto_reset = True

    def _step(self, key, state, action, params):
        check_state(state, self.env_id)
        data, obs, reward, done, achievements = _ffi.step(
            state.data, _action(action), _raw_key(key), params, auto_reset=True, pixels=self.pixels
        )
        # the finished episode's achievements are zero unless done, as achievements * done is
        return obs, CraftaxState(data, self.env_id), reward, done, _info(achievements, done)

    @property
    def name(self) -> str:
        return "Craftax-Symbolic-v1"


def _jit_methods(cls) -> None:
    """cls's step and reset halves jitted as upstream's methods are (self static), the packed
    params static too in the _static_params forms."""
    cls._step_static_params = jax.jit(cls._step, static_argnums=(0, 4))
    cls._step_traced_params = jax.jit(cls._step, static_argnums=(0,))
    cls._reset_static_params = jax.jit(cls._reset, static_argnums=(0, 2))
    cls._reset_traced_params = jax.jit(cls._reset, static_argnums=(0,))


class CraftaxPixelsEnvNoAutoReset(CraftaxSymbolicEnvNoAutoReset):
    """craftax's CraftaxPixelsEnvNoAutoReset: the obs is the picture / 255, float32 [130, 110, 3]."""

    pixels = True

    @property
    def name(self) -> str:
        return "Craftax-Pixels-NoAutoReset-v1"


class CraftaxPixelsEnv(CraftaxSymbolicEnv):
    """craftax's CraftaxPixelsEnv (auto-reset)."""

    pixels = True

    @property
    def name(self) -> str:
        return "Craftax-Pixels-v1"


for _cls in (CraftaxSymbolicEnvNoAutoReset, CraftaxSymbolicEnv, CraftaxPixelsEnvNoAutoReset, CraftaxPixelsEnv):
    _jit_methods(_cls)


def _spaces():
    """craftax's spaces module where craftax is installed (the same objects upstream returns),
    else pycraftax's own Discrete/Box."""
    try:
        from craftax.environment_base import spaces
    except ImportError:
        from pycraftax import spaces
    return spaces


SUPPORTED = ("Craftax-Symbolic-v1", "Craftax-Symbolic-AutoReset-v1", "Craftax-Pixels-v1", "Craftax-Pixels-AutoReset-v1")


def make_craftax_env_from_name(name: str, auto_reset: bool):
    """craftax.craftax_env.make_craftax_env_from_name for the envs pycraftax implements."""
    if not isinstance(auto_reset, (bool, np.bool_)):
        raise TypeError(f"auto_reset must be True or False, got {auto_reset!r}")
    if name not in SUPPORTED or (name.endswith("-AutoReset-v1") and not auto_reset):
        allowed = list(SUPPORTED) if auto_reset else [n for n in SUPPORTED if not n.endswith("-AutoReset-v1")]
        raise ValueError(f"unknown or unsupported env {name!r} (auto_reset={auto_reset}); pycraftax.jax has {allowed}")
    if name.startswith("Craftax-Pixels"):
        return CraftaxPixelsEnv() if auto_reset else CraftaxPixelsEnvNoAutoReset()
    return CraftaxSymbolicEnv() if auto_reset else CraftaxSymbolicEnvNoAutoReset()
