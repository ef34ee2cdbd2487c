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
template <int C, typename G>
__global__ void __launch_bounds__(BACKWARD_CELLS * C) fast_encode_cells_backward_kernel(
    const uint8_t *records, int64_t rows, int32_t record_bytes, const float *weight, const float *bias,
    const G *grad, int32_t row_width, float *partials) {
    __shared__ float w[CHANNELS * C], gw[(CHANNELS + 1) * C]; /* gw row CHANNELS: the bias */
    for (int i = threadIdx.x; i < CHANNELS * C; i += blockDim.x) w[i] = weight[i];
    for (int i = threadIdx.x; i < (CHANNELS + 1) * C; i += blockDim.x) gw[i] = 0.0f;
    __syncthreads();
    const int c = threadIdx.x % C, slot = threadIdx.x / C;
    const float b = bias[c];
    float g_bias = 0.0f, g_visible = 0.0f;
    const int64_t total = rows * CELLS;
    for (int64_t e = (int64_t)blockIdx.x * BACKWARD_CELLS + slot; e < total; e += (int64_t)gridDim.x * BACKWARD_CELLS) {
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
        if (has_block) atomicAdd(&gw[block * C + c], d);
        if (has_item) atomicAdd(&gw[(CRAFTAX_NUM_BLOCK_TYPES + item) * C + c], d);
        for (uint64_t m = mobs; m; m &= m - 1) atomicAdd(&gw[(MOB_CHANNEL0 + __ffsll((long long)m) - 1) * C + c], d);
    }
    atomicAdd(&gw[CHANNELS * C + c], g_bias);
    atomicAdd(&gw[VISIBLE_CHANNEL * C + c], g_visible);
    __syncthreads();
    for (int i = threadIdx.x; i < (CHANNELS + 1) * C; i += blockDim.x)
        partials[(int64_t)blockIdx.x * (CHANNELS + 1) * C + i] = gw[i];
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
                                       float *grad_weight, float *grad_bias, void *partials, uintptr_t stream) {
    int rc = check_encoder_args(records, rows, record_bytes, weight, bias, cell_dim, grad_features, row_width);
    if (rc) return rc;
    if (!grad_weight || !grad_bias || !partials) return fast_fail(CRAFTAX_FAST_ERR_ARGUMENT, "a NULL pointer");
    cudaStream_t s = (cudaStream_t)stream;
    const int blocks = backward_blocks(rows), width = (CHANNELS + 1) * cell_dim;
    float *part = (float *)partials;
    if (rows == 0) {
        if (cudaMemsetAsync(part, 0, (size_t)width * sizeof(float), s) != cudaSuccess) return launched("memset");
    } else if (grad_is_float) {
        DISPATCH_CELL_DIM(cell_dim, (fast_encode_cells_backward_kernel<C, float><<<blocks, BACKWARD_CELLS * C, 0, s>>>(
                                        records, rows, record_bytes, weight, bias, (const float *)grad_features,
                                        row_width, part)));
    } else {
        DISPATCH_CELL_DIM(cell_dim, (fast_encode_cells_backward_kernel<C, __nv_bfloat16>
                                     <<<blocks, BACKWARD_CELLS * C, 0, s>>>(records, rows, record_bytes, weight, bias,
                                                                          (const __nv_bfloat16 *)grad_features,
                                                                          row_width, part)));
    }
    if ((rc = launched("encode_cells_backward"))) return rc;
    fast_reduce_partials_kernel<<<(width + 127) / 128, 128, 0, s>>>(part, rows == 0 ? 1 : blocks, width,
                                                                    grad_weight, grad_bias, CHANNELS * cell_dim);
    return launched("encode_cells_backward (reduce)");
}

}  // extern "C"
