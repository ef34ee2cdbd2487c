"""Full Craftax and Craftax-Classic (symbolic, and pixels) with craftax 1.6.1's environment
interface, stepped by the C reference through XLA FFI: usable inside jax.jit, jax.lax.scan and
jax.vmap.

CraftaxPixelsEnv / CraftaxPixelsEnvNoAutoReset are craftax's pixel envs of the full game: the
same game and states, the obs upstream's picture / 255, float32 [130, 110, 3] (textures from
the installed craftax distribution, pycraftax.textures), worlds generated from reset_env's key
itself as upstream's pixel env does.

CraftaxSymbolicEnv / CraftaxSymbolicEnvNoAutoReset mirror craftax/craftax/envs/
craftax_symbolic_env.py over the gymnax-style bases of craftax/environment_base: same
methods, same returns (obs float32 [8268], state, reward float32, done bool, info with
"Achievements/<name>" and "discount"), same use of the key. The state is a CraftaxState
(pycraftax/jax/state.py), not craftax's EnvState; to_upstream_state converts.

CraftaxClassicSymbolicEnv(NoAutoReset) and CraftaxClassicPixelsEnv(NoAutoReset) are the same
over Craftax-Classic: craftax/craftax_classic/envs/craftax_symbolic_env.py and
craftax_pixels_env.py (17 actions, obs float32 [1345] or [63, 63, 3], ClassicEnvParams, info
with Classic's 22 "Achievements/<name>", "score" and "discount"), their states craftax_classic's
EnvState leaves.

step and reset are jitted as upstream's are, with one difference that keeps the GPU free of
host synchronisation: params that are concrete when the call is traced (None, EnvParams of
Python values, params closed over by the caller's jitted function) are packed on the host and
passed as a static argument, becoming an attribute of the FFI call; traced params go to the
handlers as an operand (pycraftax/jax/_ffi.py).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from pycraftax import params as _host_params
from pycraftax.achievements import ACHIEVEMENTS, CLASSIC_ACHIEVEMENTS
from pycraftax.jax import _ffi
from pycraftax.jax.params import ClassicEnvParams, EnvParams, pack_on_host
from pycraftax.jax.state import ENV_ID, CraftaxState, check_state
from pycraftax.params import CLASSIC_ENV_ID, CLASSIC_PIXELS_ENV_ID
from pycraftax.params import CRAFTAX_PIXELS_ENV_ID as PIXELS_ENV_ID

NUM_ACTIONS = 43
CLASSIC_NUM_ACTIONS = _ffi.CLASSIC_NUM_ACTIONS
# (index into state.achievements, info key) of each game's achievements, in upstream's enum order
_ACHIEVEMENT_INFO = {
    False: (np.array([index for _, index in ACHIEVEMENTS], dtype=np.int32),
            tuple(f"Achievements/{name}" for name, _ in ACHIEVEMENTS)),
    True: (np.array([index for _, index in CLASSIC_ACHIEVEMENTS], dtype=np.int32),
           tuple(f"Achievements/{name}" for name, _ in CLASSIC_ACHIEVEMENTS)),
}


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


def _action(action, num_actions: int = NUM_ACTIONS) -> jax.Array:
    if isinstance(action, (bool, np.bool_)):
        raise TypeError(f"action must be an integer in [0, {num_actions}), got the bool {action!r}")
    if isinstance(action, (int, np.integer)):
        if not 0 <= int(action) < num_actions:
            raise ValueError(f"action must be in [0, {num_actions}), got {action}")
        return jnp.int32(action)
    dtype, shape = getattr(action, "dtype", None), tuple(getattr(action, "shape", (None,)))
    if dtype is None or not jnp.issubdtype(dtype, jnp.integer) or shape != ():
        raise TypeError(f"action must be one integer action (int32 scalar) in [0, {num_actions}), got {dtype} {shape}")
    # out-of-range traced actions are rejected by the native call (pycraftax/jax/_ffi.py)
    return jnp.asarray(action).astype(jnp.int32)


def _info(achievements: jax.Array, done: jax.Array, classic: bool = False) -> dict:
    """log_achievements_to_info(state, done) plus "discount", from the achievements bits; for
    Classic, its compute_score(state, done) (which adds "score") plus "discount"."""
    scaled = achievements.astype(jnp.float32) * done.astype(jnp.float32) * jnp.float32(100.0)
    index, keys = _ACHIEVEMENT_INFO[classic]
    info = {key: scaled[..., i] for key, i in zip(keys, index)}
    if classic:
        # craftax_classic/envs/common.py's geometric mean with an offset of 1%, as upstream writes it
        info["score"] = jnp.exp(jnp.mean(jnp.log(1 + scaled), axis=-1)) - 1.0
    info["discount"] = jnp.where(done, jnp.float32(0.0), jnp.float32(1.0))
    return info


class CraftaxSymbolicEnvNoAutoReset:
    """craftax's CraftaxSymbolicEnvNoAutoReset: step is step_env, with the key as given."""

    auto_reset = False
    pixels = False  # the pixel env's obs and worlds (CraftaxPixelsEnv*)
    classic = False  # Craftax-Classic (CraftaxClassic*)

    def __init__(self, static_env_params=None):
        static_cls = _host_params.ClassicStaticEnvParams if self.classic else _host_params.StaticEnvParams
        if static_env_params is not None:
            names = [f.name for f in dataclasses.fields(static_cls)]
            kwargs = {name: getattr(static_env_params, name) for name in names}
            _host_params.split_params(kwargs, classic=self.classic)  # raises unless they are upstream's defaults
        self.static_env_params = static_cls()
        if self.classic:
            self.env_id = CLASSIC_PIXELS_ENV_ID if self.pixels else CLASSIC_ENV_ID
        else:
            self.env_id = PIXELS_ENV_ID if self.pixels else ENV_ID
        self._num_actions = CLASSIC_NUM_ACTIONS if self.classic else NUM_ACTIONS
        if self.pixels:
            # before anything is traced: a missing craftax distribution fails here
            _ffi.set_pixel_atlas(classic=self.classic)

    @property
    def default_params(self):
        return ClassicEnvParams() if self.classic else EnvParams()

    @staticmethod
    def default_static_params() -> _host_params.StaticEnvParams:
        return _host_params.StaticEnvParams()

    def step(self, key, state, action, params=None):
        params = self.default_params if params is None else params
        packed = pack_on_host(params, self.classic)
        if packed is not None:
            return self._step_static_params(key, state, action, packed)
        return self._step_traced_params(key, state, action, params)

    def reset(self, key, params=None):
        params = self.default_params if params is None else params
        packed = pack_on_host(params, self.classic)
        if packed is not None:
            return self._reset_static_params(key, packed)
        return self._reset_traced_params(key, params)

    def _step(self, key, state, action, params):
        return self.step_env(key, state, action, params)

    def _reset(self, key, params):
        return self.reset_env(key, params)

    def step_env(self, key, state, action, params):
        check_state(state, self.env_id)
        data, obs, reward, done = _ffi.step(state.data, _action(action, self._num_actions), _raw_key(key), params,
                                            auto_reset=False, pixels=self.pixels, classic=self.classic)
        new_state = CraftaxState(data, self.env_id)
        return obs, new_state, reward, done, _info(new_state.leaf("achievements"), done, self.classic)

    def reset_env(self, key, params):
        data, obs = _ffi.reset(_raw_key(key), params, pixels=self.pixels, classic=self.classic)
        return obs, CraftaxState(data, self.env_id)

    @property
    def name(self) -> str:
        return "Craftax-Symbolic-NoAutoReset-v1"

    @property
    def num_actions(self) -> int:
        return self._num_actions

    def action_space(self, params=None):
        return _spaces().Discrete(self._num_actions)

    def observation_space(self, params=None):
        return _spaces().Box(0.0, 1.0, _ffi.obs_shape(self.classic, self.pixels), dtype=jnp.float32)


