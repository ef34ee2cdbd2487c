/* cuda/env_reset.cuh: reset scheduling of the CUDA env library: the auto-reset step (kernel A
 * over all envs collecting the done ones in a list, kernel O for the obs of the others, the
 * world kernels over the list on the high-priority reset stream, in chunks), the optimistic
 * step (step, sort of the wrapper's order, worlds generated in place or taken from a
 * pregenerated pool), and their one-wait forms with the episode bookkeeping. */
#ifndef CRAFTAX_CUDA_ENV_RESET_CUH
#define CRAFTAX_CUDA_ENV_RESET_CUH

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
/* Auto-reset bookkeeping, kept by the library: the done list (one int32 per env), the
 * per-chunk counters, the reset stream and the chunk events. */
static std::mutex g_autoreset_mutex;
static int32_t *g_done_list = NULL; /* [g_done_list_envs + MAX_CHUNKS]: the list, then the counters, */
static uint8_t *g_done_flags = NULL; /* then [g_done_list_envs] done flags */
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

/* One chunk [base, base + n) of the auto-reset step: kernel A (step) then kernel O (obs of
 * the not-done envs) on step_stream, and kernel B (world generation of the done ones) on
 * reset_stream after A (through the event a_done when the streams differ). With final_obs
 * (may be NULL), the done envs' terminal obs is rendered into it after A, before B. *count
 * must be zero before A runs. */
