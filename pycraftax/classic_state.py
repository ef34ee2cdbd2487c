"""Craftax-Classic's EnvState leaf table over its C state struct, and get/set of batched
state dicts (the Classic table for pycraftax/_state.py's LeafTable, read from the C extension's
craftax_classic_leaf).

Names are the dotted paths of upstream's craftax_classic EnvState leaves ("map",
"inventory.wood_pickaxe", "zombies.position", "state_rng"); shapes and dtypes are
upstream's. The C struct stores block ids and bools in uint8: get_state widens them and
set_state checks that values fit before narrowing.
"""

from __future__ import annotations

import numpy as np

from pycraftax._native import ffi, lib
from pycraftax._state import Leaf, LeafTable
from pycraftax.params import CLASSIC_ENV_ID

ENV_ID = CLASSIC_ENV_ID
OBS_SIZE = int(lib.craftax_classic_obs_size())
NUM_ACTIONS = int(lib.craftax_classic_num_actions())
NUM_ACHIEVEMENTS = int(lib.craftax_classic_num_achievements())
STATE_SIZE = int(lib.craftax_classic_state_size())

# CRAFTAX_DTYPE_* codes of craftax_api.h
_NUMPY_DTYPES = {0: np.dtype(np.uint8), 1: np.dtype(np.int32), 2: np.dtype(np.float32), 3: np.dtype(np.uint32),
                 4: np.dtype(np.bool_)}


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
                min_value=float(c.min_float) if c.storage_dtype == lib.CRAFTAX_DTYPE_FLOAT32 else int(c.min_value),
                max_value=float(c.max_float) if c.storage_dtype == lib.CRAFTAX_DTYPE_FLOAT32 else int(c.max_value),
                level_stride=int(c.level_stride),
            )
        )
    return tuple(leaves)


LEAVES: tuple[Leaf, ...] = _load_leaves()
LEAF_BY_NAME = {leaf.name: leaf for leaf in LEAVES}

# Mob classes whose masked entries have health > 0 in every reachable state (arrows keep
# health 0: it is never read).
LIVING_MOB_CLASSES = ("zombies", "cows", "skeletons")
TABLE = LeafTable(LEAVES, LIVING_MOB_CLASSES, "Craftax-Classic's EnvState", STATE_SIZE,
                  "craftax_classic_check_states")
get_state = TABLE.get_state
validate_state = TABLE.validate_state
write_state = TABLE.write_state
set_state = TABLE.set_state
