"""EnvParams and StaticEnvParams of full Craftax and of Craftax-Classic, with upstream's
names and defaults (craftax/craftax/craftax_state.py, craftax/craftax_classic/envs/
craftax_state.py), validated before they reach C."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

# The env ids (upstream's names), the games whose parameters these are
CRAFTAX_ENV_ID = "Craftax-Symbolic-v1"
CLASSIC_ENV_ID = "Craftax-Classic-Symbolic-v1"
# the pixel envs: the same games and params, observed as upstream's textured pictures
CRAFTAX_PIXELS_ENV_ID = "Craftax-Pixels-v1"
CLASSIC_PIXELS_ENV_ID = "Craftax-Classic-Pixels-v1"

# Shapes of the four fractal_noise_angles overrides: the gradient grids of the water,
# mountain, path and tree noise fields of generate_smoothworld.
NOISE_ANGLE_SHAPES = ((4, 4), (4, 4), (7, 25), (13, 13))
_ANGLE_FIELDS = ("angles_water", "angles_mountain", "angles_path", "angles_tree")


@dataclass(frozen=True)
class EnvParams:
    max_timesteps: int = 100000
    day_length: int = 300
    always_diamond: bool = False
    mob_despawn_distance: int = 14
    max_attribute: int = 5
    god_mode: bool = False
    fractal_noise_angles: tuple = (None, None, None, None)


@dataclass(frozen=True)
class StaticEnvParams:
    map_size: tuple = (48, 48)
    num_levels: int = 9
    max_melee_mobs: int = 3
    max_passive_mobs: int = 3
    max_growing_plants: int = 10
    max_ranged_mobs: int = 2
    max_mob_projectiles: int = 3
    max_player_projectiles: int = 3


@dataclass(frozen=True)
class ClassicEnvParams:
    max_timesteps: int = 10000
    day_length: int = 300
    always_diamond: bool = True
    zombie_health: int = 5
    cow_health: int = 3
    skeleton_health: int = 3
    mob_despawn_distance: int = 14
    spawn_cow_chance: float = 0.1
    spawn_zombie_base_chance: float = 0.02
    spawn_zombie_night_chance: float = 0.1
    spawn_skeleton_chance: float = 0.05
    fractal_noise_angles: tuple = (None, None, None, None)


@dataclass(frozen=True)
class ClassicStaticEnvParams:
    map_size: tuple = (64, 64)
    max_zombies: int = 3
    max_cows: int = 3
    max_growing_plants: int = 10
    max_skeletons: int = 2
    max_arrows: int = 3


ENV_PARAM_NAMES = tuple(f.name for f in fields(EnvParams))
STATIC_PARAM_NAMES = tuple(f.name for f in fields(StaticEnvParams))

_INT_LIMITS = {
    "max_timesteps": (1, 2**31 - 1),
    "day_length": (1, 2**31 - 1),
    "mob_despawn_distance": (0, 2**31 - 1),
    "max_attribute": (1, 99),
    # a mob spawned with health <= 0 would be a masked dead mob, which no step handles
    "zombie_health": (1, 2**31 - 1),
    "cow_health": (1, 2**31 - 1),
    "skeleton_health": (1, 2**31 - 1),
}
# Classic's spawn chances are compared with a uniform draw in [0, 1)
_FLOAT_LIMITS = {name: (0.0, 1.0) for name in ("spawn_cow_chance", "spawn_zombie_base_chance",
                                                "spawn_zombie_night_chance", "spawn_skeleton_chance")}
# Classic's noise gradient grids: water, mountain, path, tree (generate_world)
CLASSIC_NOISE_ANGLE_SHAPES = ((5, 5), (5, 5), (9, 33), (17, 17))


def split_params(kwargs: dict, classic: bool = False):
    """Sort make()'s keyword arguments into EnvParams and StaticEnvParams (Classic's with
    classic=True), checking each."""
    env_cls, static_cls = (ClassicEnvParams, ClassicStaticEnvParams) if classic else (EnvParams, StaticEnvParams)
    env_names = tuple(f.name for f in fields(env_cls))
    static_names = tuple(f.name for f in fields(static_cls))
    shapes = CLASSIC_NOISE_ANGLE_SHAPES if classic else NOISE_ANGLE_SHAPES
    env_kwargs, static_kwargs = {}, {}
    for name, value in kwargs.items():
        if name in env_names:
            env_kwargs[name] = value
        elif name in static_names:
            static_kwargs[name] = value
        else:
            raise TypeError(
                f"unknown parameter {name!r}; EnvParams fields are {list(env_names)}, "
                f"StaticEnvParams fields are {list(static_names)}: a parameter must be one of them"
            )
    env_kwargs = {name: _check_env_param(name, value, shapes) for name, value in env_kwargs.items()}
    static = static_cls(**static_kwargs)
    default = static_cls()
    for name in static_kwargs:
        given, expected = getattr(static, name), getattr(default, name)
        try:
            same = tuple(np.atleast_1d(given).tolist()) == tuple(np.atleast_1d(expected).tolist())
        except Exception:  # not even array-like: not the default either
            same = False
        if not same:
            raise ValueError(
                f"StaticEnvParams.{name}={given!r} is not supported: the C and CUDA builds fix the "
                f"state layout at upstream's defaults, so it must be {name}={expected!r}"
            )
    return env_cls(**env_kwargs), static


# Noise-angle overrides are in turns: upstream multiplies them by 2*pi in float32 before cos/sin.
# |angle| <= 1e5 keeps that product inside [-1e6, 1e6], where mathf.h's cosf/sinf are verified
# bit for bit against XLA (conformance/test_mathf.py); upstream's own draws are in [0, 1).
MAX_NOISE_ANGLE = 1e5


def _check_env_param(name: str, value, noise_angle_shapes=NOISE_ANGLE_SHAPES):
    """The value make() stores for parameter `name` (a plain bool, int or float, the angle
    overrides as float32 copies), or TypeError/ValueError naming it and its allowed values."""
    if name in ("always_diamond", "god_mode"):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
        return bool(value)
    if name == "fractal_noise_angles":
        return _check_noise_angles(value, noise_angle_shapes)
    if name in _FLOAT_LIMITS:
        lo, hi = _FLOAT_LIMITS[name]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a float in [{lo}, {hi}], got {type(value).__name__} {value!r}")
        if not lo <= float(value) <= hi:
            raise ValueError(f"{name} must be in [{lo}, {hi}], got {value}")
        return float(value)
    lo, hi = _INT_LIMITS[name]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int in [{lo}, {hi}], got {type(value).__name__} {value!r}")
    if not lo <= int(value) <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {value}")
    return int(value)


def _check_noise_angles(value, shapes) -> tuple:
    expected = (f"fractal_noise_angles must be a tuple of 4 entries, each None or a float array of shapes "
                f"{', '.join(map(str, shapes))} respectively, with finite values in [-{MAX_NOISE_ANGLE:g}, {MAX_NOISE_ANGLE:g}]")
    if not isinstance(value, (tuple, list)) or len(value) != 4:
        raise TypeError(f"{expected}, got {type(value).__name__}")
    checked = []
    for i, (angles, shape) in enumerate(zip(value, shapes)):
        if angles is None:
            checked.append(None)
            continue
        if isinstance(angles, np.ma.MaskedArray):
            raise TypeError(f"fractal_noise_angles[{i}] must be a plain float array, got a numpy masked array")
        try:
            array = np.array(angles, copy=True, subok=False)
        except Exception as exc:
            raise TypeError(f"fractal_noise_angles[{i}] could not be read as an array ({type(exc).__name__}: "
                            f"{exc}); {expected}") from exc
        if array.shape != shape or array.dtype.kind != "f":
            raise ValueError(f"fractal_noise_angles[{i}] must be None or a float array of shape {shape}, "
                             f"got {array.dtype} {array.shape}")
        # used as float32 (upstream multiplies the override by 2*pi in float32): checked as such
        with np.errstate(over="ignore"):  # an overflow becomes inf, refused below
            array = array.astype(np.float32)
        if not np.all(np.abs(array) <= MAX_NOISE_ANGLE):  # NaN fails too
            raise ValueError(f"fractal_noise_angles[{i}] must hold finite values in [-{MAX_NOISE_ANGLE:g}, "
                             f"{MAX_NOISE_ANGLE:g}] (as float32), got min {array.min()} max {array.max()}")
        checked.append(array)
    return tuple(checked)


def to_c(params: EnvParams, ffi=None):
    """A CraftaxParams struct (owned by the returned cdata) holding `params`, made by `ffi`
    (the C extension's by default; the CUDA backend passes the ffi of its own library). Every
    field is written here from `params`, whose defaults are upstream's, and the angle arrays
    of absent overrides stay zero as in craftax_default_params."""
    if ffi is None:
        from pycraftax._native import ffi
    c = ffi.new("CraftaxParams *")
    c.max_timesteps = params.max_timesteps
    c.day_length = params.day_length
    c.always_diamond = int(bool(params.always_diamond))
    c.mob_despawn_distance = params.mob_despawn_distance
    c.max_attribute = params.max_attribute
    c.god_mode = int(bool(params.god_mode))
    for i, angles in enumerate(params.fractal_noise_angles):
        if angles is None:
            continue
        c.has_angles[i] = 1
        # Upstream multiplies the override by 2*pi in float32, so it is used as float32.
        flat = np.asarray(angles, dtype=np.float32).ravel()
        ffi.memmove(getattr(c, _ANGLE_FIELDS[i]), flat.tobytes(), flat.nbytes)
    return c


def to_c_classic(params: ClassicEnvParams, ffi=None):
    """A CraftaxClassicParams struct (owned by the returned cdata) holding `params`, made by
    `ffi` (the C extension's by default); every field is written from `params`, whose defaults
    are upstream's."""
    if ffi is None:
        from pycraftax._native import ffi

    c = ffi.new("CraftaxClassicParams *")
    for f in fields(ClassicEnvParams):
        if f.name != "fractal_noise_angles":
            value = getattr(params, f.name)
            setattr(c, f.name, float(value) if isinstance(f.default, float) else int(value))
    for i, angles in enumerate(params.fractal_noise_angles):
        if angles is None:
            continue
        c.has_angles[i] = 1
        flat = np.asarray(angles, dtype=np.float32).ravel()
        ffi.memmove(getattr(c, _ANGLE_FIELDS[i]), flat.tobytes(), flat.nbytes)
    return c
