"""EnvParams as JAX pytrees, and their packing into the C reference's CraftaxParams words (the
full game) or CraftaxClassicParams words (Craftax-Classic, ClassicEnvParams).

The fields and defaults are upstream's (craftax/craftax/craftax_state.py,
craftax/craftax_classic/envs/craftax_state.py, and pycraftax.params); any object with those
attributes is accepted where params are taken, so craftax's own EnvParams work too. Fields may
be Python values or (traced) JAX arrays.

Params whose fields are all concrete when a call is traced (the usual case: env_params closed
over by the jitted train function, as Craftax_Baselines and PureJaxRL do, or the default
params) are packed on the host (pack_on_host) into a hashable PackedParams: a static argument
of the env's jitted methods and an attribute of the FFI call, so the GPU handlers launch their
kernels with them without reading anything back. Traced params (passed as an argument of a
jitted function, or batched per env) are packed inside the trace (pack_params) and reach the
handlers as an operand.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from pycraftax import params as _host_params
from pycraftax._native import ffi

NOISE_ANGLE_SHAPES = _host_params.NOISE_ANGLE_SHAPES
CLASSIC_NOISE_ANGLE_SHAPES = _host_params.CLASSIC_NOISE_ANGLE_SHAPES
PARAMS_WORDS = ffi.sizeof("CraftaxParams") // 4
CLASSIC_PARAMS_WORDS = ffi.sizeof("CraftaxClassicParams") // 4
_INT_FIELDS = ("max_timesteps", "day_length", "always_diamond", "mob_despawn_distance", "max_attribute", "god_mode")
# CraftaxClassicParams (craftax_api_classic.h): these int32 words, then the float32 ones
_CLASSIC_INT_FIELDS = ("max_timesteps", "day_length", "always_diamond", "zombie_health", "cow_health",
                       "skeleton_health", "mob_despawn_distance")
_CLASSIC_FLOAT_FIELDS = ("spawn_cow_chance", "spawn_zombie_base_chance", "spawn_zombie_night_chance",
                         "spawn_skeleton_chance")
_BOOL_FIELDS = ("always_diamond", "god_mode")


class _Layout:
    """One game's params struct: its fields in word order and its size."""

    def __init__(self, int_fields, float_fields, angle_shapes, words):
        self.int_fields, self.float_fields, self.angle_shapes, self.words = int_fields, float_fields, angle_shapes, words


_FULL = _Layout(_INT_FIELDS, (), NOISE_ANGLE_SHAPES, PARAMS_WORDS)
_CLASSIC = _Layout(_CLASSIC_INT_FIELDS, _CLASSIC_FLOAT_FIELDS, CLASSIC_NOISE_ANGLE_SHAPES, CLASSIC_PARAMS_WORDS)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class EnvParams:
    max_timesteps: int = 100000
    day_length: int = 300
    always_diamond: bool = False
    mob_despawn_distance: int = 14
    max_attribute: int = 5
    god_mode: bool = False
    fractal_noise_angles: tuple = (None, None, None, None)

    def replace(self, **changes) -> EnvParams:
        """A copy with `changes` applied (flax.struct's replace, which upstream params have)."""
        return dataclasses.replace(self, **changes)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class ClassicEnvParams:
    """craftax_classic's EnvParams (craftax/craftax_classic/envs/craftax_state.py)."""

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

    def replace(self, **changes) -> ClassicEnvParams:
        """A copy with `changes` applied (flax.struct's replace, which upstream params have)."""
        return dataclasses.replace(self, **changes)


def _is_concrete(value) -> bool:
    return not isinstance(value, jax.core.Tracer)


class PackedParams:
    """CraftaxParams (or CraftaxClassicParams) words packed on the host, hashable by value (a
    jax.jit static argument)."""

    __slots__ = ("words", "_bytes")

    def __init__(self, words: np.ndarray):
        words = np.ascontiguousarray(words, dtype=np.uint32)
        if words.shape not in ((PARAMS_WORDS,), (CLASSIC_PARAMS_WORDS,)):
            raise ValueError(f"PackedParams needs uint32 [{PARAMS_WORDS}] (CraftaxParams) or "
                             f"[{CLASSIC_PARAMS_WORDS}] (CraftaxClassicParams) words, got shape {words.shape}")
        words.setflags(write=False)
        self.words = words
        self._bytes = words.tobytes()

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __eq__(self, other) -> bool:
        return isinstance(other, PackedParams) and self._bytes == other._bytes

    def __repr__(self) -> str:
        return f"PackedParams(max_timesteps={int(self.words[0])}, day_length={int(self.words[1])}, ...)"


