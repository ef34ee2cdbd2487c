/* cuda/env_common.cuh: what every part of the CUDA env library shares: launch shapes, the
 * last-error string and its CUDA_TRY helpers, the per-warp world-generation scratch, and the
 * key kernels. Included once, by craftax_cuda.cu (the library is one translation unit: see
 * cuda/README.md). */
#ifndef CRAFTAX_CUDA_ENV_COMMON_CUH
#define CRAFTAX_CUDA_ENV_COMMON_CUH

#define THREADS 128
/* The world-generation kernels' blocks are small so that a few hundred resets spread over
 * many SMs (one warp per SM) instead of filling a few. */
#define RESET_THREADS 64
/* Most auto-reset chunks (craftax_cuda_set_autoreset_chunks). */
#define MAX_CHUNKS 16
/* World generation and obs rendering run a warp per env (LANES lanes, the `lane, lanes`
 * loops of the rules headers); the warp's env is uniform across its lanes. */
#define LANES CRAFTAX_WARP_LANES

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

/* After a launch on the legacy stream: the launch error, then (the synchronous calls) the
 * execution error. */
static int finish_launch(const char *what) {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return record(err, what);
    err = cudaStreamSynchronize(0);
    if (err != cudaSuccess) return record(err, what);
    return 0;
}

/* Blocks for a thread per item, and for a warp per item. */
static unsigned grid_for(int64_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }
static unsigned grid_for_warps(int64_t n) { return (unsigned)((n * LANES + THREADS - 1) / THREADS); }

/* ---- keys ------------------------------------------------------------------------------ */
/* Every kernel takes CraftaxParams by value (1.5 KB, within the kernel-parameter limit): no
 * device copy to keep alive or race on between calls. */

/* out[i] = jax.random.split(key, num)[i]: env.step's per-env keys. */
__global__ void key_split_kernel(CraftaxKey key, int64_t num, uint32_t *out) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= num) return;
    const CraftaxKey k = craftax_split_at(key, (uint32_t)i);
    out[2 * i] = k.k[0];
    out[2 * i + 1] = k.k[1];
}

/* A host key into device memory without a host wait (a pageable cudaMemcpy waits for the GPU). */
__global__ void store_key_kernel(CraftaxKey key, uint32_t *out) {
    out[0] = key.k[0];
    out[1] = key.k[1];
}

/* Key s of a device array of raw keys (uint32 [., 2]). */
static __device__ __forceinline__ CraftaxKey load_key(const uint32_t *keys, int64_t s) {
    const CraftaxKey k = {{keys[2 * s], keys[2 * s + 1]}};
    return k;
}

#endif
