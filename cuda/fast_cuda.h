/* fast_cuda.h: the kernels of the fast recipe's trainer (pycraftax/train/torch_trainer.py), in
 * cuda/build/libcraftax_cuda.so beside the env and the PPO trainer.
 *
 * The fast recipe trains with PyTorch on the GPU; this is the one step PyTorch has no kernel for:
 * the cell encoder, which reads the env's compact obs records (craftax_cuda.h, obs_compact)
 * directly instead of their 8268 floats.
 *
 * Cell encoder (pycraftax/train/fast_model.py is its specification): each of the 99 view cells of
 * a record has 83 binary channels (37 block, 5 item, 40 mob, 1 visible: obs.h's layout); one
 * shared linear map W [83, C] + b [C] and a ReLU turn each cell into C features. The features of
 * a record are the 99 cells' C values in cell order, then the record's 51 scalars, then zeros up
 * to `row_width` (a multiple of 8, for the GEMM that follows): bfloat16 [rows, row_width].
 *
 * All pointers are device pointers; every call enqueues on `stream` (a cudaStream_t) and never
 * waits, so PyTorch can capture it in a CUDA graph. Functions return 0 or a negative
 * CRAFTAX_FAST_ERR_* code; craftax_fast_last_error() says why. pycraftax reads this file as a
 * cffi cdef: plain declarations and integer #defines only.
 */
#ifndef CRAFTAX_FAST_CUDA_H
#define CRAFTAX_FAST_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CRAFTAX_FAST_API_VERSION 1
#define CRAFTAX_FAST_ERR_ARGUMENT -1
#define CRAFTAX_FAST_ERR_CUDA -2

/* Channels of a view cell and cells of a record. */
#define CRAFTAX_FAST_CELL_CHANNELS 83
#define CRAFTAX_FAST_CELLS 99
#define CRAFTAX_FAST_SCALARS 51
/* Largest cell width C the kernels take (C is a multiple of 8 up to this). */
#define CRAFTAX_FAST_MAX_CELL_DIM 32

int craftax_fast_api_version(void);
const char *craftax_fast_last_error(void);

/* features = the cell encoder of `rows` records (uint8 [rows, record_bytes], record_bytes >= 1008
 * and a multiple of 16), weight float [83, C], bias float [C]; features bfloat16 [rows, row_width]
 * (row_width >= 99 * C + 51, a multiple of 8). */
int craftax_fast_encode_cells(const uint8_t *records, int64_t rows, int32_t record_bytes, const float *weight,
                              const float *bias, int32_t cell_dim, void *features, int32_t row_width,
                              uintptr_t stream);

/* The cell encoder's parameter gradients from the features' gradient (bfloat16 or float32
 * [rows, row_width], grad_is_float 0 or 1): grad_weight float [83, C] and grad_bias float [C] are
 * overwritten. The ReLU's mask is recomputed from the records. `partials` is device memory of
 * craftax_fast_encode_cells_partials_bytes(rows, C) bytes. Float additions in a fixed order per
 * block but in arrival order within one (shared-memory atomics): not bitwise reproducible. */
size_t craftax_fast_encode_cells_partials_bytes(int64_t rows, int32_t cell_dim);
int craftax_fast_encode_cells_backward(const uint8_t *records, int64_t rows, int32_t record_bytes,
                                       const float *weight, const float *bias, int32_t cell_dim,
                                       const void *grad_features, int32_t grad_is_float, int32_t row_width,
                                       float *grad_weight, float *grad_bias, void *partials, uintptr_t stream);

#ifdef __cplusplus
}
#endif

#endif
