/* cuda/env_pixels.cuh: Craftax-Pixels-v1 on the GPU (craftax_cuda_pixels_* of craftax_cuda.h):
 * the full game's states, steps and worlds of the symbolic env, observed through
 * reference_c/include/craftax/pixels.h (the C pixel env's renderer, compiled here as
 * __host__ __device__) over the caller's device copy of the texture atlas.
 *
 * A warp renders one env: lane 0 gathers the view (craftax_pixels_view) into the warp's shared
 * CraftaxPixelView, then the lanes share the 130 x 110 pixels and write them, times 1/255,
 * straight into the env's row of the obs (craftax_render_pixels_lanes, the very function the
 * C env calls with one lane).
 *
 * The calls mirror the C pixel env (reference_c/src/env_variants.h, craftax/step.h):
 *   reset      generate_world(key) itself: upstream's pixel env does not split reset_env's key
 *              as the symbolic env does (PixelKeyedWorlds & co. below), then the obs;
 *   auto-reset kernel A of the symbolic env (step, done list), then for every env either its
 *              terminal obs into final_obs (done) or its obs followed by the auto-reset light
 *              level (not done: the obs sees step_env's light level), then the done envs'
 *              worlds, then their obs. One stream: the symbolic env's reset stream and chunks
 *              overlap work whose obs it fuses into the world kernels, which the pixel obs
 *              (shared memory) cannot join;
 *   optimistic the symbolic env's step, order and take kernels, the terminal obs between the
 *              step and the worlds, the obs of every env at the end.
 * Levels 1-8 stay lazy as in the symbolic env: a picture shows the player's level only, which
 * the floors kernel generates before any step can reach it. */
#ifndef CRAFTAX_CUDA_ENV_PIXELS_CUH
#define CRAFTAX_CUDA_ENV_PIXELS_CUH

#include "craftax/pixels.h"

#define PIXEL_WARPS (THREADS / LANES)

/* The atlas layout at the agent's block size (10 pixels a cell), computed on the host from the
 * section table as the C API computes it (craftax_pixels_layout), passed to the kernels by value. */
static CraftaxPixelLayout pixel_layout(void) {
    CraftaxPixelLayout l;
    craftax_pixels_layout(&l, CRAFTAX_PIXEL_AGENT_BLOCK);
    return l;
}
static int64_t pixel_obs_floats(void) {
    const CraftaxPixelLayout l = pixel_layout();
    return (int64_t)l.height * l.width * 3;
}

/* Which envs an obs kernel renders. */
enum { PIXELS_EVERY_ENV = 0, PIXELS_DONE_ENVS = 1 };

/* The obs of env i by its warp into row i of out (float32 [N, 130, 110, 3]). */
static __device__ __forceinline__ void pixels_render_warp(const CraftaxState *s, const float *atlas,
                                                          const CraftaxPixelLayout &l, float *out, int64_t i,
                                                          CraftaxPixelView *v, int lane) {
    const int64_t floats = (int64_t)l.height * l.width * 3;
    /* lane 0 gathers the view field by field (the view rows of map, item_map and light_map,
     * the level's mobs, the scalars): the symbolic obs's reads, asked of L1 by all lanes first */
    prefetch_obs_reads(s, lane);
    craftax_render_pixels_lanes(s, atlas, &l, v, out + i * floats, 1, lane, LANES); /* ends synced */
}

/* The obs of every env (which = PIXELS_EVERY_ENV) or of the envs whose done flag is set
 * (PIXELS_DONE_ENVS). bad_actions (may be NULL): set by the call's action check, nothing is
 * written. */
__global__ void pixels_observe_kernel(const CraftaxState *states, int64_t n, const float *atlas,
                                      const __grid_constant__ CraftaxPixelLayout l, float *out, const uint8_t *done,
                                      int which, const int *bad_actions) {
    __shared__ CraftaxPixelView views[PIXEL_WARPS];
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    const int lane = (int)(threadIdx.x % LANES);
    if (i >= n) return; /* whole warps */
    if (bad_actions && *bad_actions) return;
    if (which == PIXELS_DONE_ENVS && !done[i]) return;
    pixels_render_warp(&states[i], atlas, l, out, i, &views[threadIdx.x / LANES], lane);
}

