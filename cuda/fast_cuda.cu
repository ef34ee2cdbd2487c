/* fast_cuda.cu: the fast recipe's kernels (fast_cuda.h says what each call computes). */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdio.h>

#include "craftax/obs.h"
#include "fast_cuda.h"

#define CELLS CRAFTAX_FAST_CELLS
#define CHANNELS CRAFTAX_FAST_CELL_CHANNELS
#define CELL_BYTES_AT CRAFTAX_OBS_COMPACT_CELLS /* where the 99 cells' 8-byte words start */
#define MOB_CHANNEL0 (CRAFTAX_NUM_BLOCK_TYPES + CRAFTAX_NUM_ITEM_TYPES)
#define VISIBLE_CHANNEL (CHANNELS - 1)
#define ENCODE_THREADS 256
#define BACKWARD_CELLS 16    /* cells a backward block holds at once, C threads each */
#define BACKWARD_BLOCKS 2048 /* blocks of the backward's grid-stride loop: the partials it reduces */
/* Cells a block of the deterministic backward holds: as many private sums ([84, C] floats each)
 * as fit beside the weights in the 48 KB a block gets without opting in (16, 8, 5, 3 for C = 8,
 * 16, 24, 32). */
template <int C>
__host__ __device__ constexpr int deterministic_cells() {
    return (48 * 1024 / 4 / C - 83) / 84 > 16 ? 16 : (48 * 1024 / 4 / C - 83) / 84;
}
#define GRU_THREADS 256

static_assert(MOB_CHANNEL0 + 40 == VISIBLE_CHANNEL, "obs.h's cell channels: 37 block, 5 item, 40 mob, 1 visible");
static_assert(CRAFTAX_OBS_CHANNELS == CHANNELS, "obs.h's cell has 83 channels");
static_assert(CRAFTAX_OBS_ROWS * CRAFTAX_OBS_COLS == CELLS, "obs.h's view has 99 cells");

static char g_fast_error[512] = "";

static int fast_fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_fast_error, sizeof(g_fast_error), fmt, ap);
    va_end(ap);
    return code;
}

static int launched(const char *what) {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return fast_fail(CRAFTAX_FAST_ERR_CUDA, "%s: %s", what, cudaGetErrorString(err));
    return 0;
}

/* The C pre-activations of one cell word (block, item, visible, 5 mob bytes) from the weights in
 * shared memory: b + the rows of the cell's set channels; an invisible cell has no channel set. */
template <int C>
static __device__ __forceinline__ void cell_preactivation(uint64_t word, const float *w, const float *b,
                                                          float *pre) {
#pragma unroll
    for (int c = 0; c < C; c++) pre[c] = b[c];
    if (!((word >> 16) & 0xFF)) return;
    const int block = (int)(word & 0xFF), item = (int)((word >> 8) & 0xFF);
    const float *wb = w + block * C, *wi = w + (CRAFTAX_NUM_BLOCK_TYPES + item) * C, *wv = w + VISIBLE_CHANNEL * C;
    const bool has_block = block < CRAFTAX_NUM_BLOCK_TYPES, has_item = item < CRAFTAX_NUM_ITEM_TYPES;
#pragma unroll
    for (int c = 0; c < C; c++) pre[c] += (has_block ? wb[c] : 0.0f) + (has_item ? wi[c] : 0.0f) + wv[c];
    uint64_t mobs = word >> 24;
    while (mobs) {
        const int k = __ffsll((long long)mobs) - 1;
        mobs &= mobs - 1;
        const float *wm = w + (MOB_CHANNEL0 + k) * C;
#pragma unroll
        for (int c = 0; c < C; c++) pre[c] += wm[c];
    }
}

/* A thread per (record, slot): slots 0..98 are cells (C features each), the rest the scalar part
 * in runs of 8 values (16-byte stores). */
template <int C>
__global__ void __launch_bounds__(ENCODE_THREADS) fast_encode_cells_kernel(const uint8_t *records, int64_t rows,
                                                                          int32_t record_bytes, const float *weight,
                                                                          const float *bias, __nv_bfloat16 *features,
                                                                          int32_t row_width) {
    __shared__ float w[CHANNELS * C], b[C];
    for (int i = threadIdx.x; i < CHANNELS * C; i += blockDim.x) w[i] = weight[i];
    for (int i = threadIdx.x; i < C; i += blockDim.x) b[i] = bias[i];
    __syncthreads();
    const int scalar_runs = (row_width - CELLS * C) / 8, slots = CELLS + scalar_runs;
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= rows * slots) return;
    const int64_t row = g / slots;
    const int slot = (int)(g - row * slots);
    const uint8_t *rec = records + row * record_bytes;
    __nv_bfloat16 *out = features + row * row_width;
    if (slot < CELLS) {
        const uint64_t word = *(const uint64_t *)(rec + CELL_BYTES_AT + slot * 8);
        float pre[C];
        cell_preactivation<C>(word, w, b, pre);
        __align__(16) __nv_bfloat16 v[C];
#pragma unroll
        for (int c = 0; c < C; c++) v[c] = __float2bfloat16_rn(fmaxf(pre[c], 0.0f));
#pragma unroll
        for (int q = 0; q < C / 8; q++) ((uint4 *)(out + slot * C))[q] = ((const uint4 *)v)[q];
    } else {
        const int first = (slot - CELLS) * 8; /* scalar index of the run's first value */
        const float *scalars = (const float *)rec;
        __align__(16) __nv_bfloat16 v[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            v[j] = __float2bfloat16_rn(first + j < CRAFTAX_FAST_SCALARS ? scalars[first + j] : 0.0f);
        *(uint4 *)(out + CELLS * C + first) = *(const uint4 *)v;
    }
}

