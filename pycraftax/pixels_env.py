"""The pixel envs on the C reference (backend="c"): Craftax-Pixels-v1 and
Craftax-Classic-Pixels-v1, upstream's CraftaxPixelsEnv and CraftaxClassicPixelsEnv.

The same games, params, states, keys, resets and info as the symbolic envs; the obs is the
picture upstream's pixel renderer draws at the agent's block size (10, Classic 7), divided by
255: float32 [N, 130, 110, 3] (Classic [N, 63, 63, 3]), bit for bit as craftax 1.6.1
(reference_c/include/craftax/pixels.h; the textures are read from the installed craftax
distribution, pycraftax/textures.py).
"""

from __future__ import annotations

import sys

import numpy as np

from pycraftax import pixels
from pycraftax._native import ptr
from pycraftax.classic_env import CraftaxClassicEnv
from pycraftax.env import CraftaxEnv
from pycraftax.params import CLASSIC_PIXELS_ENV_ID, CRAFTAX_PIXELS_ENV_ID

__all__ = ["CraftaxClassicPixelsEnv", "CraftaxPixelsEnv"]


class _PixelObs:
    """The pixel obs of a C env: its game's atlas at the agent's block size, passed to the
    game's craftax*_pixels_* calls."""

    game = pixels.FULL

    def __init__(self, *args, **kwargs):
        # before the env allocates anything: a missing craftax distribution fails here, clearly
        self._atlas = pixels.atlas(self.game, pixels.AGENT_BLOCK[self.game])
        self._last_step_obs = None
        super().__init__(*args, **kwargs)

    def _step_obs(self) -> np.ndarray:
        # A batch of pixel obs is large (44 MB for 256 envs of the full game): a fresh array each
        # step costs the kernel's zeroing of its pages, about as long as drawing them. The last
        # step's array is written again
        # only when nothing but this env holds it (its attribute, the local name and
        # getrefcount's argument: a caller's name, view, memoryview, DLPack capsule or
        # torch.from_numpy tensor all hold a reference), so no obs a caller kept ever changes.
        last = self._last_step_obs
        if last is not None and sys.getrefcount(last) == 3:
            return last
        self._last_step_obs = None
        last = self._last_step_obs = super()._step_obs()
        return last

    @property
    def obs_shape(self) -> tuple[int, int, int]:
        return self._picture_shape

    def _observation_low(self) -> np.ndarray:
        return np.zeros(self.obs_shape, dtype=np.float32)

    def _observation_high(self) -> np.ndarray:
        return np.ones(self.obs_shape, dtype=np.float32)

    def _obs_args(self) -> tuple:
        return (ptr(self._atlas, "float *"),)


class CraftaxPixelsEnv(_PixelObs, CraftaxEnv):
    """`num_envs` Craftax-Pixels-v1 envs on the CPU: obs float32 [N, 130, 110, 3] in [0, 1]."""

    env_id = CRAFTAX_PIXELS_ENV_ID
    game = pixels.FULL
    _c_prefix = "craftax_pixels"
    _picture_shape = (130, 110, 3)
    obs_size = 130 * 110 * 3

    def observe_compact(self):
        raise ValueError(f"{self.env_id} has no compact obs records (they encode the symbolic obs)")


class CraftaxClassicPixelsEnv(_PixelObs, CraftaxClassicEnv):
    """`num_envs` Craftax-Classic-Pixels-v1 envs on the CPU: obs float32 [N, 63, 63, 3] in [0, 1]."""

    env_id = CLASSIC_PIXELS_ENV_ID
    game = pixels.CLASSIC
    _c_prefix = "craftax_classic_pixels"
    _picture_shape = (63, 63, 3)
    obs_size = 63 * 63 * 3
