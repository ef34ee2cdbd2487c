/* craftax/common.h: portability macros shared by the C reference and the CUDA build.
 *
 * Every rule of the game is a `static inline CRAFTAX_HD` function so that gcc and nvcc
 * compile the very same source. Nothing here may allocate, use globals or call libc
 * randomness: the RNG is JAX's threefry (rng.h) and lives in the state or is passed in.
 */
#ifndef CRAFTAX_COMMON_H
#define CRAFTAX_COMMON_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define CRAFTAX_HD __host__ __device__
#define CRAFTAX_CONST __constant__ const
/* For a table whose lanes read different entries at once: the constant cache serves one
 * address at a time, global memory (through L1) a whole warp's consecutive entries. */
#define CRAFTAX_LANE_TABLE __device__ const
/* For the step's entry points, which a kernel calls with &params of its by-value kernel
 * parameter: were the call not inlined, every thread would copy the 1.5 KB params struct to
 * local memory to pass its address, and read params from there instead of the constant bank. */
#define CRAFTAX_ALWAYS_INLINE __forceinline__
#else
#define CRAFTAX_HD
#define CRAFTAX_CONST const
#define CRAFTAX_LANE_TABLE const
#define CRAFTAX_ALWAYS_INLINE inline
#endif
/* For code that a GPU kernel would otherwise inline at many sites (world generation's noise
 * and draws): one copy keeps the kernel inside the instruction cache (inlined, the floor
 * kernel spent most of its stall cycles waiting for instructions). Inline on a CPU. */
#ifdef __CUDA_ARCH__
#define CRAFTAX_GPU_NOINLINE __noinline__
#else
#define CRAFTAX_GPU_NOINLINE inline
#endif

/* For a loop whose body a GPU kernel would otherwise copy once per iteration (the same
 * instruction-cache reason as CRAFTAX_GPU_NOINLINE); nothing on a CPU. */
#ifdef __CUDA_ARCH__
#define CRAFTAX_GPU_NO_UNROLL _Pragma("unroll 1")
#else
#define CRAFTAX_GPU_NO_UNROLL
#endif

/* Bit casts without aliasing UB: memcpy of 4 bytes compiles to a register move. */
static inline CRAFTAX_HD uint32_t craftax_f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}
static inline CRAFTAX_HD float craftax_bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}
static inline CRAFTAX_HD uint64_t craftax_f64_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}

static inline CRAFTAX_HD int32_t craftax_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
static inline CRAFTAX_HD int32_t craftax_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }

/* XLA's clamp/min/max on f32 propagate NaN; the game never produces NaN in a clamp, so
 * the plain comparisons are enough and keep C and CUDA identical. */
static inline CRAFTAX_HD float craftax_clip_f32(float x, float lo, float hi) {
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
}

static inline CRAFTAX_HD int craftax_popc32(uint32_t x) {
#ifdef __CUDA_ARCH__
    return __popc(x);
#else
    return __builtin_popcount(x);
#endif
}

/* Cooperative passes. World generation's per-cell loops take (lane, lanes): the threads
 * that share one env each handle cells lane, lane + lanes, ...; every cell's expression is
 * the same whoever computes it, so results are bit-identical. The C build calls them with
 * (0, 1), where the helpers below vanish; the CUDA build with a whole warp per env
 * (lanes = 32, all 32 lanes calling; lanes = 1 from a lone thread also works).
 * craftax_lanes_sync orders the lanes' memory accesses between dependent passes. */
#define CRAFTAX_WARP_LANES 32
/* for (x = lane; x < n; x += lanes): a lane's share of a pass on the GPU; on a CPU (always
 * one lane) the plain unit-stride loop, which compilers vectorise. */
#ifdef __CUDA_ARCH__
#define CRAFTAX_LANE_FIRST(lane) (lane)
#define CRAFTAX_LANE_STRIDE(lanes) (lanes)
#else
#define CRAFTAX_LANE_FIRST(lane) ((void)(lane), 0)
#define CRAFTAX_LANE_STRIDE(lanes) ((void)(lanes), 1)
#endif
#define CRAFTAX_FOR_LANE(x, n, lane, lanes) \
    for (int x = CRAFTAX_LANE_FIRST(lane); x < (n); x += CRAFTAX_LANE_STRIDE(lanes))
/* The 48 x 48 cells (i, j) of a per-cell pass: a lane's share of them, cell c = i * 48 + j
 * taken by lane c % lanes, on the GPU; row by row on a CPU (one lane), where the nested
 * loops vectorise. `continue` moves to the next cell in both. */