static int launch_autoreset_chunk(CraftaxState *states, const int32_t *actions, const uint32_t *keys, int64_t base,
                                  int64_t n, const CraftaxParams &params, float *obs, uint8_t *obs_compact,
                                  float *final_obs, float *rewards, uint8_t *dones,
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
    if (final_obs) {
        final_obs_kernel<<<grid_for_warps(n), THREADS, 0, step_stream>>>(states, base, n, final_obs, done_flags,
                                                                         bad_actions);
        CUDA_TRY(cudaGetLastError(), "step_autoreset (final obs)");
    }
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

/* The episode bookkeeping's buffers of a one-wait step call (craftax_cuda_env_step). */
typedef struct {
    float *ret_acc;
    int32_t *len_acc;
    float *ep_return;
    int32_t *ep_length;
    float *discount;
    float *achievements_scaled;
} EpisodeTrack;

static cudaEvent_t g_reset_done = NULL;

/* The achievement rows of a one-wait step call: the caller's buffers of its previous step
 * (CraftaxEnv.step), so only the changed rows, achievements_scaled too. */
static AchievementRows step_rows(uint8_t *final_achievements, const EpisodeTrack &track) {
    const AchievementRows rows = {final_achievements, track.achievements_scaled, 1};
    return rows;
}

/* Chunks of an auto-reset step: kernel A of chunk c+1 (the step stream) overlaps kernel B of
 * chunk c (the high-priority reset stream), so world generation hides behind stepping. */
static int64_t autoreset_chunks(int64_t num_envs) {
    int64_t chunks = (num_envs + g_min_chunk_envs - 1) / g_min_chunk_envs;
    if (chunks > g_autoreset_chunks) chunks = g_autoreset_chunks;
    return chunks < 1 ? 1 : chunks;
}

/* The end of a one-wait optimistic step call: the episode bookkeeping, the wait, then the
 * action check's verdict. */
static int finish_step_call(int64_t num_envs, const float *rewards, const uint8_t *dones,
                            const EpisodeTrack &track, const char *what) {
    /* achievements_scaled: the step kernel's (step_rows) */
    track_episodes_kernel<<<grid_for(num_envs), THREADS>>>(rewards, dones, NULL, num_envs, track.ret_acc, track.len_acc,
                                                            track.ep_return, track.ep_length, track.discount, NULL,
                                                            g_bad_action);
    const int rc = finish_launch(what);
    if (rc) return rc;
    return action_check_verdict();
}

/* The auto-reset step enqueued on `s`: the key split (split_from: env.step's key), the action
 * check into *bad (only ever set here: the step and bookkeeping kernels skip all work while it
 * is set, so a rejected step changes no state), the chunks, the reset stream joined back to `s`
 * by an event, the episode bookkeeping. `counts`: MAX_CHUNKS int32, the done list num_envs
 * int32, done_flags num_envs bytes. The caller holds g_autoreset_mutex. */
static int enqueue_step_autoreset(CraftaxState *states, const int32_t *actions, uint32_t *keys, int64_t num_envs,
                                  const CraftaxParams *params, float *obs, uint8_t *obs_compact, float *final_obs,
                                  float *rewards, uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                  uint8_t *final_achievements, void *scratch, const CraftaxKey &split_from,
                                  const EpisodeTrack &track, int32_t *counts, int32_t *done_list,
                                  uint8_t *done_flags, int *bad, cudaStream_t s, const cudaEvent_t *prof) {
    key_split_kernel<<<grid_for(num_envs), THREADS, 0, s>>>(split_from, num_envs, keys);
    check_actions_kernel<<<grid_for(num_envs), THREADS, 0, s>>>(actions, num_envs, bad);
    CUDA_TRY(cudaGetLastError(), "step_autoreset (keys, action check)");
    const int64_t chunks = autoreset_chunks(num_envs);
    const int64_t per_chunk = (num_envs + chunks - 1) / chunks;
    const int64_t chunk_entries = chunk_scratch_entries(per_chunk, chunks);
    CraftaxCudaScratch *scr = (CraftaxCudaScratch *)scratch;
    const AchievementRows rows = step_rows(final_achievements, track);
    CUDA_TRY(cudaMemsetAsync(counts, 0, MAX_CHUNKS * sizeof(int32_t), s), "cudaMemsetAsync(done counts)");
    for (int64_t c = 0; c < chunks; c++) {
        const int64_t base = c * per_chunk;
        if (base >= num_envs) break;
        const int64_t n = num_envs - base < per_chunk ? num_envs - base : per_chunk;
        const int rc = launch_autoreset_chunk(states, actions, keys, base, n, *params, obs, obs_compact, final_obs,
                                              rewards, dones, terminated, truncated, rows, scr + c * chunk_entries,
                                              n < chunk_entries ? n : chunk_entries, done_list, counts + c,
                                              done_flags, s, g_reset_stream, g_chunk_events[c],
                                              chunks == 1 ? prof : NULL, bad);
        if (rc) return rc;
    }
    CUDA_TRY(cudaEventRecord(g_reset_done, g_reset_stream), "cudaEventRecord(reset done)");
    CUDA_TRY(cudaStreamWaitEvent(s, g_reset_done, 0), "cudaStreamWaitEvent(reset done)");
    /* achievements_scaled: the step kernel's (step_rows) */
    track_episodes_kernel<<<grid_for(num_envs), THREADS, 0, s>>>(rewards, dones, NULL, num_envs, track.ret_acc,
                                                                 track.len_acc, track.ep_return, track.ep_length,
                                                                 track.discount, NULL, bad);
    CUDA_TRY(cudaGetLastError(), "step_autoreset (episodes)");
    return 0;
}

static int ensure_reset_done_event_locked(void) {
    if (!g_reset_done) CUDA_TRY(cudaEventCreateWithFlags(&g_reset_done, cudaEventDisableTiming), "cudaEventCreate");
    return 0;
}

/* The whole auto-reset step on the legacy stream with a single wait at the end, then the action
 * check's verdict. Each wait would cost the GPU the host's time to the next launch. */
static int step_autoreset_sync(CraftaxState *states, const int32_t *actions, uint32_t *keys, int64_t num_envs,
                               const CraftaxParams *params, float *obs, uint8_t *obs_compact, float *final_obs,
                               float *rewards,
                               uint8_t *dones, uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                               void *scratch, const CraftaxKey &split_from, const EpisodeTrack &track) {
    std::lock_guard<std::mutex> lock(g_autoreset_mutex);
    int rc = ensure_autoreset_locked(num_envs);
    if (!rc) rc = ensure_reset_done_event_locked();
    if (rc) return rc;
    std::lock_guard<std::mutex> check_lock(g_check_mutex);
    if (!g_bad_action) CUDA_TRY(cudaMalloc(&g_bad_action, sizeof(int)), "cudaMalloc(action check)");
    CUDA_TRY(cudaMemsetAsync(g_bad_action, 0, sizeof(int), 0), "cudaMemsetAsync(action check)");
    rc = enqueue_step_autoreset(states, actions, keys, num_envs, params, obs, obs_compact, final_obs, rewards, dones,
                                terminated, truncated, final_achievements, scratch, split_from, track,
                                g_done_list + g_done_list_envs, g_done_list, g_done_flags, g_bad_action, 0,
                                g_profile ? g_prof_events : NULL);
    if (rc) return rc;
    rc = finish_launch("step_autoreset");
    if (rc) return rc;
    rc = action_check_verdict();
    if (rc) return rc;
    if (g_profile && autoreset_chunks(num_envs) == 1) {
        float t[5] = {0, 0, 0, 0, 0};
        for (int e = 1; e < 5; e++) CUDA_TRY(cudaEventElapsedTime(&t[e], g_prof_events[0], g_prof_events[e]), "profile");
        g_prof_ms[0] = t[1];                              /* kernel A: step logic of all envs */
        g_prof_ms[1] = t[2] - t[1];                       /* kernel O: obs of the not-done envs */
        g_prof_ms[2] = t[4] - t[3];                       /* kernel B: world gen + obs of the done envs */
        g_prof_ms[3] = t[2] > t[4] ? t[2] : t[4];         /* A start to the later of O and B */
    }
    return 0;
}

/* The async step's work buffer: the sticky bad-action flag, the chunk counters, the done list,
 * the done flags. */
static size_t step_async_work_size(int64_t num_envs) {
    return sizeof(int) + MAX_CHUNKS * sizeof(int32_t) + (size_t)num_envs * sizeof(int32_t) + (size_t)num_envs;
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

/* The optimistic step enqueued on `s`; bad_actions (may be NULL): a device flag that, when set
 * by the action check enqueued before, makes the step, world and take kernels change nothing.
 * final_obs (may be NULL): the ended envs' terminal obs, rendered between the step and the
 * worlds that replace those states. */
static int launch_optimistic(CraftaxState *st, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                             int32_t reset_ratio, const CraftaxParams *params, const void *worlds, float *obs,
                             uint8_t *obs_compact, float *final_obs, float *rewards, uint8_t *dones,
                             uint8_t *terminated, uint8_t *truncated, const AchievementRows &ach,
                             int32_t *reset_worlds, void *scratch, void *work, cudaStream_t s,
                             const int *bad_actions) {
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
    if (final_obs) { /* the step kernel writes every env's dones */
        final_obs_kernel<<<grid_for_warps(num_envs), THREADS, 0, s>>>(st, 0, num_envs, final_obs, dones, bad_actions);
        CUDA_TRY(cudaGetLastError(), "step_optimistic (final obs)");
    }
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
/* The optimistic step with one wait at the end (as step_autoreset_sync): the host key stored by
 * a kernel, the action check's flag read back after the wait, the episode bookkeeping. */
static int step_optimistic_sync(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                                int32_t reset_ratio, const CraftaxParams *params, float *obs, uint8_t *obs_compact,
                                float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                                uint8_t *truncated, uint8_t *final_achievements, void *scratch, void *work,
                                const EpisodeTrack &track) {
    std::lock_guard<std::mutex> check_lock(g_check_mutex);
    int rc = start_action_check(actions, num_envs);
    if (rc) return rc;
    uint32_t *device_key = (uint32_t *)work;
    const CraftaxKey k = {{key[0], key[1]}};
    store_key_kernel<<<1, 1>>>(k, device_key);
    CUDA_TRY(cudaGetLastError(), "step_optimistic (key)");
    rc = launch_optimistic((CraftaxState *)states, actions, device_key, num_envs, reset_ratio, params, NULL, obs,
                               obs_compact, final_obs, rewards, dones, terminated, truncated,
                               step_rows(final_achievements, track), NULL, scratch, work, 0, g_bad_action);
    if (rc) return rc;
    return finish_step_call(num_envs, rewards, dones, track, "step_optimistic");
}

#endif
