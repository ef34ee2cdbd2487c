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
    # the domain set_state accepts: ints for integer and bool leaves, the float32 bounds for
    # float leaves (whose values must also be finite); unused for the uint32 RNG key
    min_value: int | float
    max_value: int | float
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

    def domain(self) -> str:
        """The values this leaf accepts, in words (error messages, docs)."""
        if self.dtype == np.bool_:
            return "True or False"
        if self.dtype == np.uint32:
            return "any uint32"
        if self.dtype == np.float32:
            if self.min_value == -FLOAT32_MAX and self.max_value == FLOAT32_MAX:
                return "finite float32 values"
            return f"finite float32 values in [{_float_text(self.min_value)}, {_float_text(self.max_value)}]"
        return f"integers in [{self.min_value}, {self.max_value}]"

    def outside(self, values: np.ndarray) -> np.ndarray:
        """bool mask of the elements of `values` (this leaf's dtype) outside its domain."""
        if self.dtype == np.bool_ or self.dtype == np.uint32:
            return np.zeros(values.shape, dtype=bool)
        if self.dtype == np.float32:
            return ~((values >= np.float32(self.min_value)) & (values <= np.float32(self.max_value)))  # NaN too
        return (values < self.min_value) | (values > self.max_value)


FLOAT32_MAX = float(np.finfo(np.float32).max)


def _float_text(x: float) -> str:
    return "-3.4028235e+38" if x == -FLOAT32_MAX else "3.4028235e+38" if x == FLOAT32_MAX else repr(x)


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
# envs per staging buffer of check_written (149 KB each): a few tens of MB at most
_STAGING_ENVS = 256
_RULE_LIVING_MOB = 1  # CRAFTAX_STATE_RULE_LIVING_MOB of craftax_api.h


