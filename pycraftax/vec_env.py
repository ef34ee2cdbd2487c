"""The contract of every pycraftax batch env: `CraftaxVecEnv`, the base of the C env
(pycraftax.env.CraftaxEnv, backend="c") and the CUDA env (pycraftax.cuda_env.CudaCraftaxEnv).

The base holds everything that does not depend on where the envs live: argument
validation and its error messages, the spaces, the key stream, the reset/step signatures,
the lock that makes calls from several threads safe, close, repr, the context-manager
protocol and the copy/pickle refusal. A backend implements only its native calls
(the `_native_*` methods). Pure Python and numpy: no backend's extension is imported here.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from pycraftax import jax_random, obs_compact
from pycraftax.params import EnvParams, StaticEnvParams

OBS_SIZE = 8268
NUM_ACTIONS = 43
OBS_MODES = ("float", "compact")
RESET_MODES = ("auto", "optimistic")
DEFAULT_RESET_RATIO = 16


# -- argument checks shared by make() and both backends ----------------------------------------
def check_reset_options(options, params_go_to: str) -> None:
    """gymnasium's reset(options=...): None or an empty mapping; what goes where otherwise."""
    if options is None:
        return
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    if options:
        raise ValueError(f"options: pycraftax envs take no reset options (got {sorted(options)}); env params go to "
                         f"{params_go_to}, the world seed to reset(seed=...)")


def check_int(name: str, value, minimum: int) -> int:
    """value as a Python int: any integer (numpy integers included, bools not) >= minimum;
    TypeError or ValueError naming the argument otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= {minimum}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_num_envs(num_envs) -> int:
    return check_int("num_envs", num_envs, 1)


def check_obs_mode(obs: str) -> str:
    if obs not in OBS_MODES:
        raise ValueError(f"obs must be one of {list(OBS_MODES)}, got {obs!r}")
    return obs


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
    if isinstance(reset_ratio, (bool, np.bool_)) or not isinstance(reset_ratio, (int, np.integer)):
        raise TypeError(f"reset_ratio must be an int, got {type(reset_ratio).__name__}")
    if reset_ratio < 1 or num_envs % reset_ratio:
        raise ValueError(f"reset_ratio must be >= 1 and divide num_envs={num_envs}, got {reset_ratio}")
    return resets, int(reset_ratio)


def plain_copy(value, what: str, expected: str) -> np.ndarray:
    """`value` (a numpy array) as a copy in a plain numpy.ndarray: checks run on the copy, and the
    copy is what reaches C, whatever the caller's object does meanwhile. Masked arrays are
    refused (every element would be used, masked or not), so is anything but a numpy array."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{what} must be {expected}, got a numpy masked array (its mask would be ignored): "
                        "pass array.filled(...)")
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{what} must be {expected}, got {type(value).__name__}")
    return np.array(value, copy=True, subok=False)


def check_keys(keys, num_envs: int) -> np.ndarray:
    """Validate raw JAX keys: uint32 [num_envs, 2]; returns a C-contiguous copy."""
    expected = f"a numpy uint32 array of shape ({num_envs}, 2) (raw jax.random key data)"
    keys = plain_copy(keys, "keys", expected)
    if keys.dtype != np.uint32:
        raise TypeError(f"keys must be {expected}, got dtype {keys.dtype}")
    if keys.shape != (num_envs, 2):
        raise ValueError(f"keys must be {expected}, got shape {keys.shape}")
    return np.ascontiguousarray(keys)


def _dlpack_on_cpu(actions) -> bool:
    device = getattr(actions, "__dlpack_device__", None)
    return device is not None and int(device()[0]) == 1  # kDLCPU


def _tensor_problem(actions) -> str | None:
    """Why a torch tensor cannot be actions (sparse, on the meta device, not integer), or None;
    said here because torch's own errors (from DLPack) do not name the argument."""
    if not type(actions).__module__.startswith("torch"):
        return None
    layout = getattr(actions, "layout", None)
    if layout is not None and str(layout) != "torch.strided":
        return f"a torch tensor with layout {layout} (call .to_dense())"
    if getattr(actions, "is_meta", False):
        return "a torch tensor on the meta device (it holds no values)"
    dtype = getattr(actions, "dtype", None)
    if dtype is not None and (getattr(dtype, "is_floating_point", False) or getattr(dtype, "is_complex", False)
                              or str(dtype) == "torch.bool"):
        return f"a torch tensor of dtype {dtype} (actions must have an integer dtype)"
    return None


