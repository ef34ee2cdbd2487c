/* cuda/classic_kernels.cuh: Craftax-Classic's step, world-generation and bookkeeping kernels
 * (part of cuda/classic_cuda.cu), a thread per env over the rules headers of
 * reference_c/include/craftax_classic/ (CRAFTAX_HD). States stay in global memory as the C
 * reference's CraftaxClassicState structs. */
#ifndef CRAFTAX_CLASSIC_CUDA_KERNELS_CUH
#define CRAFTAX_CLASSIC_CUDA_KERNELS_CUH

#define CLASSIC_THREADS 128
#define CLASSIC_WARP 32

static unsigned classic_grid(int64_t n) { return (unsigned)((n + CLASSIC_THREADS - 1) / CLASSIC_THREADS); }
static unsigned classic_grid_warps(int64_t n) {
    return (unsigned)((n * CLASSIC_WARP + CLASSIC_THREADS - 1) / CLASSIC_THREADS);
}

/* Whether env i's thread shares spawn_mobs' scans with its warp (craftax_classic_spawn_cell):
 * where all 32 lanes of the warp have an env (the grid's last warp may not). The step kernels
 * run CLASSIC_THREADS-thread blocks, whole warps of CRAFTAX_CLASSIC_BLOCK_WARPS at most. */
static_assert(CLASSIC_THREADS % CLASSIC_WARP == 0 && CLASSIC_THREADS <= CLASSIC_WARP * CRAFTAX_CLASSIC_BLOCK_WARPS,
              "the step kernels' blocks are whole warps, each with its shared cell choice");
static __device__ __forceinline__ int classic_shares_scans(int64_t i, int64_t n) { return (i | 31) < n; }

static __device__ __forceinline__ CraftaxKey classic_load_key(const uint32_t *keys, int64_t s) {
    const CraftaxKey k = {{keys[2 * s], keys[2 * s + 1]}};
    return k;
}

/* out[i] = jax.random.split(key, num)[i]: env.step's per-env keys. */
__global__ void classic_key_split_kernel(CraftaxKey key, int64_t num, uint32_t *out) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num) return;
    const CraftaxKey k = craftax_split_at(key, (uint32_t)i);
    out[2 * i] = k.k[0];
    out[2 * i + 1] = k.k[1];
}

/* A host key into device memory without a host wait (a pageable cudaMemcpy waits for the GPU). */
__global__ void classic_store_key_kernel(CraftaxKey key, uint32_t *out) {
    out[0] = key.k[0];
    out[1] = key.k[1];
}

/* Sets *bad to 1 when any action is outside [0, CRAFTAX_CLASSIC_NUM_ACTIONS). */
__global__ void classic_check_actions_kernel(const int32_t *actions, int64_t n, int *bad) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (actions[i] < 0 || actions[i] >= CRAFTAX_CLASSIC_NUM_ACTIONS) *bad = 1;
}

/* An env's step outputs (each may be NULL): ending flags and its final-achievements row
 * (uint8 [N, 22]: the stepped state's achievements where it ended, else 0). */
typedef struct {
    float *rewards;
    uint8_t *dones, *terminated, *truncated, *final_achievements;
} ClassicStepOut;

static __device__ __forceinline__ void classic_write_step(const ClassicStepOut &out, int64_t i,
                                                          const CraftaxClassicState *s, float reward, int done,
                                                          int term) {
    if (out.rewards) out.rewards[i] = reward;
    if (out.dones) out.dones[i] = (uint8_t)done;
    if (out.terminated) out.terminated[i] = (uint8_t)(done && term);
    if (out.truncated) out.truncated[i] = (uint8_t)(done && !term);
    if (out.final_achievements) {
        uint8_t *row = out.final_achievements + i * CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS;
        for (int k = 0; k < CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS; k++) row[k] = done ? s->achievements[k] : (uint8_t)0;
    }
}

/* step_env without reset (craftax_classic_step_with_keys); the obs follows in
 * classic_observe_kernel. bad_actions: the call's action check; when set nothing changes. */
__global__ void __launch_bounds__(CLASSIC_THREADS)
    classic_step_kernel(CraftaxClassicState *states, const int32_t *actions, const uint32_t *keys, int64_t n,
                        const __grid_constant__ CraftaxClassicParams params, float *rewards, uint8_t *dones,
                        const int *bad_actions) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (*bad_actions) return;
    uint8_t done;
    const float r = craftax_classic_step_env_sharing(&states[i], classic_load_key(keys, i), actions[i], &params, &done,
                                                     classic_shares_scans(i, n));
    if (rewards) rewards[i] = r;
    if (dones) dones[i] = done;
}

/* The auto-reset step's step part (craftax_classic_step_autoreset_one up to its reset): the
 * not-done envs' obs records (step_env's light level, then the auto-reset light level into
 * the state), the done ones' final obs (final_obs may be NULL) and their place in done_list
 * through *done_count (any order: each reset depends on its env alone). bad_actions (may be
 * NULL): the call's action check; when set nothing changes. */