template <typename G>
static __device__ __forceinline__ float grad_value(const G *p) {
    return (float)*p;
}
template <>
__device__ __forceinline__ float grad_value<__nv_bfloat16>(const __nv_bfloat16 *p) {
    return __bfloat162float(*p);
}

/* A thread per (cell in flight, column): a block holds BACKWARD_CELLS cells at once, C threads
 * each, and walks cells (record, cell) with a grid stride. Thread c adds column c of every cell's
 * gradient (through the ReLU) into the rows of the cell's set channels: block, item and mob rows
 * by shared-memory atomics (the C threads of a cell hit C consecutive words, so a warp's atomics
 * collide only between its cells), the bias and visible rows in the thread's registers. The
 * column's pre-activation is summed in cell_preactivation's order, so the ReLU mask is the forward's.
 * partials[block] = the block's sums. */
/* EXACT: the deterministic variant (deterministic_cells<C>() slots a block, each slot its own shared
 * sums, written by its C threads alone, so no atomics; the slots' sums are added in slot order):
 * the same additions in the same order on every run. */
template <int C, typename G, bool EXACT>
__global__ void __launch_bounds__((EXACT ? deterministic_cells<C>() : BACKWARD_CELLS) * C) fast_encode_cells_backward_kernel(
    const uint8_t *records, int64_t rows, int32_t record_bytes, const float *weight, const float *bias,
    const G *grad, int32_t row_width, float *partials) {
    constexpr int SLOTS = EXACT ? deterministic_cells<C>() : BACKWARD_CELLS;
    constexpr int SUMS = (CHANNELS + 1) * C; /* row CHANNELS: the bias */
    __shared__ float w[CHANNELS * C], sums[EXACT ? SLOTS * SUMS : SUMS];
    for (int i = threadIdx.x; i < CHANNELS * C; i += blockDim.x) w[i] = weight[i];
    for (int i = threadIdx.x; i < (EXACT ? SLOTS * SUMS : SUMS); i += blockDim.x) sums[i] = 0.0f;
    __syncthreads();
    const int c = threadIdx.x % C, slot = threadIdx.x / C;
    float *gw = EXACT ? sums + slot * SUMS : sums;
    const float b = bias[c];
    float g_bias = 0.0f, g_visible = 0.0f;
    const int64_t total = rows * CELLS;
    for (int64_t e = (int64_t)blockIdx.x * SLOTS + slot; e < total; e += (int64_t)gridDim.x * SLOTS) {
        const int64_t row = e / CELLS;
        const int cell = (int)(e - row * CELLS);
        const uint64_t word = *(const uint64_t *)(records + row * record_bytes + CELL_BYTES_AT + cell * 8);
        const bool visible = (word >> 16) & 0xFF;
        const int block = (int)(word & 0xFF), item = (int)((word >> 8) & 0xFF);
        const bool has_block = visible && block < CRAFTAX_NUM_BLOCK_TYPES;
        const bool has_item = visible && item < CRAFTAX_NUM_ITEM_TYPES;
        const uint64_t mobs = visible ? word >> 24 : 0;
        float pre = b;
        if (visible) {
            pre += (has_block ? w[block * C + c] : 0.0f) + (has_item ? w[(CRAFTAX_NUM_BLOCK_TYPES + item) * C + c] : 0.0f) +
                   w[VISIBLE_CHANNEL * C + c];
            for (uint64_t m = mobs; m; m &= m - 1) pre += w[(MOB_CHANNEL0 + __ffsll((long long)m) - 1) * C + c];
        }
        const float d = pre > 0.0f ? grad_value<G>(grad + row * row_width + cell * C + c) : 0.0f;
        g_bias += d;
        if (!visible) continue;
        g_visible += d;
        if (EXACT) { /* column c of this slot's sums is thread (slot, c)'s alone */
            if (has_block) gw[block * C + c] += d;
            if (has_item) gw[(CRAFTAX_NUM_BLOCK_TYPES + item) * C + c] += d;
            for (uint64_t m = mobs; m; m &= m - 1) gw[(MOB_CHANNEL0 + __ffsll((long long)m) - 1) * C + c] += d;
        } else {
            if (has_block) atomicAdd(&gw[block * C + c], d);
            if (has_item) atomicAdd(&gw[(CRAFTAX_NUM_BLOCK_TYPES + item) * C + c], d);
            for (uint64_t m = mobs; m; m &= m - 1) atomicAdd(&gw[(MOB_CHANNEL0 + __ffsll((long long)m) - 1) * C + c], d);
        }
    }
    if (EXACT) {
        gw[CHANNELS * C + c] += g_bias;
        gw[VISIBLE_CHANNEL * C + c] += g_visible;
    } else {
        atomicAdd(&gw[CHANNELS * C + c], g_bias);
        atomicAdd(&gw[VISIBLE_CHANNEL * C + c], g_visible);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < SUMS; i += blockDim.x) {
        float v = sums[i];
        if (EXACT)
            for (int k = 1; k < SLOTS; k++) v += sums[k * SUMS + i];
        partials[(int64_t)blockIdx.x * SUMS + i] = v;
    }
}