def host_array(actions, num_envs: int) -> np.ndarray:
    """`actions` as a numpy array: numpy itself; a CPU tensor through DLPack without a copy
    (torch, JAX); an array on a device through its `.cpu()` (torch) or `__array__` (JAX),
    one host copy. Python lists, masked arrays and anything these paths cannot read are refused
    with a TypeError that says what actions must be (a per-element Python loop is never hidden
    here)."""
    expected = (f"an integer array of shape ({num_envs},) (a numpy array, a torch tensor or a JAX array) with values "
                "in [0, num_actions)")
    if isinstance(actions, np.ma.MaskedArray):
        raise TypeError(f"actions must be {expected}, got a numpy masked array (its mask would be ignored): "
                        "pass array.filled(...)")
    if isinstance(actions, np.ndarray):
        return actions
    problem = _tensor_problem(actions)
    if problem:
        raise TypeError(f"actions must be {expected}, got {problem}")
    readable = any(hasattr(actions, a) for a in ("__dlpack_device__", "__dlpack__", "__array__"))
    if not readable:
        raise TypeError(f"actions must be {expected}, got {type(actions).__name__}")
    try:
        if _dlpack_on_cpu(actions):
            array = np.from_dlpack(actions)
        elif hasattr(actions, "__dlpack__") and callable(getattr(actions, "cpu", None)):
            array = np.from_dlpack(actions.cpu())
        else:
            array = np.asarray(actions)
    except Exception as exc:  # the array library's own error names no argument: say which one
        raise TypeError(f"actions must be {expected}; reading the {type(actions).__name__} given failed with "
                        f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(array, np.ndarray) or array.dtype == object:
        raise TypeError(f"actions must be {expected}; the {type(actions).__name__} given reads as "
                        f"{type(array).__name__} {getattr(array, 'dtype', '')}")
    return array


def check_actions(actions, num_envs: int, num_actions: int = NUM_ACTIONS) -> np.ndarray:
    """Validate actions: an integer array (numpy, torch, JAX) of shape (num_envs,) with values
    in [0, num_actions) (43 for full Craftax); returns them as a C-contiguous int32 copy (the
    values checked are the values stepped, whatever the caller's array does meanwhile)."""
    actions = host_array(actions, num_envs)
    if actions.dtype.kind not in "iu":  # bool, float, timedelta64 (NaT), object, ... are not actions
        raise TypeError(f"actions must have an integer dtype (int8..int64 or uint8..uint64), got {actions.dtype}")
    if actions.shape != (num_envs,):
        raise ValueError(f"actions must have shape ({num_envs},), got {actions.shape}")
    actions = np.array(actions, copy=True, subok=False)
    outside = (actions < 0) | (actions >= num_actions)
    if np.any(outside):
        bad = int(np.flatnonzero(outside)[0])
        raise ValueError(f"actions[{bad}] = {actions[bad]} is outside [0, {num_actions}): actions must be integers in it")
    return np.ascontiguousarray(actions, dtype=np.int32)


def available_host_memory() -> int | None:
    """Bytes the kernel says can be allocated without swapping (MemAvailable), None if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


# -- observation bounds ------------------------------------------------------------------------
def _div10_range(lo: float, hi: float) -> tuple[float, float]:
    """The smallest and largest of upstream's two roundings of x / 10 (craftax_div10 in
    obs.h: x * 0.1f, or x / 10 in a fresh world's obs) over x in [lo, hi] (monotone in x)."""
    def both(x):
        return np.float32(x) / np.float32(10), np.float32(x) * np.float32(0.1)

    return float(min(both(lo))), float(max(both(hi)))


def _scalar_bounds() -> tuple[list[float], list[float]]:
    """(low, high) of the 51 scalars after the map view, in obs.h's CRAFTAX_OBS_SCALARS order,
    over the states set_state accepts (the leaf table's domains): every state a step can
    produce is one of them (docs/STATE_DOMAIN.md)."""
    from pycraftax import _state  # the leaf table as data: no extension is loaded

    leaf = _state.LEAF_BY_NAME

    def div10(name):
        return _div10_range(leaf[name].min_value, leaf[name].max_value)

    def scaled(name, factor):
        return leaf[name].min_value * factor, leaf[name].max_value * factor

    def sqrt_div10(name):
        return float(np.sqrt(np.float32(leaf[name].min_value)) * np.float32(0.1)), float(
            np.sqrt(np.float32(leaf[name].max_value)) * np.float32(0.1))

    sqrt_counts = ("wood", "stone", "coal", "iron", "diamond", "sapphire", "ruby", "sapling", "torches", "arrows")
    bounds = [sqrt_div10("inventory." + name) for name in sqrt_counts]
    bounds += [scaled("inventory.books", 0.5), scaled("inventory.pickaxe", 0.25), scaled("inventory.sword", 0.25)]
    bounds += [scaled("sword_enchantment", 1), scaled("bow_enchantment", 1), scaled("inventory.bow", 1)]
    bounds += [sqrt_div10("inventory.potions")] * 6
    bounds += [div10(name) for name in ("player_health", "player_food", "player_drink", "player_energy", "player_mana",
                                        "player_xp", "player_dexterity", "player_strength", "player_intelligence")]
    bounds += [(0.0, 1.0)] * 4  # direction one-hot
    bounds += [scaled("inventory.armour", 0.5)] * 4
    bounds += [scaled("armour_enchantments", 1)] * 4
    bounds += [(leaf["light_level"].min_value, leaf["light_level"].max_value)]
    bounds += [(0.0, 1.0)] * 4  # sleeping, resting, two learned spells
    bounds += [div10("player_level")]
    bounds += [(0.0, 1.0)] * 2  # level cleared, boss vulnerable
    return [float(lo) for lo, _ in bounds], [float(hi) for _, hi in bounds]


_SCALAR_LOW, _SCALAR_HIGH = _scalar_bounds()
NUM_OBS_SCALARS = len(_SCALAR_HIGH)


def observation_low() -> np.ndarray:
    """float32 [8268]: the smallest value each symbolic obs entry takes: 0, except the xp
    scalar (xp is a counter that wraps in int32, as upstream's does)."""
    low = np.zeros(OBS_SIZE, dtype=np.float32)
    low[OBS_SIZE - NUM_OBS_SCALARS:] = _SCALAR_LOW
    return low


def observation_high() -> np.ndarray:
    """float32 [8268]: the largest value each symbolic obs entry takes; the map view (one-hot
    and visibility flags) is in [0, 1]."""
    high = np.ones(OBS_SIZE, dtype=np.float32)
    high[OBS_SIZE - NUM_OBS_SCALARS:] = _SCALAR_HIGH
    return high


def stream_handle(stream) -> int:
    """A CUDA stream handle (cudaStream_t as an int) from None (0: the legacy default stream), an
    int, or an object with a `cuda_stream` (torch) or `ptr` (CuPy) attribute."""
    if stream is None:
        return 0
    for attribute in ("cuda_stream", "ptr"):
        if hasattr(stream, attribute):
            stream = getattr(stream, attribute)
            break
    if isinstance(stream, (bool, np.bool_)) or not isinstance(stream, (int, np.integer)) or stream < 0:
        raise TypeError(f"stream must be None, a CUDA stream handle (int >= 0) or an object with a cuda_stream "
                        f"or ptr attribute, got {type(stream).__name__} {stream!r}")
    return int(stream)


# -- the base class ----------------------------------------------------------------------------
class CraftaxVecEnv:
    """`num_envs` envs of one game stepped as one batch: full Craftax (Craftax-Symbolic-v1) here,
    Craftax-Classic in pycraftax.classic_env, whose sizes are in brackets below.

    Spaces (gymnasium.spaces): `single_observation_space` (Box float32 [8268] (Classic 1345),
    or uint8 [1008] with obs="compact"), `single_action_space` (Discrete(43) (Classic 17)), and the batched
    `observation_space` / `action_space` (gymnasium.vector.utils.batch_space of them, built
    on first use).

    Seeding: `make(seed=S)` starts the step key stream at PRNGKey(S). `reset(seed=S)` gives
    env i the world of split(PRNGKey(S), num_envs)[i] and restarts the step key stream at
    PRNGKey(S); each step then takes `key, sub = split(key)` and env i steps with
    split(sub, num_envs)[i] (resets="auto"), so reset(seed=S) and the actions fix the whole
    trajectory, on every backend bit for bit. reset() without a seed draws the worlds from
    the stream (key, sub = split(key); split(sub, num_envs)).

    Threads: every call holds the env's lock, so any method may be called from any thread;
    calls on one env run one at a time, and close() waits for a call in progress and makes
    later calls raise RuntimeError. Distinct envs run in parallel. backend="cuda" returns
    views of buffers the env's next call overwrites, whichever thread makes it.

    An env owns native buffers: it is a context manager (`with make(...) as env:`), and
    copy.copy, copy.deepcopy and pickle raise TypeError; carry a state across with
    get_state() / set_state().
    """

    env_id = "Craftax-Symbolic-v1"
    backend = ""
    # the game's sizes; a subclass for another game (Craftax-Classic) sets its own, and its
    # _observation_high and _state_table
    obs_size = OBS_SIZE
    num_actions = NUM_ACTIONS
    # Classic's move lets a player step off the map onto lava; only step_with_keys keeps stepping it
    _walks_off_map_without_resets = False

    def __init__(self, num_envs: int, seed: int, params: EnvParams, static_params: StaticEnvParams,
                 obs: str = "float", resets: str = "auto", reset_ratio: int | None = None):
        self.num_envs = check_num_envs(num_envs)
        self.obs_mode = check_obs_mode(obs)
        self.resets, self.reset_ratio = check_resets(resets, reset_ratio, self.num_envs)
        self.params = params
        self.static_params = static_params
        self._key = jax_random.prng_key(seed)
        self._report_final_obs = False
        self._lock = threading.RLock()
        self._closed = False
        self._needs_reset = True
        self._async_outputs = None
        self._make_spaces()

    @property
    def obs_shape(self) -> tuple[int, ...]:
        """The shape of one env's float obs: (obs_size,) for the symbolic envs; the pixel envs'
        pictures are (height, width, 3)."""
        return (self.obs_size,)

    def _make_spaces(self) -> None:
        import gymnasium

        if self.obs_mode == "compact":
            self.single_observation_space = gymnasium.spaces.Box(0, 255, (obs_compact.COMPACT_SIZE,), np.uint8)
        else:
            self.single_observation_space = gymnasium.spaces.Box(self._observation_low(), self._observation_high(),
                                                                 self.obs_shape, np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(self.num_actions)
        self._batched_spaces = None

    def ended_by_rules(self, state: dict[str, np.ndarray]) -> np.ndarray:
        """bool [N]: whether each state of a get_state() dict is over by the game's rules
        (upstream's is_game_over without its time limit): died, or beat the necromancer."""
        return (state["player_health"] <= 0) | (state["boss_progress"] >= self.static_params.num_levels - 1)

    def _observation_low(self) -> np.ndarray:
        return observation_low()

    def _observation_high(self) -> np.ndarray:
        return observation_high()

    def _state_table(self):
        """The game's pycraftax._state.LeafTable (imported here: this module loads no extension)."""
        from pycraftax import _state

        return _state.TABLE

    def _batched(self):
        # Built on first use: the batched Box holds two [num_envs, 8268] bound arrays (66 GB
        # at a million envs), which make() must not allocate for a caller that never asks.
        from gymnasium.vector.utils import batch_space

        if self._batched_spaces is None:
            self._batched_spaces = (batch_space(self.single_observation_space, self.num_envs),
                                    batch_space(self.single_action_space, self.num_envs))
        return self._batched_spaces

    @property
    def spec_id(self) -> str:
        """The id this env's results are reported under: env_id on the released rules, the
        variant id "<env_id>-rules-<fingerprint>" on modified ones (pycraftax.rules)."""
        from pycraftax import rules

        return rules.variant_id(self.env_id)

    @property
    def observation_space(self):
        """The batched observation space (gymnasium Box [num_envs, ...]), built on first use."""
        return self._batched()[0]

    @property
    def action_space(self):
        """The batched action space (gymnasium MultiDiscrete [num_envs]), built on first use."""
        return self._batched()[1]

    # -- the key stream -------------------------------------------------------------------
    @property
    def key(self) -> np.ndarray:
        """The step key stream's current key (raw uint32 [2], a copy)."""
        with self._lock:
            return self._key.copy()

    @key.setter
    def key(self, value) -> None:
        expected = "a numpy uint32 array of shape (2,) (a raw jax.random key)"
        value = plain_copy(value, "key", expected)
        if value.dtype != np.uint32 or value.shape != (2,):
            raise TypeError(f"key must be {expected}, got {value.dtype} {value.shape}")
        with self._lock:
            self._key = value

    @property
    def report_final_obs(self) -> bool:
        """Whether step() adds info["final_obs"] (default False, which costs nothing): float32
        [N, obs_size], for every env whose episode ended in the step the obs of the state it
        ended in (upstream step_env's obs before the auto-reset replaces it, so that a truncated
        episode can be bootstrapped from it), zeros in the other rows. A numpy array on
        backend="c", a device array (float32 even with obs="compact") on backend="cuda".
        Set it (True/False) at any time; the gymnasium VectorEnv sets it to True."""
        return self._report_final_obs

    @report_final_obs.setter
    def report_final_obs(self, value) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"report_final_obs must be True or False, got {type(value).__name__} {value!r}")
        with self._lock:
            self._report_final_obs = bool(value)

    # -- episodes ---------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None):
        """Reset every env. With `seed`, env i gets key split(PRNGKey(seed), num_envs)[i],
        exactly as `jax.vmap(env.reset)(jax.random.split(PRNGKey(seed), num_envs))`, and the
        step key stream restarts at PRNGKey(seed); without, the keys come from the stream.
        `options` (gymnasium's reset argument) may be None or empty: these envs take none.
        Returns (obs [num_envs, ...], {})."""
        check_reset_options(options, "make()")
        with self._lock:
            self._check_open()
            if seed is None:
                stream, sub = jax_random.split(self._key, 2)
            else:
                stream = sub = jax_random.prng_key(seed)
            obs = self._native_reset(jax_random.split(sub, self.num_envs))
            self._key = stream
            self._needs_reset = False
            return obs, {}

    def reset_with_keys(self, keys: np.ndarray):
        """`reset_env(keys[i], params)` of upstream's symbolic env for every env i (keys:
        numpy uint32 [num_envs, 2]); the step key stream is untouched."""
        with self._lock:
            self._check_open()
            obs = self._native_reset(check_keys(keys, self.num_envs))
            self._needs_reset = False
            return obs, {}

    def step(self, actions):
        """One step of every env with same-step auto-reset, like upstream CraftaxSymbolicEnv.step.

        actions: integers in [0, num_actions) (43; Classic 17), shape (num_envs,): a numpy array, a torch tensor or a JAX
        array (CPU ones through DLPack without a copy; on backend="cuda" a device array is
        read in place through __cuda_array_interface__).

        `key, sub = split(key)`. resets="auto": env i steps with key k_i, where
        k = split(sub, num_envs); inside, key_step, key_reset = split(k_i) exactly as upstream's
        auto-reset env. resets="optimistic": OptimisticResetVecEnvWrapper.step(sub, ...)
        (see check_resets). Where an episode ended, obs is the first obs of the next episode.

        Returns (obs [N, ...], reward float32 [N], terminated bool [N], truncated bool [N],
        info). terminated: ended by the rules (ended_by_rules); truncated: timestep reached
        max_timesteps (and not terminated). info holds, for every env, "episode_return"
        (float32) and "episode_length" (int32) of the episode that just ended (0 where none
        ended), "achievements" bool [N, 67 (Classic 22)] of the finished episode, "done", "discount" and
        upstream's "Achievements/<name>" entries, and with `report_final_obs` set, "final_obs"
        (the obs of the state each ended episode ended in). Invalid actions raise and change nothing.
        """
        with self._lock:
            self._check_stepping("step")
            prepared = self._prepare_actions(actions)
            stream, sub = jax_random.split(self._key, 2)
            out = self._native_step(prepared, sub)
            self._key = stream
            return out

    def step_async(self, actions, stream=None):
        """step(actions) started without waiting for it to finish (gymnasium's
        VectorEnv.step_async); step_wait() waits and returns its outputs.

        backend="cuda": the step is enqueued on `stream` (a CUDA stream handle as an int, or an
        object with a `cuda_stream` or `ptr` attribute such as torch.cuda.Stream or
        cupy.cuda.Stream; default the legacy default stream, which is PyTorch's default) and
        this returns step()'s tuple of device views at once; they hold the step's outputs for
        work enqueued after it on that stream. Device actions are read in place when the step
        runs, so keep them unchanged until then. Calls may follow each other without waits:
        a policy's next forward can be launched while the step runs. An action outside
        [0, num_actions) is reported by step_wait() (or by the next call of any other method):
        that step and the async steps after it change nothing. report_final_obs must be off.

        The CPU backends, and backend="cuda" with resets="optimistic", run the step here, with
        its wait (and raise on invalid actions here).
        """
        with self._lock:
            self._check_stepping("step_async", settle=False)
            if self._report_final_obs:
                raise ValueError("step_async does not write info['final_obs']: set report_final_obs = False, or "
                                 "use step()")
            handle = stream_handle(stream)
            if handle and self.backend != "cuda":
                raise ValueError(f"stream: only backend='cuda' steps on a stream, this env is backend={self.backend!r}")
            prepared = self._prepare_actions(actions)
            new_key, sub = jax_random.split(self._key, 2)
            out = self._native_step_async(prepared, sub, handle)
            self._key = new_key
            self._async_outputs = out
            return out

    def step_wait(self):
        """The outputs of the last step_async(), as step() returns them, once every step_async
        since the last wait has finished; raises ValueError if one of them had an invalid
        action (those steps changed nothing) and RuntimeError without a step_async before."""
        with self._lock:
            out, self._async_outputs = self._async_outputs, None
            self._check_open()
            if out is None:
                raise RuntimeError("step_wait() without a step_async() before it")
            return out

    def step_with_keys(self, actions, keys: np.ndarray):
        """Exactly upstream `step_env(keys[i], state_i, actions[i], params)` of the symbolic
        env for every env: no auto-reset (a finished episode keeps evolving); the step key
        stream is untouched.

        Returns (obs, reward float32 [N], done bool [N], info) with upstream's info:
        "Achievements/<name>" = achievements * done * 100 and "discount" = 1 - done.
        """
        with self._lock:
            self._check_stepping("step_with_keys")
            keys = check_keys(keys, self.num_envs)
            return self._native_step_with_keys(self._prepare_actions(actions), keys)

    def observe(self):
        """render_craftax_symbolic of the current states (the compact records with obs="compact")."""
        with self._lock:
            self._check_has_states("observe")
            return self._native_observe()

    # -- states -----------------------------------------------------------------------------
    def get_state(self) -> dict[str, np.ndarray]:
        """Every EnvState leaf, [num_envs, *upstream shape], upstream dtype (a host copy)."""
        with self._lock:
            self._check_has_states("get_state")
            return self._state_table().get_state(self._native_host_states())

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Replace every env's state (a dict as get_state returns: plain numpy arrays, masked
        arrays refused). Copies and validates all leaves first (dtypes, shapes, the value
        domain of docs/STATE_DOMAIN.md, and health > 0 at every masked mob of the classes
        that live, as in every state reachable from reset), then the C extension checks the
        bytes as they will be written; on error nothing changes. Every state step() or
        step_with_keys() can produce from an accepted state is accepted again."""
        with self._lock:
            self._check_open()
            table = self._state_table()
            converted = table.validate_state(state, self.num_envs)
            table.check_written(converted, self.num_envs)
            self._native_write_states(converted)
            self._needs_reset = False

    def render(self, index: int = 0, block_size: int = 64, view: str = "local"):
        """uint8 [H, W, 3]: env `index` drawn with upstream's textures (pycraftax.pixels.picture):
        view="local" is the player's view with the inventory, as upstream's play window draws it
        (at block_size 64); "floor" the whole floor the player is on. Needs the craftax
        distribution's images (pycraftax.textures)."""
        from pycraftax import pixels

        return pixels.picture(self, index, block_size, view)

    def _state_bytes(self, index: int) -> np.ndarray:
        """uint8 [1, state size]: the raw state of env `index` (a host copy)."""
        with self._lock:
            self._check_open()
            return np.array(self._native_host_states()[index:index + 1])

    # -- lifecycle --------------------------------------------------------------------------
    def close(self) -> None:
        """Free the env's memory; a call in progress on another thread finishes first, later
        calls raise RuntimeError. Closing twice is a no-op."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ failed before the lock existed
            return
        with lock:
            if not self._closed:
                self._closed = True
                self._native_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _refuse_copy(self, *args):
        raise TypeError(
            f"{type(self).__name__} cannot be copied or pickled: it owns native buffers. Copy its "
            "states with env.get_state() and load them into another env with set_state()"
        )

    __copy__ = __deepcopy__ = __reduce_ex__ = __reduce__ = __getstate__ = _refuse_copy

    def _check_open(self, settle: bool = True) -> None:
        """Raise if the env is closed; with `settle`, first wait for the step_async calls in
        flight and raise for an invalid action among them."""
        if self._closed:
            raise RuntimeError(f"this env is closed ({self!r})")
        if settle:
            self._settle_async()

    def _check_has_states(self, what: str) -> None:
        """Raise if closed, or before the first reset: until then the env holds no game state
        (zeroed buffers, which no reset or step produces and set_state would refuse)."""
        self._check_open()
        if self._needs_reset:
            raise RuntimeError(f"{what}() before the first reset: call env.reset() (or reset_with_keys / set_state)")

    def _check_stepping(self, what: str, settle: bool = True) -> None:
        self._check_open(settle)
        if self._needs_reset:
            raise RuntimeError(f"{what}() before the first reset: call env.reset() (or reset_with_keys / set_state)")
        if getattr(self.params, "god_mode", False):
            self._check_room_to_walk(what, "with god_mode")
        elif self._walks_off_map_without_resets and what == "step_with_keys":
            self._check_room_to_walk(what, "without resets (a Classic player walks off the map onto lava, as in craftax 1.6.1)")

    def _check_room_to_walk(self, what: str, why: str) -> None:
        """With god_mode the player walks through anything, off the map too, one cell a step (and
        a Classic player onto lava beside the map, which step_with_keys does not reset). Player
        positions are kept to the leaf table's range (docs/STATE_DOMAIN.md: beyond it upstream's
        squared int32 distances to the map's cells wrap), so such a step is refused while a player
        stands on its edge, where one more step could leave it."""
        self._settle_async()  # the positions after every step in flight
        leaf = self._state_table().by_name["player_position"]
        positions = self._native_read_leaf("player_position")
        on_edge = (positions <= leaf.min_value) | (positions >= leaf.max_value)
        if np.any(on_edge):
            env = int(np.argwhere(on_edge)[0][0])
            raise ValueError(
                f"{what}: {why}, every player_position must stay inside ({leaf.min_value}, {leaf.max_value}) "
                f"on both axes to be stepped (one step could take it out of the range where pycraftax reproduces "
                f"craftax 1.6.1), but env {env}'s is {positions[env].tolist()}; nothing changed")

    def _native_read_leaf(self, name: str) -> np.ndarray:
        """One leaf of every env in storage dtype (a backend with device states overrides this)."""
        return self._state_table().by_name[name].view(self._native_host_states())

    def _repr_details(self) -> str:
        return ""

    def __repr__(self) -> str:
        resets = "" if self.resets == "auto" else f", resets='optimistic', reset_ratio={self.reset_ratio}"
        obs = "" if self.obs_mode == "float" else f", obs={self.obs_mode!r}"
        closed = ", closed" if self._closed else ""
        return (f"{type(self).__name__}({self.spec_id!r}, num_envs={self.num_envs}, backend={self.backend!r}"
                f"{self._repr_details()}{obs}{resets}{closed})")

    # -- what a backend implements ------------------------------------------------------------
    def _prepare_actions(self, actions):
        """Validated actions in the form the backend's step reads (host int32 here)."""
        return check_actions(actions, self.num_envs, self.num_actions)

    def _native_reset(self, keys: np.ndarray):
        raise NotImplementedError

    def _native_step(self, actions, sub_key: np.ndarray):
        raise NotImplementedError

    def _native_step_with_keys(self, actions, keys: np.ndarray):
        raise NotImplementedError

    def _native_step_async(self, actions, sub_key: np.ndarray, stream: int):
        """The CPU backends step at once: there is nothing to wait for later."""
        return self._native_step(actions, sub_key)

    def _settle_async(self) -> None:
        """Wait for the step_async calls in flight and raise for their invalid actions (a
        backend that runs steps asynchronously overrides this)."""

    def _native_observe(self):
        raise NotImplementedError

    def _native_host_states(self) -> np.ndarray:
        """uint8 [num_envs, STATE_SIZE]: the states as host bytes (a copy or a view)."""
        raise NotImplementedError

    def _native_write_states(self, converted: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    def _native_close(self) -> None:
        raise NotImplementedError
