"""Batched Craftax-Classic envs over the C reference (backend="c"): Craftax-Classic-Symbolic-v1
on the env contract of pycraftax.vec_env.CraftaxVecEnv, through the craftax_classic_* C API."""

from __future__ import annotations

import numpy as np

from pycraftax import classic_state
from pycraftax.achievements import CLASSIC_ACHIEVEMENTS
from pycraftax.env import CBackendEnv
from pycraftax.params import to_c_classic

__all__ = ["CraftaxClassicEnv", "observation_high"]

_LAVA = 14  # craftax_classic BlockType.LAVA
_MAP_VIEW_SIZE = 7 * 9 * 21  # one-hot blocks and mob flags, all in [0, 1]
_COUNT_LEAVES = ("inventory.wood", "inventory.stone", "inventory.coal", "inventory.iron", "inventory.diamond",
                 "inventory.sapling", "inventory.wood_pickaxe", "inventory.stone_pickaxe", "inventory.iron_pickaxe",
                 "inventory.wood_sword", "inventory.stone_sword", "inventory.iron_sword",
                 "player_health", "player_food", "player_drink", "player_energy")


def _f16_div10(n: int) -> float:
    """Upstream's `astype(float16) / 10.0` of a count (craftax_classic_f16_div10 in obs.h)."""
    return float(np.float16(np.float16(n) * np.float16(0.1)))


def observation_high() -> np.ndarray:
    """float32 [1345]: the largest value each symbolic obs entry takes (the lower bound is 0):
    the 16 counts at the top of their set_state domain, as the obs shows them; direction
    one-hot, light level and is_sleeping at 1."""
    high = np.ones(classic_state.OBS_SIZE, dtype=np.float32)
    counts = [_f16_div10(classic_state.LEAF_BY_NAME[name].max_value) for name in _COUNT_LEAVES]
    high[_MAP_VIEW_SIZE:_MAP_VIEW_SIZE + len(counts)] = counts
    return high


class CraftaxClassicEnv(CBackendEnv):
    """`num_envs` Craftax-Classic envs on the CPU (OpenMP over the envs of a batch).

    Observations are float32 [num_envs, 1345], identical to craftax_classic's
    render_craftax_symbolic; 17 actions; info's "achievements" is bool [N, 22] and its
    "Achievements/<name>" keys are Classic's. Everything else (seeding, resets, threads,
    get_state/set_state with upstream's craftax_classic EnvState leaf names) is the contract
    of pycraftax.vec_env.CraftaxVecEnv.
    """

    env_id = classic_state.ENV_ID
    obs_size = classic_state.OBS_SIZE
    num_actions = classic_state.NUM_ACTIONS
    _walks_off_map_without_resets = True
    state_size = classic_state.STATE_SIZE
    achievement_table = CLASSIC_ACHIEVEMENTS
    _c_prefix = "craftax_classic"

    def _make_c_params(self, params):
        return to_c_classic(params)

    def ended_by_rules(self, state: dict[str, np.ndarray]) -> np.ndarray:
        """bool [N]: craftax_classic's is_game_over without its time limit: died or in lava."""
        rows = np.arange(state["map"].shape[0])
        standing_on = state["map"][rows, state["player_position"][:, 0], state["player_position"][:, 1]]
        return (state["player_health"] <= 0) | (standing_on == _LAVA)

    def _observation_low(self) -> np.ndarray:
        return np.zeros(classic_state.OBS_SIZE, dtype=np.float32)

    def _observation_high(self) -> np.ndarray:
        return observation_high()

    def _state_table(self):
        return classic_state.TABLE
