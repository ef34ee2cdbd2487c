/* craftax_cuda.cu: the batched Craftax env on one GPU, over the very same rules headers as
 * the C reference (reference_c/include/craftax/*.h, compiled here as __host__ __device__).
 *
 * One thread per env; states live in global memory as the C reference's CraftaxState
 * structs (array of structs, craftax_state_size() bytes each, so get/set_state and the leaf
 * table are shared with C). Per-env scratch in global memory (CraftaxCudaScratch) holds
 * world generation's arrays in reset kernels and spawn_mobs' arrays in step kernels, so the
 * step kernels' stack frames stay about 1 KB (v1: 43.5 KB, ~10 GB of local-memory reserve).
 * v2 auto-reset: kernel A steps every env and appends the done ones to a list (atomic
 * counter); kernel B runs craftax_autoreset_reset_part over that list only, densely packed,
 * so no warp idles behind one env's world generation.
 * v3: world generation and obs rendering run a warp per env (the `lane, lanes` loops of the
 * rules header): kernel A (craftax_autoreset_step_only) no longer renders, kernel O renders
 * the not-done envs' obs, kernel B generates a world per warp.
 * v4: obs through the compact record (obs.h): kernels O and observe render it into shared
 * memory and write the float obs once, as coalesced float4 stores, and/or the 1,008-byte
 * record itself (the _ex calls, obs="compact" in Python); the world-generation kernels keep
 * no shared memory (it shrinks L1 and slowed world generation ~2x).
 * v8: world generation a warp per floor (world_floors_kernel, then world_rest_kernel), the
 * world-generation scratch an entry per running warp instead of per env
 * (craftax_cuda_scratch_entries).
 * v14: a floor's working memory shrank from 75 KB (noise fields, p and cumsum arrays) to
 * 6.6 KB (worldgen.h: noise evaluated per cell, choices over bit masks) and moved into shared
 * memory; world generation's many inlined noise and threefry sites became one copy each
 * (CRAFTAX_GPU_NOINLINE: the floor kernel mostly waited for instructions).
 * v24: the global scratch entries keep a floor's noise blends (36 KB) from its min/max pass
 * for its map pass, which evaluated them a second time before.
 * v25: a smooth floor's tree and ore draws come after its map pass, from lists of the cells
 * that need them, on full warps. See cuda/NOTES.md.
 *
 * Build (cuda/Makefile, or cuda/build.sh):
 *   nvcc -O3 -fmad=false -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
 *        -Xcompiler -fPIC -shared -cudart static -Ireference_c/include -Icuda \
 *        cuda/craftax_cuda.cu -o cuda/build/libcraftax_cuda.so
 * -fmad=false: the rules header calls fmaf()/fma() explicitly exactly where upstream's XLA
 *   fuses a multiply-add; nvcc would otherwise contract any a*b+c into an FMA and change
 *   float bits (noise, light maps, intrinsics, reward), breaking bit-equality with C.
 * No --use_fast_math: sqrtf and '/' must stay IEEE round-to-nearest (the default, i.e.
 *   -prec-div=true -prec-sqrt=true -ftz=false).
 * -cudart static: the library carries the CUDA runtime, so Python needs only the driver.
 *
 * API: cuda/craftax_cuda.h (device pointers; every call synchronizes before returning).
 */
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>

#include <mutex>
#include <stdio.h>
#include <string.h>

#include "craftax/obs.h"
#include "craftax/step.h"
#include "craftax/worldgen.h"
#include "craftax_cuda.h"

#define API_VERSION 8 /* 5: world-generation scratch by warp (craftax_cuda_scratch_entries); 6: lazy floors
                          (craftax_cuda_complete_floors before reading states back); 7: craftax_cuda_env_step,
                          craftax_cuda_env_step_optimistic; 8: those two update the achievement rows in place */
#define THREADS 128
/* Auto-reset: the reset kernel's blocks are small so that a few hundred resets spread
 * over many SMs (one warp per SM) instead of filling a few. */
#define RESET_THREADS 64
#define MAX_CHUNKS 16

/* A GPU warp's global-memory part of the world-generation scratch (worldgen.h:
 * CraftaxWorldGenScratch's blend and cell-list pointers). */
typedef struct {
    float blend[4][CRAFTAX_N][CRAFTAX_N];
    uint16_t tree_cells[CRAFTAX_CELLS], ore_cells[CRAFTAX_CELLS];
} CraftaxWorldGenGlobal;

/* Points the warp's scratch w at its global part g (lane 0), then syncs the lanes. */
static inline __device__ void craftax_worldgen_attach(CraftaxWorldGenScratch *w, CraftaxWorldGenGlobal *g, int lane,
                                                      int lanes) {
    if (lane == 0) {
        w->blend = g->blend;
        w->tree_cells = g->tree_cells;
        w->ore_cells = g->ore_cells;
    }
    craftax_lanes_sync(lanes);
}

/* World-generation scratch, an entry per running warp (craftax_cuda_scratch_entries): the
 * floor's noise blends, kept between its min/max and map passes, and its tree and ore cells
 * (worldgen.h). The rest of a warp's working memory is in shared memory. */
typedef struct {
    CraftaxWorldGenGlobal worldgen;
} CraftaxCudaScratch;

/* ---- errors -------------------------------------------------------------------------- */
static char g_last_error[512] = "";

static int record(cudaError_t err, const char *what) {
    snprintf(g_last_error, sizeof(g_last_error), "%s: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
    if (err == cudaErrorMemoryAllocation) return CRAFTAX_ERR_NO_MEMORY;
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) return CRAFTAX_ERR_NO_DEVICE;
    return CRAFTAX_ERR_CUDA;
}

#define CUDA_TRY(call, what)                             \
    do {                                                 \
        cudaError_t err_ = (call);                       \
        if (err_ != cudaSuccess) return record(err_, what); \
    } while (0)

/* After a launch: the launch error, then (all calls synchronize) the execution error. */
static int finish_launch(const char *what) {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return record(err, what);
    err = cudaStreamSynchronize(0);
    if (err != cudaSuccess) return record(err, what);
    return 0;
}

static unsigned grid_for(int64_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }



extern "C" {

int craftax_cuda_api_version(void) { return API_VERSION; }
size_t craftax_cuda_state_size(void) { return sizeof(CraftaxState); }
size_t craftax_cuda_scratch_size(void) { return sizeof(CraftaxCudaScratch); }
size_t craftax_cuda_params_size(void) { return sizeof(CraftaxParams); }
int craftax_cuda_obs_size(void) { return CRAFTAX_OBS_SIZE; }
int craftax_cuda_obs_compact_size(void) { return CRAFTAX_OBS_COMPACT_SIZE; }
const char *craftax_cuda_last_error(void) { return g_last_error; }

}  // extern "C"

/* ---- kernels --------------------------------------------------------------------------- */
/* params travel by value (1.5 KB, within the kernel-parameter limit): no device copy to
 * keep alive or race on between calls. */

__global__ void key_split_kernel(CraftaxKey key, int64_t num, uint32_t *out) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num) return;
    const CraftaxKey k = craftax_split_at(key, (uint32_t)i);
    out[2 * i] = k.k[0];
    out[2 * i + 1] = k.k[1];
}

/* v3: world generation and obs rendering run a warp per env (LANES lanes, the `lane, lanes`
 * loops of the rules header); `i` is the warp's env, uniform across its lanes. */
#define LANES CRAFTAX_WARP_LANES
static unsigned grid_for_warps(int64_t n) { return (unsigned)((n * LANES + THREADS - 1) / THREADS); }

/* v4: every obs goes through the compact record (obs.h). A warp renders its env's record
 * into shared memory (craftax_render_compact_lanes: the same reads and mob scatter as the
 * float render), then writes each of the 8268 floats once, as coalesced float4 stores, from
 * a per-cell 128-bit channel mask (v3 zero-filled the 33 KB, scattered the ones, and
 * re-zeroed invisible cells one lane each); the record itself is copied out when asked for. */
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
 * Lane 0 reads the mob slots and the 51 scalars one after another (obs.h), which waited
 * a memory latency per field: half of observe_kernel's stall samples (v10 profile). */
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
 * warp over ~220 KB of state and scratch per env) runs ~2x slower then (measured: steady
 * reset kernel 2.7 ms at 1,024 envs, 5.3 ms at 16,384). These envs are few per step. */
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

/* A host key into device memory without a host wait (a pageable cudaMemcpy waits for the GPU). */
__global__ void store_key_kernel(CraftaxKey key, uint32_t *out) {
    out[0] = key.k[0];
    out[1] = key.k[1];
}

/* Sets *bad to 1 when any action is outside [0, CRAFTAX_NUM_ACTIONS). */
__global__ void check_actions_kernel(const int32_t *actions, int64_t num_envs, int *bad) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_envs) return;
    if (actions[i] < 0 || actions[i] >= CRAFTAX_NUM_ACTIONS) *bad = 1;
}

__global__ void step_kernel(CraftaxState *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                            const CraftaxParams params, float *obs, float *rewards, uint8_t *dones,
                            CraftaxCudaScratch *scratch) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_envs) return;
    const CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
    uint8_t done;
    (void)obs; /* v3: observe_kernel renders the obs after this kernel (step_env's last act) */
    (void)scratch; /* spawn_mobs needs no scratch since v3 (step_world.h) */
    const float r = craftax_step_env(&states[i], key, actions[i], &params, NULL, &done);
    if (rewards) rewards[i] = r;
    if (dones) dones[i] = done;
}

/* The achievement rows a step writes (either may be NULL): final_achievements (uint8 [N, 67],
 * the stepped state's achievements where the env ended, else 0) and achievements_scaled
 * (float [N, 67], the same times 100: CraftaxEnv.step's "Achievements/<name>" info).
 * changed_only: the rows are the outputs of the caller's previous step (zero before its
 * first), so only rows where the env ends now or ended then (`dones` before this step) can
 * change; the others stay 0 unwritten. Written densely, every thread stored 67 strided bytes
 * each step (64 MB in 2 M warp stores at 962,560 envs) and the bookkeeping 258 MB of floats. */