/* out[i] = the sum over blocks of partials[block, i], in block order. */
__global__ void fast_reduce_partials_kernel(const float *partials, int blocks, int width, float *grad_weight,
                                            float *grad_bias, int weight_values) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= width) return;
    float s = 0.0f;
    for (int k = 0; k < blocks; k++) s += partials[(int64_t)k * width + i];
    if (i < weight_values)
        grad_weight[i] = s;
    else
        grad_bias[i - weight_values] = s;
}

/* Both variants use the same grid (the partials' size does not depend on the variant). */
static int backward_blocks(int64_t rows) {
    const int64_t needed = (rows * CELLS + BACKWARD_CELLS - 1) / BACKWARD_CELLS;
    return (int)(needed < BACKWARD_BLOCKS ? (needed > 0 ? needed : 1) : BACKWARD_BLOCKS);
}

static int check_encoder_args(const uint8_t *records, int64_t rows, int32_t record_bytes, const float *weight,
                              const float *bias, int32_t cell_dim, const void *features, int32_t row_width) {
    if (!records || !weight || !bias || !features) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "a NULL pointer");
    if (rows < 0) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "rows must be >= 0, got %lld", (long long)rows);
    if (record_bytes < CRAFTAX_OBS_COMPACT_SIZE || record_bytes % 16)
        return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "record_bytes must be a multiple of 16 >= %d, got %d",
                         CRAFTAX_OBS_COMPACT_SIZE, record_bytes);
    if (cell_dim < 8 || cell_dim > CRAFTAX_FAST_MAX_CELL_DIM || cell_dim % 8)
        return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "cell_dim must be 8, 16, 24 or 32, got %d", cell_dim);
    if (row_width < CELLS * cell_dim + CRAFTAX_FAST_SCALARS || row_width % 8)
        return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "row_width must be a multiple of 8 >= %d, got %d",
                         CELLS * cell_dim + CRAFTAX_FAST_SCALARS, row_width);
    if (((uintptr_t)records | (uintptr_t)features) & 15u)
        return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "records and features must be 16-byte aligned");
    return 0;
}

#define DISPATCH_CELL_DIM(C_VAR, CALL)        \
    switch (C_VAR) {                          \
    case 8: { constexpr int C = 8; CALL; } break;   \
    case 16: { constexpr int C = 16; CALL; } break; \
    case 24: { constexpr int C = 24; CALL; } break; \
    default: { constexpr int C = 32; CALL; } break; \
    }

/* -- GRU sequence --------------------------------------------------------------------------
 * A thread per 4 consecutive units of a row (16-byte loads of each gate's part). The forward and
 * the backward's recomputation share gru_gates, so they get the same bits. The per-group
 * functions are __host__ __device__: a host program can include this file and run them over CPU
 * memory against a reference. */

static __host__ __device__ __forceinline__ void load4(const float *p, float v[4]) {
    const float4 q = *(const float4 *)p;
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
}

static __host__ __device__ __forceinline__ void store4(float *p, const float v[4]) {
    *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
}

static __host__ __device__ __forceinline__ void store4_bf16(__nv_bfloat16 *p, const float v[4]) {
    __nv_bfloat162 *q = (__nv_bfloat162 *)p;
    q[0] = __floats2bfloat162_rn(v[0], v[1]);
    q[1] = __floats2bfloat162_rn(v[2], v[3]);
}

static __host__ __device__ __forceinline__ float gru_sigmoid(float a) { return 1.0f / (1.0f + expf(-a)); }

struct GruGates {
    float r, z, n;
    float hn; /* gh_n + bhn: what r scales */
};

static __host__ __device__ __forceinline__ GruGates gru_gates(const float x[3], const float gh[3], const float bi[3],
                                                             float bhn) {
    GruGates g;
    g.r = gru_sigmoid(x[0] + bi[0] + gh[0]);
    g.z = gru_sigmoid(x[1] + bi[1] + gh[1]);
    g.hn = gh[2] + bhn;
    g.n = tanhf(x[2] + bi[2] + g.r * g.hn);
    return g;
}

/* One step's pointers, already offset to step t (gate rows: [B, 3H]; unit rows: [B, H]). */
struct GruForwardStep {
    const float *x, *gh, *h_prev, *keep, *bi, *bhn;
    const float *keep_next;        /* NULL at the last step */
    float *h, *h_last;             /* h_last: NULL but at the last step */
    __nv_bfloat16 *operand_next;   /* NULL at the last step */
    int64_t batch;
    int hidden;
};

