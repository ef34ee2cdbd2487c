/* cuda/classic_pixels.cuh: Craftax-Classic-Pixels-v1 on the GPU (craftax_classic_cuda_pixels_*
 * of craftax_classic_cuda.h, part of cuda/classic_cuda.cu, included after its calls): Classic's
 * states, steps and worlds of the symbolic env observed through
 * reference_c/include/craftax_classic/pixels.h (the C pixel env's renderer) over the caller's
 * device copy of the texture atlas. A warp renders one env (craftax_classic_render_pixels_lanes:
 * lane 0 gathers the view into the warp's shared CraftaxClassicPixelView, the lanes share the
 * 63 x 63 pixels and write them, times 1/255, into the env's obs row).
 *
 * As the C pixel env (reference_c/src/env_variants.h): Classic's pixel env resets as its
 * symbolic env does (the key itself), so the worlds are the symbolic env's; the auto-reset step
 * renders a not-done env's obs before its auto-reset light level and a done env's terminal obs
 * before its reset, and the reset worlds' obs after them; the optimistic step renders the
 * terminal obs between the step and the worlds, every env's obs at the end. */
#ifndef CRAFTAX_CLASSIC_CUDA_PIXELS_CUH
#define CRAFTAX_CLASSIC_CUDA_PIXELS_CUH

#include "craftax_classic/pixels.h"

#define CLASSIC_PIXEL_WARPS (CLASSIC_THREADS / CLASSIC_WARP)

/* The atlas layout at the agent's block size (7 pixels a cell), as the C API computes it. */
static CraftaxPixelLayout classic_pixel_layout(void) {
    CraftaxPixelLayout l;
    craftax_classic_pixels_layout(&l, CRAFTAX_CLASSIC_PIXEL_AGENT_BLOCK);
    return l;
}

/* Which envs an obs kernel renders. */
enum { CLASSIC_PIXELS_EVERY_ENV = 0, CLASSIC_PIXELS_DONE_ENVS = 1 };

static __device__ __forceinline__ void classic_pixels_render_warp(const CraftaxClassicState *s, const float *atlas,
                                                                  const CraftaxPixelLayout &l, float *out, int64_t i,
                                                                  CraftaxClassicPixelView *v, int lane) {
    const int64_t floats = (int64_t)l.height * l.width * 3;
    craftax_classic_render_pixels_lanes(s, atlas, &l, v, out + i * floats, 1, lane, CLASSIC_WARP); /* ends synced */
}

/* The obs of every env, or of the envs whose done flag is set; nothing while bad_actions (may be
 * NULL) is set. */
__global__ void classic_pixels_observe_kernel(const CraftaxClassicState *states, int64_t n, const float *atlas,
                                              const __grid_constant__ CraftaxPixelLayout l, float *out,
                                              const uint8_t *done, int which, const int *bad_actions) {
    __shared__ CraftaxClassicPixelView views[CLASSIC_PIXEL_WARPS];
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / CLASSIC_WARP;
    const int lane = (int)(threadIdx.x % CLASSIC_WARP);
    if (i >= n) return; /* whole warps */
    if (bad_actions && *bad_actions) return;
    if (which == CLASSIC_PIXELS_DONE_ENVS && !done[i]) return;
    classic_pixels_render_warp(&states[i], atlas, l, out, i, &views[threadIdx.x / CLASSIC_WARP], lane);
}

/* The auto-reset step's step part without obs (classic_autoreset_step_kernel up to the obs): the
 * outputs, and the done envs appended to done_list; their light level is left to
 * classic_pixels_autoreset_observe_kernel, which renders first. */
__global__ void __launch_bounds__(CLASSIC_THREADS)
    classic_pixels_autoreset_step_kernel(CraftaxClassicState *states, const int32_t *actions, const uint32_t *keys,
                                         int64_t n, const __grid_constant__ CraftaxClassicParams params,
                                         ClassicStepOut out, int32_t *done_list, int32_t *done_count,
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
    if (done) done_list[atomicAdd(done_count, 1)] = (int32_t)i;
}

/* After it, a warp per env: a done env's terminal obs into final_obs (when asked for); a
 * not-done env's obs (when asked for), then its auto-reset light level. */