typedef struct {
    uint8_t *final_achievements;
    float *achievements_scaled;
    int changed_only;
} AchievementRows;
static AchievementRows dense_rows(uint8_t *final_achievements) {
    const AchievementRows rows = {final_achievements, NULL, 0};
    return rows;
}

/* Env i's rows after its step (lane 0, before dones[i] is overwritten). */
static __device__ __forceinline__ void write_achievement_rows(const AchievementRows &rows, int64_t i,
                                                              const CraftaxState *s, int done, const uint8_t *dones) {
    if (!rows.final_achievements && !rows.achievements_scaled) return;
    if (!done && rows.changed_only && !dones[i]) return;
    if (rows.final_achievements) {
        uint8_t *row = rows.final_achievements + i * CRAFTAX_NUM_ACHIEVEMENTS;
        if (done)
            memcpy(row, s->achievements, CRAFTAX_NUM_ACHIEVEMENTS);
        else
            memset(row, 0, CRAFTAX_NUM_ACHIEVEMENTS);
    }
    if (rows.achievements_scaled) {
        float *row = rows.achievements_scaled + i * CRAFTAX_NUM_ACHIEVEMENTS;
        for (int k = 0; k < CRAFTAX_NUM_ACHIEVEMENTS; k++)
            row[k] = done ? (float)s->achievements[k] * 100.0f : 0.0f;
    }
}

/* Auto-reset, kernel A: the step part of craftax_step_autoreset_one for envs
 * [base, base + n) without its obs (craftax_autoreset_step_only); done_flags[i] says
 * whether env i is done, and the done ones are appended to done_list[base ...] through
 * *done_count (in any order: each env's reset depends on that env alone). */
/* LPE lanes per env: 1 (a thread per env) or LANES (a warp per env: spawn_mobs' box scans
 * shared by the lanes, the rest on lane 0; see step_lanes_for). */
template <int LPE> static __device__ __forceinline__ int64_t env_of_thread(int *lane) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    *lane = (int)(t % LPE);
    return t / LPE;
}
/* A thread per env shares its spawn scans with its warp (craftax_sw_class_spawn_cell) where
 * all 32 lanes of the warp have an env (the grid's last warp may not); the same for the whole
 * warp. With a warp per env the lanes already share every scan. */
template <int LPE> static __device__ __forceinline__ int shares_scans(int64_t env, int64_t n) {
    return LPE == 1 && (env | 31) < n;
}
/* Three 128-thread blocks an SM for the step kernels: 168 registers (178 unbounded, 8-20
 * bytes of spills), 12 warps an SM instead of 8. v11 same call at 962,560 envs: auto
 * 66.7/66.4 -> 68.0/68.5 M steps/s, optimistic 61.6/62.7 -> 63.5/63.9 M; 262,144 within
 * noise. (At 255 registers before the warp spawn scans, bounds measured slower: v8.) */
#define STEP_BOUNDS __launch_bounds__(THREADS, 3)

template <int LPE>
__global__ void STEP_BOUNDS autoreset_step_kernel(CraftaxState *states, const int32_t *actions, const uint32_t *keys,
                                      int64_t base, int64_t n, const CraftaxParams params, float *rewards,
                                      uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                      const AchievementRows ach, int32_t *done_list, int32_t *done_count,
                                      uint8_t *done_flags, const int *bad_actions) {
    int lane;
    const int64_t j = env_of_thread<LPE>(&lane);
    if (j >= n) return; /* whole warps when LPE = LANES */
    if (bad_actions && *bad_actions) return; /* the call fails; no state changes (launch_action_check) */
    const int64_t i = base + j;
    const CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
    uint8_t done = 0, term = 0;
    const float r = craftax_autoreset_step_only_lanes(&states[i], key, actions[i], &params, &done, &term, NULL, lane,
                                                      LPE, shares_scans<LPE>(j, n));
    if (lane != 0) return;
    write_achievement_rows(ach, i, &states[i], done, dones);
    done_flags[i] = done;
    if (rewards) rewards[i] = r;
    if (dones) dones[i] = done;
    if (terminated) terminated[i] = (uint8_t)(done && term);
    if (truncated) truncated[i] = (uint8_t)(done && !term);
    if (done) done_list[base + atomicAdd(done_count, 1)] = (int32_t)i;
}

/* Auto-reset, kernel O (a warp per env): the step part's tail (obs, light level) of the
 * not-done envs in [base, base + n). */
__global__ void autoreset_observe_kernel(CraftaxState *states, int64_t base, int64_t n, const CraftaxParams params,
                                         float *obs, uint8_t *obs_compact, const uint8_t *done_flags) {
    __shared__ WarpObs sh[OBS_WARPS];
    const int64_t j = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    const int lane = (int)(threadIdx.x % LANES);
    if (j >= n) return;
    const int64_t i = base + j;
    if (done_flags[i]) return;
    /* craftax_autoreset_observe_part_lanes: the obs first (it reads step_env's light level),
     * then its light-level update (obs NULL: lane 0 only). */
    emit_obs_warp(&states[i], obs_row(obs, i), compact_row(obs_compact, i), 0, lane, &sh[threadIdx.x / LANES]);
    craftax_autoreset_observe_part_lanes(&states[i], &params, NULL, lane, LANES);
}

/* Thread t: env t's running return and length (t < num_envs), and float t of the
 * [num_envs, 67] achievements block (t < num_envs * 67). A thread per env writing its own
 * 67-float row made every store instruction touch 32 rows 268 bytes apart: 0.45 ms a step at
 * 262,144 envs (Nsight Compute, v10), ~15x the block's write time when coalesced. */
__global__ void track_episodes_kernel(const float *rewards, const uint8_t *dones, const uint8_t *final_achievements,
                                      int64_t num_envs, float *ret_acc, int32_t *len_acc, float *ep_return,
                                      int32_t *ep_length, float *discount, float *achievements_scaled,
                                      const int *bad_actions) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (bad_actions && *bad_actions) return;
    if (achievements_scaled && t < num_envs * CRAFTAX_NUM_ACHIEVEMENTS) {
        const int done = dones[t / CRAFTAX_NUM_ACHIEVEMENTS] != 0;
        achievements_scaled[t] = (float)final_achievements[t] * (float)done * 100.0f;
    }
    if (t >= num_envs) return;
    const int done = dones[t] != 0;
    const float ret = ret_acc[t] + rewards[t];
    const int32_t len = len_acc[t] + 1;
    if (ep_return) ep_return[t] = done ? ret : 0.0f;
    if (ep_length) ep_length[t] = done ? len : 0;
    ret_acc[t] = done ? 0.0f : ret;
    len_acc[t] = done ? 0 : len;
    if (discount) discount[t] = 1.0f - (float)done;
}

/* ---- optimistic resets (craftax/step.h: craftax_optimistic_keys) ------------------------ */
static __device__ __forceinline__ CraftaxKey load_key(const uint32_t *keys, int64_t s) {
    const CraftaxKey k = {{keys[2 * s], keys[2 * s + 1]}};
    return k;
}

/* After a world's first generated_floors generation floors and its rest: the other levels
 * pending (lazy levels, pending_floors_kernel), with the key they are generated from. */
static __device__ void mark_levels_pending(CraftaxState *s, CraftaxKey world_key, int generated_floors) {
    uint32_t pending = (1u << CRAFTAX_NUM_LEVELS) - 1u;
    for (int f = 0; f < generated_floors; f++) pending &= ~(1u << craftax_world_floor_level(f));
    s->floors_pending = pending;
    s->floors_world_key[0] = world_key.k[0];
    s->floors_world_key[1] = world_key.k[1];
}

/* worlds[s * num_worlds + j] = reset_env(split(reset_parent(keys[s]), num_worlds)[j]): the
 * fresh worlds of num_keys (future) wrapper steps, a warp per world, no obs (a taken world
 * is rendered with the env's obs). */
__global__ void generate_worlds_kernel(CraftaxState *worlds, const uint32_t *keys, int64_t num_keys,
                                       int32_t num_worlds, const __grid_constant__ CraftaxParams params, CraftaxCudaScratch *scratch,
                                       int generated_floors) {
    const int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    const int lane = (int)(threadIdx.x % LANES);
    if (w >= num_keys * num_worlds) return;
    CraftaxKey step_parent, reset_parent, choice_key;
    craftax_optimistic_keys(load_key(keys, w / num_worlds), &step_parent, &reset_parent, &choice_key);
    const CraftaxKey key = craftax_split_at(reset_parent, (uint32_t)(w % num_worlds));
    __shared__ CraftaxWorldGenScratch space[THREADS / LANES];
    CraftaxWorldGenScratch *ws = &space[threadIdx.x / LANES];
    craftax_worldgen_attach(ws, &scratch[w].worldgen, lane, LANES);
    /* craftax_reset_env_lanes with the levels past generated_floors left pending (lazy levels) */
    const CraftaxKey world_key = craftax_reset_world_key(key);
    CraftaxKey floors[CRAFTAX_WORLD_FLOORS], rest;
    craftax_world_floor_keys(world_key, floors, &rest);
    for (int f = 0; f < generated_floors; f++) {
        craftax_generate_world_floor_lanes(floors[f], f, &params, &worlds[w], ws, lane, LANES);
        craftax_lanes_sync(LANES);
    }
    craftax_generate_world_rest_lanes(rest, &params, &worlds[w], lane, LANES);
    if (lane == 0 && generated_floors < CRAFTAX_WORLD_FLOORS) mark_levels_pending(&worlds[w], world_key, generated_floors);
    craftax_lanes_sync(LANES);
}

/* ---- worlds on nine warps (a warp per floor), then a warp per world for the rest -------
 * One world on one warp takes ~1.8 ms, and a step that resets any env waits that long. The
 * nine floors of a world are independent (worldgen.h: craftax_world_floor_keys), so
 * world_floors_kernel gives each (world, floor) pair a warp and world_rest_kernel then
 * finishes each world (mob map, player, inventory, state key) and its obs: the latency is the
 * slowest floor's. A warp keeps its own world-generation scratch (scratch[warp]), so a grid
 * has at most as many warps as the caller has scratch entries. Each source below names the
 * worlds of one caller: job(j) says where world j goes and which key reset_env takes. */