struct GruBackwardStep {
    const float *x, *gh, *h_prev, *keep, *bi, *bhn;
    const float *grad_h;           /* dL/dh_t from the outputs hs[t]; NULL: zero */
    const float *carry;            /* last step: dL/dh_last (NULL: zero); else step t+1's grad_hp_direct */
    const float *carry_gemm;       /* NULL at the last step; else step t+1's grad_hp_gemm */
    const float *keep_next;        /* NULL at the last step */
    float *grad_x, *grad_hn, *grad_hp_direct; /* grad_hp_direct may be carry: read before written */
    __nv_bfloat16 *grad_gh;
    int64_t batch;
    int hidden;
};

/* The 3 gates' 4 values at unit j of a [B, 3H] row. */
static __host__ __device__ __forceinline__ void load_gates4(const float *row, int hidden, int j, float v[3][4]) {
    for (int q = 0; q < 3; q++) load4(row + q * hidden + j, v[q]);
}

static __host__ __device__ __forceinline__ void gru_forward_group(const GruForwardStep &s, int64_t g) {
    const int H = s.hidden;
    const int64_t row = g / (H / 4);
    const int j = (int)(g - row * (H / 4)) * 4;
    const int64_t unit = row * H + j;
    float x[3][4], gh[3][4], bi[3][4], bhn[4], h_prev[4], h[4];
    load_gates4(s.x + row * 3 * H, H, j, x);
    load_gates4(s.gh + row * 3 * H, H, j, gh);
    load_gates4(s.bi, H, j, bi);
    load4(s.bhn + j, bhn);
    load4(s.h_prev + unit, h_prev);
    const float keep = s.keep[row];
    for (int k = 0; k < 4; k++) {
        const float xk[3] = {x[0][k], x[1][k], x[2][k]}, ghk[3] = {gh[0][k], gh[1][k], gh[2][k]};
        const float bik[3] = {bi[0][k], bi[1][k], bi[2][k]};
        const float hp = h_prev[k] * keep;
        const GruGates a = gru_gates(xk, ghk, bik, bhn[k]);
        h[k] = (1.0f - a.z) * a.n + a.z * hp;
    }
    store4(s.h + unit, h);
    if (s.h_last) store4(s.h_last + unit, h);
    if (s.operand_next) {
        const float keep_next = s.keep_next[row];
        float hp_next[4];
        for (int k = 0; k < 4; k++) hp_next[k] = h[k] * keep_next;
        store4_bf16(s.operand_next + unit, hp_next);
    }
}

static __host__ __device__ __forceinline__ void gru_backward_group(const GruBackwardStep &s, int64_t g) {
    const int H = s.hidden;
    const int64_t row = g / (H / 4);
    const int j = (int)(g - row * (H / 4)) * 4;
    const int64_t unit = row * H + j;
    float x[3][4], gh[3][4], bi[3][4], bhn[4], h_prev[4];
    float grad_h[4] = {0.0f, 0.0f, 0.0f, 0.0f}, carry[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    load_gates4(s.x + row * 3 * H, H, j, x);
    load_gates4(s.gh + row * 3 * H, H, j, gh);
    load_gates4(s.bi, H, j, bi);
    load4(s.bhn + j, bhn);
    load4(s.h_prev + unit, h_prev);
    if (s.grad_h) load4(s.grad_h + unit, grad_h);
    if (s.carry) load4(s.carry + unit, carry);
    if (s.carry_gemm) { /* step t+1's dL/dhp through its mask: dL/dh_t's part from step t+1 */
        float gemm[4];
        load4(s.carry_gemm + unit, gemm);
        const float keep_next = s.keep_next[row];
        for (int k = 0; k < 4; k++) carry[k] = keep_next * (carry[k] + gemm[k]);
    }
    const float keep = s.keep[row];
    float grad_x[3][4], grad_gh[3][4], grad_direct[4];
    for (int k = 0; k < 4; k++) {
        const float xk[3] = {x[0][k], x[1][k], x[2][k]}, ghk[3] = {gh[0][k], gh[1][k], gh[2][k]};
        const float bik[3] = {bi[0][k], bi[1][k], bi[2][k]};
        const float hp = h_prev[k] * keep;
        const GruGates a = gru_gates(xk, ghk, bik, bhn[k]);
        const float dh = grad_h[k] + carry[k];
        const float dn = dh * (1.0f - a.z), dz = dh * (hp - a.n);
        const float dpre_n = dn * (1.0f - a.n * a.n);
        const float dpre_r = dpre_n * a.hn * a.r * (1.0f - a.r);
        const float dpre_z = dz * a.z * (1.0f - a.z);
        grad_x[0][k] = dpre_r;
        grad_x[1][k] = dpre_z;
        grad_x[2][k] = dpre_n;
        grad_gh[0][k] = dpre_r;
        grad_gh[1][k] = dpre_z;
        grad_gh[2][k] = dpre_n * a.r;
        grad_direct[k] = dh * a.z;
    }
    float *gx = s.grad_x + row * 3 * H + j;
    __nv_bfloat16 *ggh = s.grad_gh + row * 3 * H + j;
    for (int q = 0; q < 3; q++) {
        store4(gx + q * H, grad_x[q]);
        store4_bf16(ggh + q * H, grad_gh[q]);
    }
    if (s.grad_hn) store4(s.grad_hn + unit, grad_gh[2]);
    store4(s.grad_hp_direct + unit, grad_direct);
}

/* operand = bf16(h * keep) at one group. */
static __host__ __device__ __forceinline__ void gru_begin_group(const float *h0, const float *keep,
                                                                __nv_bfloat16 *operand, int hidden, int64_t g) {
    const int64_t row = g / (hidden / 4), unit = g * 4;
    float h[4];
    load4(h0 + unit, h);
    const float k0 = keep[row];
    for (int k = 0; k < 4; k++) h[k] *= k0;
    store4_bf16(operand + unit, h);
}

static __host__ __device__ __forceinline__ void gru_end_group(const float *direct, const float *gemm,
                                                              const float *keep, float *grad_h0, int hidden,
                                                              int64_t g) {
    const int64_t row = g / (hidden / 4), unit = g * 4;
    float d[4], m[4];
    load4(direct + unit, d);
    load4(gemm + unit, m);
    const float k0 = keep[row];
    for (int k = 0; k < 4; k++) d[k] = k0 * (d[k] + m[k]);
    store4(grad_h0 + unit, d);
}

__global__ void __launch_bounds__(GRU_THREADS) fast_gru_forward_kernel(GruForwardStep s) {
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g < s.batch * (s.hidden / 4)) gru_forward_group(s, g);
}

