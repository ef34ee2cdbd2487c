"""The EnvState leaf table of the C state struct, and get/set of batched state dicts.

Names are the dotted paths of upstream EnvState leaves ("map", "inventory.wood",
"melee_mobs.position", "state_rng"); shapes and dtypes are upstream's. The C struct
stores some leaves narrower (block ids and bools in uint8): get_state widens them and
set_state checks the values fit before narrowing. The table is data (_leaf_table.py) so that
the CUDA backend reads states without the C extension.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pycraftax import _leaf_table


@dataclass(frozen=True)
class Leaf:
    name: str
    offset: int
    storage: np.dtype
    dtype: np.dtype
    shape: tuple[int, ...]
    min_value: int
    max_value: int
    level_stride: int  # 0, or the byte step of dim 0 (a level) in the per-level mob records

    def view(self, states: np.ndarray) -> np.ndarray:
        """This leaf of every env, as a strided view into the state buffer [N, state_size]."""
        inner = np.empty(self.shape, dtype=self.storage).strides
        if self.level_stride:
            inner = (self.level_stride,) + inner[1:]
        return np.ndarray(
            shape=(states.shape[0],) + self.shape,
            dtype=self.storage,
            buffer=states,
            offset=self.offset,
            strides=(states.strides[0],) + inner,
        )


def _load_leaves() -> tuple[Leaf, ...]:
    return tuple(
        Leaf(name=name, offset=offset, storage=np.dtype(storage), dtype=np.dtype(dtype), shape=tuple(shape),
             min_value=min_value, max_value=max_value, level_stride=level_stride)
        for name, offset, storage, dtype, shape, min_value, max_value, level_stride in _leaf_table.LEAF_ROWS
    )


LEAVES: tuple[Leaf, ...] = _load_leaves()
LEAF_BY_NAME = {leaf.name: leaf for leaf in LEAVES}
STATE_SIZE = _leaf_table.STATE_SIZE
# not a leaf: the CUDA build's pending levels (uint32 bit mask per env, state.h)
FLOORS_PENDING_OFFSET = _leaf_table.FLOORS_PENDING_OFFSET


class LeafTable:
    """One game's leaf table and the get/validate/write of batched state dicts over it.

    `living_mob_classes` are the mob classes whose masked entries have health > 0 in every
    state reachable from reset (the step relies on it), so set_state refuses the others.
    `label` names the state in error messages.
    """

    def __init__(self, leaves: tuple[Leaf, ...], living_mob_classes: tuple[str, ...], label: str):
        self.leaves = leaves
        self.by_name = {leaf.name: leaf for leaf in leaves}
        self.living_mob_classes = living_mob_classes
        self.label = label

    def get_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """The leaves of a [N, state_size] uint8 state buffer, in upstream's dtypes."""
        return {leaf.name: leaf.view(states).astype(leaf.dtype, copy=True) for leaf in self.leaves}

    def validate_state(self, state: dict, num_envs: int) -> dict[str, np.ndarray]:
        """Check a state dict against the leaf table; return its arrays in storage dtypes.

        Raises KeyError for missing or unknown leaves and TypeError/ValueError naming the
        leaf for a wrong dtype, shape or an out-of-domain value.
        """
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict of leaf name -> array, got {type(state).__name__}")
        missing = [leaf.name for leaf in self.leaves if leaf.name not in state]
        unknown = sorted(set(state) - set(self.by_name))
        if missing or unknown:
            parts = []
            if missing:
                parts.append(f"missing leaves {missing}")
            if unknown:
                parts.append(f"unknown leaves {unknown}")
            raise KeyError(f"state dict does not match {self.label}: " + "; ".join(parts))
        converted = {}
        for leaf in self.leaves:
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
        self._check_masked_mobs_alive(converted)
        return converted

    def _check_masked_mobs_alive(self, converted: dict[str, np.ndarray]) -> None:
        for cls in self.living_mob_classes:
            dead = converted[cls + ".mask"].astype(bool) & ~(converted[cls + ".health"] > 0)
            if np.any(dead):
                bad = tuple(int(i) for i in np.argwhere(dead)[0])
                raise ValueError(
                    f"state[{cls + '.health'!r}] is {converted[cls + '.health'][bad]} at index {bad} where "
                    f"{cls + '.mask'!r} is set: no state reachable from reset has a masked mob with "
                    "health <= 0 (clear the mask or give it health > 0)"
                )

    def write_state(self, states: np.ndarray, converted: dict[str, np.ndarray]) -> None:
        """Store validated leaves (validate_state's output) into a [N, state_size] buffer."""
        for leaf in self.leaves:
            leaf.view(states)[...] = converted[leaf.name]

    def set_state(self, states: np.ndarray, state: dict) -> None:
        """validate_state, then write_state: the buffer is untouched when the dict is rejected."""
        self.write_state(states, self.validate_state(state, states.shape[0]))


# Mob classes whose masked entries always have health > 0 in reachable states; the step's
# attack_mob_class relies on it (CONFORMANCE.md, quirk 7).
LIVING_MOB_CLASSES = ("melee_mobs", "passive_mobs", "ranged_mobs")
TABLE = LeafTable(LEAVES, LIVING_MOB_CLASSES, "EnvState")
get_state = TABLE.get_state
validate_state = TABLE.validate_state
write_state = TABLE.write_state