__global__ void __launch_bounds__(CLASSIC_THREADS)
    classic_autoreset_step_kernel(CraftaxClassicState *states, const int32_t *actions, const uint32_t *keys,
                                  int64_t n, const __grid_constant__ CraftaxClassicParams params, uint8_t *compact,
                                  float *final_obs, ClassicStepOut out, int32_t *done_list, int32_t *done_count,
                                  const int *bad_actions) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (bad_actions && *bad_actions) return;
    CraftaxClassicState *s = &states[i];
    CraftaxKey key_step, key_reset;
    craftax_split2(classic_load_key(keys, i), &key_step, &key_reset);
    uint8_t done;
    const float r = craftax_classic_step_env_sharing(s, key_step, actions[i], &params, &done, classic_shares_scans(i, n));
    classic_write_step(out, i, s, r, done, craftax_classic_is_terminated(s));
    if (done) {
        if (final_obs) classic_render_float_row(s, final_obs + i * CRAFTAX_CLASSIC_OBS_SIZE);
        done_list[atomicAdd(done_count, 1)] = (int32_t)i;
    } else {
        classic_emit_compact(s, compact, i);
        s->light_level = craftax_light_level_autoreset(s->timestep, params.day_length);
    }
}

/* Every env's step_env without reset for the optimistic wrapper (craftax_classic_step_optimistic
 * of the C API), its ending and its key in the wrapper's order; final_obs as above. */
__global__ void __launch_bounds__(CLASSIC_THREADS)
    classic_optimistic_step_kernel(CraftaxClassicState *states, const int32_t *actions, const uint32_t *key,
                                   int64_t n, const __grid_constant__ CraftaxClassicParams params, float *final_obs,
                                   ClassicStepOut out, uint64_t *order, const int *bad_actions) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (bad_actions && *bad_actions) return;
    CraftaxClassicState *s = &states[i];
    CraftaxKey step_parent, reset_parent, choice_key;
    craftax_optimistic_keys(classic_load_key(key, 0), &step_parent, &reset_parent, &choice_key);
    const float r = craftax_classic_step_sharing(s, craftax_split_at(step_parent, (uint32_t)i), actions[i], &params,
                                                 classic_shares_scans(i, n));
    const int done = craftax_classic_is_game_over(s, &params);
    classic_write_step(out, i, s, r, done, craftax_classic_is_terminated(s));
    if (done && final_obs) classic_render_float_row(s, final_obs + i * CRAFTAX_CLASSIC_OBS_SIZE);
    order[i] = craftax_optimistic_order_key(choice_key, (uint32_t)i, done);
}

/* Where the worlds of classic_worlds_kernel come from: job d of the kernel makes a world
 * into env (or pool entry) `i` from key `key`. */
enum {
    WORLDS_FROM_KEYS,      /* reset_with_keys: i = d, key = keys[d] */
    WORLDS_FROM_DONE_LIST, /* auto-reset: i = done_list[d], key = split(keys[i])[1] */
    WORLDS_FROM_TAKEN,     /* optimistic: rank d < num_worlds of `sorted` if done, key = split(reset_parent)[d] */
    WORLDS_FROM_POOL,      /* generate_worlds: i = d, the d % num_worlds-th world of wrapper key keys[d / num_worlds] */
};
typedef struct {
    int source;
    CraftaxClassicState *states;
    const uint32_t *keys;    /* per-env keys, or the wrapper key(s) */
    const int32_t *list;     /* WORLDS_FROM_DONE_LIST */
    const int32_t *count;    /* the number of jobs on the device (done list), or NULL: num_jobs */
    int64_t num_jobs;
    const uint64_t *sorted;  /* WORLDS_FROM_TAKEN */
    int32_t num_worlds;      /* WORLDS_FROM_POOL */
    uint8_t *compact;        /* the new worlds' obs records (may be NULL) */
    const int *bad_actions;  /* may be NULL */
} ClassicWorldJobs;

/* World generation, a warp per world (the lanes share the noise fields and the map pass,
 * worldgen.h): `slots` warps, each with its own scratch entry (99 KB of noise fields and
 * gradients, CraftaxClassicWorldGenScratch), take jobs d = w, w + slots, ... (warp w). */
