/* classic_cuda.cu: Craftax-Classic on one GPU (the C API of cuda/craftax_classic_cuda.h),
 * linked into cuda/build/libcraftax_cuda.so beside the full game (craftax_cuda.cu) over the
 * very same rules headers as the C reference (reference_c/include/craftax_classic/*.h,
 * compiled here as __host__ __device__).
 *
 * Its own translation unit: it shares no device code with the full game's, only the
 * library's error string (craftax_cuda_last_error) and the craftax_cuda_* allocation helpers
 * that callers use. The parts it includes:
 *   classic_obs.cuh      the compact obs record (its layout is described there) and its expansion
 *   classic_kernels.cuh  the step, world-generation, optimistic-take and bookkeeping kernels
 *   classic_pixels.cuh   Craftax-Classic-Pixels-v1: the pixel obs (craftax_classic/pixels.h)
 *                        over these steps and worlds (included last: its calls use this file's)
 * A thread per env steps it, its warp sharing spawn_mobs' scans (game_logic.h:
 * craftax_classic_spawn_cell). Every obs goes through the compact record: the step and world
 * kernels write records, an expansion kernel (blocks striding over chunks of envs, threads
 * over their floats) expands them when the float obs is asked for (coalesced stores instead
 * of a thread writing its own 5 KB row).
 *
 * The auto-reset step runs the step kernel over all envs, appending the done ones to a done
 * list, then the world kernel over that list only (a device count, no host wait between
 * them). World generation runs a warp per world and needs 99 KB of scratch a world
 * (CraftaxClassicWorldGenScratch), so up to CLASSIC_WORLD_SLOTS warps share out the worlds. That scratch and the
 * calls' other temporaries (the done list of the synchronous calls, compact records behind
 * a float obs, the action check's flag) come from a memory pool of the library's, allocated
 * and freed in stream order (cudaMallocFromPoolAsync: graph-capturable, and no host wait),
 * the pool keeping the memory between calls.
 */
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>

#include <mutex>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "craftax_classic/step.h"
#include "craftax_classic_cuda.h"
#include "craftax_cuda.h"

#include "classic_obs.cuh"
#include "classic_kernels.cuh"

/* Most world-generation warps of one call (99 KB of scratch each: 811 MB). More than a GPU
 * holds resident at once, on purpose: the jobs spread thinner, and the call ends sooner than
 * where a few warps would each take several worlds in turn. */
#define CLASSIC_WORLD_SLOTS 8192
/* The bytes of the library's error string (craftax_cuda.cu: env_common.cuh's g_last_error). */
#define CLASSIC_ERROR_BYTES 512

/* ---- errors ---------------------------------------------------------------------------- */
/* craftax_cuda_last_error() returns the library's one error buffer, which this file writes. */
static void classic_set_error(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf((char *)craftax_cuda_last_error(), CLASSIC_ERROR_BYTES, fmt, args);
    va_end(args);
}

static int classic_record(cudaError_t err, const char *what) {
    classic_set_error("%s: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
    if (err == cudaErrorMemoryAllocation) return CRAFTAX_ERR_NO_MEMORY;
    if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) return CRAFTAX_ERR_NO_DEVICE;
    return CRAFTAX_ERR_CUDA;
}

#define CLASSIC_TRY(call, what)                                  \
    do {                                                         \
        cudaError_t err_ = (call);                               \
        if (err_ != cudaSuccess) return classic_record(err_, what); \
    } while (0)

/* ---- stream-ordered temporaries -------------------------------------------------------- */
static std::mutex g_pool_mutex;
static cudaMemPool_t g_pool = NULL;
static int g_pool_device = -1;

/* The library's pool on the current device, created on first use, with no release threshold
 * (the default pool would hand its memory back at every synchronize). */
