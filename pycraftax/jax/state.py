"""The env state of pycraftax.jax: a pytree around the C reference's state bytes.

A CraftaxState holds one uint8 array `data` of shape [..., state size] (the C struct of
reference_c/include/craftax/state.h, STATE_SIZE bytes, or for the Craftax-Classic envs
craftax_classic/state.h's, CLASSIC_STATE_SIZE bytes; one row per env), with the env id as
static pytree metadata. JAX code carries, selects (jax.tree.map + lax.select), gathers and
donates it like any pytree; the FFI handlers step it in place. Leaves are read through the C
leaf table of its game (pycraftax._state.LEAVES, pycraftax.classic_state.LEAVES):
`state.player_health`, `state.inventory.wood`, `state.leaf(name)`, and to_upstream_state /
from_upstream_state convert to and from craftax's EnvState (craftax.craftax.craftax_state's,
or craftax.craftax_classic.envs.craftax_state's for Classic).
"""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np

from pycraftax import _state, classic_state
from pycraftax.params import CLASSIC_ENV_ID, CLASSIC_PIXELS_ENV_ID, CRAFTAX_PIXELS_ENV_ID

STATE_SIZE = _state.STATE_SIZE
CLASSIC_STATE_SIZE = classic_state.STATE_SIZE
ENV_ID = "Craftax-Symbolic-v1"
CLASSIC_ENV_IDS = (CLASSIC_ENV_ID, CLASSIC_PIXELS_ENV_ID)
ENV_IDS = (ENV_ID, CRAFTAX_PIXELS_ENV_ID) + CLASSIC_ENV_IDS


def _byte_index(leaf: _state.Leaf) -> np.ndarray:
    """The byte positions of `leaf` inside one state, in upstream's C order."""
    nbytes = int(np.prod(leaf.shape, dtype=np.int64)) * leaf.storage.itemsize
    if not leaf.level_stride:
        return leaf.offset + np.arange(nbytes)
    per_level = nbytes // leaf.shape[0]
    return (leaf.offset + leaf.level_stride * np.arange(leaf.shape[0])[:, None] + np.arange(per_level)).ravel()


class _Game:
    """One game's leaf table (pycraftax._state.TABLE or classic_state.TABLE) as the pytree reads
    it: each leaf's byte positions, all of them in leaf order, and the leaf groups."""

    def __init__(self, table: _state.LeafTable, upstream_module: str):
        self.table = table
        self.leaves = table.leaves
        self.by_name = table.by_name
        self.state_size = table.state_size
        self.upstream_module = upstream_module  # where craftax defines this game's EnvState
        self.leaf_bytes = {leaf.name: _byte_index(leaf) for leaf in self.leaves}
        self.all_bytes = np.concatenate([self.leaf_bytes[leaf.name] for leaf in self.leaves]).astype(np.int32)
        self.groups = sorted({leaf.name.split(".")[0] for leaf in self.leaves if "." in leaf.name})


_FULL = _Game(_state.TABLE, "craftax.craftax.craftax_state")
_CLASSIC = _Game(classic_state.TABLE, "craftax.craftax_classic.envs.craftax_state")


def _game(env_id: str) -> _Game:
    return _CLASSIC if env_id in CLASSIC_ENV_IDS else _FULL


def _decode(leaf: _state.Leaf, raw: jax.Array) -> jax.Array:
    """uint8 [..., nbytes] -> the leaf in upstream's shape and dtype."""
    batch = raw.shape[:-1]
    if leaf.storage.itemsize > 1:
        raw = jax.lax.bitcast_convert_type(raw.reshape(batch + (-1, leaf.storage.itemsize)), leaf.storage)
    value = raw.reshape(batch + leaf.shape)
    if leaf.dtype == np.bool_:
        return value != 0
    return value.astype(leaf.dtype)


def _encode(leaf: _state.Leaf, value: jax.Array) -> jax.Array:
    """The leaf in upstream's shape and dtype, batch [...] -> uint8 [..., nbytes]."""
    batch = value.shape[: value.ndim - len(leaf.shape)]
    stored = value.astype(leaf.storage)
    if leaf.storage.itemsize > 1:
        stored = jax.lax.bitcast_convert_type(stored, jnp.uint8)
    return stored.reshape(batch + (-1,))


class CraftaxState:
    """States of envs of `env_id`, as the bytes of the C state struct: data uint8 [..., state size]
    (STATE_SIZE, or CLASSIC_STATE_SIZE for the Craftax-Classic ids)."""

    __slots__ = ("data", "env_id")

    def __init__(self, data, env_id: str = ENV_ID):
        # No checks here: JAX rebuilds pytrees with placeholder leaves. check_state checks.
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "env_id", env_id)

    def __setattr__(self, name, value):
        raise AttributeError("CraftaxState is immutable; build a new one (jax.tree.map, from_upstream_state)")

    def leaf(self, name: str) -> jax.Array:
        """The upstream EnvState leaf `name` ("player_health", "inventory.wood", "melee_mobs.position";
        Classic: "zombies.position", ...)."""
        game = _game(self.env_id)
        if name not in game.by_name:
            raise KeyError(f"unknown {self.env_id} EnvState leaf {name!r}; leaves are "
                           f"{[leaf.name for leaf in game.leaves]}")
        return _decode(game.by_name[name], jnp.asarray(self.data)[..., game.leaf_bytes[name]])

    def __getattr__(self, name: str):
        if name.startswith("_") or name in CraftaxState.__slots__:
            raise AttributeError(name)
        game = _game(self.env_id)
        if name in game.by_name:
            return self.leaf(name)
        if name in game.groups:
            prefix = name + "."
            return types.SimpleNamespace(
                **{leaf.name[len(prefix) :]: self.leaf(leaf.name) for leaf in game.leaves if leaf.name.startswith(prefix)}
            )
        raise AttributeError(f"CraftaxState has no {self.env_id} EnvState leaf or group {name!r}")

    def __repr__(self) -> str:
        shape = getattr(self.data, "shape", None)
        return f"CraftaxState({self.env_id!r}, data={type(self.data).__name__}{list(shape) if shape else ''})"