__global__ void __launch_bounds__(GRU_THREADS) fast_gru_backward_kernel(GruBackwardStep s) {
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g < s.batch * (s.hidden / 4)) gru_backward_group(s, g);
}

__global__ void __launch_bounds__(GRU_THREADS) fast_gru_begin_kernel(const float *h0, const float *keep,
                                                                     __nv_bfloat16 *operand, int hidden,
                                                                     int64_t groups) {
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g < groups) gru_begin_group(h0, keep, operand, hidden, g);
}

__global__ void __launch_bounds__(GRU_THREADS) fast_gru_end_kernel(const float *direct, const float *gemm,
                                                                   const float *keep, float *grad_h0, int hidden,
                                                                   int64_t groups) {
    const int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (g < groups) gru_end_group(direct, gemm, keep, grad_h0, hidden, g);
}

/* -- MinGRU sequence -------------------------------------------------------------------------
 * A thread per unit of a row, stepping through time in registers: the whole recurrence in one
 * launch each way. The backward recomputes z and c with the forward's arithmetic (mingru_gates). */
static __device__ __forceinline__ float to_float(float v) { return v; }
static __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
static __device__ __forceinline__ void from_float(float *p, float v) { *p = v; }
static __device__ __forceinline__ void from_float(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

template <typename G>
static __device__ __forceinline__ void mingru_gates(const G *row, int hidden, int j, float *z, float *c) {
    *z = gru_sigmoid(to_float(row[j]));
    *c = tanhf(to_float(row[hidden + j]));
}

template <typename G>
__global__ void __launch_bounds__(GRU_THREADS) fast_mingru_forward_kernel(const G *gates, const float *keeps,
                                                                          const float *h0, float *hs, float *h_last,
                                                                          int64_t steps, int64_t batch, int hidden) {
    const int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= batch * hidden) return;
    const int64_t row = u / hidden;
    const int j = (int)(u - row * hidden);
    float h = h0[u];
    for (int64_t t = 0; t < steps; t++) {
        float z, c;
        mingru_gates(gates + (t * batch + row) * 2 * hidden, hidden, j, &z, &c);
        const float hp = h * keeps[t * batch + row];
        h = (1.0f - z) * hp + z * c;
        hs[t * batch * hidden + u] = h;
    }
    if (h_last) h_last[u] = h;
}

template <typename G>
__global__ void __launch_bounds__(GRU_THREADS) fast_mingru_backward_kernel(
    const G *gates, const float *keeps, const float *h0, const float *hs, const float *grad_hs,
    const float *grad_h_last, G *grad_gates, float *grad_h0, int64_t steps, int64_t batch, int hidden) {
    const int64_t u = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= batch * hidden) return;
    const int64_t row = u / hidden;
    const int j = (int)(u - row * hidden);
    float carry = grad_h_last ? grad_h_last[u] : 0.0f; /* dL/dh_t from the steps after t */
    for (int64_t t = steps - 1; t >= 0; t--) {
        const int64_t gate_row = (t * batch + row) * 2 * hidden;
        float z, c;
        mingru_gates(gates + gate_row, hidden, j, &z, &c);
        const float keep = keeps[t * batch + row];
        const float hp = (t ? hs[(t - 1) * batch * hidden + u] : h0[u]) * keep;
        const float dh = (grad_hs ? grad_hs[t * batch * hidden + u] : 0.0f) + carry;
        from_float(grad_gates + gate_row + j, dh * (c - hp) * z * (1.0f - z));
        from_float(grad_gates + gate_row + hidden + j, dh * z * (1.0f - c * c));
        carry = dh * (1.0f - z) * keep;
    }
    if (grad_h0) grad_h0[u] = carry;
}

static int check_mingru_args(const void *gates, const float *keeps, const float *h0, int64_t steps, int64_t batch,
                             int32_t hidden) {
    if (!gates || !keeps || !h0) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "mingru: a NULL pointer");
    if (steps < 1) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "steps must be >= 1, got %lld", (long long)steps);
    if (batch < 0) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "batch must be >= 0, got %lld", (long long)batch);
    if (hidden < 1) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "hidden must be >= 1, got %d", hidden);
    if (batch * hidden / GRU_THREADS >= INT32_MAX)
        return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "batch * hidden too large: %lld", (long long)(batch * hidden));
    return 0;
}