static int classic_pool(cudaMemPool_t *out) {
    int device = 0;
    CLASSIC_TRY(cudaGetDevice(&device), "cudaGetDevice");
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    if (!g_pool || g_pool_device != device) {
        cudaMemPoolProps props;
        memset(&props, 0, sizeof(props));
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = device;
        CLASSIC_TRY(cudaMemPoolCreate(&g_pool, &props), "cudaMemPoolCreate");
        uint64_t keep = UINT64_MAX;
        CLASSIC_TRY(cudaMemPoolSetAttribute(g_pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
        g_pool_device = device;
    }
    *out = g_pool;
    return 0;
}

/* A call's temporaries, freed in stream order when it goes out of scope. */
class Temporaries {
  public:
    explicit Temporaries(cudaStream_t stream) : stream_(stream) {}
    ~Temporaries() {
        for (int k = 0; k < count_; k++) cudaFreeAsync(ptrs_[k], stream_);
    }
    int take(void **out, size_t bytes, const char *what) {
        *out = NULL;
        if (count_ == kMost) {
            classic_set_error("%s: more than %d temporaries in one call", what, kMost);
            return CRAFTAX_ERR_ARGUMENT;
        }
        cudaMemPool_t pool;
        const int rc = classic_pool(&pool);
        if (rc) return rc;
        cudaError_t err = cudaMallocFromPoolAsync(out, bytes ? bytes : 1, pool, stream_);
        if (err != cudaSuccess) {
            *out = NULL;
            cudaGetLastError();
            return classic_record(err, what);
        }
        ptrs_[count_++] = *out;
        return 0;
    }

  private:
    static const int kMost = 8;
    cudaStream_t stream_;
    void *ptrs_[kMost];
    int count_ = 0;
};

static int check_params(const CraftaxClassicParams *params) {
    if (params->day_length > 0) return 0;
    classic_set_error("params: day_length must be > 0 (got %d)", params->day_length);
    return CRAFTAX_ERR_ARGUMENT;
}

/* Compact records are read and written as 16-byte words. */
static int check_compact(const uint8_t *obs_compact) {
    if (((uintptr_t)obs_compact & 15u) == 0) return 0;
    classic_set_error("obs_compact: must be 16-byte aligned");
    return CRAFTAX_ERR_ARGUMENT;
}

static int64_t world_slots(int64_t max_worlds) {
    return max_worlds < CLASSIC_WORLD_SLOTS ? max_worlds : CLASSIC_WORLD_SLOTS;
}

/* World generation of `jobs` (at most max_worlds of them) enqueued on s. */
static int launch_worlds(const ClassicWorldJobs &jobs, int64_t max_worlds, const CraftaxClassicParams &params,
                         Temporaries &temp, cudaStream_t s, const char *what) {
    const int64_t slots = world_slots(max_worlds);
    if (slots <= 0) return 0;
    void *scratch = NULL;
    const int rc = temp.take(&scratch, (size_t)slots * sizeof(CraftaxClassicWorldGenScratch), what);
    if (rc) return rc;
    classic_worlds_kernel<<<classic_grid_warps(slots), CLASSIC_THREADS, 0, s>>>(
        jobs, params, (CraftaxClassicWorldGenScratch *)scratch, slots);
    CLASSIC_TRY(cudaGetLastError(), what);
    return 0;
}

/* The float obs of n records, when asked for. */
static int launch_expand(const uint8_t *compact, int64_t n, float *obs, const int *bad, cudaStream_t s,
                         const char *what) {
    if (!obs) return 0;
    classic_expand_kernel<<<classic_expand_grid(n), CLASSIC_EXPAND_THREADS, 0, s>>>(compact, n, obs, bad);
    CLASSIC_TRY(cudaGetLastError(), what);
    return 0;
}

/* Where the records go: the caller's compact obs, else (a float obs only) a temporary. */
static int records_for(uint8_t *obs_compact, float *obs, int64_t n, Temporaries &temp, uint8_t **out) {
    *out = obs_compact;
    if (obs_compact || !obs) return 0;
    return temp.take((void **)out, (size_t)n * CLASSIC_COMPACT_SIZE, "obs records");
}

/* The action check of a synchronous call: a device flag, zeroed then set by any action
 * outside [0, 17); the kernels after it change nothing when it is set, and the verdict is
 * read after the call's one wait. */
static int start_action_check(const int32_t *actions, int64_t n, Temporaries &temp, int **flag) {
    int rc = temp.take((void **)flag, sizeof(int), "action check");
    if (rc) return rc;
    CLASSIC_TRY(cudaMemsetAsync(*flag, 0, sizeof(int), 0), "cudaMemsetAsync(action check)");
    classic_check_actions_kernel<<<classic_grid(n), CLASSIC_THREADS>>>(actions, n, *flag);
    CLASSIC_TRY(cudaGetLastError(), "action check");
    return 0;
}

/* The wait of a synchronous call, then its action check's verdict (flag may be NULL). */
static int finish_call(const int *flag, const char *what) {
    CLASSIC_TRY(cudaGetLastError(), what);
    int bad = 0;
    if (flag) CLASSIC_TRY(cudaMemcpyAsync(&bad, flag, sizeof(int), cudaMemcpyDeviceToHost, 0), what);
    CLASSIC_TRY(cudaStreamSynchronize(0), what);
    if (!bad) return 0;
    classic_set_error("actions: a value outside [0, %d)", CRAFTAX_CLASSIC_NUM_ACTIONS);
    return CRAFTAX_ERR_ARGUMENT;
}

/* The episode bookkeeping buffers of the one-wait step calls. */
typedef struct {
    float *ret_acc;
    int32_t *len_acc;
    float *ep_return;
    int32_t *ep_length;
    float *discount;
    float *achievements_scaled;
} ClassicEpisodes;

static int launch_track(const float *rewards, const uint8_t *dones, const uint8_t *final_achievements, int64_t n,
                        const ClassicEpisodes &ep, const int *bad, cudaStream_t s) {
    const int64_t threads = ep.achievements_scaled ? n * CRAFTAX_CLASSIC_NUM_ACHIEVEMENTS : n;
    classic_track_kernel<<<classic_grid(threads), CLASSIC_THREADS, 0, s>>>(rewards, dones, final_achievements, n,
                                                                           ep.ret_acc, ep.len_acc, ep.ep_return,
                                                                           ep.ep_length, ep.discount,
                                                                           ep.achievements_scaled, bad);
    CLASSIC_TRY(cudaGetLastError(), "episode bookkeeping");
    return 0;
}

/* The auto-reset step on stream s: step kernel, world kernel over the done list, expansion.
 * done_list: n + 1 int32 (the list, then its counter). */
static int launch_autoreset(CraftaxClassicState *states, const int32_t *actions, const uint32_t *keys, int64_t n,
                            const CraftaxClassicParams &params, float *obs, uint8_t *obs_compact, float *final_obs,
                            const ClassicStepOut &out, int32_t *done_list, Temporaries &temp, const int *bad,
                            cudaStream_t s) {
    int32_t *count = done_list + n;
    CLASSIC_TRY(cudaMemsetAsync(count, 0, sizeof(int32_t), s), "cudaMemsetAsync(done count)");
    uint8_t *records = NULL;
    int rc = records_for(obs_compact, obs, n, temp, &records);
    if (rc) return rc;
    classic_autoreset_step_kernel<<<classic_grid(n), CLASSIC_THREADS, 0, s>>>(
        states, actions, keys, n, params, records, final_obs, out, done_list, count, bad);
    CLASSIC_TRY(cudaGetLastError(), "step_autoreset (step)");
    ClassicWorldJobs jobs;
    memset(&jobs, 0, sizeof(jobs));
    jobs.source = WORLDS_FROM_DONE_LIST;
    jobs.states = states;
    jobs.keys = keys;
    jobs.list = done_list;
    jobs.count = count;
    jobs.compact = records;
    jobs.bad_actions = bad;
    rc = launch_worlds(jobs, n, params, temp, s, "step_autoreset (resets)");
    if (rc) return rc;
    return launch_expand(records, n, obs, bad, s, "step_autoreset (obs)");
}

/* CraftaxEnv.step's work after the action check, on stream s: the key split (k: env.step's
 * key), the auto-reset step, the episode bookkeeping. */
static int enqueue_env_step(CraftaxClassicState *states, const int32_t *actions, const CraftaxKey &k, uint32_t *keys,
                            int64_t n, const CraftaxClassicParams &params, float *obs, uint8_t *obs_compact,
                            float *final_obs, const ClassicStepOut &out, const ClassicEpisodes &ep,
                            int32_t *done_list, Temporaries &temp, const int *bad, cudaStream_t s) {
    classic_key_split_kernel<<<classic_grid(n), CLASSIC_THREADS, 0, s>>>(k, n, keys);
    CLASSIC_TRY(cudaGetLastError(), "key split");
    const int rc = launch_autoreset(states, actions, keys, n, params, obs, obs_compact, final_obs, out, done_list,
                                    temp, bad, s);
    if (rc) return rc;
    return launch_track(out.rewards, out.dones, out.final_achievements, n, ep, bad, s);
}

/* ---- optimistic resets ----------------------------------------------------------------- */
/* Work space: the wrapper key (synchronous call), the order keys, the sorted keys, then
 * cub's radix-sort storage. */
#define CLASSIC_OPT_KEY_BYTES 256
static size_t optimistic_sort_bytes(int64_t n) {
    size_t bytes = 0;
    cub::DeviceRadixSort::SortKeys((void *)NULL, bytes, (const uint64_t *)NULL, (uint64_t *)NULL, (int)n, 0, 56);
    return bytes;
}

static int launch_optimistic(CraftaxClassicState *states, const int32_t *actions, const uint32_t *key, int64_t n,
                             int32_t reset_ratio, const CraftaxClassicParams &params, const CraftaxClassicState *pool,
                             float *obs, uint8_t *obs_compact, float *final_obs, const ClassicStepOut &out,
                             int32_t *reset_worlds, void *work, Temporaries &temp, const int *bad, cudaStream_t s) {
    const int32_t num_worlds = (int32_t)(n / reset_ratio);
    uint64_t *order = (uint64_t *)((char *)work + CLASSIC_OPT_KEY_BYTES);
    uint64_t *sorted = order + n;
    void *sort_temp = sorted + n;
    size_t sort_bytes = optimistic_sort_bytes(n);
    classic_optimistic_step_kernel<<<classic_grid(n), CLASSIC_THREADS, 0, s>>>(states, actions, key, n, params,
                                                                                final_obs, out, order, bad);
    CLASSIC_TRY(cudaGetLastError(), "step_optimistic (step)");
    CLASSIC_TRY(cub::DeviceRadixSort::SortKeys(sort_temp, sort_bytes, order, sorted, (int)n, 0, 56, s),
                "step_optimistic (order)");
    if (!pool) { /* the ended envs of ranks < num_worlds generate their worlds in place */
        ClassicWorldJobs jobs;
        memset(&jobs, 0, sizeof(jobs));
        jobs.source = WORLDS_FROM_TAKEN;
        jobs.states = states;
        jobs.keys = key;
        jobs.num_jobs = num_worlds;
        jobs.sorted = sorted;
        jobs.bad_actions = bad;
        const int rc = launch_worlds(jobs, num_worlds, params, temp, s, "step_optimistic (resets)");
        if (rc) return rc;
    }
    for (int pass = 0; pass < (pool ? 1 : 2); pass++) {
        classic_take_kernel<<<classic_grid_warps(n), CLASSIC_THREADS, 0, s>>>(states, sorted, n, num_worlds,
                                                                               reset_ratio, pool, pass, reset_worlds,
                                                                               bad);
        CLASSIC_TRY(cudaGetLastError(), "step_optimistic (take)");
    }
    if (!obs && !obs_compact) return 0;
    uint8_t *records = NULL;
    const int rc = records_for(obs_compact, obs, n, temp, &records);
    if (rc) return rc;
    classic_observe_kernel<<<classic_grid(n), CLASSIC_THREADS, 0, s>>>(states, n, records, bad);
    CLASSIC_TRY(cudaGetLastError(), "step_optimistic (obs)");
    return launch_expand(records, n, obs, bad, s, "step_optimistic (obs)");
}

static ClassicStepOut step_out(float *rewards, uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                               uint8_t *final_achievements) {
    const ClassicStepOut out = {rewards, dones, terminated, truncated, final_achievements};
    return out;
}

extern "C" {

size_t craftax_classic_cuda_state_size(void) { return sizeof(CraftaxClassicState); }
int craftax_classic_cuda_obs_size(void) { return CRAFTAX_CLASSIC_OBS_SIZE; }
int craftax_classic_cuda_compact_size(void) { return CLASSIC_COMPACT_SIZE; }

int craftax_classic_cuda_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs,
                                         const CraftaxClassicParams *params, float *obs, uint8_t *obs_compact) {
    if (!states || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (check_params(params) || check_compact(obs_compact)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    Temporaries temp(0);
    uint8_t *records = NULL;
    int rc = records_for(obs_compact, obs, num_envs, temp, &records);
    if (rc) return rc;
    ClassicWorldJobs jobs;
    memset(&jobs, 0, sizeof(jobs));
    jobs.source = WORLDS_FROM_KEYS;
    jobs.states = (CraftaxClassicState *)states;
    jobs.keys = keys;
    jobs.num_jobs = num_envs;
    jobs.compact = records;
    rc = launch_worlds(jobs, num_envs, *params, temp, 0, "reset");
    if (rc) return rc;
    rc = launch_expand(records, num_envs, obs, NULL, 0, "reset (obs)");
    if (rc) return rc;
    return finish_call(NULL, "reset");
}

int craftax_classic_cuda_observe(const void *states, int64_t num_envs, float *obs, uint8_t *obs_compact) {
    if (!states || (!obs && !obs_compact)) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (check_compact(obs_compact)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    Temporaries temp(0);
    uint8_t *records = NULL;
    int rc = records_for(obs_compact, obs, num_envs, temp, &records);
    if (rc) return rc;
    classic_observe_kernel<<<classic_grid(num_envs), CLASSIC_THREADS>>>((const CraftaxClassicState *)states, num_envs,
                                                                        records, NULL);
    CLASSIC_TRY(cudaGetLastError(), "observe");
    rc = launch_expand(records, num_envs, obs, NULL, 0, "observe");
    if (rc) return rc;
    return finish_call(NULL, "observe");
}

int craftax_classic_cuda_expand_obs(const uint8_t *obs_compact, int64_t num_envs, float *obs) {
    if (!obs_compact || !obs) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (check_compact(obs_compact)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    const int rc = launch_expand(obs_compact, num_envs, obs, NULL, 0, "expand_obs");
    if (rc) return rc;
    return finish_call(NULL, "expand_obs");
}

int craftax_classic_cuda_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                        const CraftaxClassicParams *params, float *obs, uint8_t *obs_compact,
                                        float *rewards, uint8_t *dones) {
    if (!states || !actions || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (check_params(params) || check_compact(obs_compact)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    Temporaries temp(0);
    int *flag = NULL;
    int rc = start_action_check(actions, num_envs, temp, &flag);
    if (rc) return rc;
    /* a bad action leaves every state and output as it was: the kernels after the check do nothing */
    classic_step_kernel<<<classic_grid(num_envs), CLASSIC_THREADS>>>((CraftaxClassicState *)states, actions, keys,
                                                                     num_envs, *params, rewards, dones, flag);
    CLASSIC_TRY(cudaGetLastError(), "step_with_keys");
    if (obs || obs_compact) {
        uint8_t *records = NULL;
        rc = records_for(obs_compact, obs, num_envs, temp, &records);
        if (rc) return rc;
        classic_observe_kernel<<<classic_grid(num_envs), CLASSIC_THREADS>>>((const CraftaxClassicState *)states,
                                                                            num_envs, records, flag);
        CLASSIC_TRY(cudaGetLastError(), "step_with_keys (obs)");
        rc = launch_expand(records, num_envs, obs, flag, 0, "step_with_keys (obs)");
        if (rc) return rc;
    }
    return finish_call(flag, "step_with_keys");
}

/* The argument checks craftax_classic_cuda_env_step and its async form share. */
static int check_env_step(const void *states, const int32_t *actions, const uint32_t *key, const uint32_t *keys,
                          const CraftaxClassicParams *params, const uint8_t *obs_compact, const float *rewards,
                          const uint8_t *dones, const float *ret_acc, const int32_t *len_acc,
                          const uint8_t *final_achievements, const float *achievements_scaled, int64_t num_envs) {
    if (!states || !actions || !key || !keys || !params || !rewards || !dones || !ret_acc || !len_acc)
        return CRAFTAX_ERR_NULL;
    if (achievements_scaled && !final_achievements) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > INT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (check_params(params) || check_compact(obs_compact)) return CRAFTAX_ERR_ARGUMENT;
    return 0;
}

int craftax_classic_cuda_env_step(void *states, const int32_t *actions, const uint32_t *key, uint32_t *keys,
                                  int64_t num_envs, const CraftaxClassicParams *params, float *obs,
                                  uint8_t *obs_compact, float *final_obs, float *rewards, uint8_t *dones,
                                  uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                                  float *ret_acc, int32_t *len_acc, float *ep_return, int32_t *ep_length,
                                  float *discount, float *achievements_scaled) {
    int rc = check_env_step(states, actions, key, keys, params, obs_compact, rewards, dones, ret_acc, len_acc,
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
    const ClassicEpisodes ep = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    rc = enqueue_env_step((CraftaxClassicState *)states, actions, k, keys, num_envs, *params, obs, obs_compact,
                          final_obs, step_out(rewards, dones, terminated, truncated, final_achievements), ep, done_list,
                          temp, flag, 0);
    if (rc) return rc;
    return finish_call(flag, "env_step");
}

size_t craftax_classic_cuda_step_async_work_size(int64_t num_envs) {
    if (num_envs < 0 || num_envs > INT32_MAX) return 0;
    return sizeof(int) + (size_t)(num_envs + 1) * sizeof(int32_t);
}

int craftax_classic_cuda_env_step_async(void *states, const int32_t *actions, const uint32_t *key, uint32_t *keys,
                                        int64_t num_envs, const CraftaxClassicParams *params, float *obs,
                                        uint8_t *obs_compact, float *final_obs, float *rewards, uint8_t *dones,
                                        uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                                        float *ret_acc, int32_t *len_acc, float *ep_return, int32_t *ep_length,
                                        float *discount, float *achievements_scaled, void *work, uintptr_t stream) {
    if (!work) return CRAFTAX_ERR_NULL;
    const int rc = check_env_step(states, actions, key, keys, params, obs_compact, rewards, dones, ret_acc, len_acc,
                                  final_achievements, achievements_scaled, num_envs);
    if (rc || num_envs == 0) return rc;
    cudaStream_t s = (cudaStream_t)stream;
    Temporaries temp(s);
    int *flag = (int *)work;
    classic_check_actions_kernel<<<classic_grid(num_envs), CLASSIC_THREADS, 0, s>>>(actions, num_envs, flag);
    CLASSIC_TRY(cudaGetLastError(), "action check");
    const CraftaxKey k = {{key[0], key[1]}};
    const ClassicEpisodes ep = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    return enqueue_env_step((CraftaxClassicState *)states, actions, k, keys, num_envs, *params, obs, obs_compact,
                            final_obs, step_out(rewards, dones, terminated, truncated, final_achievements), ep,
                            (int32_t *)(flag + 1), temp, flag, s);
}

size_t craftax_classic_cuda_optimistic_work_size(int64_t num_envs) {
    if (num_envs < 0 || num_envs > INT32_MAX) return 0;
    return CLASSIC_OPT_KEY_BYTES + 2 * (size_t)num_envs * sizeof(uint64_t) + optimistic_sort_bytes(num_envs);
}

int craftax_classic_cuda_env_step_optimistic(void *states, const int32_t *actions, const uint32_t *key,
                                             int64_t num_envs, int32_t reset_ratio,
                                             const CraftaxClassicParams *params, float *obs, uint8_t *obs_compact,
                                             float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                                             uint8_t *truncated, uint8_t *final_achievements, float *ret_acc,
                                             int32_t *len_acc, float *ep_return, int32_t *ep_length, float *discount,
                                             float *achievements_scaled, void *work) {
    if (!states || !actions || !key || !params || !rewards || !dones || !work || !ret_acc || !len_acc)
        return CRAFTAX_ERR_NULL;
    if (achievements_scaled && !final_achievements) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > INT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (reset_ratio < 1 || num_envs % reset_ratio != 0) {
        classic_set_error("reset_ratio: must be >= 1 and divide num_envs (got %d for %lld envs)", reset_ratio,
                          (long long)num_envs);
        return CRAFTAX_ERR_ARGUMENT;
    }
    if (check_params(params) || check_compact(obs_compact)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    Temporaries temp(0);
    int *flag = NULL;
    int rc = start_action_check(actions, num_envs, temp, &flag);
    if (rc) return rc;
    uint32_t *device_key = (uint32_t *)work;
    const CraftaxKey k = {{key[0], key[1]}};
    classic_store_key_kernel<<<1, 1>>>(k, device_key);
    CLASSIC_TRY(cudaGetLastError(), "step_optimistic (key)");
    rc = launch_optimistic((CraftaxClassicState *)states, actions, device_key, num_envs, reset_ratio, *params, NULL,
                           obs, obs_compact, final_obs, step_out(rewards, dones, terminated, truncated,
                                                                 final_achievements),
                           NULL, work, temp, flag, 0);
    if (rc) return rc;
    const ClassicEpisodes ep = {ret_acc, len_acc, ep_return, ep_length, discount, achievements_scaled};
    rc = launch_track(rewards, dones, final_achievements, num_envs, ep, flag, 0);
    if (rc) return rc;
    return finish_call(flag, "env_step_optimistic");
}

int craftax_classic_cuda_step_autoreset_stream(void *states, const int32_t *actions, const uint32_t *keys,
                                               int64_t num_envs, const CraftaxClassicParams *params, float *obs,
                                               float *rewards, uint8_t *dones, uint8_t *terminated,
                                               uint8_t *truncated, uint8_t *final_achievements,
                                               int32_t *done_list, uintptr_t stream) {
    if (!states || !actions || !keys || !params || !done_list || !dones) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > INT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (check_params(params)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    Temporaries temp(s);
    return launch_autoreset((CraftaxClassicState *)states, actions, keys, num_envs, *params, obs, NULL, NULL,
                            step_out(rewards, dones, terminated, truncated, final_achievements), done_list, temp, NULL,
                            s);
}

int craftax_classic_cuda_step_optimistic_stream(void *states, const int32_t *actions, const uint32_t *key,
                                                int64_t num_envs, int32_t reset_ratio,
                                                const CraftaxClassicParams *params, const void *worlds, float *obs,
                                                float *rewards, uint8_t *dones, uint8_t *terminated,
                                                uint8_t *truncated, uint8_t *final_achievements,
                                                int32_t *reset_worlds, void *work, uintptr_t stream) {
    if (!states || !actions || !key || !params || !dones || !work) return CRAFTAX_ERR_NULL;
    if (num_envs < 0 || num_envs > INT32_MAX) return CRAFTAX_ERR_NUM_ENVS;
    if (reset_ratio < 1 || num_envs % reset_ratio != 0) return CRAFTAX_ERR_ARGUMENT;
    if (check_params(params)) return CRAFTAX_ERR_ARGUMENT;
    if (num_envs == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    Temporaries temp(s);
    return launch_optimistic((CraftaxClassicState *)states, actions, key, num_envs, reset_ratio, *params,
                             (const CraftaxClassicState *)worlds, obs, NULL, NULL,
                             step_out(rewards, dones, terminated, truncated, final_achievements), reset_worlds, work,
                             temp, NULL, s);
}

int craftax_classic_cuda_generate_worlds_stream(void *worlds, const uint32_t *keys, int64_t num_keys,
                                                int32_t num_worlds, const CraftaxClassicParams *params,
                                                uintptr_t stream) {
    if (!worlds || !keys || !params) return CRAFTAX_ERR_NULL;
    if (num_keys < 0 || num_worlds < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (check_params(params)) return CRAFTAX_ERR_ARGUMENT;
    const int64_t n = num_keys * num_worlds;
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    Temporaries temp(s);
    ClassicWorldJobs jobs;
    memset(&jobs, 0, sizeof(jobs));
    jobs.source = WORLDS_FROM_POOL;
    jobs.states = (CraftaxClassicState *)worlds;
    jobs.keys = keys;
    jobs.num_jobs = n;
    jobs.num_worlds = num_worlds;
    return launch_worlds(jobs, n, *params, temp, s, "generate_worlds");
}

}  // extern "C"

/* Craftax-Classic-Pixels-v1. */
#include "classic_pixels.cuh"