jax.tree_util.register_pytree_node(
    CraftaxState,
    lambda s: ((s.data,), s.env_id),
    lambda env_id, children: CraftaxState(children[0], env_id),
)


def check_state(state, env_id: str, argument: str = "state") -> None:
    """Raise (at trace time) unless `state` is a CraftaxState of env_id holding whole states."""
    if not isinstance(state, CraftaxState):
        hint = " (convert craftax's EnvState with pycraftax.jax.from_upstream_state)" if hasattr(state, "map") else ""
        raise TypeError(f"{argument} must be a pycraftax.jax.CraftaxState, got {type(state).__name__}{hint}")
    if state.env_id != env_id:
        raise ValueError(f"{argument} is a state of {state.env_id!r}, not of this env ({env_id!r})")
    data = state.data
    size = _game(env_id).state_size
    if getattr(data, "dtype", None) != np.uint8 or not getattr(data, "shape", ()) or data.shape[-1] != size:
        raise ValueError(
            f"{argument}.data must be uint8 [..., {size}] (this build's {env_id} state size), got "
            f"{getattr(data, 'dtype', type(data).__name__)} {getattr(data, 'shape', '')}"
        )


def to_upstream_state(state: CraftaxState):
    """craftax's EnvState with every leaf of `state`, in upstream's shapes (with the state's
    batch dims in front) and dtypes: craftax.craftax.craftax_state.EnvState, or for the Classic
    envs craftax.craftax_classic.envs.craftax_state.EnvState. Traceable."""
    import importlib

    check_state(state, state.env_id if isinstance(state, CraftaxState) else ENV_ID)
    game = _game(state.env_id)
    module = importlib.import_module(game.upstream_module)
    EnvState, Inventory, Mobs = module.EnvState, module.Inventory, module.Mobs
    raw = jnp.asarray(state.data)[..., game.all_bytes]
    values, start = {}, 0
    for leaf in game.leaves:
        n = len(game.leaf_bytes[leaf.name])
        values[leaf.name] = _decode(leaf, raw[..., start : start + n])
        start += n
    fields, groups = {}, {}
    for name, value in values.items():
        if "." in name:
            group, field = name.split(".", 1)
            groups.setdefault(group, {})[field] = value
        else:
            fields[name] = value
    for group, members in groups.items():
        fields[group] = Inventory(**members) if group == "inventory" else Mobs(**members)
    return EnvState(**fields)


def _upstream_leaf(env_state, name: str):
    value = env_state
    for part in name.split("."):
        if not hasattr(value, part):
            raise TypeError(f"env_state has no leaf {name!r}: expected craftax's EnvState, got {type(env_state).__name__}")
        value = getattr(value, part)
    return value


def from_upstream_state(env_state, env_id: str | None = None) -> CraftaxState:
    """The CraftaxState of craftax's EnvState `env_state` (leaves with any common batch dims in
    front), a state of `env_id`: by default Craftax-Symbolic-v1's for the full game's EnvState
    and Craftax-Classic-Symbolic-v1's for craftax_classic's (pass the pixel id for the pixel
    envs). Checked like CraftaxEnv.set_state: every leaf's dtype and shape (TypeError /
    ValueError naming it); when the leaves are concrete arrays, also their value domains and
    the living masked mobs. Traceable (then the value checks are left out)."""
    if env_id is None:
        # Classic's EnvState has zombies where the full game's has melee_mobs
        env_id = CLASSIC_ENV_ID if hasattr(env_state, "zombies") else ENV_ID
    elif env_id not in ENV_IDS:
        raise ValueError(f"env_id must be one of {list(ENV_IDS)}, got {env_id!r}")
    game = _game(env_id)
    leaves = {leaf.name: _upstream_leaf(env_state, leaf.name) for leaf in game.leaves}
    batch = None
    for leaf in game.leaves:
        value = leaves[leaf.name]
        dtype, shape = getattr(value, "dtype", None), tuple(getattr(value, "shape", ()))
        if dtype != leaf.dtype:
            raise TypeError(f"env_state.{leaf.name} must have dtype {leaf.dtype}, got {dtype}")
        if len(shape) < len(leaf.shape) or shape[len(shape) - len(leaf.shape) :] != leaf.shape:
            raise ValueError(f"env_state.{leaf.name} must have shape [..., {', '.join(map(str, leaf.shape))}], got {shape}")
        this_batch = shape[: len(shape) - len(leaf.shape)]
        if batch is None:
            batch = this_batch
        elif this_batch != batch:
            raise ValueError(f"env_state.{leaf.name} has batch dims {this_batch}, other leaves {batch}")
    if not any(isinstance(v, jax.core.Tracer) for v in leaves.values()):
        num_envs = int(np.prod(batch, dtype=np.int64))
        game.table.validate_state({k: np.asarray(v).reshape((num_envs,) + game.by_name[k].shape)
                                   for k, v in leaves.items()}, num_envs)
    encoded = jnp.concatenate([_encode(leaf, jnp.asarray(leaves[leaf.name])) for leaf in game.leaves], axis=-1)
    data = jnp.zeros(batch + (game.state_size,), jnp.uint8).at[..., game.all_bytes].set(encoded)
    return CraftaxState(data, env_id)