__global__ void classic_pixels_autoreset_observe_kernel(CraftaxClassicState *states, int64_t n,
                                                        const CraftaxClassicParams params, const float *atlas,
                                                        const __grid_constant__ CraftaxPixelLayout l, float *obs,
                                                        float *final_obs, const uint8_t *dones,
                                                        const int *bad_actions) {
    __shared__ CraftaxClassicPixelView views[CLASSIC_PIXEL_WARPS];
    const int64_t i = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / CLASSIC_WARP;
    const int lane = (int)(threadIdx.x % CLASSIC_WARP);
    if (i >= n) return;
    if (bad_actions && *bad_actions) return;
    CraftaxClassicPixelView *v = &views[threadIdx.x / CLASSIC_WARP];
    CraftaxClassicState *s = &states[i];
    if (dones[i]) {
        if (final_obs) classic_pixels_render_warp(s, atlas, l, final_obs, i, v, lane);
        return;
    }
    if (obs) classic_pixels_render_warp(s, atlas, l, obs, i, v, lane);
    if (lane == 0) s->light_level = craftax_light_level_autoreset(s->timestep, params.day_length);
}

/* ---- host side ------------------------------------------------------------------------- */
static int launch_classic_pixels_observe(const CraftaxClassicState *states, int64_t n, const float *atlas,
                                         float *out, const uint8_t *done, int which, const int *bad, cudaStream_t s,
                                         const char *what) {
    if (!out || n <= 0) return 0;
    classic_pixels_observe_kernel<<<classic_grid_warps(n), CLASSIC_THREADS, 0, s>>>(
        states, n, atlas, classic_pixel_layout(), out, done, which, bad);
    CLASSIC_TRY(cudaGetLastError(), what);
    return 0;
}

/* The pixel env's auto-reset step on stream s (launch_autoreset with the pixel obs); `dones`
 * is required: the obs kernels read the done flags from it. */
static int launch_classic_pixels_autoreset(CraftaxClassicState *states, const int32_t *actions, const uint32_t *keys,
                                           int64_t n, const CraftaxClassicParams &params, float *obs,
                                           float *final_obs, const ClassicStepOut &out, int32_t *done_list,
                                           Temporaries &temp, const int *bad, const float *atlas, cudaStream_t s) {
    int32_t *count = done_list + n;
    CLASSIC_TRY(cudaMemsetAsync(count, 0, sizeof(int32_t), s), "cudaMemsetAsync(done count)");
    classic_pixels_autoreset_step_kernel<<<classic_grid(n), CLASSIC_THREADS, 0, s>>>(states, actions, keys, n, params,
                                                                                     out, done_list, count, bad);
    CLASSIC_TRY(cudaGetLastError(), "pixels step_autoreset (step)");
    classic_pixels_autoreset_observe_kernel<<<classic_grid_warps(n), CLASSIC_THREADS, 0, s>>>(
        states, n, params, atlas, classic_pixel_layout(), obs, final_obs, out.dones, bad);
    CLASSIC_TRY(cudaGetLastError(), "pixels step_autoreset (obs)");
    ClassicWorldJobs jobs;
    memset(&jobs, 0, sizeof(jobs));
    jobs.source = WORLDS_FROM_DONE_LIST;
    jobs.states = states;
    jobs.keys = keys;
    jobs.list = done_list;
    jobs.count = count;
    jobs.bad_actions = bad;
    const int rc = launch_worlds(jobs, n, params, temp, s, "pixels step_autoreset (resets)");
    if (rc) return rc;
    return launch_classic_pixels_observe(states, n, atlas, obs, out.dones, CLASSIC_PIXELS_DONE_ENVS, bad, s,
                                         "pixels step_autoreset (reset obs)");
}

/* The pixel env's optimistic step on stream s (launch_optimistic with the pixel obs); out.dones
 * is required. */
