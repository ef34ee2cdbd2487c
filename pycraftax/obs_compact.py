"""The compact observation record (make(..., obs="compact"), backend="cuda").

The symbolic obs (8268 float32, 33,072 bytes) is mostly one-hot. The compact record holds the
same information in COMPACT_SIZE = 1008 bytes (uint8), laid out as in
reference_c/include/craftax/obs.h (craftax_render_compact_lanes):

  bytes [0, 204)     the 51 scalars as float32 (the obs' last 51 values, same bits);
  bytes [208, 1000)  the 9 x 11 view cells (row-major), 8 bytes each: block id, item id,
                     visible (0/1; an invisible cell's 83 obs values are all 0), then the 40
                     mob channels as bits (obs channel 42 + k is bit k % 8 of byte 3 + k // 8);
  bytes [1000, 1008) zero.

`expand(records)` (numpy) and `CudaCraftaxEnv.expand_obs()` (GPU) turn records into the float
obs, bit for bit the obs the env renders with obs="float".
"""

from __future__ import annotations

import numpy as np

COMPACT_SIZE = 1008
CELLS_OFFSET = 208
NUM_CELLS = 9 * 11
CHANNELS = 83
MAP_SIZE = NUM_CELLS * CHANNELS
NUM_SCALARS = 51
OBS_SIZE = MAP_SIZE + NUM_SCALARS
NUM_BLOCK_TYPES = 37
NUM_ITEM_TYPES = 5


def expand(records) -> np.ndarray:
    """uint8 [..., 1008] compact records -> float32 [..., 8268] symbolic obs (exact)."""
    rec = np.ascontiguousarray(np.asarray(records), dtype=np.uint8)
    if rec.shape[-1:] != (COMPACT_SIZE,):
        raise ValueError(f"compact records must have last dimension {COMPACT_SIZE}, got shape {rec.shape}")
    lead = rec.shape[:-1]
    r = rec.reshape(-1, COMPACT_SIZE)
    n = r.shape[0]
    cells = r[:, CELLS_OFFSET:CELLS_OFFSET + NUM_CELLS * 8].reshape(n, NUM_CELLS, 8)
    visible = cells[:, :, 2] != 0
    block = cells[:, :, 0].astype(np.int64)
    item = cells[:, :, 1].astype(np.int64)
    out = np.zeros((n, NUM_CELLS, CHANNELS), np.float32)
    ei, ci = np.nonzero(visible & (block < NUM_BLOCK_TYPES))
    out[ei, ci, block[ei, ci]] = 1.0
    ei, ci = np.nonzero(visible & (item < NUM_ITEM_TYPES))
    out[ei, ci, NUM_BLOCK_TYPES + item[ei, ci]] = 1.0
    bits = np.unpackbits(cells[:, :, 3:8], axis=-1, bitorder="little")
    out[:, :, 42:82] = bits * visible[:, :, None]
    out[:, :, 82] = visible
    scalars = np.ascontiguousarray(r[:, :NUM_SCALARS * 4]).view(np.float32)
    return np.concatenate([out.reshape(n, MAP_SIZE), scalars], axis=1).reshape(lead + (OBS_SIZE,))
