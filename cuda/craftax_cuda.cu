/* craftax_cuda.cu: the batched Craftax env on one GPU, over the very same rules headers as
 * the C reference (reference_c/include/craftax/*.h, compiled here as __host__ __device__).
 *
 * First version, correct before fast: one thread per env; states live in global memory as
 * the C reference's CraftaxState structs (array of structs, craftax_state_size() bytes
 * each, so get/set_state and the leaf table are shared with C); world-generation scratch
 * is one CraftaxWorldGenScratch per env in global memory, touched only by envs that reset.
 * The auto-reset step regenerates the world only where the episode ended.
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

#include <mutex>
#include <stdio.h>
#include <string.h>

#include "craftax/obs.h"
#include "craftax/step.h"
#include "craftax/worldgen.h"
#include "craftax_cuda.h"

#define API_VERSION 1
#define THREADS 128

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
size_t craftax_cuda_scratch_size(void) { return sizeof(CraftaxWorldGenScratch); }
size_t craftax_cuda_params_size(void) { return sizeof(CraftaxParams); }
int craftax_cuda_obs_size(void) { return CRAFTAX_OBS_SIZE; }
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

__global__ void reset_kernel(CraftaxState *states, const uint32_t *keys, int64_t num_envs, const CraftaxParams params,
                             float *obs, CraftaxWorldGenScratch *scratch) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_envs) return;
    const CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
    craftax_reset_env(key, &params, &states[i], &scratch[i]);
    if (obs) craftax_render_symbolic(&states[i], obs + i * CRAFTAX_OBS_SIZE, 1);
}

__global__ void observe_kernel(const CraftaxState *states, int64_t num_envs, float *obs) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_envs) return;
    craftax_render_symbolic(&states[i], obs + i * CRAFTAX_OBS_SIZE, 0);
}

/* Sets *bad to 1 when any action is outside [0, CRAFTAX_NUM_ACTIONS). */
__global__ void check_actions_kernel(const int32_t *actions, int64_t num_envs, int *bad) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_envs) return;
    if (actions[i] < 0 || actions[i] >= CRAFTAX_NUM_ACTIONS) *bad = 1;
}

__global__ void step_kernel(CraftaxState *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                            const CraftaxParams params, float *obs, float *rewards, uint8_t *dones) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_envs) return;
    const CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
    uint8_t done;
    const float r = craftax_step_env(&states[i], key, actions[i], &params, obs ? obs + i * CRAFTAX_OBS_SIZE : NULL,
                                     &done);
    if (rewards) rewards[i] = r;
    if (dones) dones[i] = done;
}

__global__ void step_autoreset_kernel(CraftaxState *states, const int32_t *actions, const uint32_t *keys,
                                      int64_t num_envs, const CraftaxParams params, float *obs, float *rewards,
                                      uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                      uint8_t *final_achievements, CraftaxWorldGenScratch *scratch) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_envs) return;
    const CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
    uint8_t done, term;
    uint8_t *ach = final_achievements ? final_achievements + i * CRAFTAX_NUM_ACHIEVEMENTS : NULL;
    const float r = craftax_step_autoreset_one(&states[i], key, actions[i], &params,
                                               obs ? obs + i * CRAFTAX_OBS_SIZE : NULL, &done, &term, ach,
                                               &scratch[i]);
    if (rewards) rewards[i] = r;
    if (dones) dones[i] = done;
    if (terminated) terminated[i] = (uint8_t)(done && term);
    if (truncated) truncated[i] = (uint8_t)(done && !term);
    if (ach && !done) memset(ach, 0, CRAFTAX_NUM_ACHIEVEMENTS);
}

__global__ void track_episodes_kernel(const float *rewards, const uint8_t *dones, const uint8_t *final_achievements,
                                      int64_t num_envs, float *ret_acc, int32_t *len_acc, float *ep_return,
                                      int32_t *ep_length, float *discount, float *achievements_scaled) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_envs) return;
    const int done = dones[i] != 0;
    const float ret = ret_acc[i] + rewards[i];
    const int32_t len = len_acc[i] + 1;
    if (ep_return) ep_return[i] = done ? ret : 0.0f;
    if (ep_length) ep_length[i] = done ? len : 0;
    ret_acc[i] = done ? 0.0f : ret;
    len_acc[i] = done ? 0 : len;
    if (discount) discount[i] = 1.0f - (float)done;
    if (achievements_scaled)
        for (int k = 0; k < CRAFTAX_NUM_ACHIEVEMENTS; k++)
            achievements_scaled[i * CRAFTAX_NUM_ACHIEVEMENTS + k] =
                (float)final_achievements[i * CRAFTAX_NUM_ACHIEVEMENTS + k] * (float)done * 100.0f;
}

/* ---- host side ------------------------------------------------------------------------- */
static std::mutex g_scratch_mutex;
static CraftaxWorldGenScratch *g_scratch = NULL;
static int64_t g_scratch_envs = 0;

