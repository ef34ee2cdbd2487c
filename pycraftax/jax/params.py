"""EnvParams as a JAX pytree, and its packing into the C reference's CraftaxParams words.

The fields and defaults are upstream's (craftax/craftax/craftax_state.py, and
pycraftax.params.EnvParams); any object with those attributes is accepted where params are
taken, so craftax's own EnvParams works too. Fields may be Python values or (traced) JAX
arrays: jitted code that passes params as an argument packs them inside the trace.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from pycraftax import params as _host_params
from pycraftax._native import ffi

NOISE_ANGLE_SHAPES = _host_params.NOISE_ANGLE_SHAPES
PARAMS_WORDS = ffi.sizeof("CraftaxParams") // 4
_INT_FIELDS = ("max_timesteps", "day_length", "always_diamond", "mob_despawn_distance", "max_attribute", "god_mode")


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


def _is_concrete(value) -> bool:
    return not isinstance(value, jax.core.Tracer)


def pack_params(params) -> jax.Array:
    """uint32 [PARAMS_WORDS]: `params` laid out as CraftaxParams (craftax/params.h).

    Concrete fields are checked as pycraftax.make checks them (ValueError/TypeError naming
    the field); traced ones reach the C side unchecked except day_length > 0.
    """
    for name in _INT_FIELDS + ("fractal_noise_angles",):
        if not hasattr(params, name):
            raise TypeError(f"params must have the EnvParams field {name!r} (got {type(params).__name__})")
    for name in _INT_FIELDS:
        value = getattr(params, name)
        if _is_concrete(value) and np.ndim(value) == 0:
            host = np.asarray(value).item()
            if name in ("always_diamond", "god_mode"):
                host = bool(host)
            elif isinstance(host, float) and host.is_integer():
                host = int(host)
            _host_params._check_env_param(name, host)
        elif np.ndim(value) != 0:
            raise ValueError(f"params.{name} must be a scalar, got shape {np.shape(value)}")
    angles = params.fractal_noise_angles
    if not isinstance(angles, (tuple, list)) or len(angles) != 4:
        raise TypeError("params.fractal_noise_angles must be a tuple of 4 entries, each None or a float array")
    words = [jnp.asarray(getattr(params, name)).astype(jnp.int32) for name in _INT_FIELDS]
    words += [jnp.int32(0 if a is None else 1) for a in angles]
    header = jax.lax.bitcast_convert_type(jnp.stack(words), jnp.uint32)
    fields = [header]
    for i, (a, shape) in enumerate(zip(angles, NOISE_ANGLE_SHAPES)):
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
    assert packed.shape == (PARAMS_WORDS,), packed.shape
    return packed