typedef struct {
    CraftaxState *state;
    CraftaxKey reset_key;
    int active; /* 0: not generated (an optimistic rank that did not end, and none after it) */
} WorldJob;

struct KeyedWorlds { /* env.reset: env j from keys[j] */
    CraftaxState *states;
    const uint32_t *keys;
    int64_t n;
    float *obs;
    uint8_t *obs_compact;
    __device__ int64_t size() const { return n; }
    __device__ WorldJob job(int64_t j) const { return {&states[j], load_key(keys, j), 1}; }
    __device__ void finish(int64_t j, int lane) const {
        emit_obs_global_warp(&states[j], obs_row(obs, j), compact_row(obs_compact, j), 1, lane);
    }
};
struct DoneListWorlds { /* the auto-reset step: the listed envs, reset_env(key_reset) */
    CraftaxState *states;
    const uint32_t *keys;
    const int32_t *done_list;
    int64_t base;
    const int32_t *done_count;
    float *obs;
    uint8_t *obs_compact;
    __device__ int64_t size() const { return *done_count; }
    __device__ WorldJob job(int64_t j) const {
        const int64_t i = done_list[base + j];
        CraftaxKey key_step, key_reset;
        craftax_split2(load_key(keys, i), &key_step, &key_reset);
        return {&states[i], key_reset, 1};
    }
    __device__ void finish(int64_t j, int lane) const {
        const int64_t i = done_list[base + j];
        emit_obs_global_warp(&states[i], obs_row(obs, i), compact_row(obs_compact, i), 1, lane);
    }
};
struct TakenWorlds { /* the optimistic step: the env at rank r < num_worlds, if it ended, gets world r */
    CraftaxState *states;
    const uint64_t *sorted;
    const uint32_t *key;
    int32_t num_worlds;
    const int *bad_actions; /* set: the call is rejected, no world is generated */
    __device__ int64_t size() const { return bad_actions && *bad_actions ? 0 : num_worlds; }
    __device__ WorldJob job(int64_t rank) const {
        const uint64_t entry = sorted[rank];
        if (entry & CRAFTAX_OPTIMISTIC_NOT_DONE) return {NULL, {{0u, 0u}}, 0}; /* the world floors scan these */
        CraftaxKey step_parent, reset_parent, choice_key;
        craftax_optimistic_keys(load_key(key, 0), &step_parent, &reset_parent, &choice_key);
        /* the ended envs sort first: the first rank that did not end has none after it */
        return {&states[(uint32_t)(entry & 0xFFFFFFFFu)], craftax_split_at(reset_parent, (uint32_t)rank), 1};
    }
    __device__ void finish(int64_t, int) const {}
};

/* 16 blocks of 64 threads an SM (64 registers; 80 unbounded gave 24 warps an SM): the kernel
 * is latency-bound, so more warps hide more of it; world_warps_hardware follows the
 * residency. A warp's floor scratch (6.6 KB since v14) lives in shared memory: 13.3 KB a
 * block, which 16 blocks fit; its noise blends and cell lists (45 KB) in its global scratch entry
 * (scratch[warp], which bounds `warps`). */
template <class Source>
__global__ void __launch_bounds__(RESET_THREADS, 16) world_floors_kernel(Source src, const __grid_constant__ CraftaxParams params, CraftaxCudaScratch *scratch,
                                    int64_t warps, int generated_floors) {
    __shared__ CraftaxWorldGenScratch space[RESET_THREADS / LANES];
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    const int lane = (int)(threadIdx.x % LANES);
    if (warp >= warps) return; /* the grid's last block may hold a warp more than there is scratch for */
    CraftaxWorldGenScratch *w = &space[threadIdx.x / LANES];
    craftax_worldgen_attach(w, &scratch[warp].worldgen, lane, LANES);
    /* Floor-major: item = floor * worlds + world, so the warps resident at a time mostly run
     * one floor's code (smooth floors 0-5 first, then the dungeons): world-major, every SM ran
     * all nine at once and a third of the kernel's stall samples waited for instructions (v18). */
    const int64_t worlds = src.size(), items = worlds * generated_floors;
    for (int64_t item = warp; item < items; item += warps) {
        const WorldJob job = src.job(item % worlds);
        if (!job.active) continue;
        CraftaxKey floors[CRAFTAX_WORLD_FLOORS], rest;
        craftax_world_floor_keys(craftax_reset_world_key(job.reset_key), floors, &rest);
        const int f = (int)(item / worlds);
        craftax_generate_world_floor_lanes(floors[f], f, &params, job.state, w, lane, LANES);
        craftax_lanes_sync(LANES);
    }
}
template <class Source>
__global__ void world_rest_kernel(Source src, const CraftaxParams params, int generated_floors) {
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / LANES;
    const int lane = (int)(threadIdx.x % LANES);
    const int64_t n = src.size();
    for (int64_t j = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / LANES; j < n; j += warps) {
        const WorldJob job = src.job(j);
        if (!job.active) break;
        CraftaxKey floors[CRAFTAX_WORLD_FLOORS], rest;
        craftax_world_floor_keys(craftax_reset_world_key(job.reset_key), floors, &rest);
        craftax_generate_world_rest_lanes(rest, &params, job.state, lane, LANES);
        if (lane == 0 && generated_floors < CRAFTAX_WORLD_FLOORS) /* the others wait: pending_floors_kernel */
            mark_levels_pending(job.state, craftax_reset_world_key(job.reset_key), generated_floors);
        craftax_lanes_sync(LANES);
        src.finish(j, lane);
    }
}

/* ---- lazy floors ---------------------------------------------------------------------
 * A reset generates level 0 (generation floor 0) and the world's rest; levels 1-8 stay pending in
 * state->floors_pending (bit l: level l, which generation floor craftax_world_level_floor(l)
 * makes from floors_world_key) until something can read them.
 * A step reads the player's level only (the v18 attack_mob_class quirk took the last other
 * level's read out), and the player reaches level L + 1 only by a descent from level L, so
 * before each step this kernel generates level L + 1 of every env whose action is DESCEND
 * on a down ladder (or in god mode): a superset of upstream change_floor's descents (it
 * ignores sleeping and the monsters-killed gate). Ascents go to levels already visited.
 * Generation is a pure function of the world key, so an early level equals the one an eager
 * reset would have made. With actions NULL it completes every pending level (get_state and
 * the other host reads). Warps take 32 candidates at a time: each lane tests one (coalesced
 * action loads; the state is read only behind a DESCEND), then the warp generates the hits
 * one after another, as world_floors_kernel does a floor. */
static __device__ __forceinline__ int level_due_before_step(const CraftaxState *s, int32_t action,
                                                            const CraftaxParams &params) {
    if (action != ACTION_DESCEND) return -1;
    const uint32_t pending = s->floors_pending;
    if (!pending) return -1;
    const int32_t level = s->player_level;
    if (level < 0 || level >= CRAFTAX_NUM_LEVELS - 1 || !((pending >> (level + 1)) & 1u)) return -1;
    const int on_down = craftax_read_level_map(&s->item_map[level][0][0], s->player_position) == ITEM_LADDER_DOWN;
    return params.god_mode || on_down ? level + 1 : -1;
}
__global__ void __launch_bounds__(RESET_THREADS, 16) pending_floors_kernel(CraftaxState *states, const int32_t *actions, int64_t n,
                                      const __grid_constant__ CraftaxParams params, CraftaxCudaScratch *scratch,
                                      int64_t warps) {
    __shared__ CraftaxWorldGenScratch space[RESET_THREADS / LANES];
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    const int lane = (int)(threadIdx.x % LANES);
    if (warp >= warps) return;
    CraftaxWorldGenScratch *w = &space[threadIdx.x / LANES];
    craftax_worldgen_attach(w, &scratch[warp].worldgen, lane, LANES);
    /* completing: item = (level - 1) * n + env, level-major (warps at a time mostly run one floor's code) */
    const int64_t items = actions ? n : n * (CRAFTAX_NUM_LEVELS - 1);
    for (int64_t first = warp * LANES; first < items; first += warps * LANES) {
        const int64_t item = first + lane;
        int64_t env = -1;
        int level = -1; /* the level this lane's candidate needs generated */
        if (item < items) {
            if (actions) {
                env = item;
                level = level_due_before_step(&states[env], actions[env], params);
            } else {
                env = item % n;
                const int candidate = 1 + (int)(item / n);
                level = (states[env].floors_pending >> candidate) & 1u ? candidate : -1;
            }
        }
        uint32_t hits = __ballot_sync(0xffffffffu, level >= 0);
        while (hits) {
            const int owner = __ffs(hits) - 1;
            hits &= hits - 1;
            const int64_t e = __shfl_sync(0xffffffffu, (long long)env, owner);
            const int hit_level = __shfl_sync(0xffffffffu, level, owner);
            const int f = craftax_world_level_floor(hit_level);
            CraftaxState *s = &states[e];
            const CraftaxKey world_key = {{s->floors_world_key[0], s->floors_world_key[1]}};
            CraftaxKey floor_keys[CRAFTAX_WORLD_FLOORS], rest;
            craftax_world_floor_keys(world_key, floor_keys, &rest);
            craftax_generate_world_floor_lanes(floor_keys[f], f, &params, s, w, lane, LANES);
            craftax_lanes_sync(LANES);
            /* other warps may be completing this env's other levels */
            if (lane == 0) atomicAnd(&s->floors_pending, ~(1u << hit_level));
        }
    }
}

/* Every env's step_env (no reset), its ending flags, and its key in the wrapper's order
 * (LPE lanes per env, as autoreset_step_kernel). */