/* The auto-reset step's tail after kernel A, a warp per env: a done env's terminal obs into
 * final_obs (when asked for), a not-done env's obs, then its auto-reset light level
 * (craftax_step_autoreset_one's order: the obs sees step_env's light level). */
__global__ void pixels_autoreset_observe_kernel(CraftaxState *states, int64_t n, const CraftaxParams params,
                                                const float *atlas, const __grid_constant__ CraftaxPixelLayout l,
                                                float *obs, float *final_obs, const uint8_t *done_flags,
                                                const int *bad_actions) {
    __shared__ CraftaxPixelView views[PIXEL_WARPS];
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    const int lane = (int)(threadIdx.x % LANES);
    if (i >= n) return;
    if (bad_actions && *bad_actions) return; /* kernel A left every state as it was */
    CraftaxPixelView *v = &views[threadIdx.x / LANES];
    if (done_flags[i]) {
        if (final_obs) pixels_render_warp(&states[i], atlas, l, final_obs, i, v, lane);
        return;
    }
    if (obs) pixels_render_warp(&states[i], atlas, l, obs, i, v, lane);
    craftax_autoreset_observe_part_lanes(&states[i], &params, NULL, lane, LANES);
}

/* The world sources of env_worldgen.cuh with the pixel env's reset: generate_world takes
 * reset_env's key itself (the symbolic sources split it once more). No obs in the world
 * kernels: the obs kernels above render the new worlds after them. */
struct PixelKeyedWorlds : KeyedWorlds {
    __device__ CraftaxKey world_key(CraftaxKey reset_key) const { return reset_key; }
};
struct PixelDoneListWorlds : DoneListWorlds {
    __device__ CraftaxKey world_key(CraftaxKey reset_key) const { return reset_key; }
};
struct PixelTakenWorlds : TakenWorlds {
    __device__ CraftaxKey world_key(CraftaxKey reset_key) const { return reset_key; }
};

/* ---- host side ------------------------------------------------------------------------- */
static int launch_pixels_observe(const CraftaxState *states, int64_t n, const float *atlas, float *out,
                                 const uint8_t *done, int which, const int *bad, cudaStream_t s, const char *what) {
    if (!out || n <= 0) return 0;
    pixels_observe_kernel<<<grid_for_warps(n), THREADS, 0, s>>>(states, n, atlas, pixel_layout(), out, done, which,
                                                                 bad);
    CUDA_TRY(cudaGetLastError(), what);
    return 0;
}

/* Loads the pixel kernels (craftax_cuda_init's warm-up: their local memory is reserved before
 * free memory is measured). */
static int pixels_warm_up(void) {
    CraftaxParams params;
    memset(&params, 0, sizeof(params));
    params.day_length = 1;
    pixels_observe_kernel<<<1, THREADS>>>(NULL, 0, NULL, pixel_layout(), NULL, NULL, PIXELS_EVERY_ENV, NULL);
    pixels_autoreset_observe_kernel<<<1, THREADS>>>(NULL, 0, params, NULL, pixel_layout(), NULL, NULL, NULL, NULL);
    const PixelKeyedWorlds keyed = {{NULL, NULL, 0, NULL, NULL}};
    world_floors_kernel<PixelKeyedWorlds><<<1, RESET_THREADS>>>(keyed, params, NULL, 0, 1);
    world_rest_kernel<PixelKeyedWorlds><<<1, RESET_THREADS>>>(keyed, params, 1);
    const PixelTakenWorlds taken = {{NULL, NULL, NULL, 0, NULL}};
    world_floors_kernel<PixelTakenWorlds><<<1, RESET_THREADS>>>(taken, params, NULL, 0, 1);
    world_rest_kernel<PixelTakenWorlds><<<1, RESET_THREADS>>>(taken, params, 1);
    CUDA_TRY(cudaGetLastError(), "pixel kernels warm-up");
    return 0;
}

