/* fast_cuda.h: the kernels of the fast recipe's trainer (pycraftax/train/torch_trainer.py), in
 * cuda/build/libcraftax_cuda.so beside the envs.
 *
 * The fast recipe trains with PyTorch on the GPU; these are the steps PyTorch has no kernel for:
 * the cell encoder, which reads the env's compact obs records (craftax_cuda.h, obs_compact)
 * directly instead of their 8268 floats, and the elementwise halves of the GRU's steps over a
 * sequence, between which the caller runs the recurrent GEMMs (cuBLAS through PyTorch).
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

#define CRAFTAX_FAST_API_VERSION 3
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
 * craftax_fast_encode_cells_partials_bytes(rows, C) bytes. With deterministic = 0 the additions
 * within a block come in arrival order (shared-memory atomics): not bitwise reproducible; with
 * deterministic = 1 every addition has a fixed place and order (no atomics): the same bits on
 * every run of the same inputs on the same GPU model. */
size_t craftax_fast_encode_cells_partials_bytes(int64_t rows, int32_t cell_dim);
int craftax_fast_encode_cells_backward(const uint8_t *records, int64_t rows, int32_t record_bytes,
                                       const float *weight, const float *bias, int32_t cell_dim,
                                       const void *grad_features, int32_t grad_is_float, int32_t row_width,
                                       int32_t deterministic, float *grad_weight, float *grad_bias, void *partials,
                                       uintptr_t stream);

/* The GRU over a sequence (fast_model.TorchActorCritic.core is the specification; cuda_ops.py's
 * gru_sequence drives these calls). T steps of B rows and H units (H a multiple of 4), gates in
 * the order r, z, n; for t = 0 .. T-1, with h_{-1} = h0:
 *     hp_t = h_{t-1} * keep_t                 (keep_t = 0 resets the row before step t)
 *     gh_t = bf16(hp_t) @ bf16(Wh)            (the caller's GEMM, fp32 accumulation and result)
 *     r = sigmoid(x_r + bi_r + gh_r),  z = sigmoid(x_z + bi_z + gh_z)
 *     n = tanh(x_n + bi_n + r * (gh_n + bhn)),  h_t = (1 - z) * n + z * hp_t
 * Arrays: xs float [T, B, 3H] (the inputs' part x_t, without bi), keeps float [T, B], h0 float
 * [B, H], bias_i float [3H], bias_hn float [H], hs float [T, B, H] (h_t), hidden_gates float
 * [T, B, 3H] (gh_t) and operands bfloat16 [T, B, H] (bf16(hp_t), the GEMM's left operand). Float
 * arrays 16-byte aligned, bfloat16 ones 8-byte.
 *
 * Forward: forward_begin, then for each t: the GEMM gh_t = operands[t] @ Wh, forward_step(t). */

/* operands[0] = bf16(h0 * keeps[0]). */
int craftax_fast_gru_forward_begin(const float *h0, const float *keeps, void *operands, int64_t batch,
                                   int32_t hidden, uintptr_t stream);

/* hs[t] = h_t from xs[t], hidden_gates[t] and hp_t; operands[t + 1] = bf16(h_t * keeps[t + 1])
 * below the last step, h_last [B, H] = h_t at the last step where h_last is not NULL. */
int craftax_fast_gru_forward_step(const float *xs, const float *hidden_gates, const float *h0, const float *keeps,
                                  const float *bias_i, const float *bias_hn, float *hs, float *h_last,
                                  void *operands, int64_t steps, int64_t batch, int32_t hidden, int64_t t,
                                  uintptr_t stream);

/* Backward: for t = T-1 down to 0: backward_step(t), then the GEMM grad_hp_gemm =
 * grad_hidden_gates[t] @ Wh^T (float [B, H]); then backward_end for the gradient of h0. The
 * caller reduces the rest over all T * B rows at once: grad Wh = operands^T @ grad_hidden_gates,
 * grad bias_i = the column sums of grad_xs, grad bias_hn = those of grad_hn.
 *
 * backward_step(t) recomputes step t's gates with the forward's arithmetic (the same values) from
 * xs, hidden_gates, keeps and h_{t-1} (h0 or hs[t-1]). With dh = grad_hs[t] + (the last step:
 * grad_h_last; else keeps[t + 1] * (grad_hp_direct + grad_hp_gemm), step t+1's dL/dhp) it writes
 * grad_xs[t] = dL/d(pre-activations of r, z, n) (= dL/dx_t), grad_hidden_gates[t] = bf16 dL/dgh_t,
 * grad_hn[t] = dL/d(gh_n + bhn) (where not NULL; float [T, B, H]) and overwrites grad_hp_direct
 * (float [B, H]) with z * dh, the part of dL/dhp_t that does not pass through the GEMM.
 * grad_hs and grad_h_last may be NULL: zero. */
int craftax_fast_gru_backward_step(const float *xs, const float *hidden_gates, const float *h0, const float *keeps,
                                   const float *bias_i, const float *bias_hn, const float *hs, const float *grad_hs,
                                   const float *grad_h_last, float *grad_hp_direct, const float *grad_hp_gemm,
                                   float *grad_xs, void *grad_hidden_gates, float *grad_hn, int64_t steps,
                                   int64_t batch, int32_t hidden, int64_t t, uintptr_t stream);

/* grad_h0 [B, H] = keeps[0] * (grad_hp_direct + grad_hp_gemm), after backward_step(0) and its GEMM. */
int craftax_fast_gru_backward_end(const float *grad_hp_direct, const float *grad_hp_gemm, const float *keeps,
                                  float *grad_h0, int64_t batch, int32_t hidden, uintptr_t stream);

/* The MinGRU over a sequence (fast_model.mingru_forward is the specification; cuda_ops.py's
 * mingru_sequence drives these calls). T steps of B rows and H units; gates [T, B, 2H] hold each
 * row's pre-activations of z (units 0..H-1) and of the candidate c (units H..2H-1), biases
 * included, as bfloat16 (gates_are_float 0) or float (1); keeps float [T, B]; h0 float [B, H]. For
 * t = 0 .. T-1, with h_{-1} = h0:
 *     z = sigmoid(g_z),  c = tanh(g_c),  h_t = (1 - z) * (keep_t * h_{t-1}) + z * c
 * Forward: hs float [T, B, H] = h_t, and h_last [B, H] = h_{T-1} where not NULL.
 * Backward: from grad_hs [T, B, H] and grad_h_last [B, H] (either NULL: zero) writes grad_gates
 * (the gates' type and shape) = dL/d(pre-activations) and, where not NULL, grad_h0 [B, H]. Each
 * unit is one thread's sequential loop: no atomics, the same bits on every run. */
int craftax_fast_mingru_forward(const void *gates, int32_t gates_are_float, const float *keeps, const float *h0,
                                float *hs, float *h_last, int64_t steps, int64_t batch, int32_t hidden,
                                uintptr_t stream);
int craftax_fast_mingru_backward(const void *gates, int32_t gates_are_float, const float *keeps, const float *h0,
                                 const float *hs, const float *grad_hs, const float *grad_h_last, void *grad_gates,
                                 float *grad_h0, int64_t steps, int64_t batch, int32_t hidden, uintptr_t stream);

#ifdef __cplusplus
}
#endif

#endif
