/* craftax_cuda.cu: the CUDA env library (cuda/build/libcraftax_cuda.so with Classic's env and
 * the fast recipe's kernels): Craftax stepped and reset on one GPU over the very same rules headers as
 * the C reference (reference_c/include/craftax/*.h, compiled here as __host__ __device__).
 *
 * This file is the library's one translation unit and its extern "C" API (cuda/craftax_cuda.h);
 * the kernels and their launchers are in the parts it includes, by subsystem:
 *   env_common.cuh    launch shapes, errors, world-generation scratch, key kernels
 *   env_obs.cuh       obs rendering (a warp per env)
 *   env_step.cuh      the step kernels, the action check, episode bookkeeping
 *   env_worldgen.cuh  world generation (a warp per floor) and lazy floors
 *   env_reset.cuh     auto-reset and optimistic-reset scheduling (done list, streams, pools)
 *   env_pixels.cuh    Craftax-Pixels-v1: the pixel obs (craftax/pixels.h) over these steps
 *                     and worlds (included last: its calls use this file's)
 * One translation unit, not separate objects, because the parts share static device helpers
 * and host state, and the kernels compile to the same code as when they were one file
 * (cuda/dev/compare_sass.sh).
 *
 * States live in global memory as the C reference's CraftaxState structs (array of structs,
 * craftax_state_size() bytes each, so get/set_state and the leaf table are shared with C).
 * Step kernels run a thread per env, or a warp per env for small batches (step_lanes_for);
 * world generation and obs a warp per env or floor. cuda/README.md describes the kernels,
 * streams and buffers; cuda/Makefile builds the library and says why each flag is there.
 */
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>

#include <mutex>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "craftax/obs.h"
#include "craftax/step.h"
#include "craftax/worldgen.h"
#include "craftax_cuda.h"

#include "env_common.cuh"
#include "env_obs.cuh"
#include "env_step.cuh"
#include "env_worldgen.cuh"
#include "env_reset.cuh"

static int pixels_warm_up(void); /* env_pixels.cuh */

extern "C" {

/* ---- sizes and errors ---------------------------------------------------------------------- */
int craftax_cuda_api_version(void) { return CRAFTAX_CUDA_API_VERSION; }

size_t craftax_cuda_state_size(void) { return sizeof(CraftaxState); }

size_t craftax_cuda_scratch_size(void) { return sizeof(CraftaxCudaScratch); }

int64_t craftax_cuda_scratch_entries(int64_t num_envs) {
    if (num_envs <= 0) return 0;
    const int64_t most = world_warps_hardware();
    return num_envs < most ? num_envs : most;
}

size_t craftax_cuda_params_size(void) { return sizeof(CraftaxParams); }

int craftax_cuda_obs_size(void) { return CRAFTAX_OBS_SIZE; }

const char *craftax_cuda_last_error(void) { return g_last_error; }

/* ---- device and memory --------------------------------------------------------------------- */
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
    const int rc = pixels_warm_up();
    if (rc) return rc;
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

void craftax_cuda_release_scratch(void) {
    std::lock_guard<std::mutex> lock(g_autoreset_mutex);
    if (g_done_list) cudaFree(g_done_list); /* compute-sanitizer's leak check finds it kept */
    g_done_list = NULL;
    g_done_flags = NULL;
    g_done_list_envs = 0;
    std::lock_guard<std::mutex> check_lock(g_check_mutex);
    if (g_bad_action) cudaFree(g_bad_action);
    g_bad_action = NULL;
}

/* ---- reset, obs, lazy floors --------------------------------------------------------------- */
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

int craftax_cuda_observe_ex(const void *states, int64_t num_envs, float *obs, uint8_t *obs_compact) {
    if (!states || (!obs && !obs_compact)) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_envs == 0) return 0;
    observe_kernel<<<grid_for_warps(num_envs), THREADS>>>((const CraftaxState *)states, num_envs, obs, obs_compact,
                                                          NULL);
    return finish_launch("observe");
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

/* A thread per float of achievements_scaled, coalesced: the [N, K] block is the larger output. */
__global__ void done_info_kernel(const uint8_t *states, int64_t state_size, int64_t achievements_offset,
                                 int32_t num_achievements, const uint8_t *dones, int64_t num_envs,
                                 float *achievements_scaled, float *discount) {
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < num_envs * num_achievements) {
        const int64_t i = t / num_achievements;
        const uint8_t got = states[i * state_size + achievements_offset + (t - i * num_achievements)];
        achievements_scaled[t] = (float)(got != 0) * (float)(dones[i] != 0) * 100.0f;
    }
    if (t < num_envs) discount[t] = 1.0f - (float)(dones[t] != 0);
}