_PACKED_CACHE: dict = {}


def _layout(classic: bool) -> _Layout:
    return _CLASSIC if classic else _FULL


def _check_fields(params, classic: bool = False) -> None:
    layout = _layout(classic)
    for name in layout.int_fields + layout.float_fields + ("fractal_noise_angles",):
        if not hasattr(params, name):
            kind = "craftax_classic EnvParams (pycraftax.jax.ClassicEnvParams)" if classic else "EnvParams"
            raise TypeError(f"params must have the {kind} field {name!r} (got {type(params).__name__})")


def pack_on_host(params, classic: bool = False) -> PackedParams | None:
    """The PackedParams of `params` (Craftax-Classic's with `classic`) when every field is
    concrete, else None (some field is traced). Checked as pack_params checks; hashable params
    are packed once and cached."""
    layout = _layout(classic)
    if isinstance(params, PackedParams):
        if params.words.shape != (layout.words,):
            raise TypeError(f"params were packed for the other game ({params.words.size} words, this env's "
                            f"{layout.words})")
        return params
    _check_fields(params, classic)
    fields = tuple(getattr(params, name) for name in layout.int_fields + layout.float_fields)
    fields += tuple(params.fractal_noise_angles or ())
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(fields)):
        return None
    try:
        key = (classic, type(params), fields)
        hash(key)
    except TypeError:  # array fields: packed at each call
        key = None
    if key is not None and key in _PACKED_CACHE:
        return _PACKED_CACHE[key]
    with jax.ensure_compile_time_eval():
        packed = PackedParams(np.asarray(pack_params(params, classic)))
    if key is not None:
        _PACKED_CACHE[key] = packed
    return packed


def pack_params(params, classic: bool = False) -> jax.Array:
    """uint32 [PARAMS_WORDS]: `params` laid out as CraftaxParams (craftax/params.h); with
    `classic`, uint32 [CLASSIC_PARAMS_WORDS] laid out as CraftaxClassicParams
    (craftax_api_classic.h).

    Concrete fields are checked as pycraftax.make checks them (ValueError/TypeError naming
    the field); traced ones reach the C side unchecked except day_length > 0.
    """
    layout = _layout(classic)
    _check_fields(params, classic)
    for name in layout.int_fields + layout.float_fields:
        value = getattr(params, name)
        if _is_concrete(value) and np.ndim(value) == 0:
            host = np.asarray(value).item()
            if name in _BOOL_FIELDS:
                host = bool(host)
            elif name in layout.int_fields and isinstance(host, float) and host.is_integer():
                host = int(host)
            _host_params._check_env_param(name, host, layout.angle_shapes)
        elif np.ndim(value) != 0:
            raise ValueError(f"params.{name} must be a scalar, got shape {np.shape(value)}")
    angles = params.fractal_noise_angles
    if not isinstance(angles, (tuple, list)) or len(angles) != 4:
        raise TypeError("params.fractal_noise_angles must be a tuple of 4 entries, each None or a float array")
    words = [jnp.asarray(getattr(params, name)).astype(jnp.int32) for name in layout.int_fields]
    header = [jax.lax.bitcast_convert_type(jnp.stack(words), jnp.uint32)]
    if layout.float_fields:
        # upstream compares its uniform draws with these as float32 (weakly typed Python floats)
        floats = jnp.stack([jnp.asarray(getattr(params, name)).astype(jnp.float32) for name in layout.float_fields])
        header.append(jax.lax.bitcast_convert_type(floats, jnp.uint32))
    header.append(jnp.array([0 if a is None else 1 for a in angles], jnp.uint32))
    fields = header
    for i, (a, shape) in enumerate(zip(angles, layout.angle_shapes)):
        size = int(np.prod(shape))
        if a is None:
            fields.append(jnp.zeros((size,), jnp.uint32))
            continue
        if tuple(np.shape(a)) != shape:
            raise ValueError(f"params.fractal_noise_angles[{i}] must have shape {shape}, got {np.shape(a)}")
        # upstream multiplies the override by 2*pi in float32, so it is used as float32
        flat = jnp.asarray(a).astype(jnp.float32).reshape(size)
        fields.append(jax.lax.bitcast_convert_type(flat, jnp.uint32))
    packed = jnp.concatenate(fields)
    assert packed.shape == (layout.words,), packed.shape
    return packed