template <int LPE>
__global__ void STEP_BOUNDS optimistic_step_kernel(CraftaxState *states, const int32_t *actions, const uint32_t *key,
                                       int64_t num_envs, const CraftaxParams params, float *rewards, uint8_t *dones,
                                       uint8_t *terminated, uint8_t *truncated, const AchievementRows ach,
                                       uint64_t *order, const int *bad_actions) {
    int lane;
    const int64_t i = env_of_thread<LPE>(&lane);
    if (i >= num_envs) return; /* whole warps when LPE = LANES */
    if (bad_actions && *bad_actions) return; /* the call fails; no state changes */
    CraftaxKey step_parent, reset_parent, choice_key;
    craftax_optimistic_keys(load_key(key, 0), &step_parent, &reset_parent, &choice_key);
    uint8_t done = 0, term = 0;
    const float r = craftax_step_env_ending_lanes(&states[i], craftax_split_at(step_parent, (uint32_t)i), actions[i],
                                                  &params, &done, &term, NULL, lane, LPE, shares_scans<LPE>(i, num_envs));
    if (lane != 0) return;
    write_achievement_rows(ach, i, &states[i], done, dones);
    if (rewards) rewards[i] = r;
    dones[i] = done;
    if (terminated) terminated[i] = (uint8_t)(done && term);
    if (truncated) truncated[i] = (uint8_t)(done && !term);
    order[i] = craftax_optimistic_order_key(choice_key, (uint32_t)i, done);
}

static __device__ __forceinline__ void copy_state_warp(CraftaxState *dst, const CraftaxState *src, int lane) {
    uint32_t *d = (uint32_t *)dst;
    const uint32_t *s = (const uint32_t *)src;
    for (size_t q = lane; q < sizeof(CraftaxState) / 4; q += LANES) d[q] = s[q];
}

/* The ended envs take their worlds, a warp per rank of the wrapper's order (`sorted`). With
 * pregenerated `worlds` each copies its world (pass 0). Without (worlds NULL), world r was
 * generated into the env of rank r < num_worlds (world_floors/rest_kernel over TakenWorlds),
 * the only worlds anyone takes (an env of rank >= num_worlds takes world i / reset_ratio,
 * whose first taker is the env of that lower rank), and pass 1 copies them to the envs of
 * rank >= num_worlds. */
__global__ void optimistic_take_kernel(CraftaxState *states, const uint64_t *sorted, int64_t num_envs,
                                       int32_t num_worlds, int32_t reset_ratio, const CraftaxState *worlds, int pass,
                                       int32_t *reset_worlds, const int *bad_actions) {
    const int64_t rank = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    const int lane = (int)(threadIdx.x % LANES);
    if (rank >= num_envs) return;
    if (bad_actions && *bad_actions) return; /* the call fails; the sort saw stale keys */
    const uint64_t entry = sorted[rank];
    const uint32_t i = (uint32_t)(entry & 0xFFFFFFFFu);
    const int done = !(entry & CRAFTAX_OPTIMISTIC_NOT_DONE);
    const int32_t w = craftax_optimistic_world(rank, i, num_worlds, reset_ratio);
    if (reset_worlds && lane == 0 && pass == 0) reset_worlds[i] = done ? w : -1;
    if (!done) return;
    if (worlds) {
        copy_state_warp(&states[i], &worlds[w], lane);
    } else if (pass == 1 && rank >= num_worlds) {
        copy_state_warp(&states[i], &states[(uint32_t)(sorted[w] & 0xFFFFFFFFu)], lane);
    }
}

/* ---- host side ------------------------------------------------------------------------- */
/* World generation runs a warp per floor, at most as many warps as the SMs hold of the floor
 * kernel (its residency: 16 blocks of 2 warps an SM). More warps than that ran as a second
 * wave: the floor kernel hands each warp its floors up front (item = warp + k * warps), so the
 * late warps started their whole share after the first wave's and the kernel took two shares'
 * time (v12 profile at 262,144 envs, steady state: 4.0 ms, 1.33 waves). Auto-reset chunks
 * generate concurrently (on the reset stream while the next chunk steps), so they split the
 * warps. Each such warp has a global scratch entry: its floor's noise blends and cell lists
 * (worldgen.h). */
static int64_t world_warps_hardware(void) {
    static int64_t warps = 0;
    if (warps <= 0) {
        int device = 0, sms = 0, blocks = 0;
        if (cudaGetDevice(&device) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0 ||
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, world_floors_kernel<TakenWorlds>, RESET_THREADS,
                                                          0) != cudaSuccess ||
            blocks <= 0) {
            cudaGetLastError(); /* not sticky; callers report their own launches */
            return 132 * 24;
        }
        warps = (int64_t)sms * blocks * (RESET_THREADS / LANES);
    }
    return warps;
}
/* PYCRAFTAX_CUDA_WORLD_WARPS lowers the warps a call uses (read at each call; tests use it
 * to make warps take several floors and worlds in turn); it never raises them, so the
 * entries allocated from craftax_cuda_scratch_entries always suffice. */
static int64_t world_warps(void) {
    const int64_t hw = world_warps_hardware();
    const char *e = getenv("PYCRAFTAX_CUDA_WORLD_WARPS");
    const long long asked = e ? atoll(e) : 0;
    return asked > 0 && asked < hw ? (int64_t)asked : hw;
}
/* The entries of auto-reset chunk c of `chunks` (of per_chunk envs each): disjoint for
 * every chunk, inside [0, craftax_cuda_scratch_entries(num_envs)). */
static int64_t chunk_scratch_entries(int64_t per_chunk, int64_t chunks) {
    const int64_t share = world_warps_hardware() / chunks;
    return per_chunk < share ? per_chunk : share;
}

int64_t craftax_cuda_scratch_entries(int64_t num_envs) {
    if (num_envs <= 0) return 0;
    const int64_t most = world_warps_hardware();
    return num_envs < most ? num_envs : most;
}

static std::mutex g_scratch_mutex;
static CraftaxCudaScratch *g_scratch = NULL;
static int64_t g_scratch_envs = 0;

static int ensure_scratch_locked(int64_t num_envs) {
    if (num_envs <= g_scratch_envs) return 0;
    if (g_scratch) cudaFree(g_scratch); /* cudaFree waits for kernels still using it */
    g_scratch = NULL;
    g_scratch_envs = 0;
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, (size_t)craftax_cuda_scratch_entries(num_envs) * sizeof(CraftaxCudaScratch));
    if (err != cudaSuccess) {
        cudaGetLastError(); /* out of memory is not sticky: clear it */
        return record(err, "cudaMalloc(world-gen scratch)");
    }
    g_scratch = (CraftaxCudaScratch *)p;
    g_scratch_envs = num_envs;
    return 0;
}

/* Auto-reset bookkeeping, kept by the library: the done list (one int32 per env), the
 * per-chunk counters, the reset stream and the chunk events. */
static std::mutex g_autoreset_mutex;
static int32_t *g_done_list = NULL; /* [g_done_list_envs + MAX_CHUNKS]: the list, then the counters, */
static uint8_t *g_done_flags = NULL; /* then [g_done_list_envs] done flags (v3) */
static int64_t g_done_list_envs = 0;
static cudaStream_t g_reset_stream = NULL;
static cudaEvent_t g_chunk_events[MAX_CHUNKS];
static int g_autoreset_chunks = 1;
/* Optional per-call timing of the auto-reset step (craftax_cuda_set_profiling): events around
 * kernel A (step), kernel O (obs) and kernel B (world generation + obs of the done envs). */
static int g_profile = 0;
static cudaEvent_t g_prof_events[5];
static float g_prof_ms[4];
static int64_t g_min_chunk_envs = 16384;

static int ensure_autoreset_locked(int64_t num_envs) {
    if (!g_reset_stream) {
        int least = 0, greatest = 0;
        CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
        CUDA_TRY(cudaStreamCreateWithPriority(&g_reset_stream, cudaStreamNonBlocking, greatest),
                 "cudaStreamCreateWithPriority");
        for (int c = 0; c < MAX_CHUNKS; c++)
            CUDA_TRY(cudaEventCreateWithFlags(&g_chunk_events[c], cudaEventDisableTiming), "cudaEventCreate");
    }
    if (num_envs <= g_done_list_envs) return 0;
    if (g_done_list) cudaFree(g_done_list);
    g_done_list = NULL;
    g_done_list_envs = 0;
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, (size_t)(num_envs + MAX_CHUNKS) * sizeof(int32_t) + (size_t)num_envs);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return record(err, "cudaMalloc(done list)");
    }
    g_done_list = (int32_t *)p;
    g_done_flags = (uint8_t *)(g_done_list + num_envs + MAX_CHUNKS);
    g_done_list_envs = num_envs;
    return 0;
}

/* The action check's flag lives on the device for the library's lifetime (v3: v2 allocated
 * and freed it every step, and cudaFree synchronizes the whole device). */
static std::mutex g_check_mutex;
static int *g_bad_action = NULL;

/* The device flag zeroed, then set by any action outside [0, 43) (the caller holds
 * g_check_mutex until it has read the verdict). The one-wait step calls pass the flag to their
 * kernels, which then change nothing, and read the verdict after their wait. */
static int start_action_check(const int32_t *actions, int64_t num_envs) {
    if (!g_bad_action) CUDA_TRY(cudaMalloc(&g_bad_action, sizeof(int)), "cudaMalloc(action check)");
    CUDA_TRY(cudaMemsetAsync(g_bad_action, 0, sizeof(int), 0), "cudaMemsetAsync(action check)");
    check_actions_kernel<<<grid_for(num_envs), THREADS>>>(actions, num_envs, g_bad_action);
    CUDA_TRY(cudaGetLastError(), "action check");
    return 0;
}
static int action_check_verdict(void) {
    int bad = 0;
    CUDA_TRY(cudaMemcpy(&bad, g_bad_action, sizeof(int), cudaMemcpyDeviceToHost), "action check");
    if (!bad) return 0;
    snprintf(g_last_error, sizeof(g_last_error), "actions: a value outside [0, %d)", CRAFTAX_NUM_ACTIONS);
    return CRAFTAX_ERR_ARGUMENT;
}
/* The check on its own, waited for (step_with_keys). */
static int check_actions_device(const int32_t *actions, int64_t num_envs) {
    std::lock_guard<std::mutex> lock(g_check_mutex);
    const int rc = start_action_check(actions, num_envs);
    return rc ? rc : action_check_verdict();
}