static unsigned mingru_blocks(int64_t batch, int32_t hidden) {
    return (unsigned)((batch * hidden + GRU_THREADS - 1) / GRU_THREADS);
}

static int check_gru_shape(int64_t steps, int64_t batch, int32_t hidden, int64_t t) {
    if (steps < 1) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "steps must be >= 1, got %lld", (long long)steps);
    if (batch < 0) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "batch must be >= 0, got %lld", (long long)batch);
    if (hidden < 4 || hidden % 4)
        return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "hidden must be a positive multiple of 4, got %d", hidden);
    if (t < 0 || t >= steps)
        return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "t must be in [0, %lld), got %lld", (long long)steps, (long long)t);
    if (batch * (hidden / 4) / GRU_THREADS >= INT32_MAX)
        return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "batch * hidden too large: %lld", (long long)(batch * hidden));
    return 0;
}

/* 0 where every non-NULL pointer of `p` is `align`-byte aligned. */
static int check_aligned(const char *what, const void *const *p, int count, unsigned align) {
    for (int i = 0; i < count; i++)
        if ((uintptr_t)p[i] % align)
            return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "%s: the %s arrays must be %u-byte aligned", what,
                             align == 16 ? "float" : "bfloat16", align);
    return 0;
}

/* What both directions read at step t: the fields GruForwardStep and GruBackwardStep share. */
template <typename Step>
static void gru_step_inputs(Step *s, const float *xs, const float *hidden_gates, const float *h0, const float *keeps,
                            const float *bias_i, const float *bias_hn, const float *hs, int64_t steps, int64_t batch,
                            int32_t hidden, int64_t t) {
    const int64_t units = batch * hidden, gates = 3 * units;
    s->x = xs + t * gates;
    s->gh = hidden_gates + t * gates;
    s->h_prev = t ? hs + (t - 1) * units : h0;
    s->keep = keeps + t * batch;
    s->bi = bias_i;
    s->bhn = bias_hn;
    s->keep_next = t == steps - 1 ? NULL : keeps + (t + 1) * batch;
    s->batch = batch;
    s->hidden = hidden;
}

static int gru_forward_step_args(const float *xs, const float *hidden_gates, const float *h0, const float *keeps,
                                 const float *bias_i, const float *bias_hn, float *hs, float *h_last, void *operands,
                                 int64_t steps, int64_t batch, int32_t hidden, int64_t t, GruForwardStep *s) {
    int rc = check_gru_shape(steps, batch, hidden, t);
    if (rc) return rc;
    if (!xs || !hidden_gates || !h0 || !keeps || !bias_i || !bias_hn || !hs || !operands)
        return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "gru_forward_step: a NULL pointer");
    const void *floats[] = {xs, hidden_gates, h0, bias_i, bias_hn, hs, h_last}, *halves[] = {operands};
    if ((rc = check_aligned("gru_forward_step", floats, 7, 16)) || (rc = check_aligned("gru_forward_step", halves, 1, 8)))
        return rc;
    gru_step_inputs(s, xs, hidden_gates, h0, keeps, bias_i, bias_hn, hs, steps, batch, hidden, t);
    const int64_t units = batch * hidden;
    const bool last = t == steps - 1;
    s->h = hs + t * units;
    s->h_last = last ? h_last : NULL;
    s->operand_next = last ? NULL : (__nv_bfloat16 *)operands + (t + 1) * units;
    return 0;
}

static int gru_backward_step_args(const float *xs, const float *hidden_gates, const float *h0, const float *keeps,
                                  const float *bias_i, const float *bias_hn, const float *hs, const float *grad_hs,
                                  const float *grad_h_last, float *grad_hp_direct, const float *grad_hp_gemm,
                                  float *grad_xs, void *grad_hidden_gates, float *grad_hn, int64_t steps,
                                  int64_t batch, int32_t hidden, int64_t t, GruBackwardStep *s) {
    int rc = check_gru_shape(steps, batch, hidden, t);
    if (rc) return rc;
    if (!xs || !hidden_gates || !h0 || !keeps || !bias_i || !bias_hn || !hs || !grad_hp_direct || !grad_hp_gemm ||
        !grad_xs || !grad_hidden_gates)
        return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "gru_backward_step: a NULL pointer");
    const void *floats[] = {xs, hidden_gates, h0, bias_i, bias_hn, hs, grad_hs, grad_h_last, grad_hp_direct,
                            grad_hp_gemm, grad_xs, grad_hn},
               *halves[] = {grad_hidden_gates};
    if ((rc = check_aligned("gru_backward_step", floats, 12, 16)) ||
        (rc = check_aligned("gru_backward_step", halves, 1, 8)))
        return rc;
    gru_step_inputs(s, xs, hidden_gates, h0, keeps, bias_i, bias_hn, hs, steps, batch, hidden, t);
    const int64_t units = batch * hidden, gates = 3 * units;
    const bool last = t == steps - 1;
    s->grad_h = grad_hs ? grad_hs + t * units : NULL;
    s->carry = last ? grad_h_last : grad_hp_direct;
    s->carry_gemm = last ? NULL : grad_hp_gemm;
    s->grad_x = grad_xs + t * gates;
    s->grad_gh = (__nv_bfloat16 *)grad_hidden_gates + t * gates;
    s->grad_hn = grad_hn ? grad_hn + t * units : NULL;
    s->grad_hp_direct = grad_hp_direct;
    return 0;
}