int craftax_cuda_done_info(const void *states, int64_t state_size, int64_t achievements_offset,
                           int32_t num_achievements, const uint8_t *dones, int64_t num_envs,
                           float *achievements_scaled, float *discount) {
    if (!states || !dones || !achievements_scaled || !discount) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_achievements < 1 || state_size < 1 || achievements_offset < 0 ||
        achievements_offset + num_achievements > state_size) {
        snprintf(g_last_error, sizeof(g_last_error),
                 "done_info: achievements [%lld, +%d) must lie inside a state of %lld bytes",
                 (long long)achievements_offset, num_achievements, (long long)state_size);
        return CRAFTAX_ERR_ARGUMENT;
    }
    if (num_envs == 0) return 0;
    const int64_t threads = num_envs * (num_achievements > 1 ? num_achievements : 1);
    done_info_kernel<<<grid_for(threads), THREADS>>>((const uint8_t *)states, state_size, achievements_offset,
                                                     num_achievements, dones, num_envs, achievements_scaled,
                                                     discount);
    return finish_launch("done_info");
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

/* ---- step without reset -------------------------------------------------------------------- */
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

/* ---- auto-reset step ----------------------------------------------------------------------- */
int craftax_cuda_set_autoreset_chunks(int chunks, int64_t min_chunk_envs) {
    if (chunks < 1 || chunks > MAX_CHUNKS || min_chunk_envs < 1) return CRAFTAX_ERR_ARGUMENT;
    std::lock_guard<std::mutex> lock(g_autoreset_mutex);
    g_autoreset_chunks = chunks;
    g_min_chunk_envs = min_chunk_envs;
    return 0;
}

/* The argument checks craftax_cuda_env_step and its async form share. */
static int check_env_step(const void *states, const int32_t *actions, const uint32_t *key, const uint32_t *keys,
                          const CraftaxParams *params, const void *scratch, const float *rewards,
                          const uint8_t *dones, const float *ret_acc, const int32_t *len_acc,
                          const uint8_t *final_achievements, const float *achievements_scaled, int64_t num_envs) {
    if (!states || !actions || !key || !keys || !params || !scratch || !rewards || !dones || !ret_acc || !len_acc)
        return CRAFTAX_ERR_NULL;
    if (achievements_scaled && !final_achievements) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > (int64_t)UINT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    return 0;
}

int craftax_cuda_env_step(void *states, const int32_t *actions, const uint32_t *key, uint32_t *keys,
                          int64_t num_envs, const CraftaxParams *params, float *obs, uint8_t *obs_compact,
                          float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                          uint8_t *truncated, uint8_t *final_achievements, float *ret_acc, int32_t *len_acc,
                          float *ep_return, int32_t *ep_length, float *discount, float *achievements_scaled,
                          void *scratch) {
    const int rc = check_env_step(states, actions, key, keys, params, scratch, rewards, dones, ret_acc, len_acc,
                                  final_achievements, achievements_scaled, num_envs);
    if (rc || num_envs == 0) return rc;
    const CraftaxKey k = {{key[0], key[1]}};
    const EpisodeTrack track = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    return step_autoreset_sync((CraftaxState *)states, actions, keys, num_envs, params, obs, obs_compact, final_obs,
                               rewards, dones, terminated, truncated, final_achievements, scratch, k, track);
}