class CraftaxSymbolicEnv(CraftaxSymbolicEnvNoAutoReset):
    """craftax's CraftaxSymbolicEnv: step splits the key into (step, reset) keys and, where the
    episode ends, returns the reset state and obs (reward, done and info stay the step's). One
    native call does both, so worlds are generated only where an episode ended."""

    auto_reset = True

    def _step(self, key, state, action, params):
        check_state(state, self.env_id)
        data, obs, reward, done, achievements = _ffi.step(
            state.data, _action(action, self._num_actions), _raw_key(key), params, auto_reset=True,
            pixels=self.pixels, classic=self.classic
        )
        # the finished episode's achievements are zero unless done, as achievements * done is
        return obs, CraftaxState(data, self.env_id), reward, done, _info(achievements, done, self.classic)

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


class _Classic:
    """What the Craftax-Classic envs change: the game, and its StaticEnvParams."""

    classic = True

    @staticmethod
    def default_static_params() -> _host_params.ClassicStaticEnvParams:
        return _host_params.ClassicStaticEnvParams()


class CraftaxClassicSymbolicEnvNoAutoReset(_Classic, CraftaxSymbolicEnvNoAutoReset):
    """craftax_classic's CraftaxClassicSymbolicEnvNoAutoReset: obs float32 [1345], 17 actions."""

    @property
    def name(self) -> str:
        return "Craftax-Classic-Symbolic-NoAutoReset-v1"


