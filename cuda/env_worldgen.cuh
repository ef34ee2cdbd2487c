/* cuda/env_worldgen.cuh: world generation of the CUDA env library: the world kernels (a warp
 * per floor, then a warp per world for the rest and the obs), the pool kernel of optimistic
 * resets (a warp per world), and the lazy floors kernel that generates a level before a step
 * can reach it; on the host the warp budget and the launchers. */
#ifndef CRAFTAX_CUDA_ENV_WORLDGEN_CUH
#define CRAFTAX_CUDA_ENV_WORLDGEN_CUH

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
 * worlds of one caller: job(j) says where world j goes and which key reset_env takes, and
 * world_key(key) the key generate_world takes from it (the symbolic env's reset_env splits it
 * once more; the pixel env's does not: env_pixels.cuh). */
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
    __device__ CraftaxKey world_key(CraftaxKey reset_key) const { return craftax_reset_world_key(reset_key); }
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
    __device__ CraftaxKey world_key(CraftaxKey reset_key) const { return craftax_reset_world_key(reset_key); }
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
    __device__ CraftaxKey world_key(CraftaxKey reset_key) const { return craftax_reset_world_key(reset_key); }
    __device__ void finish(int64_t, int) const {}
};

/* 16 blocks of 64 threads an SM (64 registers; 80 unbounded gave 24 warps an SM): the kernel
 * is latency-bound, so more warps hide more of it; world_warps_hardware follows the
 * residency. A warp's floor scratch (6.6 KB) lives in shared memory: 13.3 KB a
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
     * one floor's code (smooth floors 0-5 first, then the dungeons): world-major, every SM would
     * run all nine at once and the kernel would wait for instructions a third of its stalls. */
    const int64_t worlds = src.size(), items = worlds * generated_floors;
    for (int64_t item = warp; item < items; item += warps) {
        const WorldJob job = src.job(item % worlds);
        if (!job.active) continue;
        CraftaxKey floors[CRAFTAX_WORLD_FLOORS], rest;
        craftax_world_floor_keys(src.world_key(job.reset_key), floors, &rest);
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
        craftax_world_floor_keys(src.world_key(job.reset_key), floors, &rest);
        craftax_generate_world_rest_lanes(rest, &params, job.state, lane, LANES);
        if (lane == 0 && generated_floors < CRAFTAX_WORLD_FLOORS) /* the others wait: pending_floors_kernel */
            mark_levels_pending(job.state, src.world_key(job.reset_key), generated_floors);
        craftax_lanes_sync(LANES);
        src.finish(j, lane);
    }
}

/* ---- lazy floors ---------------------------------------------------------------------
 * A reset generates level 0 (generation floor 0) and the world's rest; levels 1-8 stay pending in
 * state->floors_pending (bit l: level l, which generation floor craftax_world_level_floor(l)
 * makes from floors_world_key) until something can read them.
 * A step reads the player's level only (game_logic_utils.h: craftax_attack_mob_class), and the player reaches level L + 1 only by a descent from level L, so
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

/* ---- host side ------------------------------------------------------------------------- */
/* World generation runs a warp per floor, at most as many warps as the SMs hold of the floor
 * kernel (its residency: 16 blocks of 2 warps an SM). More warps than that would run as a
 * second wave: the floor kernel hands each warp its floors up front (item = warp + k * warps),
 * so the late warps would start their whole share after the first wave's and the kernel take
 * two shares' time. Auto-reset chunks
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
/* The floors a reset generates: 1 (floor 0; the rest wait for pending_floors_kernel), or all
 * nine with PYCRAFTAX_CUDA_EAGER_FLOORS=1 (read at each call: benchmarks and tests compare). */
static int reset_floors(void) {
    const char *e = getenv("PYCRAFTAX_CUDA_EAGER_FLOORS");
    return e && atoi(e) ? CRAFTAX_WORLD_FLOORS : 1;
}
/* Up to max_worlds worlds of `src` (the device may know fewer: a done count); `scratch` has
 * scratch_entries entries, which bounds the floor kernel's warps. */
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

#endif