static int ensure_scratch_locked(int64_t num_envs) {
    if (num_envs <= g_scratch_envs) return 0;
    if (g_scratch) cudaFree(g_scratch); /* cudaFree waits for kernels still using it */
    g_scratch = NULL;
    g_scratch_envs = 0;
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, (size_t)num_envs * sizeof(CraftaxWorldGenScratch));
    if (err != cudaSuccess) {
        cudaGetLastError(); /* out of memory is not sticky: clear it */
        return record(err, "cudaMalloc(world-gen scratch)");
    }
    g_scratch = (CraftaxWorldGenScratch *)p;
    g_scratch_envs = num_envs;
    return 0;
}

static int check_actions_device(const int32_t *actions, int64_t num_envs) {
    int *bad = NULL;
    int host_bad = 0;
    CUDA_TRY(cudaMalloc(&bad, sizeof(int)), "cudaMalloc(action check)");
    cudaError_t err = cudaMemsetAsync(bad, 0, sizeof(int), 0);
    if (err == cudaSuccess) {
        check_actions_kernel<<<grid_for(num_envs), THREADS>>>(actions, num_envs, bad);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess) err = cudaMemcpy(&host_bad, bad, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(bad);
    if (err != cudaSuccess) return record(err, "action check");
    return host_bad ? CRAFTAX_ERR_ARGUMENT : 0;
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
    reset_kernel<<<1, THREADS>>>(NULL, NULL, 0, params, NULL, NULL);
    step_kernel<<<1, THREADS>>>(NULL, NULL, NULL, 0, params, NULL, NULL, NULL);
    step_autoreset_kernel<<<1, THREADS>>>(NULL, NULL, NULL, 0, params, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    observe_kernel<<<1, THREADS>>>(NULL, 0, NULL);
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
}

int craftax_cuda_key_split(const uint32_t *key, int64_t num, uint32_t *out) {
    if (!key || (!out && num)) return CRAFTAX_ERR_NULL;
    if (num < 0 || num > (int64_t)UINT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (num == 0) return 0;
    const CraftaxKey k = {{key[0], key[1]}};
    key_split_kernel<<<grid_for(num), THREADS>>>(k, num, out);
    return finish_launch("key_split");
}

int craftax_cuda_reset_with_keys_scratch(void *states, const uint32_t *keys, int64_t num_envs,
                                         const CraftaxParams *params, float *obs, void *scratch) {
    if (!states || !keys || !params || !scratch) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    reset_kernel<<<grid_for(num_envs), THREADS>>>((CraftaxState *)states, keys, num_envs, *params, obs,
                                                  (CraftaxWorldGenScratch *)scratch);
    return finish_launch("reset");
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

int craftax_cuda_observe(const void *states, int64_t num_envs, float *obs) {
    if (!states || !obs) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_envs == 0) return 0;
    observe_kernel<<<grid_for(num_envs), THREADS>>>((const CraftaxState *)states, num_envs, obs);
    return finish_launch("observe");
}

int craftax_cuda_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones) {
    if (!states || !actions || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    int rc = check_actions_device(actions, num_envs);
    if (rc) return rc;
    step_kernel<<<grid_for(num_envs), THREADS>>>((CraftaxState *)states, actions, keys, num_envs, *params, obs,
                                                 rewards, dones);
    return finish_launch("step_with_keys");
}

int craftax_cuda_step_autoreset_scratch(void *states, const int32_t *actions, const uint32_t *keys,
                                        int64_t num_envs, const CraftaxParams *params, float *obs, float *rewards,
                                        uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                        uint8_t *final_achievements, void *scratch) {
    if (!states || !actions || !keys || !params || !scratch) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (params->day_length <= 0) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    int rc = check_actions_device(actions, num_envs);
    if (rc) return rc;
    step_autoreset_kernel<<<grid_for(num_envs), THREADS>>>((CraftaxState *)states, actions, keys, num_envs, *params,
                                                           obs, rewards, dones, terminated, truncated,
                                                           final_achievements, (CraftaxWorldGenScratch *)scratch);
    return finish_launch("step_autoreset");
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

int craftax_cuda_track_episodes(const float *rewards, const uint8_t *dones, const uint8_t *final_achievements,
                                int64_t num_envs, float *ret_acc, int32_t *len_acc, float *ep_return,
                                int32_t *ep_length, float *discount, float *achievements_scaled) {
    if (!rewards || !dones || !ret_acc || !len_acc) return CRAFTAX_ERR_NULL;
    if (achievements_scaled && !final_achievements) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (num_envs == 0) return 0;
    track_episodes_kernel<<<grid_for(num_envs), THREADS>>>(rewards, dones, final_achievements, num_envs, ret_acc,
                                                           len_acc, ep_return, ep_length, discount,
                                                           achievements_scaled);
    return finish_launch("track_episodes");
}

}  // extern "C"