static unsigned gru_blocks(int64_t batch, int32_t hidden) {
    return (unsigned)((batch * (hidden / 4) + GRU_THREADS - 1) / GRU_THREADS);
}

template <typename G, bool EXACT>
static void launch_encode_backward(int32_t cell_dim, int blocks, cudaStream_t s, const uint8_t *records, int64_t rows,
                                   int32_t record_bytes, const float *weight, const float *bias, const void *grad,
                                   int32_t row_width, float *part) {
    DISPATCH_CELL_DIM(cell_dim, (fast_encode_cells_backward_kernel<C, G, EXACT><<<blocks, (EXACT ? deterministic_cells<C>() : BACKWARD_CELLS) * C, 0, s>>>(
                                    records, rows, record_bytes, weight, bias, (const G *)grad, row_width, part)));
}

extern "C" {

int craftax_fast_api_version(void) { return CRAFTAX_FAST_API_VERSION; }

const char *craftax_fast_last_error(void) { return g_fast_error; }

int craftax_fast_encode_cells(const uint8_t *records, int64_t rows, int32_t record_bytes, const float *weight,
                              const float *bias, int32_t cell_dim, void *features, int32_t row_width,
                              uintptr_t stream) {
    const int rc = check_encoder_args(records, rows, record_bytes, weight, bias, cell_dim, features, row_width);
    if (rc) return rc;
    if (rows == 0) return 0;
    const int64_t slots = CELLS + (row_width - CELLS * cell_dim) / 8;
    const unsigned blocks = (unsigned)((rows * slots + ENCODE_THREADS - 1) / ENCODE_THREADS);
    cudaStream_t s = (cudaStream_t)stream;
    DISPATCH_CELL_DIM(cell_dim, (fast_encode_cells_kernel<C><<<blocks, ENCODE_THREADS, 0, s>>>(
                                    records, rows, record_bytes, weight, bias, (__nv_bfloat16 *)features, row_width)));
    return launched("encode_cells");
}

size_t craftax_fast_encode_cells_partials_bytes(int64_t rows, int32_t cell_dim) {
    return (size_t)backward_blocks(rows) * (CHANNELS + 1) * (size_t)cell_dim * sizeof(float);
}

int craftax_fast_encode_cells_backward(const uint8_t *records, int64_t rows, int32_t record_bytes,
                                       const float *weight, const float *bias, int32_t cell_dim,
                                       const void *grad_features, int32_t grad_is_float, int32_t row_width,
                                       int32_t deterministic, float *grad_weight, float *grad_bias, void *partials,
                                       uintptr_t stream) {
    int rc = check_encoder_args(records, rows, record_bytes, weight, bias, cell_dim, grad_features, row_width);
    if (rc) return rc;
    if (!grad_weight || !grad_bias || !partials) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "a NULL pointer");
    cudaStream_t s = (cudaStream_t)stream;
    const int blocks = backward_blocks(rows), width = (CHANNELS + 1) * cell_dim;
    float *part = (float *)partials;
    if (rows == 0) {
        if (cudaMemsetAsync(part, 0, (size_t)width * sizeof(float), s) != cudaSuccess) return launched("memset");
    } else if (grad_is_float) {
        (deterministic ? launch_encode_backward<float, true> : launch_encode_backward<float, false>)(
            cell_dim, blocks, s, records, rows, record_bytes, weight, bias, grad_features, row_width, part);
    } else {
        (deterministic ? launch_encode_backward<__nv_bfloat16, true> : launch_encode_backward<__nv_bfloat16, false>)(
            cell_dim, blocks, s, records, rows, record_bytes, weight, bias, grad_features, row_width, part);
    }
    if ((rc = launched("encode_cells_backward"))) return rc;
    fast_reduce_partials_kernel<<<(width + 127) / 128, 128, 0, s>>>(part, rows == 0 ? 1 : blocks, width,
                                                                    grad_weight, grad_bias, CHANNELS * cell_dim);
    return launched("encode_cells_backward (reduce)");
}

int craftax_fast_gru_forward_begin(const float *h0, const float *keeps, void *operands, int64_t batch,
                                   int32_t hidden, uintptr_t stream) {
    int rc = check_gru_shape(1, batch, hidden, 0);
    if (rc) return rc;
    if (!h0 || !keeps || !operands) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "gru_forward_begin: a NULL pointer");
    const void *floats[] = {h0}, *halves[] = {operands};
    if ((rc = check_aligned("gru_forward_begin", floats, 1, 16)) || (rc = check_aligned("gru_forward_begin", halves, 1, 8)))
        return rc;
    if (batch == 0) return 0;
    fast_gru_begin_kernel<<<gru_blocks(batch, hidden), GRU_THREADS, 0, (cudaStream_t)stream>>>(
        h0, keeps, (__nv_bfloat16 *)operands, hidden, batch * (hidden / 4));
    return launched("gru_forward_begin");
}

