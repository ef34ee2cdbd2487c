"""Craftax-Classic's EnvState leaf table over its C state struct, and get/set of batched
state dicts (the Classic counterpart of pycraftax/_state.py, read from the same kind of C
leaf table: craftax_classic_leaf).

Names are the dotted paths of upstream's craftax_classic EnvState leaves ("map",
"inventory.wood_pickaxe", "zombies.position", "state_rng"); shapes and dtypes are
upstream's. The C struct stores block ids and bools in uint8: get_state widens them and
set_state checks that values fit before narrowing.
"""

from __future__ import annotations

import numpy as np

from pycraftax._native import ffi, lib
from pycraftax._state import _NUMPY_DTYPES, Leaf

ENV_ID = "Craftax-Classic-Symbolic-v1"
OBS_SIZE = int(lib.craftax_classic_obs_size())
NUM_ACTIONS = int(lib.craftax_classic_num_actions())
NUM_ACHIEVEMENTS = int(lib.craftax_classic_num_achievements())
STATE_SIZE = int(lib.craftax_classic_state_size())


def _load_leaves() -> tuple[Leaf, ...]:
    leaves = []
    for i in range(lib.craftax_classic_num_leaves()):
        c = lib.craftax_classic_leaf(i)
        leaves.append(
            Leaf(
                name=ffi.string(c.name).decode(),
                offset=int(c.offset),
                storage=_NUMPY_DTYPES[c.storage_dtype],
                dtype=_NUMPY_DTYPES[c.dtype],
                shape=tuple(int(c.shape[k]) for k in range(c.ndim)),
                min_value=int(c.min_value),
                max_value=int(c.max_value),
                level_stride=int(c.level_stride),
            )
        )
    return tuple(leaves)


LEAVES: tuple[Leaf, ...] = _load_leaves()
LEAF_BY_NAME = {leaf.name: leaf for leaf in LEAVES}

# Mob classes whose masked entries have health > 0 in every reachable state (arrows keep
# health 0: it is never read).
LIVING_MOB_CLASSES = ("zombies", "cows", "skeletons")


def get_state(states: np.ndarray) -> dict[str, np.ndarray]:
    """The leaves of a [N, STATE_SIZE] uint8 state buffer, in upstream's dtypes."""
    return {leaf.name: leaf.view(states).astype(leaf.dtype, copy=True) for leaf in LEAVES}


def validate_state(state: dict, num_envs: int) -> dict[str, np.ndarray]:
    """Check a state dict against the leaf table; return its arrays in storage dtypes.

    Raises KeyError for missing or unknown leaves and TypeError/ValueError naming the leaf
    for a wrong dtype, shape or an out-of-domain value.
    """
    if not isinstance(state, dict):
        raise TypeError(f"state must be a dict of leaf name -> array, got {type(state).__name__}")
    missing = [leaf.name for leaf in LEAVES if leaf.name not in state]
    unknown = sorted(set(state) - set(LEAF_BY_NAME))
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing leaves {missing}")
        if unknown:
            parts.append(f"unknown leaves {unknown}")
        raise KeyError("state dict does not match Craftax-Classic's EnvState: " + "; ".join(parts))
    converted = {}
    for leaf in LEAVES:
        value = state[leaf.name]
        if not isinstance(value, np.ndarray):
            raise TypeError(f"state[{leaf.name!r}] must be a numpy array, got {type(value).__name__}")
        expected_shape = (num_envs,) + leaf.shape
        if value.dtype != leaf.dtype:
            raise TypeError(f"state[{leaf.name!r}] must have dtype {leaf.dtype}, got {value.dtype}")
        if value.shape != expected_shape:
            raise ValueError(f"state[{leaf.name!r}] must have shape {expected_shape}, got {value.shape}")
        if leaf.dtype == np.float32:
            if not np.all(np.isfinite(value)):
                bad = tuple(int(i) for i in np.argwhere(~np.isfinite(value))[0])
                raise ValueError(f"state[{leaf.name!r}] has a non-finite value at index {bad}")
        elif leaf.dtype != np.bool_ and leaf.dtype != np.uint32:
            out_of_domain = (value < leaf.min_value) | (value > leaf.max_value)
            if np.any(out_of_domain):
                bad = tuple(int(i) for i in np.argwhere(out_of_domain)[0])
                raise ValueError(
                    f"state[{leaf.name!r}] value {value[bad]} at index {bad} is outside "
                    f"[{leaf.min_value}, {leaf.max_value}]"
                )
        converted[leaf.name] = value.astype(leaf.storage, copy=False)
    for cls in LIVING_MOB_CLASSES:
        dead = converted[cls + ".mask"].astype(bool) & ~(converted[cls + ".health"] > 0)
        if np.any(dead):
            bad = tuple(int(i) for i in np.argwhere(dead)[0])
            raise ValueError(
                f"state[{cls + '.health'!r}] is {converted[cls + '.health'][bad]} at index {bad} where "
                f"{cls + '.mask'!r} is set: no reachable state has a masked mob with health <= 0"
            )
    return converted


def write_state(states: np.ndarray, converted: dict[str, np.ndarray]) -> None:
    """Store validated leaves (validate_state's output) into a [N, STATE_SIZE] buffer."""
    for leaf in LEAVES:
        leaf.view(states)[...] = converted[leaf.name]


def set_state(states: np.ndarray, state: dict) -> None:
    """validate_state, then write_state: the buffer is untouched when the dict is rejected."""
    write_state(states, validate_state(state, states.shape[0]))