static int launch_classic_pixels_optimistic(CraftaxClassicState *states, const int32_t *actions, const uint32_t *key,
                                            int64_t n, int32_t reset_ratio, const CraftaxClassicParams &params,
                                            float *obs, float *final_obs, const ClassicStepOut &out, void *work,
                                            Temporaries &temp, const int *bad, const float *atlas, cudaStream_t s) {
    const int32_t num_worlds = (int32_t)(n / reset_ratio);
    uint64_t *order = (uint64_t *)((char *)work + CLASSIC_OPT_KEY_BYTES);
    uint64_t *sorted = order + n;
    void *sort_temp = sorted + n;
    size_t sort_bytes = optimistic_sort_bytes(n);
    classic_optimistic_step_kernel<<<classic_grid(n), CLASSIC_THREADS, 0, s>>>(states, actions, key, n, params, NULL,
                                                                                out, order, bad);
    CLASSIC_TRY(cudaGetLastError(), "pixels step_optimistic (step)");
    int rc = launch_classic_pixels_observe(states, n, atlas, final_obs, out.dones, CLASSIC_PIXELS_DONE_ENVS, bad, s,
                                           "pixels step_optimistic (final obs)");
    if (rc) return rc;
    CLASSIC_TRY(cub::DeviceRadixSort::SortKeys(sort_temp, sort_bytes, order, sorted, (int)n, 0, 56, s),
                "pixels step_optimistic (order)");
    ClassicWorldJobs jobs;
    memset(&jobs, 0, sizeof(jobs));
    jobs.source = WORLDS_FROM_TAKEN;
    jobs.states = states;
    jobs.keys = key;
    jobs.num_jobs = num_worlds;
    jobs.sorted = sorted;
    jobs.bad_actions = bad;
    rc = launch_worlds(jobs, num_worlds, params, temp, s, "pixels step_optimistic (resets)");
    if (rc) return rc;
    for (int pass = 0; pass < 2; pass++) {
        classic_take_kernel<<<classic_grid_warps(n), CLASSIC_THREADS, 0, s>>>(states, sorted, n, num_worlds,
                                                                               reset_ratio, NULL, pass, NULL, bad);
        CLASSIC_TRY(cudaGetLastError(), "pixels step_optimistic (take)");
    }
    return launch_classic_pixels_observe(states, n, atlas, obs, NULL, CLASSIC_PIXELS_EVERY_ENV, bad, s,
                                         "pixels step_optimistic (obs)");
}

extern "C" {

int craftax_classic_cuda_pixels_obs_size(void) {
    const CraftaxPixelLayout l = classic_pixel_layout();
    return l.height * l.width * 3;
}

int64_t craftax_classic_cuda_pixels_atlas_size(void) { return (int64_t)classic_pixel_layout().size; }

int craftax_classic_cuda_pixels_observe(const void *states, int64_t num_envs, float *obs, const float *atlas) {
    if (!states || !obs || !atlas) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_envs == 0) return 0;
    const int rc = launch_classic_pixels_observe((const CraftaxClassicState *)states, num_envs, atlas, obs, NULL,
                                                 CLASSIC_PIXELS_EVERY_ENV, NULL, 0, "pixels observe");
    if (rc) return rc;
    return finish_call(NULL, "pixels observe");
}