def plain_array(value, what: str) -> np.ndarray:
    """`value` as a copy in a plain numpy.ndarray: what is checked afterwards is exactly what
    gets written, whatever the caller's object does later (another thread writing to it, a
    subclass's overrides). Masked arrays are refused: every element is written, masked or not,
    so a mask would silently mean nothing. Anything but a numpy array is refused too."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{what} must be a plain numpy array, got a numpy masked array: every element is used, "
                        "masked or not; pass array.filled(...) or array.data")
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{what} must be a numpy array, got {type(value).__name__}")
    return np.array(value, copy=True, subok=False)


class LeafTable:
    """One game's leaf table and the get/validate/write of batched state dicts over it.

    `living_mob_classes` are the mob classes whose masked entries have health > 0 in every
    state reachable from reset (the step relies on it), so set_state refuses the others.
    `label` names the state in error messages; `state_size` is the bytes of one state and
    `check_function` the C extension's check of written states for this game
    (craftax_check_states, craftax_classic_check_states).
    """

    def __init__(self, leaves: tuple[Leaf, ...], living_mob_classes: tuple[str, ...], label: str, state_size: int,
                 check_function: str):
        self.leaves = leaves
        self.by_name = {leaf.name: leaf for leaf in leaves}
        self.living_mob_classes = living_mob_classes
        self.label = label
        self.state_size = state_size
        self.check_function = check_function

    def get_state(self, states: np.ndarray) -> dict[str, np.ndarray]:
        """The leaves of a [N, state_size] uint8 state buffer, in upstream's dtypes."""
        return {leaf.name: leaf.view(states).astype(leaf.dtype, copy=True) for leaf in self.leaves}

    def validate_state(self, state: dict, num_envs: int) -> dict[str, np.ndarray]:
        """Check a state dict against the leaf table; return its arrays in storage dtypes.

        Every value is copied into a plain ndarray first (plain_array) and the copy is what is
        checked and returned. Raises KeyError for missing or unknown leaves and
        TypeError/ValueError naming the leaf for a wrong type, dtype, shape or a value outside
        its domain (Leaf.domain).
        """
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict of leaf name -> numpy array (as get_state() returns), "
                            f"got {type(state).__name__}")
        missing = [leaf.name for leaf in self.leaves if leaf.name not in state]
        unknown = sorted((k for k in state if not isinstance(k, str) or k not in self.by_name), key=repr)
        if missing or unknown:
            parts = []
            if missing:
                parts.append(f"missing leaves {missing}")
            if unknown:
                parts.append(f"unknown keys {unknown}")
            raise KeyError(f"state dict does not match {self.label}: " + "; ".join(parts) +
                           "; its keys must be exactly the leaf names get_state() returns")
        converted = {}
        for leaf in self.leaves:
            what = f"state[{leaf.name!r}]"
            value = plain_array(state[leaf.name], what)
            expected_shape = (num_envs,) + leaf.shape
            if value.dtype != leaf.dtype:
                raise TypeError(f"{what} must have dtype {leaf.dtype}, got {value.dtype}")
            if value.shape != expected_shape:
                raise ValueError(f"{what} must have shape {expected_shape}, got {value.shape}")
            outside = leaf.outside(value)
            if np.any(outside):
                bad = tuple(int(i) for i in np.argwhere(outside)[0])
                raise ValueError(_domain_message(leaf, bad, value[bad]))
            converted[leaf.name] = value.astype(leaf.storage, copy=False)
        self._check_masked_mobs_alive(converted)
        return converted

    def _check_masked_mobs_alive(self, converted: dict[str, np.ndarray]) -> None:
        for cls in self.living_mob_classes:
            dead = converted[cls + ".mask"].astype(bool) & ~(converted[cls + ".health"] > 0)
            if np.any(dead):
                bad = tuple(int(i) for i in np.argwhere(dead)[0])
                raise ValueError(_living_mob_message(cls, bad, converted[cls + ".health"][bad]))

    def write_state(self, states: np.ndarray, converted: dict[str, np.ndarray]) -> None:
        """Store validated leaves (validate_state's output) into a [N, state_size] buffer."""
        for leaf in self.leaves:
            leaf.view(states)[...] = converted[leaf.name]

    def check_written(self, converted: dict[str, np.ndarray], num_envs: int) -> None:
        """Write validated leaves into staging buffers, as write_state will write them into the
        env's, and have the C extension check those bytes (craftax_check_states): the rules
        never see a value outside the domain, even if the checks above missed one. Raises the
        same ValueError as validate_state would."""
        from pycraftax._native import ffi, lib

        check = getattr(lib, self.check_function)
        error = ffi.new("CraftaxStateError *")
        for start in range(0, num_envs, _STAGING_ENVS):
            stop = min(num_envs, start + _STAGING_ENVS)
            staging = np.zeros((stop - start, self.state_size), dtype=np.uint8)
            for leaf in self.leaves:
                leaf.view(staging)[...] = converted[leaf.name][start:stop]
            code = check(ffi.from_buffer(staging), stop - start, error)
            if code == lib.CRAFTAX_ERR_STATE:
                raise ValueError(self.error_message(error, env_offset=start))
            if code < 0:
                raise RuntimeError(f"checking the written states failed with C error {code}")

    def error_message(self, error, env_offset: int = 0) -> str:
        """The ValueError message of a C CraftaxStateError (check_written, the step's guard)."""
        leaf = self.leaves[error.leaf]
        index = (env_offset + int(error.env),) + tuple(int(i) for i in np.unravel_index(int(error.element), leaf.shape))
        value = leaf.dtype.type(error.value) if leaf.dtype != np.bool_ else error.value
        if error.rule == _RULE_LIVING_MOB:
            return _living_mob_message(leaf.name.rsplit(".", 1)[0], index, value)
        return _domain_message(leaf, index, value)

    def set_state(self, states: np.ndarray, state: dict) -> None:
        """validate_state, check_written, then write_state: the buffer is untouched when the
        dict is rejected."""
        converted = self.validate_state(state, states.shape[0])
        self.check_written(converted, states.shape[0])
        self.write_state(states, converted)


def _domain_message(leaf: Leaf, index: tuple, value) -> str:
    what = f"state[{leaf.name!r}]"
    if leaf.dtype == np.float32 and not np.isfinite(value):
        return f"{what} has a non-finite value {value!s} at index {index}: it must hold {leaf.domain()}"
    low, high = (_float_text(leaf.min_value), _float_text(leaf.max_value)) if leaf.dtype == np.float32 else (
        leaf.min_value, leaf.max_value)
    return f"{what} value {value!s} at index {index} is outside [{low}, {high}]"


def _living_mob_message(cls: str, index: tuple, health) -> str:
    return (f"state[{cls + '.health'!r}] is {health!s} at index {index} where {cls + '.mask'!r} is set: "
            "a masked mob must have health > 0, as in every state reachable from reset (clear the mask or give it "
            "health > 0)")


# Mob classes whose masked entries always have health > 0 in reachable states; the step's
# attack_mob_class relies on it (CONFORMANCE.md, quirk 7).
LIVING_MOB_CLASSES = ("melee_mobs", "passive_mobs", "ranged_mobs")
TABLE = LeafTable(LEAVES, LIVING_MOB_CLASSES, "EnvState", STATE_SIZE, "craftax_check_states")
get_state = TABLE.get_state
validate_state = TABLE.validate_state
write_state = TABLE.write_state
