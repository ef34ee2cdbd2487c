/* cuda/env_obs.cuh: the obs kernels of the CUDA env library (a warp per env: the obs, the
 * terminal obs of the ended envs, the compact records' expansion) and the obs writers that the
 * step and world-generation kernels call.
 *
 * Every obs goes through the compact record (obs.h). A warp renders its env's record into
 * shared memory (craftax_render_compact_lanes: the same reads and mob scatter as the float
 * render), then writes each of the 8268 floats once, as coalesced float4 stores, from a
 * per-cell 128-bit channel mask (rather than zero-filling the 33 KB and scattering the ones);
 * the record itself is copied out when asked for. */
#ifndef CRAFTAX_CUDA_ENV_OBS_CUH
#define CRAFTAX_CUDA_ENV_OBS_CUH

#define OBS_F4 (CRAFTAX_OBS_SIZE / 4) /* 8268 = 4 * 2067 */
#define OBS_CELLS (CRAFTAX_OBS_ROWS * CRAFTAX_OBS_COLS)
typedef struct __align__(16) {
    uint8_t rec[CRAFTAX_OBS_COMPACT_SIZE];
    uint64_t lo[OBS_CELLS], hi[OBS_CELLS];
} WarpObs;
#define OBS_WARPS (THREADS / LANES)

static __device__ __forceinline__ float obs_bit(const WarpObs *sh, int cell, int ch) {
    const uint64_t w = ch < 64 ? sh->lo[cell] >> ch : sh->hi[cell] >> (ch - 64);
    return (w & 1u) ? 1.0f : 0.0f;
}

/* Asks L1 for the lines of an env's state that its obs reads: the view rows of map,
 * item_map and light_map, the current level's mobs and the scalar fields (two items a lane).
 * Lane 0 reads the mob slots and the 51 scalars one after another (obs.h), which without the
 * prefetch waits a memory latency per field (half of observe_kernel's stalls). */
static __device__ __forceinline__ void prefetch_l1(const void *p) { asm volatile("prefetch.global.L1 [%0];" ::"l"(p)); }
static __device__ void prefetch_obs_reads(const CraftaxState *s, int lane) {
    const int level = s->player_level;
    const int32_t x0 = s->player_position[0] - CRAFTAX_OBS_ROWS / 2;
    const int32_t y0 = craftax_max_i32(s->player_position[1] - CRAFTAX_OBS_COLS / 2, 0);
    const int32_t y1 = craftax_min_i32(s->player_position[1] + CRAFTAX_OBS_COLS / 2, CRAFTAX_MAP_SIZE - 1);
    const char *base = (const char *)s;
    enum { SCALAR_ITEMS = 9, ROW_ITEMS = 6 };
    for (int item = lane; item < SCALAR_ITEMS + ROW_ITEMS * CRAFTAX_OBS_ROWS; item += LANES) {
        const char *p;
        if (item < SCALAR_ITEMS) {
            /* lines 0-2 of monsters_killed .. inventory (208 bytes), 0-3 of this level's mobs
             * (348), 0-1 of potion_mapping .. the end (144) */
            const int first = item < 3 ? 0 : item < 7 ? 3 : 7;
            const size_t lo = first == 0   ? offsetof(CraftaxState, monsters_killed)
                              : first == 3 ? offsetof(CraftaxState, mobs) + (size_t)level * sizeof(CraftaxLevelMobs)
                                           : offsetof(CraftaxState, potion_mapping);
            const size_t hi = first == 0   ? offsetof(CraftaxState, mobs)
                              : first == 3 ? lo + sizeof(CraftaxLevelMobs)
                                           : sizeof(CraftaxState);
            p = (const char *)(((uintptr_t)(base + lo) & ~(uintptr_t)127) + (uintptr_t)(item - first) * 128);
            if (p >= base + hi) continue;
        } else {
            const int r = (item - SCALAR_ITEMS) / ROW_ITEMS, which = (item - SCALAR_ITEMS) % ROW_ITEMS;
            const int32_t x = x0 + r;
            if (x < 0 || x >= CRAFTAX_MAP_SIZE || y0 > y1) continue;
            const int32_t y = which % 2 ? y1 : y0; /* a row segment's first and last byte */
            p = which < 2   ? (const char *)&s->map[level][x][y]
                : which < 4 ? (const char *)&s->item_map[level][x][y]
                            : (const char *)&s->light_map[level][x][y];
        }
        prefetch_l1(p);
    }
}

/* The obs (fresh_world: reset-time rounding, obs.h) of one env by its warp: `obs` (8268
 * floats) and/or `compact` (CRAFTAX_OBS_COMPACT_SIZE bytes), either may be NULL. */