/* Lanes per env of the step kernels for a batch of n envs. A warp per env shortens a step's
 * latency (its spawn_mobs box scans, ~60% of a thread's step, are shared by 32 lanes and
 * read a box row per transaction; the sequential rest runs on lane 0), which is what a
 * small batch waits on. But the step kernels need 255 registers a thread, so an SM holds 8
 * of their warps: a warp per env fits ~1,000 envs on the GPU at once, a thread per env 32x
 * more. So a warp per env up to the batch that fits in one wave (or up to
 * $PYCRAFTAX_CUDA_WARP_STEP_MAX_ENVS, read at each call: benchmarks and tests set it), a
 * thread per env above. Either gives the same states bit for bit. */
static int64_t g_warp_step_wave = -1; /* envs that a warp per env fits on the GPU at once */
static void measure_warp_step_wave(void) { /* at init: no occupancy query inside a graph capture */
    int device = 0, sms = 0, blocks = 0;
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess &&
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, optimistic_step_kernel<LANES>, THREADS, 0) ==
            cudaSuccess)
        g_warp_step_wave = (int64_t)sms * blocks * (THREADS / LANES);
    else
        g_warp_step_wave = 0;
}
/* Up to max_worlds worlds of `src` (the device may know fewer: a done count); `scratch` has
 * scratch_entries entries, which bounds the floor kernel's warps. */
/* The floors a reset generates: 1 (floor 0; the rest wait for pending_floors_kernel), or all
 * nine with PYCRAFTAX_CUDA_EAGER_FLOORS=1 (read at each call: benchmarks and tests compare). */
static int reset_floors(void) {
    const char *e = getenv("PYCRAFTAX_CUDA_EAGER_FLOORS");
    return e && atoi(e) ? CRAFTAX_WORLD_FLOORS : 1;
}
template <class Source>
static int launch_worlds(const Source &src, int64_t max_worlds, const CraftaxParams &params,
                         CraftaxCudaScratch *scratch, int64_t scratch_entries, cudaStream_t stream, const char *what) {
    if (max_worlds <= 0 || scratch_entries <= 0) return 0;
    const int64_t cap = world_warps();
    const int floors = reset_floors();
    int64_t warps = max_worlds * floors;
    if (warps > scratch_entries) warps = scratch_entries;
    if (warps > cap) warps = cap;
    const int warps_per_block = RESET_THREADS / LANES;
    world_floors_kernel<Source><<<(unsigned)((warps + warps_per_block - 1) / warps_per_block), RESET_THREADS, 0,
                                  stream>>>(src, params, scratch, warps, floors);
    CUDA_TRY(cudaGetLastError(), what);
    warps = max_worlds < cap ? max_worlds : cap;
    world_rest_kernel<Source><<<(unsigned)((warps + warps_per_block - 1) / warps_per_block), RESET_THREADS, 0,
                                stream>>>(src, params, floors);
    CUDA_TRY(cudaGetLastError(), what);
    return 0;
}

/* pending_floors_kernel over envs [0, n) of `states`: before a step (actions given), the
 * floors its descents reach; with actions NULL, every pending floor. */
static int launch_pending_floors(CraftaxState *states, const int32_t *actions, int64_t n, const CraftaxParams &params,
                                 CraftaxCudaScratch *scratch, int64_t scratch_entries, cudaStream_t stream,
                                 const char *what) {
    if (n <= 0 || scratch_entries <= 0) return 0;
    const int64_t items = actions ? n : n * (CRAFTAX_NUM_LEVELS - 1);
    int64_t warps = (items + LANES - 1) / LANES;
    if (warps > scratch_entries) warps = scratch_entries;
    if (warps > world_warps()) warps = world_warps();
    const int warps_per_block = RESET_THREADS / LANES;
    pending_floors_kernel<<<(unsigned)((warps + warps_per_block - 1) / warps_per_block), RESET_THREADS, 0, stream>>>(
        states, actions, n, params, scratch, warps);
    CUDA_TRY(cudaGetLastError(), what);
    return 0;
}

static int step_lanes_for(int64_t n) {
    const char *e = getenv("PYCRAFTAX_CUDA_WARP_STEP_MAX_ENVS");
    if (e) return n <= atoll(e) ? LANES : 1;
    if (g_warp_step_wave < 0) measure_warp_step_wave();
    return n <= g_warp_step_wave ? LANES : 1;
}

extern "C" {

int craftax_cuda_init(int device) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        record(err, "cudaGetDeviceCount");
        return CRAFTAX_ERR_NO_DEVICE;
    }
    if (count <= 0) {
        snprintf(g_last_error, sizeof(g_last_error), "no CUDA device is visible");
        return CRAFTAX_ERR_NO_DEVICE;
    }
    if (device < 0 || device >= count) {
        snprintf(g_last_error, sizeof(g_last_error), "device %d out of range (%d visible)", device, count);
        return CRAFTAX_ERR_ARGUMENT;
    }
    CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    /* Launch each big kernel once over zero envs: loads the module and reserves the
     * kernels' local memory (their stack frames) now rather than at the first real call. */
    CraftaxParams params;
    memset(&params, 0, sizeof(params));
    params.day_length = 1;
    const KeyedWorlds no_worlds = {NULL, NULL, 0, NULL, NULL};
    world_floors_kernel<KeyedWorlds><<<1, RESET_THREADS>>>(no_worlds, params, NULL, 0, 1);
    world_rest_kernel<KeyedWorlds><<<1, RESET_THREADS>>>(no_worlds, params, 1);
    const TakenWorlds no_taken = {NULL, NULL, NULL, 0, NULL};
    world_floors_kernel<TakenWorlds><<<1, RESET_THREADS>>>(no_taken, params, NULL, 0, 1);
    world_rest_kernel<TakenWorlds><<<1, RESET_THREADS>>>(no_taken, params, 1);
    pending_floors_kernel<<<1, RESET_THREADS>>>(NULL, NULL, 0, params, NULL, 0);
    step_kernel<<<1, THREADS>>>(NULL, NULL, NULL, 0, params, NULL, NULL, NULL, NULL);
    autoreset_step_kernel<1><<<1, THREADS>>>(NULL, NULL, NULL, 0, 0, params, NULL, NULL, NULL, NULL,
                                             dense_rows(NULL), NULL, NULL, NULL, NULL);
    autoreset_step_kernel<LANES><<<1, THREADS>>>(NULL, NULL, NULL, 0, 0, params, NULL, NULL, NULL, NULL,
                                                 dense_rows(NULL), NULL, NULL, NULL, NULL);
    autoreset_observe_kernel<<<1, THREADS>>>(NULL, 0, 0, params, NULL, NULL, NULL);
    measure_warp_step_wave();
    {
        int zero_count = 0, *d_count = NULL;
        CUDA_TRY(cudaMalloc(&d_count, sizeof(int)), "cudaMalloc(warm-up)");
        CUDA_TRY(cudaMemcpy(d_count, &zero_count, sizeof(int), cudaMemcpyHostToDevice), "cudaMemcpy(warm-up)");
        const DoneListWorlds no_done = {NULL, NULL, NULL, 0, d_count, NULL, NULL};
        world_floors_kernel<DoneListWorlds><<<1, RESET_THREADS>>>(no_done, params, NULL, 0, 1);
        world_rest_kernel<DoneListWorlds><<<1, RESET_THREADS>>>(no_done, params, 1);
        cudaError_t err2 = cudaStreamSynchronize(0);
        cudaFree(d_count);
        if (err2 != cudaSuccess) return record(err2, "kernel warm-up");
    }
    observe_kernel<<<1, THREADS>>>(NULL, 0, NULL, NULL, NULL);
    return finish_launch("kernel warm-up");
}