#ifdef __CUDA_ARCH__
#define CRAFTAX_FOR_CELLS(i, j, lane, lanes)                                                   \
    for (int cell_ = (lane); cell_ < CRAFTAX_MAP_SIZE * CRAFTAX_MAP_SIZE; cell_ += (lanes))      \
        for (int i = cell_ / CRAFTAX_MAP_SIZE, j = cell_ % CRAFTAX_MAP_SIZE, once_ = 1; once_; once_ = 0)
#else
#define CRAFTAX_FOR_CELLS(i, j, lane, lanes)                                                   \
    for (int i = ((void)(lane), (void)(lanes), 0); i < CRAFTAX_MAP_SIZE; i++)                  \
        for (int j = 0; j < CRAFTAX_MAP_SIZE; j++)
#endif

static inline CRAFTAX_HD void craftax_lanes_sync(int lanes) {
#ifdef __CUDA_ARCH__
    if (lanes > 1) __syncwarp();
#else
    (void)lanes;
#endif
}

/* *p = v, left out where *p already is v. On a GPU every store dirties its 32-byte sector of
 * the env's state, which then goes back to DRAM even when its bytes did not change; the
 * step's map and mob_map writes land on scattered cells (update_plants rewrites all ten
 * plant cells every step, each mob move two mob_map cells), so storing only changes cuts
 * the write-back traffic. Same bytes either way. */
static inline CRAFTAX_HD void craftax_store_u8(uint8_t *p, uint8_t v) {
    if (*p != v) *p = v;
}

/* Minimum / maximum over the lanes with the comparison `y < x ? y : x` (exact; ties of
 * -0 and +0 may pick either, callers normalise the sign). */
static inline CRAFTAX_HD float craftax_lanes_min_f32(float x, int lanes) {
#ifdef __CUDA_ARCH__
    for (int o = lanes / 2; o > 0; o /= 2) {
        const float y = __shfl_xor_sync(0xffffffffu, x, o);
        x = y < x ? y : x;
    }
#else
    (void)lanes;
#endif
    return x;
}
static inline CRAFTAX_HD float craftax_lanes_max_f32(float x, int lanes) {
#ifdef __CUDA_ARCH__
    for (int o = lanes / 2; o > 0; o /= 2) {
        const float y = __shfl_xor_sync(0xffffffffu, x, o);
        x = y > x ? y : x;
    }
#else
    (void)lanes;
#endif
    return x;
}
static inline CRAFTAX_HD int32_t craftax_lanes_sum_i32(int32_t x, int lanes) {
#ifdef __CUDA_ARCH__
    for (int o = lanes / 2; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
#else
    (void)lanes;
#endif
    return x;
}

/* Bit l set where lane l's flag is set (the lanes' ballot; one lane: flag != 0). */
static inline CRAFTAX_HD uint32_t craftax_lanes_ballot(int flag, int lanes) {
#ifdef __CUDA_ARCH__
    if (lanes > 1) return __ballot_sync(0xffffffffu, flag);
#endif
    (void)lanes;
    return flag != 0;
}

/* Lane 0's value, in every lane. */
static inline CRAFTAX_HD uint32_t craftax_lanes_from_first_u32(uint32_t x, int lanes) {
#ifdef __CUDA_ARCH__
    if (lanes > 1) return __shfl_sync(0xffffffffu, x, 0);
#endif
    (void)lanes;
    return x;
}
static inline CRAFTAX_HD float craftax_lanes_from_first_f32(float x, int lanes) {
    return craftax_bits_f32(craftax_lanes_from_first_u32(craftax_f32_bits(x), lanes));
}

/* Inclusive prefix count of `flag` over lanes 0..lane; *total = count over all lanes. */
static inline CRAFTAX_HD int32_t craftax_lanes_prefix_count(int flag, int lane, int lanes, int32_t *total) {
#ifdef __CUDA_ARCH__
    if (lanes > 1) {
        const unsigned bits = __ballot_sync(0xffffffffu, flag);
        *total = __popc(bits);
        return __popc(bits & (0xffffffffu >> (31 - lane)));
    }
#endif
    (void)lane;
    (void)lanes;
    *total = flag != 0;
    return flag != 0;
}

/* memset(dst, 0, bytes) shared by the lanes (4-byte stores where aligned). */
static inline CRAFTAX_HD void craftax_lanes_zero(void *dst, size_t bytes, int lane, int lanes) {
    if (lanes == 1) {
        memset(dst, 0, bytes);
        return;
    }
    if (((uintptr_t)dst & 3u) == 0 && (bytes & 3u) == 0) {
        uint32_t *w = (uint32_t *)dst;
        for (size_t i = (size_t)lane; i < bytes / 4; i += (size_t)lanes) w[i] = 0u;
    } else {
        uint8_t *b = (uint8_t *)dst;
        for (size_t i = (size_t)lane; i < bytes; i += (size_t)lanes) b[i] = 0u;
    }
}

#endif