size_t craftax_cuda_step_async_work_size(int64_t num_envs) {
    if (num_envs < 0 || num_envs > (int64_t)UINT32_MAX) return 0;
    return step_async_work_size(num_envs);
}

int craftax_cuda_env_step_async(void *states, const int32_t *actions, const uint32_t *key, uint32_t *keys,
                                int64_t num_envs, const CraftaxParams *params, float *obs, uint8_t *obs_compact,
                                float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                                uint8_t *truncated, uint8_t *final_achievements, float *ret_acc, int32_t *len_acc,
                                float *ep_return, int32_t *ep_length, float *discount, float *achievements_scaled,
                                void *scratch, void *work, uintptr_t stream) {
    if (!work) return CRAFTAX_ERR_NULL;
    int rc = check_env_step(states, actions, key, keys, params, scratch, rewards, dones, ret_acc, len_acc,
                            final_achievements, achievements_scaled, num_envs);
    if (rc || num_envs == 0) return rc;
    const CraftaxKey k = {{key[0], key[1]}};
    const EpisodeTrack track = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    int *bad = (int *)work;
    int32_t *counts = (int32_t *)(bad + 1);
    int32_t *done_list = counts + MAX_CHUNKS;
    uint8_t *done_flags = (uint8_t *)(done_list + num_envs);
    std::lock_guard<std::mutex> lock(g_autoreset_mutex);
    rc = ensure_autoreset_locked(0);
    if (!rc) rc = ensure_reset_done_event_locked();
    if (rc) return rc;
    return enqueue_step_autoreset((CraftaxState *)states, actions, keys, num_envs, params, obs, obs_compact, final_obs,
                                  rewards, dones, terminated, truncated, final_achievements, scratch, k, track, counts,
                                  done_list, done_flags, bad, (cudaStream_t)stream, NULL);
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
    return launch_autoreset_chunk((CraftaxState *)states, actions, keys, 0, num_envs, *params, obs, NULL, NULL,
                                  rewards, dones,
                                  terminated, truncated, dense_rows(final_achievements), (CraftaxCudaScratch *)scratch,
                                  craftax_cuda_scratch_entries(num_envs), done_list, count, dones, s, s, NULL);
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

/* ---- optimistic resets --------------------------------------------------------------------- */
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
    /* A warp per world here, not per floor: a pool of worlds is generated while other work runs,
     * so throughput counts, not one world's latency (the floor layout measured slower there). */
    generate_worlds_kernel<<<grid_for_warps(n), THREADS, 0, (cudaStream_t)stream>>>(
        (CraftaxState *)worlds, keys, num_keys, num_worlds, *params, (CraftaxCudaScratch *)scratch, reset_floors());
    CUDA_TRY(cudaGetLastError(), "generate_worlds");
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
                             obs_compact, NULL, rewards, dones, terminated, truncated, dense_rows(final_achievements),
                             reset_worlds, scratch, work, (cudaStream_t)stream, NULL);
}

int craftax_cuda_env_step_optimistic(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                                     int32_t reset_ratio, const CraftaxParams *params, float *obs,
                                     uint8_t *obs_compact, float *final_obs, float *rewards, uint8_t *dones,
                                     uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                                     float *ret_acc, int32_t *len_acc, float *ep_return, int32_t *ep_length,
                                     float *discount, float *achievements_scaled, void *scratch, void *work) {
    if (!states || !actions || !key || !params || !dones || !rewards || !scratch || !work || !ret_acc || !len_acc)
        return CRAFTAX_ERR_NULL;
    if (achievements_scaled && !final_achievements) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > INT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (reset_ratio < 1 || num_envs % reset_ratio != 0 || params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    const EpisodeTrack track = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    return step_optimistic_sync(states, actions, key, num_envs, reset_ratio, params, obs, obs_compact, final_obs,
                                rewards, dones, terminated, truncated, final_achievements, scratch, work, track);
}

}  // extern "C"

/* The stream-ordered env calls of pycraftax.jax's FFI handlers. */
#include "env_stream.cuh"

/* Craftax-Pixels-v1. */
#include "env_pixels.cuh"
