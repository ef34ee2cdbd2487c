"""The C rules' function matching each upstream subsystem of craftax_step, applied to batched
state dicts through the parity-test extension pycraftax._craftax_test (reference_c/testing/).

That extension is built only with PYCRAFTAX_TEST_HOOKS=1; `unavailable_reason()` says how to
get it where it is missing, and the finder then reports divergences without naming the
subsystem. The hooks compile the rules headers themselves, so `fingerprint()` is checked against
the C extension's before any replay: a stale test extension would replay other rules.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from pycraftax import classic_state
from pycraftax import _state
from pycraftax import params as pparams
from pycraftax.params import CLASSIC_ENV_ID, CRAFTAX_ENV_ID

_INCLUDE = Path(__file__).resolve().parent.parent.parent / "reference_c" / "include"
BUILD_HINT = ("build it from the repository root with: PYCRAFTAX_TEST_HOOKS=1 PYCRAFTAX_CUDA=0 pip install -e \".[jax]\" "
              "(nox -s conformance does it)")


def _hooks():
    from pycraftax._craftax_test import ffi, lib

    return ffi, lib


def unavailable_reason() -> str | None:
    """None when the parity-test extension loads, else why not and how to build it."""
    try:
        _hooks()
    except ImportError:
        return "the parity-test extension pycraftax._craftax_test is not built; " + BUILD_HINT
    return None


def fingerprint() -> str:
    ffi, lib = _hooks()
    return ffi.string(lib.craftax_test_rules_fingerprint()).decode()


def _player_ids(lib) -> dict[str, tuple[str, int]]:
    names = ("change_floor", "do_crafting", "do_action", "place_block", "shoot_projectile", "cast_spell",
             "drink_potion", "read_book", "enchant", "boss_logic", "level_up_attributes", "move_player",
             "clip_inventory_and_intrinsics")
    ids = {n: ("player", getattr(lib, f"CRAFTAX_SUB_{n.upper()}")) for n in names}
    for n in ("update_mobs", "spawn_mobs", "update_plants", "update_player_intrinsics",
              "calculate_inventory_achievements"):
        ids[n] = ("world", getattr(lib, f"CRAFTAX_SUB_{n.upper()}"))
    return ids


def _classic_ids(lib) -> dict[str, tuple[str, int]]:
    names = ("do_crafting", "do_action", "place_block", "move_player", "update_mobs", "spawn_mobs", "update_plants",
             "update_player_intrinsics", "cap_inventory", "update_health")
    return {n: ("classic", getattr(lib, f"CRAFTAX_CLASSIC_SUB_{n.upper()}")) for n in names}


class Rules:
    """The C rules of one game, subsystem by subsystem."""

    def __init__(self, env_id: str, params):
        """`params`: the env's EnvParams / ClassicEnvParams. Their C struct is made by the test
        extension's own ffi: cffi refuses a struct of another module's (the C extension's CPU
        variants are modules of their own)."""
        ffi, lib = _hooks()
        self.ffi, self.lib, self.env_id = ffi, lib, env_id
        self.c_params = (pparams.to_c(params, ffi) if env_id == CRAFTAX_ENV_ID
                         else pparams.to_c_classic(params, ffi))
        if env_id == CRAFTAX_ENV_ID:
            self.table, self.ids, self.prefix = _state.TABLE, _player_ids(lib), "craftax_"
            self.state_size = _state.STATE_SIZE
        elif env_id == CLASSIC_ENV_ID:
            self.table, self.ids, self.prefix = classic_state.TABLE, _classic_ids(lib), "craftax_classic_"
            self.state_size = classic_state.STATE_SIZE
        else:
            raise ValueError(f"unknown env id {env_id!r}")

    def has(self, name: str) -> bool:
        return name in self.ids

    def apply(self, name: str, state: dict[str, np.ndarray], keys: np.ndarray, actions: np.ndarray) -> dict:
        """The C function of upstream subsystem `name` applied to a batched state dict."""
        n = actions.shape[0]
        buf = np.zeros((n, self.state_size), dtype=np.uint8)
        # every leaf as upstream left it, unvalidated: a state between two subsystems need not be
        # one that set_state accepts (an inventory above its cap before clipping, say)
        self.table.write_state(buf, {leaf.name: np.asarray(state[leaf.name]).astype(leaf.storage)
                                     for leaf in self.table.leaves})
        keys = np.ascontiguousarray(keys, dtype=np.uint32)
        actions = np.ascontiguousarray(actions, dtype=np.int32)
        kind, sub_id = self.ids[name]
        cast = self.ffi.cast
        states_p = cast("void *", self.ffi.from_buffer(buf))
        keys_p = cast("uint32_t *", self.ffi.from_buffer(keys))
        actions_p = cast("int32_t *", self.ffi.from_buffer(actions))
        if kind == "player":
            rc = self.lib.craftax_test_player_subsystem(sub_id, states_p, actions_p, keys_p, n, self.c_params)
        elif kind == "world":
            out = np.zeros(n, np.int32)
            rc = self.lib.craftax_test_world_subsystem(states_p, sub_id, actions_p, keys_p, n, self.c_params,
                                                       cast("int32_t *", self.ffi.from_buffer(out)))
        else:
            rc = self.lib.craftax_test_classic_subsystem(sub_id, states_p, actions_p, keys_p, n, self.c_params)
        if rc != 0:
            raise RuntimeError(f"the C hook of {name} returned {rc}")
        return self.table.get_state(buf)

    def function_name(self, name: str) -> str:
        return self.prefix + name

    def source_of(self, name: str) -> str:
        """'<header>:<line>' where the C function of subsystem `name` is defined."""
        c_name = self.function_name(name)
        pattern = re.compile(rf"^\s*static\b.*\b{c_name}\s*\(")
        for header in sorted(_INCLUDE.glob("craftax*/*.h")):
            for number, line in enumerate(header.read_text().splitlines(), 1):
                if pattern.match(line):
                    return f"{header.relative_to(_INCLUDE.parent.parent)}:{number}"
        return "reference_c/include/ (definition not found)"