/* The auto-reset step of the pixel env with one wait at the end (step_autoreset_sync's
 * bookkeeping, action check and done list, on the legacy stream). */
static int pixels_step_autoreset_sync(CraftaxState *states, const int32_t *actions, uint32_t *keys, int64_t n,
                                      const CraftaxParams *params, float *obs, float *final_obs, float *rewards,
                                      uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                      uint8_t *final_achievements, void *scratch, const CraftaxKey &split_from,
                                      const EpisodeTrack &track, const float *atlas) {
    std::lock_guard<std::mutex> lock(g_autoreset_mutex);
    int rc = ensure_autoreset_locked(n);
    if (rc) return rc;
    std::lock_guard<std::mutex> check_lock(g_check_mutex);
    if (!g_bad_action) CUDA_TRY(cudaMalloc(&g_bad_action, sizeof(int)), "cudaMalloc(action check)");
    CUDA_TRY(cudaMemsetAsync(g_bad_action, 0, sizeof(int), 0), "cudaMemsetAsync(action check)");
    int *bad = g_bad_action;
    int32_t *done_list = g_done_list, *count = g_done_list + g_done_list_envs;
    uint8_t *done_flags = g_done_flags;
    const cudaStream_t s = 0;
    key_split_kernel<<<grid_for(n), THREADS, 0, s>>>(split_from, n, keys);
    check_actions_kernel<<<grid_for(n), THREADS, 0, s>>>(actions, n, bad);
    CUDA_TRY(cudaGetLastError(), "pixels step (keys, action check)");
    CUDA_TRY(cudaMemsetAsync(count, 0, sizeof(int32_t), s), "cudaMemsetAsync(done count)");
    CraftaxCudaScratch *scr = (CraftaxCudaScratch *)scratch;
    const int64_t entries = craftax_cuda_scratch_entries(n);
    rc = launch_pending_floors(states, actions, n, *params, scr, entries, s, "pixels step (floors)");
    if (rc) return rc;
    const AchievementRows rows = step_rows(final_achievements, track);
    if (step_lanes_for(n) == LANES)
        autoreset_step_kernel<LANES><<<grid_for_warps(n), THREADS, 0, s>>>(
            states, actions, keys, 0, n, *params, rewards, dones, terminated, truncated, rows, done_list, count,
            done_flags, bad);
    else
        autoreset_step_kernel<1><<<grid_for(n), THREADS, 0, s>>>(states, actions, keys, 0, n, *params, rewards, dones,
                                                                 terminated, truncated, rows, done_list, count,
                                                                 done_flags, bad);
    CUDA_TRY(cudaGetLastError(), "pixels step (step part)");
    pixels_autoreset_observe_kernel<<<grid_for_warps(n), THREADS, 0, s>>>(states, n, *params, atlas, pixel_layout(),
                                                                          obs, final_obs, done_flags, bad);
    CUDA_TRY(cudaGetLastError(), "pixels step (obs part)");
    const PixelDoneListWorlds src = {{states, keys, done_list, 0, count, NULL, NULL}};
    rc = launch_worlds(src, n, *params, scr, entries, s, "pixels step (reset part)");
    if (rc) return rc;
    rc = launch_pixels_observe(states, n, atlas, obs, done_flags, PIXELS_DONE_ENVS, bad, s, "pixels step (reset obs)");
    if (rc) return rc;
    track_episodes_kernel<<<grid_for(n), THREADS, 0, s>>>(rewards, dones, NULL, n, track.ret_acc, track.len_acc,
                                                          track.ep_return, track.ep_length, track.discount, NULL, bad);
    CUDA_TRY(cudaGetLastError(), "pixels step (episodes)");
    rc = finish_launch("pixels step");
    if (rc) return rc;
    return action_check_verdict();
}

/* The optimistic step of the pixel env with one wait at the end (launch_optimistic's kernels
 * with the pixel obs and the pixel env's worlds). */