__global__ void __launch_bounds__(CLASSIC_THREADS)
    classic_worlds_kernel(ClassicWorldJobs jobs, const __grid_constant__ CraftaxClassicParams params,
                          CraftaxClassicWorldGenScratch *scratch, int64_t slots) {
    const int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / CLASSIC_WARP;
    const int lane = (int)(threadIdx.x % CLASSIC_WARP);
    if (w >= slots) return; /* whole warps */
    if (jobs.bad_actions && *jobs.bad_actions) return;
    const int64_t total = jobs.count ? (int64_t)*jobs.count : jobs.num_jobs;
    for (int64_t d = w; d < total; d += slots) { /* the same jobs in every lane of the warp */
        int64_t i = d;
        CraftaxKey key, unused, step_parent, reset_parent, choice_key;
        if (jobs.source == WORLDS_FROM_KEYS) {
            key = classic_load_key(jobs.keys, d);
        } else if (jobs.source == WORLDS_FROM_DONE_LIST) {
            i = jobs.list[d];
            craftax_split2(classic_load_key(jobs.keys, i), &unused, &key);
        } else if (jobs.source == WORLDS_FROM_TAKEN) {
            const uint64_t entry = jobs.sorted[d];
            if (entry & CRAFTAX_OPTIMISTIC_NOT_DONE) continue;
            i = (int64_t)(entry & 0xFFFFFFFFu);
            craftax_optimistic_keys(classic_load_key(jobs.keys, 0), &step_parent, &reset_parent, &choice_key);
            key = craftax_split_at(reset_parent, (uint32_t)d);
        } else {
            craftax_optimistic_keys(classic_load_key(jobs.keys, d / jobs.num_worlds), &step_parent, &reset_parent,
                                    &choice_key);
            key = craftax_split_at(reset_parent, (uint32_t)(d % jobs.num_worlds));
        }
        craftax_classic_reset_env_lanes(key, &params, &jobs.states[i], &scratch[w], lane, CLASSIC_WARP);
        if (lane == 0) classic_emit_compact(&jobs.states[i], jobs.compact, i);
        __syncwarp(); /* the scratch entry is free for the warp's next world */
    }
}

static __device__ __forceinline__ void classic_copy_state_warp(CraftaxClassicState *dst,
                                                               const CraftaxClassicState *src, int lane) {
    uint32_t *d = (uint32_t *)dst;
    const uint32_t *s = (const uint32_t *)src;
    for (size_t q = lane; q < sizeof(CraftaxClassicState) / 4; q += CLASSIC_WARP) d[q] = s[q];
}
static_assert(sizeof(CraftaxClassicState) % 4 == 0, "states copy as 32-bit words");

/* The ended envs take their worlds, a warp per rank of the wrapper's order (`sorted`), as the
 * full game's optimistic_take_kernel: from the pregenerated `worlds` (pass 0), or, without
 * them, world r was generated into the env of rank r < num_worlds (WORLDS_FROM_TAKEN) and pass
 * 1 copies it to the envs of rank >= num_worlds that take it (world i / reset_ratio, whose
 * first taker has that lower rank). reset_worlds (may be NULL): each env's world or -1. */
__global__ void classic_take_kernel(CraftaxClassicState *states, const uint64_t *sorted, int64_t n,
                                    int32_t num_worlds, int32_t reset_ratio, const CraftaxClassicState *worlds,
                                    int pass, int32_t *reset_worlds, const int *bad_actions) {
    const int64_t rank = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / CLASSIC_WARP;
    const int lane = (int)(threadIdx.x % CLASSIC_WARP);
    if (rank >= n) return;
    if (bad_actions && *bad_actions) return;
    const uint64_t entry = sorted[rank];
    const uint32_t i = (uint32_t)(entry & 0xFFFFFFFFu);
    const int done = !(entry & CRAFTAX_OPTIMISTIC_NOT_DONE);
    const int32_t w = craftax_optimistic_world(rank, i, num_worlds, reset_ratio);
    if (reset_worlds && lane == 0 && pass == 0) reset_worlds[i] = done ? w : -1;
    if (!done) return;
    if (worlds)
        classic_copy_state_warp(&states[i], &worlds[w], lane);
    else if (pass == 1 && rank >= num_worlds)
        classic_copy_state_warp(&states[i], &states[(uint32_t)(sorted[w] & 0xFFFFFFFFu)], lane);
}

/* The episode bookkeeping of craftax_cuda_env_step (craftax_cuda.h) with Classic's 22
 * achievements: thread t keeps env t's running return and length (t < n) and writes float t
 * of the [n, 22] achievements block (coalesced). */
__global__ void classic_track_kernel(const float *rewards, const uint8_t *dones, const uint8_t *final_achievements,
                                     int64_t n, float *ret_acc, int32_t *len_acc, float *ep_return,
                                     int32_t *ep_length, float *discount, float *achievements_scaled,
                                     const int *bad_actions) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (bad_actions && *bad_actions) return;
    if (achievements_scaled && t < n * CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS) {
        const int done = dones[t / CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS] != 0;
        achievements_scaled[t] = (float)final_achievements[t] * (float)done * 100.0f;
    }
    if (t >= n) return;
    const int done = dones[t] != 0;
    const float ret = ret_acc[t] + rewards[t];
    const int32_t len = len_acc[t] + 1;
    if (ep_return) ep_return[t] = done ? ret : 0.0f;
    if (ep_length) ep_length[t] = done ? len : 0;
    ret_acc[t] = done ? 0.0f : ret;
    len_acc[t] = done ? 0 : len;
    if (discount) discount[t] = 1.0f - (float)done;
}

#endif
