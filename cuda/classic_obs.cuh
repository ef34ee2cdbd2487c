/* cuda/classic_obs.cuh: Craftax-Classic's compact obs record on the GPU (part of
 * cuda/classic_cuda.cu): rendered by a thread from its env's state, expanded exactly into the
 * 1,345-float symbolic obs of craftax_classic_render_symbolic (reference_c/include/
 * craftax_classic/obs.h), whose cell, mob and scalar helpers both use.
 *
 * Record layout (CLASSIC_COMPACT_SIZE = 224 bytes, a multiple of 16):
 *   bytes   0..87   the 22 scalar floats (obs[1323..1344]) as float32, bit for bit
 *   bytes  88..150  the block id of each of the 63 view cells (cell = x * 9 + y)
 *   bytes 151..213  each view cell's mob bits (bit c: channel 17 + c, zombie cow skeleton arrow)
 *   bytes 214..223  zero
 * Float k < 1323 of the obs is cell k / 21, channel k % 21: 1 where the channel is the cell's
 * block or one of its set mob bits, else 0 (the view's block one-hot has exactly one 1 a cell).
 */
#ifndef CRAFTAX_CLASSIC_CUDA_OBS_CUH
#define CRAFTAX_CLASSIC_CUDA_OBS_CUH

#define CLASSIC_VIEW_CELLS (CRAFTAX_CLASSIC_OBS_ROWS * CRAFTAX_CLASSIC_OBS_COLS)
#define CLASSIC_SCALARS (CRAFTAX_CLASSIC_OBS_SIZE - CRAFTAX_CLASSIC_OBS_MAP_SIZE)
#define CLASSIC_BLOCKS_AT (CLASSIC_SCALARS * 4)
#define CLASSIC_MOBS_AT (CLASSIC_BLOCKS_AT + CLASSIC_VIEW_CELLS)
#define CLASSIC_COMPACT_SIZE 224
static_assert(CLASSIC_MOBS_AT + CLASSIC_VIEW_CELLS <= CLASSIC_COMPACT_SIZE && CLASSIC_COMPACT_SIZE % 16 == 0,
              "the compact record holds the scalars, blocks and mob bits in whole 16-byte words");

/* The record of state s into rec (16-byte aligned), as render_symbolic renders the obs. */
static inline __host__ __device__ void classic_render_compact(const CraftaxClassicState *s, uint8_t *rec) {
    float *scalars = (float *)rec;
    craftax_classic_obs_scalars(s, scalars);
    uint8_t *blocks = rec + CLASSIC_BLOCKS_AT, *mobs = rec + CLASSIC_MOBS_AT;
    for (int x = 0; x < CRAFTAX_CLASSIC_OBS_ROWS; x++)
        for (int y = 0; y < CRAFTAX_CLASSIC_OBS_COLS; y++)
            blocks[x * CRAFTAX_CLASSIC_OBS_COLS + y] = (uint8_t)craftax_classic_obs_block(s, x, y);
    for (int c = 0; c < CLASSIC_VIEW_CELLS; c++) mobs[c] = 0;
    for (int k = CLASSIC_MOBS_AT + CLASSIC_VIEW_CELLS; k < CLASSIC_COMPACT_SIZE; k++) rec[k] = 0;
    for (int k = 0; k < CRAFTAX_CLASSIC_OBS_NUM_MOBS; k++) {
        uint8_t mask;
        int mob_class, value;
        const int32_t *pos = craftax_classic_obs_mob(s, k, &mask, &mob_class);
        const int cell = craftax_classic_obs_mob_cell(s, pos, mask, &value);
        if (cell < 0) continue;
        const uint8_t bit = (uint8_t)(1u << mob_class);
        mobs[cell] = value ? (uint8_t)(mobs[cell] | bit) : (uint8_t)(mobs[cell] & ~bit);
    }
}