static __device__ void emit_obs_warp(const CraftaxState *s, float *obs, uint8_t *compact, int fresh_world, int lane,
                                     WarpObs *sh) {
    if (!obs && !compact) return;
    prefetch_obs_reads(s, lane);
    craftax_render_compact_lanes(s, sh->rec, fresh_world, lane, LANES); /* ends synced */
    if (compact) {
        if (((uintptr_t)compact & 15u) == 0) {
            const uint4 *src = (const uint4 *)sh->rec;
            for (int q = lane; q < CRAFTAX_OBS_COMPACT_SIZE / 16; q += LANES) ((uint4 *)compact)[q] = src[q];
        } else {
            for (int q = lane; q < CRAFTAX_OBS_COMPACT_SIZE; q += LANES) compact[q] = sh->rec[q];
        }
    }
    if (obs) {
        for (int cell = lane; cell < OBS_CELLS; cell += LANES)
            craftax_obs_compact_cell_mask(sh->rec, cell, &sh->lo[cell], &sh->hi[cell]);
        __syncwarp();
        const float *scalars = (const float *)sh->rec;
        if (((uintptr_t)obs & 15u) == 0) {
            for (int q = lane; q < OBS_F4; q += LANES) {
                float v[4];
                int k = 4 * q, cell = k / CRAFTAX_OBS_CHANNELS, ch = k - cell * CRAFTAX_OBS_CHANNELS;
#pragma unroll
                for (int e = 0; e < 4; e++, k++) {
                    v[e] = k >= CRAFTAX_OBS_MAP_SIZE ? scalars[k - CRAFTAX_OBS_MAP_SIZE] : obs_bit(sh, cell, ch);
                    if (++ch == CRAFTAX_OBS_CHANNELS) {
                        ch = 0;
                        cell++;
                    }
                }
                ((float4 *)obs)[q] = make_float4(v[0], v[1], v[2], v[3]);
            }
        } else {
            for (int k = lane; k < CRAFTAX_OBS_SIZE; k += LANES) {
                const int cell = k / CRAFTAX_OBS_CHANNELS;
                obs[k] = k >= CRAFTAX_OBS_MAP_SIZE ? scalars[k - CRAFTAX_OBS_MAP_SIZE]
                                                   : obs_bit(sh, cell, k - cell * CRAFTAX_OBS_CHANNELS);
            }
        }
    }
    __syncwarp(); /* the warp's shared record is free again */
}

/* The obs of the world-generation kernels, without shared memory: a kernel that declares
 * shared memory gets a larger shared carveout and a smaller L1, and world generation (one
 * warp over ~220 KB of state and scratch per env) runs about twice as slow then. These envs are
 * few per step. */
static __device__ void emit_obs_global_warp(const CraftaxState *s, float *obs, uint8_t *compact, int fresh_world,
                                            int lane) {
    if (obs) craftax_render_symbolic_lanes(s, obs, fresh_world, lane, LANES);
    if (compact) craftax_render_compact_lanes(s, compact, fresh_world, lane, LANES);
}

static __device__ __forceinline__ float *obs_row(float *obs, int64_t i) { return obs ? obs + i * CRAFTAX_OBS_SIZE : NULL; }
static __device__ __forceinline__ uint8_t *compact_row(uint8_t *c, int64_t i) {
    return c ? c + i * CRAFTAX_OBS_COMPACT_SIZE : NULL;
}

/* fresh_world (may be NULL: none): envs whose state was just generated (obs.h). */
__global__ void observe_kernel(const CraftaxState *states, int64_t num_envs, float *obs, uint8_t *obs_compact,
                               const uint8_t *fresh_world) {
    __shared__ WarpObs sh[OBS_WARPS];
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    const int lane = (int)(threadIdx.x % LANES);
    if (i >= num_envs) return;
    emit_obs_warp(&states[i], obs_row(obs, i), compact_row(obs_compact, i), fresh_world ? fresh_world[i] : 0, lane,
                  &sh[threadIdx.x / LANES]);
}

/* The obs of the state each ended env of [base, base + n) is in (ended[i]), into its row of
 * final_obs: launched, only for a caller that asks for final_obs, between the step kernel and
 * the reset that overwrites those states; other rows are not written. bad_actions (may be
 * NULL): set by the action check, the call fails and the flags are stale. */
__global__ void final_obs_kernel(const CraftaxState *states, int64_t base, int64_t n, float *final_obs,
                                 const uint8_t *ended, const int *bad_actions) {
    __shared__ WarpObs sh[OBS_WARPS];
    const int64_t j = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    const int lane = (int)(threadIdx.x % LANES);
    if (j >= n) return;
    if (bad_actions && *bad_actions) return;
    const int64_t i = base + j;
    if (!ended[i]) return;
    emit_obs_warp(&states[i], obs_row(final_obs, i), NULL, 0, lane, &sh[threadIdx.x / LANES]);
}

/* Expands compact records to the float obs: a thread per float4 (exact, obs.h). */
__global__ void expand_obs_kernel(const uint8_t *compact, int64_t num_envs, float *obs) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= num_envs * OBS_F4) return;
    const int64_t i = t / OBS_F4;
    const int q = (int)(t - i * OBS_F4);
    const uint8_t *rec = compact + i * CRAFTAX_OBS_COMPACT_SIZE;
    float v[4];
    for (int e = 0; e < 4; e++) v[e] = craftax_obs_compact_value(rec, 4 * q + e);
    ((float4 *)obs)[t] = make_float4(v[0], v[1], v[2], v[3]);
}

#endif