int craftax_cuda_device_name(char *out, int out_size) {
    if (!out || out_size <= 0) return CRAFTAX_ERR_NULL;
    int device = 0;
    CUDA_TRY(cudaGetDevice(&device), "cudaGetDevice");
    cudaDeviceProp prop;
    CUDA_TRY(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    snprintf(out, (size_t)out_size, "%s (sm_%d%d, %d SMs)", prop.name, prop.major, prop.minor,
             prop.multiProcessorCount);
    return 0;
}

int craftax_cuda_mem_info(size_t *free_bytes, size_t *total_bytes) {
    if (!free_bytes || !total_bytes) return CRAFTAX_ERR_NULL;
    CUDA_TRY(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
    return 0;
}

int craftax_cuda_synchronize(void) {
    CUDA_TRY(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return 0;
}

int craftax_cuda_stream_synchronize(uintptr_t stream) {
    CUDA_TRY(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize");
    return 0;
}

int craftax_cuda_malloc(void **ptr, size_t bytes) {
    if (!ptr) return CRAFTAX_ERR_NULL;
    *ptr = NULL;
    cudaError_t err = cudaMalloc(ptr, bytes ? bytes : 1);
    if (err != cudaSuccess) {
        *ptr = NULL;
        cudaGetLastError();
        return record(err, "cudaMalloc");
    }
    return 0;
}

int craftax_cuda_malloc_many(void **ptrs, const size_t *bytes, int count) {
    if (!ptrs || !bytes || count < 0) return CRAFTAX_ERR_NULL;
    for (int i = 0; i < count; i++) ptrs[i] = NULL;
    for (int i = 0; i < count; i++) {
        int rc = craftax_cuda_malloc(&ptrs[i], bytes[i]);
        if (rc != 0) {
            for (int j = 0; j < i; j++) {
                cudaFree(ptrs[j]);
                ptrs[j] = NULL;
            }
            return rc;
        }
    }
    return 0;
}

int craftax_cuda_free(void *ptr) {
    CUDA_TRY(cudaFree(ptr), "cudaFree");
    return 0;
}

int craftax_cuda_memcpy_htod(void *dst, const void *src, size_t bytes) {
    if ((!dst || !src) && bytes) return CRAFTAX_ERR_NULL;
    CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy(host to device)");
    return 0;
}

int craftax_cuda_memcpy_dtoh(void *dst, const void *src, size_t bytes) {
    if ((!dst || !src) && bytes) return CRAFTAX_ERR_NULL;
    CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(device to host)");
    return 0;
}

int craftax_cuda_memcpy_dtod(void *dst, const void *src, size_t bytes) {
    if ((!dst || !src) && bytes) return CRAFTAX_ERR_NULL;
    CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy(device to device)");
    return 0;
}

int craftax_cuda_memset(void *dst, int value, size_t bytes) {
    if (!dst && bytes) return CRAFTAX_ERR_NULL;
    CUDA_TRY(cudaMemset(dst, value, bytes), "cudaMemset");
    return 0;
}

int craftax_cuda_memcpy2d_dtoh(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
                               size_t height) {
    if ((!dst || !src) && width && height) return CRAFTAX_ERR_NULL;
    if (!width || !height) return 0;
    CUDA_TRY(cudaMemcpy2D(dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDeviceToHost),
             "cudaMemcpy2D(device to host)");
    return 0;
}

int craftax_cuda_reserve_scratch(int64_t num_envs) {
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    std::lock_guard<std::mutex> lock(g_scratch_mutex);
    return ensure_scratch_locked(num_envs);
}

void craftax_cuda_release_scratch(void) {
    std::lock_guard<std::mutex> lock(g_scratch_mutex);
    if (g_scratch) cudaFree(g_scratch);
    g_scratch = NULL;
    g_scratch_envs = 0;
    if (g_done_list) cudaFree(g_done_list); /* compute-sanitizer's leak check found it kept */
    g_done_list = NULL;
    g_done_flags = NULL;
    {
        std::lock_guard<std::mutex> check_lock(g_check_mutex);
        if (g_bad_action) cudaFree(g_bad_action);
        g_bad_action = NULL;
    }
    g_done_list_envs = 0;
}

int craftax_cuda_key_split(const uint32_t *key, int64_t num, uint32_t *out) {
    if (!key || (!out && num)) return CRAFTAX_ERR_NULL;
    if (num < 0 || num > (int64_t)UINT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (num == 0) return 0;
    const CraftaxKey k = {{key[0], key[1]}};
    key_split_kernel<<<grid_for(num), THREADS>>>(k, num, out);
    return finish_launch("key_split");
}

int craftax_cuda_reset_with_keys_ex(void *states, const uint32_t *keys, int64_t num_envs, const CraftaxParams *params,
                                    float *obs, uint8_t *obs_compact, void *scratch) {
    if (!states || !keys || !params || !scratch) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    const KeyedWorlds src = {(CraftaxState *)states, keys, num_envs, obs, obs_compact};
    const int rc = launch_worlds(src, num_envs, *params, (CraftaxCudaScratch *)scratch,
                                 craftax_cuda_scratch_entries(num_envs), 0, "reset");
    if (rc) return rc;
    return finish_launch("reset");
}

int craftax_cuda_reset_with_keys_scratch(void *states, const uint32_t *keys, int64_t num_envs,
                                         const CraftaxParams *params, float *obs, void *scratch) {
    return craftax_cuda_reset_with_keys_ex(states, keys, num_envs, params, obs, NULL, scratch);
}

int craftax_cuda_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs, const CraftaxParams *params,
                                 float *obs) {
    if (!states || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    std::lock_guard<std::mutex> lock(g_scratch_mutex);
    int rc = ensure_scratch_locked(num_envs);
    if (rc) return rc;
    if (num_envs == 0) return 0;
    return craftax_cuda_reset_with_keys_scratch(states, keys, num_envs, params, obs, g_scratch);
}

int craftax_cuda_observe_ex(const void *states, int64_t num_envs, float *obs, uint8_t *obs_compact) {
    if (!states || (!obs && !obs_compact)) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_envs == 0) return 0;
    observe_kernel<<<grid_for_warps(num_envs), THREADS>>>((const CraftaxState *)states, num_envs, obs, obs_compact,
                                                          NULL);
    return finish_launch("observe");
}

int craftax_cuda_complete_floors(void *states, int64_t num_envs, const CraftaxParams *params, void *scratch) {
    if (!states || !params || !scratch) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_envs == 0) return 0;
    const int rc = launch_pending_floors((CraftaxState *)states, NULL, num_envs, *params, (CraftaxCudaScratch *)scratch,
                                         craftax_cuda_scratch_entries(num_envs), 0, "complete_floors");
    if (rc) return rc;
    return finish_launch("complete_floors");
}

int craftax_cuda_observe(const void *states, int64_t num_envs, float *obs) {
    if (!obs) return CRAFTAX_ERR_NULL;
    return craftax_cuda_observe_ex(states, num_envs, obs, NULL);
}

int craftax_cuda_expand_obs(const uint8_t *obs_compact, int64_t num_envs, float *obs) {
    if (!obs_compact || !obs) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (((uintptr_t)obs & 15u) != 0) {
        snprintf(g_last_error, sizeof(g_last_error), "expand_obs: obs must be 16-byte aligned");
        return CRAFTAX_ERR_ARGUMENT;
    }
    if (num_envs == 0) return 0;
    expand_obs_kernel<<<grid_for(num_envs * OBS_F4), THREADS>>>(obs_compact, num_envs, obs);
    return finish_launch("expand_obs");
}

int craftax_cuda_step_with_keys_ex(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                   const CraftaxParams *params, float *obs, uint8_t *obs_compact, float *rewards,
                                   uint8_t *dones, void *scratch) {
    if (!states || !actions || !keys || !params || !scratch) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    int rc = check_actions_device(actions, num_envs);
    if (rc) return rc;
    rc = launch_pending_floors((CraftaxState *)states, actions, num_envs, *params, (CraftaxCudaScratch *)scratch,
                               craftax_cuda_scratch_entries(num_envs), 0, "step_with_keys (floors)");
    if (rc) return rc;
    step_kernel<<<grid_for(num_envs), THREADS>>>((CraftaxState *)states, actions, keys, num_envs, *params, obs,
                                                 rewards, dones, (CraftaxCudaScratch *)scratch);
    if (obs || obs_compact)
        observe_kernel<<<grid_for_warps(num_envs), THREADS>>>((const CraftaxState *)states, num_envs, obs,
                                                              obs_compact, NULL);
    return finish_launch("step_with_keys");
}

int craftax_cuda_step_with_keys_scratch(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                        const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones,
                                        void *scratch) {
    return craftax_cuda_step_with_keys_ex(states, actions, keys, num_envs, params, obs, NULL, rewards, dones, scratch);
}

int craftax_cuda_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones) {
    if (!states || !actions || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    std::lock_guard<std::mutex> lock(g_scratch_mutex);
    int rc = ensure_scratch_locked(num_envs);
    if (rc) return rc;
    if (num_envs == 0) return 0;
    return craftax_cuda_step_with_keys_scratch(states, actions, keys, num_envs, params, obs, rewards, dones,
                                               g_scratch);
}

int craftax_cuda_set_autoreset_chunks(int chunks, int64_t min_chunk_envs) {
    if (chunks < 1 || chunks > MAX_CHUNKS || min_chunk_envs < 1) return CRAFTAX_ERR_ARGUMENT;
    std::lock_guard<std::mutex> lock(g_autoreset_mutex);
    g_autoreset_chunks = chunks;
    g_min_chunk_envs = min_chunk_envs;
    return 0;
}


/* One chunk [base, base + n) of the auto-reset step: kernel A (step) then kernel O (obs of
 * the not-done envs) on step_stream, and kernel B (world generation of the done ones) on
 * reset_stream after A (through the event a_done when the streams differ). *count must be
 * zero before A runs. */
static int launch_autoreset_chunk(CraftaxState *states, const int32_t *actions, const uint32_t *keys, int64_t base,
                                  int64_t n, const CraftaxParams &params, float *obs, uint8_t *obs_compact,
                                  float *rewards, uint8_t *dones,
                                  uint8_t *terminated, uint8_t *truncated, const AchievementRows &ach,
                                  CraftaxCudaScratch *scr, int64_t scr_entries, int32_t *done_list, int32_t *count,
                                  uint8_t *done_flags,
                                  cudaStream_t step_stream, cudaStream_t reset_stream, cudaEvent_t a_done,
                                  const cudaEvent_t *prof = NULL, const int *bad_actions = NULL) {
    if (prof) CUDA_TRY(cudaEventRecord(prof[0], step_stream), "cudaEventRecord(profile)");
    /* the chunk's own scratch entries: its world generation (reset_stream) comes after A */
    const int frc = launch_pending_floors(states + base, actions + base, n, params, scr, scr_entries, step_stream,
                                          "step_autoreset (floors)");
    if (frc) return frc;
    if (step_lanes_for(n) == LANES)
        autoreset_step_kernel<LANES><<<grid_for_warps(n), THREADS, 0, step_stream>>>(
            states, actions, keys, base, n, params, rewards, dones, terminated, truncated, ach,
            done_list, count, done_flags, bad_actions);
    else
        autoreset_step_kernel<1><<<grid_for(n), THREADS, 0, step_stream>>>(
            states, actions, keys, base, n, params, rewards, dones, terminated, truncated, ach,
            done_list, count, done_flags, bad_actions);
    CUDA_TRY(cudaGetLastError(), "step_autoreset (step part)");
    if (prof) CUDA_TRY(cudaEventRecord(prof[1], step_stream), "cudaEventRecord(profile)");
    if (reset_stream != step_stream) {
        CUDA_TRY(cudaEventRecord(a_done, step_stream), "cudaEventRecord");
        CUDA_TRY(cudaStreamWaitEvent(reset_stream, a_done, 0), "cudaStreamWaitEvent");
    }
    autoreset_observe_kernel<<<grid_for_warps(n), THREADS, 0, step_stream>>>(states, base, n, params, obs,
                                                                             obs_compact, done_flags);
    CUDA_TRY(cudaGetLastError(), "step_autoreset (obs part)");
    if (prof) CUDA_TRY(cudaEventRecord(prof[2], step_stream), "cudaEventRecord(profile)");
    if (prof) CUDA_TRY(cudaEventRecord(prof[3], reset_stream), "cudaEventRecord(profile)");
    {
        /* `scr`: the chunk's own entries, other chunks may be generating */
        const DoneListWorlds src = {states, keys, done_list, base, count, obs, obs_compact};
        const int rc = launch_worlds(src, n, params, scr, scr_entries, reset_stream, "step_autoreset (reset part)");
        if (rc) return rc;
    }
    if (prof) CUDA_TRY(cudaEventRecord(prof[4], reset_stream), "cudaEventRecord(profile)");
    return 0;
}

/* craftax_cuda_track_episodes' outputs, when a step call runs it (NULL: the caller does). */
typedef struct {
    float *ret_acc;
    int32_t *len_acc;
    float *ep_return;
    int32_t *ep_length;
    float *discount;
    float *achievements_scaled;
} EpisodeTrack;

static cudaEvent_t g_reset_done = NULL;

/* The achievement rows of a one-wait step call: with the bookkeeping (CraftaxEnv.step: the
 * caller's buffers of its previous step) only the changed rows, and achievements_scaled too;
 * without, final_achievements densely. */
static AchievementRows step_rows(uint8_t *final_achievements, const EpisodeTrack *track) {
    if (!track) return dense_rows(final_achievements);
    const AchievementRows rows = {final_achievements, track->achievements_scaled, 1};
    return rows;
}

/* The end of a one-wait step call: the episode bookkeeping (track may be NULL), the wait, then
 * the action check's verdict. */
static int finish_step_call(int64_t num_envs, const float *rewards, const uint8_t *dones,
                            const EpisodeTrack *track, const char *what) {
    if (track) /* achievements_scaled: the step kernel's (step_rows) */
        track_episodes_kernel<<<grid_for(num_envs), THREADS>>>(rewards, dones, NULL, num_envs, track->ret_acc,
                                                                track->len_acc, track->ep_return, track->ep_length,
                                                                track->discount, NULL, g_bad_action);
    const int rc = finish_launch(what);
    if (rc) return rc;
    return action_check_verdict();
}

/* The whole auto-reset step on the legacy stream with a single wait at the end: the optional
 * key split (split_from: env.step's key), the action check (its flag read back after the
 * wait; the step and bookkeeping kernels skip all work when it is set, so a rejected call
 * changes no state), the chunks, the reset stream joined by an event, the optional episode
 * bookkeeping. Each wait costs the GPU the host's time to the next launch: v31 waited five
 * times a step (0.5 ms of 8.7 at 962,560 envs). */
static int step_autoreset_sync(CraftaxState *states, const int32_t *actions, uint32_t *keys, int64_t num_envs,
                               const CraftaxParams *params, float *obs, uint8_t *obs_compact, float *rewards,
                               uint8_t *dones, uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                               void *scratch, const CraftaxKey *split_from, const EpisodeTrack *track) {
    std::lock_guard<std::mutex> lock(g_autoreset_mutex);
    int rc = ensure_autoreset_locked(num_envs);
    if (rc) return rc;
    if (!g_reset_done) CUDA_TRY(cudaEventCreateWithFlags(&g_reset_done, cudaEventDisableTiming), "cudaEventCreate");
    std::lock_guard<std::mutex> check_lock(g_check_mutex);
    if (split_from) key_split_kernel<<<grid_for(num_envs), THREADS>>>(*split_from, num_envs, keys);
    rc = start_action_check(actions, num_envs);
    if (rc) return rc;
    /* Chunks: kernel A of chunk c+1 (legacy stream) overlaps kernel B of chunk c (the
     * high-priority reset stream), so world generation hides behind stepping. */
    int64_t chunks = (num_envs + g_min_chunk_envs - 1) / g_min_chunk_envs;
    if (chunks > g_autoreset_chunks) chunks = g_autoreset_chunks;
    if (chunks < 1) chunks = 1;
    const int64_t per_chunk = (num_envs + chunks - 1) / chunks;
    const int64_t chunk_entries = chunk_scratch_entries(per_chunk, chunks);
    int32_t *counts = g_done_list + g_done_list_envs;
    CraftaxCudaScratch *scr = (CraftaxCudaScratch *)scratch;
    const AchievementRows rows = step_rows(final_achievements, track);
    CUDA_TRY(cudaMemsetAsync(counts, 0, MAX_CHUNKS * sizeof(int32_t), 0), "cudaMemsetAsync(done counts)");
    for (int64_t c = 0; c < chunks; c++) {
        const int64_t base = c * per_chunk;
        if (base >= num_envs) break;
        const int64_t n = num_envs - base < per_chunk ? num_envs - base : per_chunk;
        rc = launch_autoreset_chunk(states, actions, keys, base, n, *params, obs, obs_compact, rewards, dones,
                                    terminated, truncated, rows, scr + c * chunk_entries,
                                    n < chunk_entries ? n : chunk_entries, g_done_list, counts + c,
                                    g_done_flags, 0, g_reset_stream, g_chunk_events[c],
                                    g_profile && chunks == 1 ? g_prof_events : NULL, g_bad_action);
        if (rc) return rc;
    }
    CUDA_TRY(cudaEventRecord(g_reset_done, g_reset_stream), "cudaEventRecord(reset done)");
    CUDA_TRY(cudaStreamWaitEvent(0, g_reset_done, 0), "cudaStreamWaitEvent(reset done)");
    rc = finish_step_call(num_envs, rewards, dones, track, "step_autoreset");
    if (rc) return rc;
    if (g_profile && chunks == 1) {
        float t[5] = {0, 0, 0, 0, 0};
        for (int e = 1; e < 5; e++) CUDA_TRY(cudaEventElapsedTime(&t[e], g_prof_events[0], g_prof_events[e]), "profile");
        g_prof_ms[0] = t[1];                              /* kernel A: step logic of all envs */
        g_prof_ms[1] = t[2] - t[1];                       /* kernel O: obs of the not-done envs */
        g_prof_ms[2] = t[4] - t[3];                       /* kernel B: world gen + obs of the done envs */
        g_prof_ms[3] = t[2] > t[4] ? t[2] : t[4];         /* A start to the later of O and B */
    }
    return 0;
}

int craftax_cuda_step_autoreset_ex(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                   const CraftaxParams *params, float *obs, uint8_t *obs_compact, float *rewards,
                                   uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                   uint8_t *final_achievements, void *scratch) {
    if (!states || !actions || !keys || !params || !scratch) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    return step_autoreset_sync((CraftaxState *)states, actions, (uint32_t *)keys, num_envs, params, obs, obs_compact,
                               rewards, dones, terminated, truncated, final_achievements, scratch, NULL, NULL);
}

int craftax_cuda_env_step(void *states, const int32_t *actions, const uint32_t *key, uint32_t *keys,
                          int64_t num_envs, const CraftaxParams *params, float *obs, uint8_t *obs_compact,
                          float *rewards, uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                          uint8_t *final_achievements, float *ret_acc, int32_t *len_acc, float *ep_return,
                          int32_t *ep_length, float *discount, float *achievements_scaled, void *scratch) {
    if (!states || !actions || !key || !keys || !params || !scratch || !rewards || !dones || !ret_acc || !len_acc)
        return CRAFTAX_ERR_NULL;
    if (achievements_scaled && !final_achievements) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > (int64_t)UINT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    const CraftaxKey k = {{key[0], key[1]}};
    const EpisodeTrack track = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    return step_autoreset_sync((CraftaxState *)states, actions, keys, num_envs, params, obs, obs_compact, rewards,
                               dones, terminated, truncated, final_achievements, scratch, &k, &track);
}

int craftax_cuda_set_profiling(int on) {
    std::lock_guard<std::mutex> lock(g_autoreset_mutex);
    if (on && !g_prof_events[0])
        for (int e = 0; e < 5; e++) CUDA_TRY(cudaEventCreate(&g_prof_events[e]), "cudaEventCreate(profile)");
    g_profile = on != 0;
    for (int k = 0; k < 4; k++) g_prof_ms[k] = 0.0f;
    return 0;
}

int craftax_cuda_last_profile(float *ms) {
    if (!ms) return CRAFTAX_ERR_NULL;
    std::lock_guard<std::mutex> lock(g_autoreset_mutex);
    for (int k = 0; k < 4; k++) ms[k] = g_prof_ms[k];
    return 0;
}

int craftax_cuda_step_autoreset_scratch(void *states, const int32_t *actions, const uint32_t *keys,
                                        int64_t num_envs, const CraftaxParams *params, float *obs, float *rewards,
                                        uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                        uint8_t *final_achievements, void *scratch) {
    return craftax_cuda_step_autoreset_ex(states, actions, keys, num_envs, params, obs, NULL, rewards, dones,
                                          terminated, truncated, final_achievements, scratch);
}

int craftax_cuda_step_autoreset_stream(void *states, const int32_t *actions, const uint32_t *keys,
                                       int64_t num_envs, const CraftaxParams *params, float *obs, float *rewards,
                                       uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                       uint8_t *final_achievements, void *scratch, int32_t *done_list,
                                       uintptr_t stream) {
    if (!states || !actions || !keys || !params || !scratch || !done_list || !dones) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    int32_t *count = done_list + num_envs;
    CUDA_TRY(cudaMemsetAsync(count, 0, sizeof(int32_t), s), "cudaMemsetAsync(done count)");
    /* One stream, so the caller's graph capture sees a plain chain; `dones` doubles as the
     * done flags that kernel O reads. */
    return launch_autoreset_chunk((CraftaxState *)states, actions, keys, 0, num_envs, *params, obs, NULL, rewards,
                                  dones,
                                  terminated, truncated, dense_rows(final_achievements), (CraftaxCudaScratch *)scratch,
                                  craftax_cuda_scratch_entries(num_envs), done_list, count, dones, s, s, NULL);
}

int craftax_cuda_step_autoreset(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones,
                                uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements) {
    if (!states || !actions || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    std::lock_guard<std::mutex> lock(g_scratch_mutex);
    int rc = ensure_scratch_locked(num_envs);
    if (rc) return rc;
    if (num_envs == 0) return 0;
    return craftax_cuda_step_autoreset_scratch(states, actions, keys, num_envs, params, obs, rewards, dones,
                                               terminated, truncated, final_achievements, g_scratch);
}

/* ---- optimistic resets ------------------------------------------------------------------ */
/* Work space of the optimistic step: the wrapper key (for the synchronous call), the order
 * keys, the sorted keys, then cub's radix-sort temporary storage. */
#define OPT_KEY_BYTES 256
static size_t optimistic_sort_bytes(int64_t num_envs) {
    size_t bytes = 0;
    cub::DeviceRadixSort::SortKeys((void *)NULL, bytes, (const uint64_t *)NULL, (uint64_t *)NULL, (int)num_envs, 0, 56);
    return bytes;
}

size_t craftax_cuda_optimistic_work_size(int64_t num_envs) {
    if (num_envs < 0 || num_envs > INT32_MAX) return 0;
    return OPT_KEY_BYTES + 2 * (size_t)num_envs * sizeof(uint64_t) + optimistic_sort_bytes(num_envs);
}

int craftax_cuda_generate_worlds_stream(void *worlds, const uint32_t *keys, int64_t num_keys, int32_t num_worlds,
                                        const CraftaxParams *params, void *scratch, uintptr_t stream) {
    if (!worlds || !keys || !params || !scratch) return CRAFTAX_ERR_NULL;
    if (num_keys < 0 || num_worlds < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    const int64_t n = num_keys * num_worlds;
    if (n == 0) return 0;
    /* A warp per world here, not per floor: the trainer generates these pools while its update
     * runs, so throughput counts, not one world's latency, and the floor layout measured 2-3% slower
     * in the paper trainer (NOTES v8). */
    generate_worlds_kernel<<<grid_for_warps(n), THREADS, 0, (cudaStream_t)stream>>>(
        (CraftaxState *)worlds, keys, num_keys, num_worlds, *params, (CraftaxCudaScratch *)scratch, reset_floors());
    CUDA_TRY(cudaGetLastError(), "generate_worlds");
    return 0;
}

/* The optimistic step enqueued on `s`; bad_actions (may be NULL): a device flag that, when set
 * by the action check enqueued before, makes the step, world and take kernels change nothing. */
static int launch_optimistic(CraftaxState *st, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                             int32_t reset_ratio, const CraftaxParams *params, const void *worlds, float *obs,
                             uint8_t *obs_compact, float *rewards, uint8_t *dones, uint8_t *terminated,
                             uint8_t *truncated, const AchievementRows &ach, int32_t *reset_worlds, void *scratch,
                             void *work, cudaStream_t s, const int *bad_actions) {
    CraftaxCudaScratch *scr = (CraftaxCudaScratch *)scratch;
    const int32_t num_worlds = (int32_t)(num_envs / reset_ratio);
    uint64_t *order = (uint64_t *)((char *)work + OPT_KEY_BYTES);
    uint64_t *sorted = order + num_envs;
    void *sort_temp = sorted + num_envs;
    size_t sort_bytes = optimistic_sort_bytes(num_envs);
    const int frc = launch_pending_floors(st, actions, num_envs, *params, scr, craftax_cuda_scratch_entries(num_envs), s,
                                          "step_optimistic (floors)");
    if (frc) return frc;
    if (step_lanes_for(num_envs) == LANES)
        optimistic_step_kernel<LANES><<<grid_for_warps(num_envs), THREADS, 0, s>>>(
            st, actions, key, num_envs, *params, rewards, dones, terminated, truncated, ach, order,
            bad_actions);
    else
        optimistic_step_kernel<1><<<grid_for(num_envs), THREADS, 0, s>>>(
            st, actions, key, num_envs, *params, rewards, dones, terminated, truncated, ach, order,
            bad_actions);
    CUDA_TRY(cudaGetLastError(), "step_optimistic (step)");
    CUDA_TRY(cub::DeviceRadixSort::SortKeys(sort_temp, sort_bytes, order, sorted, (int)num_envs, 0, 56, s),
             "step_optimistic (order)");
    const CraftaxState *pool = (const CraftaxState *)worlds;
    if (!pool) { /* the ended envs of ranks < num_worlds generate their worlds in place */
        const TakenWorlds src = {st, sorted, key, num_worlds, bad_actions};
        const int rc = launch_worlds(src, num_worlds, *params, scr, craftax_cuda_scratch_entries(num_envs), s,
                                     "step_optimistic (resets)");
        if (rc) return rc;
    }
    for (int pass = 0; pass < (pool ? 1 : 2); pass++) {
        optimistic_take_kernel<<<grid_for_warps(num_envs), THREADS, 0, s>>>(
            st, sorted, num_envs, num_worlds, reset_ratio, pool, pass, reset_worlds, bad_actions);
        CUDA_TRY(cudaGetLastError(), "step_optimistic (resets)");
    }
    if (obs || obs_compact) {
        observe_kernel<<<grid_for_warps(num_envs), THREADS, 0, s>>>(st, num_envs, obs, obs_compact, dones);
        CUDA_TRY(cudaGetLastError(), "step_optimistic (obs)");
    }
    return 0;
}

int craftax_cuda_step_optimistic_stream(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                                        int32_t reset_ratio, const CraftaxParams *params, const void *worlds,
                                        float *obs, uint8_t *obs_compact, float *rewards, uint8_t *dones,
                                        uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                                        int32_t *reset_worlds, void *scratch, void *work, uintptr_t stream) {
    if (!states || !actions || !key || !params || !dones || !scratch || !work) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > INT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (reset_ratio < 1 || num_envs % reset_ratio != 0 || params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    return launch_optimistic((CraftaxState *)states, actions, key, num_envs, reset_ratio, params, worlds, obs,
                             obs_compact, rewards, dones, terminated, truncated, dense_rows(final_achievements),
                             reset_worlds, scratch, work, (cudaStream_t)stream, NULL);
}

/* The optimistic step with one wait at the end (as step_autoreset_sync): the host key stored by
 * a kernel, the action check's flag read back after the wait, the optional bookkeeping. */
static int step_optimistic_sync(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                                int32_t reset_ratio, const CraftaxParams *params, float *obs, uint8_t *obs_compact,
                                float *rewards, uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                uint8_t *final_achievements, int32_t *reset_worlds, void *scratch, void *work,
                                const EpisodeTrack *track) {
    std::lock_guard<std::mutex> check_lock(g_check_mutex);
    int rc = start_action_check(actions, num_envs);
    if (rc) return rc;
    uint32_t *device_key = (uint32_t *)work;
    const CraftaxKey k = {{key[0], key[1]}};
    store_key_kernel<<<1, 1>>>(k, device_key);
    CUDA_TRY(cudaGetLastError(), "step_optimistic (key)");
    rc = launch_optimistic((CraftaxState *)states, actions, device_key, num_envs, reset_ratio, params, NULL, obs,
                               obs_compact, rewards, dones, terminated, truncated,
                               step_rows(final_achievements, track), reset_worlds, scratch, work, 0, g_bad_action);
    if (rc) return rc;
    return finish_step_call(num_envs, rewards, dones, track, "step_optimistic");
}

int craftax_cuda_step_optimistic_ex(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                                    int32_t reset_ratio, const CraftaxParams *params, float *obs,
                                    uint8_t *obs_compact, float *rewards, uint8_t *dones, uint8_t *terminated,
                                    uint8_t *truncated, uint8_t *final_achievements, int32_t *reset_worlds,
                                    void *scratch, void *work) {
    if (!states || !actions || !key || !params || !dones || !scratch || !work) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > INT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (reset_ratio < 1 || num_envs % reset_ratio != 0 || params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    return step_optimistic_sync(states, actions, key, num_envs, reset_ratio, params, obs, obs_compact, rewards, dones,
                                terminated, truncated, final_achievements, reset_worlds, scratch, work, NULL);
}

int craftax_cuda_env_step_optimistic(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                                     int32_t reset_ratio, const CraftaxParams *params, float *obs,
                                     uint8_t *obs_compact, float *rewards, uint8_t *dones, uint8_t *terminated,
                                     uint8_t *truncated, uint8_t *final_achievements, float *ret_acc,
                                     int32_t *len_acc, float *ep_return, int32_t *ep_length, float *discount,
                                     float *achievements_scaled, void *scratch, void *work) {
    if (!states || !actions || !key || !params || !dones || !rewards || !scratch || !work || !ret_acc || !len_acc)
        return CRAFTAX_ERR_NULL;
    if (achievements_scaled && !final_achievements) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > INT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (reset_ratio < 1 || num_envs % reset_ratio != 0 || params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    const EpisodeTrack track = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    return step_optimistic_sync(states, actions, key, num_envs, reset_ratio, params, obs, obs_compact, rewards, dones,
                                terminated, truncated, final_achievements, NULL, scratch, work, &track);
}

int craftax_cuda_track_episodes(const float *rewards, const uint8_t *dones, const uint8_t *final_achievements,
                                int64_t num_envs, float *ret_acc, int32_t *len_acc, float *ep_return,
                                int32_t *ep_length, float *discount, float *achievements_scaled) {
    if (!rewards || !dones || !ret_acc || !len_acc) return CRAFTAX_ERR_NULL;
    if (achievements_scaled && !final_achievements) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_envs == 0) return 0;
    const int64_t threads = achievements_scaled ? num_envs * CRAFTAX_NUM_ACHIEVEMENTS : num_envs;
    track_episodes_kernel<<<grid_for(threads), THREADS>>>(rewards, dones, final_achievements, num_envs, ret_acc,
                                                           len_acc, ep_return, ep_length, discount,
                                                           achievements_scaled, NULL);
    return finish_launch("track_episodes");
}

}  // extern "C"