class CraftaxClassicSymbolicEnv(_Classic, CraftaxSymbolicEnv):
    """craftax_classic's CraftaxClassicSymbolicEnv (auto-reset)."""

    @property
    def name(self) -> str:
        return "Craftax-Classic-Symbolic-v1"


class CraftaxClassicPixelsEnvNoAutoReset(_Classic, CraftaxSymbolicEnvNoAutoReset):
    """craftax_classic's CraftaxClassicPixelsEnvNoAutoReset: the obs is the picture / 255,
    float32 [63, 63, 3]."""

    pixels = True

    @property
    def name(self) -> str:
        return "Craftax-Classic-Pixels-NoAutoReset-v1"


class CraftaxClassicPixelsEnv(_Classic, CraftaxSymbolicEnv):
    """craftax_classic's CraftaxClassicPixelsEnv (auto-reset)."""

    pixels = True

    @property
    def name(self) -> str:
        return "Craftax-Classic-Pixels-v1"


for _cls in (CraftaxSymbolicEnvNoAutoReset, CraftaxSymbolicEnv, CraftaxPixelsEnvNoAutoReset, CraftaxPixelsEnv,
             CraftaxClassicSymbolicEnvNoAutoReset, CraftaxClassicSymbolicEnv, CraftaxClassicPixelsEnvNoAutoReset,
             CraftaxClassicPixelsEnv):
    _jit_methods(_cls)


def _spaces():
    """craftax's spaces module where craftax is installed (the same objects upstream returns),
    else pycraftax's own Discrete/Box."""
    try:
        from craftax.environment_base import spaces
    except ImportError:
        from pycraftax import spaces
    return spaces


# name -> (auto-reset class, no-auto-reset class), with upstream's names (craftax/craftax_env.py):
# the "-AutoReset-v1" aliases only with auto_reset=True
_CLASSES = {
    "Craftax-Symbolic-v1": (CraftaxSymbolicEnv, CraftaxSymbolicEnvNoAutoReset),
    "Craftax-Symbolic-AutoReset-v1": (CraftaxSymbolicEnv, None),
    "Craftax-Pixels-v1": (CraftaxPixelsEnv, CraftaxPixelsEnvNoAutoReset),
    "Craftax-Pixels-AutoReset-v1": (CraftaxPixelsEnv, None),
    "Craftax-Classic-Symbolic-v1": (CraftaxClassicSymbolicEnv, CraftaxClassicSymbolicEnvNoAutoReset),
    "Craftax-Classic-Symbolic-AutoReset-v1": (CraftaxClassicSymbolicEnv, None),
    "Craftax-Classic-Pixels-v1": (CraftaxClassicPixelsEnv, CraftaxClassicPixelsEnvNoAutoReset),
    "Craftax-Classic-Pixels-AutoReset-v1": (CraftaxClassicPixelsEnv, None),
}
SUPPORTED = tuple(_CLASSES)


def make_craftax_env_from_name(name: str, auto_reset: bool):
    """craftax.craftax_env.make_craftax_env_from_name: every env upstream's makes."""
    if not isinstance(auto_reset, (bool, np.bool_)):
        raise TypeError(f"auto_reset must be True or False, got {auto_reset!r}")
    cls = _CLASSES.get(name, (None, None))[0 if auto_reset else 1]
    if cls is None:
        allowed = [n for n, classes in _CLASSES.items() if classes[0 if auto_reset else 1] is not None]
        raise ValueError(f"unknown or unsupported env {name!r} (auto_reset={auto_reset}); pycraftax.jax has {allowed}")
    return cls()
