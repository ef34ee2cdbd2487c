/* cuda/env_step.cuh: the step kernels of the CUDA env library: the action check, step_env
 * without reset (step_kernel), the auto-reset step's step and obs kernels (A and O of
 * cuda/README.md), the optimistic step's step kernel, and the episode bookkeeping; on the host
 * the action check and the choice of lanes per env. */
#ifndef CRAFTAX_CUDA_ENV_STEP_CUH
#define CRAFTAX_CUDA_ENV_STEP_CUH

/* Sets *bad to 1 when any action is outside [0, CRAFTAX_NUM_ACTIONS). */
__global__ void check_actions_kernel(const int32_t *actions, int64_t num_envs, int *bad) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_envs) return;
    if (actions[i] < 0 || actions[i] >= CRAFTAX_NUM_ACTIONS) *bad = 1;
}

/* step_env without reset, a thread per env. obs and scratch are not read: observe_kernel
 * renders the obs after this kernel, and spawn_mobs needs no scratch. */
__global__ void step_kernel(CraftaxState *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                            const CraftaxParams params, float *obs, float *rewards, uint8_t *dones,
                            CraftaxCudaScratch *scratch) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num_envs) return;
    const CraftaxKey key = {{keys[2 * i], keys[2 * i + 1]}};
    uint8_t done;
    (void)obs;
    (void)scratch;
    const float r = craftax_step_env(&states[i], key, actions[i], &params, NULL, &done);
    if (rewards) rewards[i] = r;
    if (dones) dones[i] = done;
}

/* The achievement rows a step writes (either may be NULL): final_achievements (uint8 [N, 67],
 * the stepped state's achievements where the env ended, else 0) and achievements_scaled
 * (float [N, 67], the same times 100: CraftaxEnv.step's "Achievements/<name>" info).
 * changed_only: the rows are the outputs of the caller's previous step (zero before its
 * first), so only rows where the env ends now or ended then (`dones` before this step) can
 * change; the others stay 0 unwritten (written densely, every thread would store 67 strided
 * bytes each step, and the bookkeeping 67 floats an env). */
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
 * bytes of spills), 12 warps an SM instead of 8, which steps large batches faster. */
#define STEP_BOUNDS __launch_bounds__(THREADS, 3)

/* Auto-reset, kernel A: the step part of craftax_step_autoreset_one for envs
 * [base, base + n) without its obs (craftax_autoreset_step_only_lanes); done_flags[i] says
 * whether env i is done, and the done ones are appended to done_list[base ...] through
 * *done_count (in any order: each env's reset depends on that env alone). */
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
 * [num_envs, 67] achievements block (t < num_envs * 67), so that the block's stores coalesce
 * (a thread per env writing its own 67-float row makes every store instruction touch 32 rows
 * 268 bytes apart). */
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

/* ---- host side ------------------------------------------------------------------------- */
/* The action check's flag lives on the device for the library's lifetime (freeing it each
 * step would cost a cudaFree, which synchronizes the whole device). */
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
/* The check on its own, waited for (craftax_cuda_step_with_keys_ex). */
static int check_actions_device(const int32_t *actions, int64_t num_envs) {
    std::lock_guard<std::mutex> lock(g_check_mutex);
    const int rc = start_action_check(actions, num_envs);
    return rc ? rc : action_check_verdict();
}

/* Lanes per env of the step kernels for a batch of n envs. A warp per env shortens a step's
 * latency (its spawn_mobs box scans, ~60% of a thread's step, are shared by 32 lanes and
 * read a box row per transaction; the sequential rest runs on lane 0), which is what a
 * small batch waits on. But an SM holds 12 warps of the step kernels (STEP_BOUNDS): a warp
 * per env fits ~1,600 envs on an H200 at once, a thread per env 32x more. So a warp per env up to the batch that fits in one wave (or up to
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
static int step_lanes_for(int64_t n) {
    const char *e = getenv("PYCRAFTAX_CUDA_WARP_STEP_MAX_ENVS");
    if (e) return n <= atoll(e) ? LANES : 1;
    if (g_warp_step_wave < 0) measure_warp_step_wave();
    return n <= g_warp_step_wave ? LANES : 1;
}

#endif