/* Float k of the obs that record rec expands to. */
static inline __host__ __device__ float classic_compact_value(const uint8_t *rec, int k) {
    if (k >= CRAFTAX_CLASSIC_OBS_MAP_SIZE) return ((const float *)rec)[k - CRAFTAX_CLASSIC_OBS_MAP_SIZE];
    const int cell = k / CRAFTAX_CLASSIC_OBS_CHANNELS, ch = k - cell * CRAFTAX_CLASSIC_OBS_CHANNELS;
    if (ch < CRAFTAX_CLASSIC_NUM_BLOCK_TYPES) return rec[CLASSIC_BLOCKS_AT + cell] == ch ? 1.0f : 0.0f;
    return (rec[CLASSIC_MOBS_AT + cell] >> (ch - CRAFTAX_CLASSIC_NUM_BLOCK_TYPES)) & 1u ? 1.0f : 0.0f;
}

/* The record into compact row `out` (device memory, 16-byte aligned rows). */
static __device__ __forceinline__ void classic_store_compact(const uint8_t *rec, uint8_t *out) {
    const uint4 *src = (const uint4 *)rec;
    uint4 *dst = (uint4 *)out;
#pragma unroll
    for (int q = 0; q < CLASSIC_COMPACT_SIZE / 16; q++) dst[q] = src[q];
}

/* State s's float obs into `obs` by one thread (the final obs of an env that ended: few). */
static __device__ void classic_render_float_row(const CraftaxClassicState *s, float *obs) {
    __align__(16) uint8_t rec[CLASSIC_COMPACT_SIZE];
    classic_render_compact(s, rec);
    for (int k = 0; k < CRAFTAX_CLASSIC_OBS_SIZE; k++) obs[k] = classic_compact_value(rec, k);
}

/* State s's record into row i of `compact` (NULL: none). */
static __device__ __forceinline__ void classic_emit_compact(const CraftaxClassicState *s, uint8_t *compact, int64_t i) {
    if (!compact) return;
    __align__(16) uint8_t rec[CLASSIC_COMPACT_SIZE];
    classic_render_compact(s, rec);
    classic_store_compact(rec, compact + i * CLASSIC_COMPACT_SIZE);
}

/* Records of every env (a thread per env); fresh worlds render like any state (Classic's
 * obs has no reset-time rounding). */
__global__ void classic_observe_kernel(const CraftaxClassicState *states, int64_t n, uint8_t *compact,
                                       const int *bad_actions) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (bad_actions && *bad_actions) return;
    classic_emit_compact(&states[i], compact, i);
}

/* Records to float obs. A block expands a chunk of CLASSIC_EXPAND_ENVS envs at a time, its
 * threads taking consecutive floats of the chunk (coalesced stores, 32-bit index math), and
 * strides over the chunks: a thread per float would launch a 128-thread block per 128
 * floats, ~11 M blocks at a million envs, each too short to pay for its dispatch. */
#define CLASSIC_EXPAND_ENVS 16
#define CLASSIC_EXPAND_THREADS 256
#define CLASSIC_EXPAND_MOST_BLOCKS 4096
__global__ void __launch_bounds__(CLASSIC_EXPAND_THREADS)
    classic_expand_kernel(const uint8_t *compact, int64_t n, float *obs, const int *bad_actions) {
    if (bad_actions && *bad_actions) return;
    for (int64_t first = (int64_t)blockIdx.x * CLASSIC_EXPAND_ENVS; first < n;
         first += (int64_t)gridDim.x * CLASSIC_EXPAND_ENVS) {
        const int envs = n - first < CLASSIC_EXPAND_ENVS ? (int)(n - first) : CLASSIC_EXPAND_ENVS;
        const uint8_t *records = compact + first * CLASSIC_COMPACT_SIZE;
        float *out = obs + first * CRAFTAX_CLASSIC_OBS_SIZE;
        for (int f = (int)threadIdx.x; f < envs * CRAFTAX_CLASSIC_OBS_SIZE; f += CLASSIC_EXPAND_THREADS) {
            const int e = f / CRAFTAX_CLASSIC_OBS_SIZE;
            out[f] = classic_compact_value(records + e * CLASSIC_COMPACT_SIZE, f - e * CRAFTAX_CLASSIC_OBS_SIZE);
        }
    }
}
static unsigned classic_expand_grid(int64_t n) {
    const int64_t chunks = (n + CLASSIC_EXPAND_ENVS - 1) / CLASSIC_EXPAND_ENVS;
    return (unsigned)(chunks < CLASSIC_EXPAND_MOST_BLOCKS ? chunks : CLASSIC_EXPAND_MOST_BLOCKS);
}

#endif