int craftax_classic_cuda_pixels_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs,
                                                const CraftaxClassicParams *params, float *obs, const float *atlas) {
    if (!states || !keys || !params || (obs && !atlas)) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (check_params(params)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    Temporaries temp(0);
    ClassicWorldJobs jobs;
    memset(&jobs, 0, sizeof(jobs));
    jobs.source = WORLDS_FROM_KEYS;
    jobs.states = (CraftaxClassicState *)states;
    jobs.keys = keys;
    jobs.num_jobs = num_envs;
    int rc = launch_worlds(jobs, num_envs, *params, temp, 0, "pixels reset");
    if (rc) return rc;
    rc = launch_classic_pixels_observe((const CraftaxClassicState *)states, num_envs, atlas, obs, NULL,
                                       CLASSIC_PIXELS_EVERY_ENV, NULL, 0, "pixels reset (obs)");
    if (rc) return rc;
    return finish_call(NULL, "pixels reset");
}

int craftax_classic_cuda_pixels_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys,
                                               int64_t num_envs, const CraftaxClassicParams *params, float *obs,
                                               float *rewards, uint8_t *dones, const float *atlas) {
    if (!states || !actions || !keys || !params || (obs && !atlas)) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (check_params(params)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    Temporaries temp(0);
    int *flag = NULL;
    int rc = start_action_check(actions, num_envs, temp, &flag);
    if (rc) return rc;
    classic_step_kernel<<<classic_grid(num_envs), CLASSIC_THREADS>>>((CraftaxClassicState *)states, actions, keys,
                                                                     num_envs, *params, rewards, dones, flag);
    CLASSIC_TRY(cudaGetLastError(), "pixels step_with_keys");
    rc = launch_classic_pixels_observe((const CraftaxClassicState *)states, num_envs, atlas, obs, NULL,
                                       CLASSIC_PIXELS_EVERY_ENV, flag, 0, "pixels step_with_keys (obs)");
    if (rc) return rc;
    return finish_call(flag, "pixels step_with_keys");
}

int craftax_classic_cuda_pixels_env_step(void *states, const int32_t *actions, const uint32_t *key, uint32_t *keys,
                                         int64_t num_envs, const CraftaxClassicParams *params, float *obs,
                                         float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                                         uint8_t *truncated, uint8_t *final_achievements, float *ret_acc,
                                         int32_t *len_acc, float *ep_return, int32_t *ep_length, float *discount,
                                         float *achievements_scaled, const float *atlas) {
    if ((obs || final_obs) && !atlas) return CRAFTAX_ERR_NULL;
    int rc = check_env_step(states, actions, key, keys, params, NULL, rewards, dones, ret_acc, len_acc,
                            final_achievements, achievements_scaled, num_envs);
    if (rc || num_envs == 0) return rc;
    Temporaries temp(0);
    int *flag = NULL;
    rc = start_action_check(actions, num_envs, temp, &flag);
    if (rc) return rc;
    int32_t *done_list = NULL;
    rc = temp.take((void **)&done_list, (size_t)(num_envs + 1) * sizeof(int32_t), "done list");
    if (rc) return rc;
    const CraftaxKey k = {{key[0], key[1]}};
    classic_key_split_kernel<<<classic_grid(num_envs), CLASSIC_THREADS>>>(k, num_envs, keys);
    CLASSIC_TRY(cudaGetLastError(), "key split");
    const ClassicStepOut out = step_out(rewards, dones, terminated, truncated, final_achievements);
    rc = launch_classic_pixels_autoreset((CraftaxClassicState *)states, actions, keys, num_envs, *params, obs,
                                         final_obs, out, done_list, temp, flag, atlas, 0);
    if (rc) return rc;
    const ClassicEpisodes ep = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    rc = launch_track(rewards, dones, final_achievements, num_envs, ep, flag, 0);
    if (rc) return rc;
    return finish_call(flag, "pixels env_step");
}

int craftax_classic_cuda_pixels_env_step_optimistic(void *states, const int32_t *actions, const uint32_t *key,
                                                    int64_t num_envs, int32_t reset_ratio,
                                                    const CraftaxClassicParams *params, float *obs, float *final_obs,
                                                    float *rewards, uint8_t *dones, uint8_t *terminated,
                                                    uint8_t *truncated, uint8_t *final_achievements, float *ret_acc,
                                                    int32_t *len_acc, float *ep_return, int32_t *ep_length,
                                                    float *discount, float *achievements_scaled, const float *atlas,
                                                    void *work) {
    if (!states || !actions || !key || !params || !rewards || !dones || !work || !ret_acc || !len_acc)
        return CRAFTAX_ERR_NULL;
    if ((obs || final_obs) && !atlas) return CRAFTAX_ERR_NULL;
    if (achievements_scaled && !final_achievements) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > INT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (reset_ratio < 1 || num_envs % reset_ratio != 0) {
        classic_set_error("reset_ratio: must be >= 1 and divide num_envs (got %d for %lld envs)", reset_ratio,
                          (long long)num_envs);
        return CRAFTAX_ERR_ARGUMENT;
    }
    if (check_params(params)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    Temporaries temp(0);
    int *flag = NULL;
    int rc = start_action_check(actions, num_envs, temp, &flag);
    if (rc) return rc;
    uint32_t *device_key = (uint32_t *)work;
    const CraftaxKey k = {{key[0], key[1]}};
    classic_store_key_kernel<<<1, 1>>>(k, device_key);
    CLASSIC_TRY(cudaGetLastError(), "pixels step_optimistic (key)");
    rc = launch_classic_pixels_optimistic((CraftaxClassicState *)states, actions, device_key, num_envs, reset_ratio,
                                          *params, obs, final_obs,
                                          step_out(rewards, dones, terminated, truncated, final_achievements), work,
                                          temp, flag, atlas, 0);
    if (rc) return rc;
    const ClassicEpisodes ep = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    rc = launch_track(rewards, dones, final_achievements, num_envs, ep, flag, 0);
    if (rc) return rc;
    return finish_call(flag, "pixels env_step_optimistic");
}

}  // extern "C"

#endif