static int pixels_step_optimistic_sync(CraftaxState *st, const int32_t *actions, const uint32_t *key, int64_t n,
                                       int32_t reset_ratio, const CraftaxParams *params, float *obs,
                                       float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                                       uint8_t *truncated, uint8_t *final_achievements, void *scratch, void *work,
                                       const EpisodeTrack &track, const float *atlas) {
    std::lock_guard<std::mutex> check_lock(g_check_mutex);
    int rc = start_action_check(actions, n);
    if (rc) return rc;
    const int *bad = g_bad_action;
    const cudaStream_t s = 0;
    uint32_t *device_key = (uint32_t *)work;
    const CraftaxKey k = {{key[0], key[1]}};
    store_key_kernel<<<1, 1, 0, s>>>(k, device_key);
    CUDA_TRY(cudaGetLastError(), "pixels step_optimistic (key)");
    CraftaxCudaScratch *scr = (CraftaxCudaScratch *)scratch;
    const int64_t entries = craftax_cuda_scratch_entries(n);
    const int32_t num_worlds = (int32_t)(n / reset_ratio);
    uint64_t *order = (uint64_t *)((char *)work + OPT_KEY_BYTES);
    uint64_t *sorted = order + n;
    void *sort_temp = sorted + n;
    size_t sort_bytes = optimistic_sort_bytes(n);
    rc = launch_pending_floors(st, actions, n, *params, scr, entries, s, "pixels step_optimistic (floors)");
    if (rc) return rc;
    const AchievementRows rows = step_rows(final_achievements, track);
    if (step_lanes_for(n) == LANES)
        optimistic_step_kernel<LANES><<<grid_for_warps(n), THREADS, 0, s>>>(
            st, actions, device_key, n, *params, rewards, dones, terminated, truncated, rows, order, bad);
    else
        optimistic_step_kernel<1><<<grid_for(n), THREADS, 0, s>>>(st, actions, device_key, n, *params, rewards, dones,
                                                                  terminated, truncated, rows, order, bad);
    CUDA_TRY(cudaGetLastError(), "pixels step_optimistic (step)");
    /* the step kernel writes every env's dones: the terminal obs before the worlds replace them */
    rc = launch_pixels_observe(st, n, atlas, final_obs, dones, PIXELS_DONE_ENVS, bad, s,
                               "pixels step_optimistic (final obs)");
    if (rc) return rc;
    CUDA_TRY(cub::DeviceRadixSort::SortKeys(sort_temp, sort_bytes, order, sorted, (int)n, 0, 56, s),
             "pixels step_optimistic (order)");
    const PixelTakenWorlds src = {{st, sorted, device_key, num_worlds, bad}};
    rc = launch_worlds(src, num_worlds, *params, scr, entries, s, "pixels step_optimistic (resets)");
    if (rc) return rc;
    for (int pass = 0; pass < 2; pass++) {
        optimistic_take_kernel<<<grid_for_warps(n), THREADS, 0, s>>>(st, sorted, n, num_worlds, reset_ratio, NULL,
                                                                     pass, NULL, bad);
        CUDA_TRY(cudaGetLastError(), "pixels step_optimistic (take)");
    }
    rc = launch_pixels_observe(st, n, atlas, obs, NULL, PIXELS_EVERY_ENV, bad, s, "pixels step_optimistic (obs)");
    if (rc) return rc;
    return finish_step_call(n, rewards, dones, track, "pixels step_optimistic");
}

extern "C" {

int craftax_cuda_pixels_obs_size(void) { return (int)pixel_obs_floats(); }

int64_t craftax_cuda_pixels_atlas_size(void) { return (int64_t)pixel_layout().size; }

int craftax_cuda_pixels_observe(const void *states, int64_t num_envs, float *obs, const float *atlas) {
    if (!states || !obs || !atlas) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_envs == 0) return 0;
    const int rc = launch_pixels_observe((const CraftaxState *)states, num_envs, atlas, obs, NULL, PIXELS_EVERY_ENV,
                                         NULL, 0, "pixels observe");
    if (rc) return rc;
    return finish_launch("pixels observe");
}

