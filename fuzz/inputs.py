"""Input generators of pycraftax's fuzz suite: states inside the domain set_state accepts
(docs/STATE_DOMAIN.md), make() params across their accepted ranges, and the hostile inputs
of every public entry point (masked arrays, ndarray subclasses, duck arrays, exotic dtypes,
torch special tensors, mixed-type keys, values outside the domain).

Everything is drawn from a numpy Generator, so one integer seed reproduces an input; the
Hypothesis tests (tests/test_api_fuzz.py) draw the seeds, `nox -s fuzz` (fuzz/run.py) walks
seed ranges in child processes.
"""

from __future__ import annotations

import numpy as np

CRAFTAX = "Craftax-Symbolic-v1"
CLASSIC = "Craftax-Classic-Symbolic-v1"
ENV_IDS = (CRAFTAX, CLASSIC)
FLOAT32_MAX = float(np.finfo(np.float32).max)


def table(env_id: str):
    """The game's pycraftax._state.LeafTable."""
    if env_id == CLASSIC:
        from pycraftax import classic_state

        return classic_state.TABLE
    from pycraftax import _state

    return _state.TABLE


def num_actions(env_id: str) -> int:
    return 17 if env_id == CLASSIC else 43


# -- states inside the domain ----------------------------------------------------------------
def leaf_values(leaf, shape: tuple, rng: np.random.Generator, keep_off_edges: bool = False) -> np.ndarray:
    """Random values of one leaf inside its domain (leaf.min_value..max_value), with the edges
    and the values play reaches (small counts, map coordinates) over-represented.
    keep_off_edges: integers stay strictly inside (god mode's player positions, see
    CraftaxVecEnv.step)."""
    if leaf.dtype == np.bool_:
        return rng.random(shape) < 0.5
    if leaf.dtype == np.uint32:
        return rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)
    lo, hi = leaf.min_value, leaf.max_value
    pick = rng.random(shape)
    if leaf.dtype == np.float32:
        bounded_hi = min(hi, 1e4)
        typical = rng.uniform(max(lo, -1e3), bounded_hi, size=shape)
        edges = np.array([lo, hi, max(lo, 0.0), min(hi, 1.0), max(lo, min(hi, 1e-45)), max(lo, min(hi, 25.5)),
                          max(lo, -1e30), min(hi, 1e30)], dtype=np.float64)
        values = np.where(pick < 0.7, typical, rng.choice(edges, size=shape))
        values = np.where(values == 0, np.copysign(0.0, rng.random(shape) - 0.5 if lo < 0 or lo == 0 else 1), values)
        return np.clip(values, lo, hi).astype(np.float32)
    if keep_off_edges and hi - lo >= 2:
        lo, hi = lo + 1, hi - 1
    uniform = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)
    near = np.clip(rng.integers(-2, 50, size=shape), lo, hi)
    edges = np.array([lo, hi, lo + (hi > lo), hi - (hi > lo), min(max(0, lo), hi), min(max(1, lo), hi)])
    values = np.where(pick < 0.3, uniform, np.where(pick < 0.75, near, rng.choice(edges, size=shape)))
    return values.astype(np.int32)


def accepted_state(env_id: str, num_envs: int, rng: np.random.Generator, god_mode: bool = False) -> dict:
    """A whole state dict of leaf_values for num_envs envs, keeping set_state's one rule across
    leaves: a masked mob of a class that lives has health > 0."""
    t = table(env_id)
    state = {}
    for leaf in t.leaves:
        # player positions that a step may move: god mode, and Classic (off the map onto lava)
        off_edges = (god_mode or env_id == CLASSIC) and leaf.name == "player_position"
        state[leaf.name] = leaf_values(leaf, (num_envs,) + leaf.shape, rng, keep_off_edges=off_edges)
    for cls in t.living_mob_classes:
        state[cls + ".mask"] &= state[cls + ".health"] > 0
    return state


# -- params ------------------------------------------------------------------------------------
INT32_MAX = 2**31 - 1


def random_params(env_id: str, rng: np.random.Generator) -> dict:
    """make() keyword arguments across the ranges make() accepts, extremes over-represented."""
    def one_of(*values):
        return values[int(rng.integers(len(values)))]

    params = {
        "max_timesteps": one_of(1, 2, 7, 300, 10_000, 100_000, INT32_MAX),
        "day_length": one_of(1, 2, 3, 300, INT32_MAX),
        "always_diamond": bool(rng.random() < 0.5),
        "mob_despawn_distance": one_of(0, 1, 3, 14, 100, INT32_MAX),
    }
    if env_id == CLASSIC:
        for name in ("zombie_health", "cow_health", "skeleton_health"):
            params[name] = one_of(1, 3, 5, INT32_MAX)
        for name in ("spawn_cow_chance", "spawn_zombie_base_chance", "spawn_zombie_night_chance",
                     "spawn_skeleton_chance"):
            params[name] = one_of(0.0, 0.05, 0.5, 1.0)
    else:
        params["max_attribute"] = one_of(1, 2, 5, 99)
        params["god_mode"] = bool(rng.random() < 0.3)
    return params


# -- hostile array-likes -----------------------------------------------------------------------
class Subclass(np.ndarray):
    """An ndarray subclass that lies about nothing (np.memmap-like)."""


class LyingSubclass(np.ndarray):
    """An ndarray subclass whose Python-level reductions lie: any/all report nothing out of
    range, as a checker written with them would believe."""

    def any(self, *args, **kwargs):
        return False

    def all(self, *args, **kwargs):
        return True


class DuckArray:
    """An object with __array__ only (not an ndarray)."""

    def __init__(self, array):
        self.array = np.asarray(array)

    def __array__(self, dtype=None, copy=None):
        return self.array if dtype is None else self.array.astype(dtype)


class BrokenArray:
    """A duck type whose __array__ raises or returns something that is not an array."""

    def __init__(self, mode: str):
        self.mode = mode

    def __array__(self, dtype=None, copy=None):
        if self.mode == "raise":
            raise IndexError("broken __array__")
        return "not an array"


class BrokenDLPack:
    """A duck type with a malformed __dlpack_device__ (and no usable __dlpack__)."""

    def __init__(self, device):
        self.device = device

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        raise TypeError("no DLPack here")


def disguise(array: np.ndarray, how: str):
    """`array` dressed as an array-like of kind `how`."""
    if how == "masked_none":
        return np.ma.array(array, mask=np.zeros(array.shape, bool))
    if how == "masked_some":
        mask = np.zeros(array.shape, bool)
        mask.reshape(-1)[::2] = True
        return np.ma.array(array, mask=mask)
    if how == "subclass":
        return array.view(Subclass)
    if how == "lying_subclass":
        return array.view(LyingSubclass)
    if how == "duck":
        return DuckArray(array)
    if how == "list":
        return array.tolist()
    if how == "fortran":
        return np.asfortranarray(array)
    if how == "strided":
        wide = np.repeat(array[..., None], 2, axis=-1)
        return wide[..., 0]
    if how == "readonly":
        out = array.copy()
        out.flags.writeable = False
        return out
    if how == "byteswapped":
        return array.astype(array.dtype.newbyteorder())
    if how == "zero_d" and array.ndim:
        return array.reshape(-1)[0]
    return array


DISGUISES = ("plain", "masked_none", "masked_some", "subclass", "lying_subclass", "duck", "list", "fortran",
             "strided", "readonly", "byteswapped", "zero_d")
# Disguises set_state must take as the plain array they hold (same dtype, shape, values)
ACCEPTED_DISGUISES = ("plain", "subclass", "lying_subclass", "fortran", "strided", "readonly")