int craftax_fast_gru_forward_step(const float *xs, const float *hidden_gates, const float *h0, const float *keeps,
                                  const float *bias_i, const float *bias_hn, float *hs, float *h_last,
                                  void *operands, int64_t steps, int64_t batch, int32_t hidden, int64_t t,
                                  uintptr_t stream) {
    GruForwardStep s;
    const int rc = gru_forward_step_args(xs, hidden_gates, h0, keeps, bias_i, bias_hn, hs, h_last, operands, steps,
                                         batch, hidden, t, &s);
    if (rc) return rc;
    if (batch == 0) return 0;
    fast_gru_forward_kernel<<<gru_blocks(batch, hidden), GRU_THREADS, 0, (cudaStream_t)stream>>>(s);
    return launched("gru_forward_step");
}

int craftax_fast_gru_backward_step(const float *xs, const float *hidden_gates, const float *h0, const float *keeps,
                                   const float *bias_i, const float *bias_hn, const float *hs, const float *grad_hs,
                                   const float *grad_h_last, float *grad_hp_direct, const float *grad_hp_gemm,
                                   float *grad_xs, void *grad_hidden_gates, float *grad_hn, int64_t steps,
                                   int64_t batch, int32_t hidden, int64_t t, uintptr_t stream) {
    GruBackwardStep s;
    const int rc = gru_backward_step_args(xs, hidden_gates, h0, keeps, bias_i, bias_hn, hs, grad_hs, grad_h_last,
                                          grad_hp_direct, grad_hp_gemm, grad_xs, grad_hidden_gates, grad_hn, steps,
                                          batch, hidden, t, &s);
    if (rc) return rc;
    if (batch == 0) return 0;
    fast_gru_backward_kernel<<<gru_blocks(batch, hidden), GRU_THREADS, 0, (cudaStream_t)stream>>>(s);
    return launched("gru_backward_step");
}

int craftax_fast_gru_backward_end(const float *grad_hp_direct, const float *grad_hp_gemm, const float *keeps,
                                  float *grad_h0, int64_t batch, int32_t hidden, uintptr_t stream) {
    int rc = check_gru_shape(1, batch, hidden, 0);
    if (rc) return rc;
    if (!grad_hp_direct || !grad_hp_gemm || !keeps || !grad_h0)
        return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "gru_backward_end: a NULL pointer");
    const void *floats[] = {grad_hp_direct, grad_hp_gemm, grad_h0};
    if ((rc = check_aligned("gru_backward_end", floats, 3, 16))) return rc;
    if (batch == 0) return 0;
    fast_gru_end_kernel<<<gru_blocks(batch, hidden), GRU_THREADS, 0, (cudaStream_t)stream>>>(
        grad_hp_direct, grad_hp_gemm, keeps, grad_h0, hidden, batch * (hidden / 4));
    return launched("gru_backward_end");
}

int craftax_fast_mingru_forward(const void *gates, int32_t gates_are_float, const float *keeps, const float *h0,
                                float *hs, float *h_last, int64_t steps, int64_t batch, int32_t hidden,
                                uintptr_t stream) {
    int rc = check_mingru_args(gates, keeps, h0, steps, batch, hidden);
    if (rc) return rc;
    if (!hs) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "mingru_forward: hs is NULL");
    if (batch == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (gates_are_float)
        fast_mingru_forward_kernel<float><<<mingru_blocks(batch, hidden), GRU_THREADS, 0, s>>>(
            (const float *)gates, keeps, h0, hs, h_last, steps, batch, hidden);
    else
        fast_mingru_forward_kernel<__nv_bfloat16><<<mingru_blocks(batch, hidden), GRU_THREADS, 0, s>>>(
            (const __nv_bfloat16 *)gates, keeps, h0, hs, h_last, steps, batch, hidden);
    return launched("mingru_forward");
}

int craftax_fast_mingru_backward(const void *gates, int32_t gates_are_float, const float *keeps, const float *h0,
                                 const float *hs, const float *grad_hs, const float *grad_h_last, void *grad_gates,
                                 float *grad_h0, int64_t steps, int64_t batch, int32_t hidden, uintptr_t stream) {
    int rc = check_mingru_args(gates, keeps, h0, steps, batch, hidden);
    if (rc) return rc;
    if (!hs || !grad_gates) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "mingru_backward: a NULL pointer");
    if (batch == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (gates_are_float)
        fast_mingru_backward_kernel<float><<<mingru_blocks(batch, hidden), GRU_THREADS, 0, s>>>(
            (const float *)gates, keeps, h0, hs, grad_hs, grad_h_last, (float *)grad_gates, grad_h0, steps, batch,
            hidden);
    else
        fast_mingru_backward_kernel<__nv_bfloat16><<<mingru_blocks(batch, hidden), GRU_THREADS, 0, s>>>(
            (const __nv_bfloat16 *)gates, keeps, h0, hs, grad_hs, grad_h_last, (__nv_bfloat16 *)grad_gates, grad_h0,
            steps, batch, hidden);
    return launched("mingru_backward");
}

}  // extern "C"