int craftax_cuda_pixels_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs,
                                        const CraftaxParams *params, float *obs, const float *atlas, void *scratch) {
    if (!states || !keys || !params || !scratch || (obs && !atlas)) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    const PixelKeyedWorlds src = {{(CraftaxState *)states, keys, num_envs, NULL, NULL}};
    int rc = launch_worlds(src, num_envs, *params, (CraftaxCudaScratch *)scratch, craftax_cuda_scratch_entries(num_envs),
                           0, "pixels reset");
    if (rc) return rc;
    rc = launch_pixels_observe((const CraftaxState *)states, num_envs, atlas, obs, NULL, PIXELS_EVERY_ENV, NULL, 0,
                               "pixels reset (obs)");
    if (rc) return rc;
    return finish_launch("pixels reset");
}

int craftax_cuda_pixels_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                       const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones,
                                       const float *atlas, void *scratch) {
    if (!states || !actions || !keys || !params || !scratch || (obs && !atlas)) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    /* the symbolic step without its obs, waited for; the pixel obs of the stepped states */
    int rc = craftax_cuda_step_with_keys_ex(states, actions, keys, num_envs, params, NULL, NULL, rewards, dones,
                                            scratch);
    if (rc) return rc;
    rc = launch_pixels_observe((const CraftaxState *)states, num_envs, atlas, obs, NULL, PIXELS_EVERY_ENV, NULL, 0,
                               "pixels step_with_keys (obs)");
    if (rc) return rc;
    return finish_launch("pixels step_with_keys");
}

int craftax_cuda_pixels_env_step(void *states, const int32_t *actions, const uint32_t *key, uint32_t *keys,
                                 int64_t num_envs, const CraftaxParams *params, float *obs, float *final_obs,
                                 float *rewards, uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                 uint8_t *final_achievements, float *ret_acc, int32_t *len_acc, float *ep_return,
                                 int32_t *ep_length, float *discount, float *achievements_scaled, const float *atlas,
                                 void *scratch) {
    if ((obs || final_obs) && !atlas) return CRAFTAX_ERR_NULL;
    const int rc = check_env_step(states, actions, key, keys, params, scratch, rewards, dones, ret_acc, len_acc,
                                  final_achievements, achievements_scaled, num_envs);
    if (rc || num_envs == 0) return rc;
    const CraftaxKey k = {{key[0], key[1]}};
    const EpisodeTrack track = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    return pixels_step_autoreset_sync((CraftaxState *)states, actions, keys, num_envs, params, obs, final_obs, rewards,
                                      dones, terminated, truncated, final_achievements, scratch, k, track, atlas);
}

int craftax_cuda_pixels_env_step_optimistic(void *states, const int32_t *actions, const uint32_t *key,
                                            int64_t num_envs, int32_t reset_ratio, const CraftaxParams *params,
                                            float *obs, float *final_obs, float *rewards, uint8_t *dones,
                                            uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                                            float *ret_acc, int32_t *len_acc, float *ep_return, int32_t *ep_length,
                                            float *discount, float *achievements_scaled, const float *atlas,
                                            void *scratch, void *work) {
    if (!states || !actions || !key || !params || !dones || !rewards || !scratch || !work || !ret_acc || !len_acc)
        return CRAFTAX_ERR_NULL;
    if ((obs || final_obs) && !atlas) return CRAFTAX_ERR_NULL;
    if (achievements_scaled && !final_achievements) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > INT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (reset_ratio < 1 || num_envs % reset_ratio != 0 || params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    const EpisodeTrack track = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    return pixels_step_optimistic_sync((CraftaxState *)states, actions, key, num_envs, reset_ratio, params, obs,
                                       final_obs, rewards, dones, terminated, truncated, final_achievements, scratch,
                                       work, track, atlas);
}

}  // extern "C"

#endif
