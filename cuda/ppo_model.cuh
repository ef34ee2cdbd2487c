/* ppo_model.cuh: the actor-critic network of numpy_ppo (encoder, GRU, actor and critic MLPs)
 * forward and backward over a segment of T steps of a minibatch, composed from the parts.
 */
#ifndef CRAFTAX_PPO_MODEL_CUH
#define CRAFTAX_PPO_MODEL_CUH

#include "ppo_common.cuh"
#include "ppo_encoder.cuh"
#include "ppo_gemm.cuh"
#include "ppo_gru.cuh"

/* Heads (numpy_ppo.forward's actor and critic MLPs) over `rows` rows of y [rows, H]. */
static int heads_forward(CraftaxPPO *t, int rows, const float *y, float *a1, float *a2, float *logits, float *c1,
                         float *c2, float *value) {
    const int E = t->E, H = t->H, A = t->A;
    const float *p = t->params;
    TRY(fwd_gemm(t, rows, E, H, y, H, p + t->off[P_W1], E, p + t->off[P_B1], 1, a1, E, "actor Dense_1"));
    TRY(fwd_gemm(t, rows, E, E, a1, E, p + t->off[P_W2], E, p + t->off[P_B2], 1, a2, E, "actor Dense_2"));
    TRY(fwd_gemm(t, rows, A, E, a2, E, p + t->off[P_W3], A, p + t->off[P_B3], 0, logits, A, "actor Dense_3"));
    TRY(fwd_gemm(t, rows, E, H, y, H, p + t->off[P_W4], E, p + t->off[P_B4], 1, c1, E, "critic Dense_4"));
    TRY(fwd_gemm(t, rows, E, E, c1, E, p + t->off[P_W5], E, p + t->off[P_B5], 1, c2, E, "critic Dense_5"));
    TRY(fwd_gemm(t, rows, 1, E, c2, E, p + t->off[P_W6], 1, p + t->off[P_B6], 0, value, 1, "critic Dense_6"));
    return 0;
}

/* numpy_ppo.forward over a segment of T steps of Bc columns (rows r = t * Bc + b), from m_h0
 * with keep flags m_dones; caches everything backward needs. */
static int segment_forward(CraftaxPPO *t, int Bc, const int32_t *index) {
    TRY(fwd_encode(t, Bc, index));
    TRY(fwd_gru_input(t, Bc));
    TRY(fwd_gru_loop(t, Bc));
    return heads_forward(t, t->T * Bc, t->hs, t->a1, t->a2, t->logits, t->c1, t->c2, t->value);
}

/* One head (hs -> Dense ReLU -> Dense ReLU -> Dense, numpy_ppo's actor or critic) backward
 * from dout [R, n_out]: its weight and bias gradients, and its share of d(hs) into t->dy
 * (dy_beta 0: the first head writes it, 1: the second adds). l1, l2: the head's two ReLU
 * outputs; w1, b1, w2, b2, w3, b3: its parameter blocks. */
static int bwd_head(CraftaxPPO *t, int R, const float *dout, int n_out, const float *l1, const float *l2, int w1, int b1,
                    int w2, int b2, int w3, int b3, float dy_beta) {
    const int H = t->H, E = t->E;
    const float *p = t->params;
    float *g = t->grads;
    TRY(gemm(t, 1, 0, E, n_out, R, l2, E, dout, n_out, 0.0f, g + t->off[w3], n_out, "head dW3"));
    TRY(colsum(t, R, n_out, dout, n_out, g + t->off[b3], "head db3"));
    TRY(gemm(t, 0, 1, R, E, n_out, dout, n_out, p + t->off[w3], n_out, 0.0f, t->da2, E, "head dl2"));
    relu_mask_kernel<<<blocks_for((int64_t)R * E), TPB, 0, t->stream>>>(t->da2, l2, (int64_t)R * E);
    LAUNCH(t, "relu_mask");
    TRY(gemm(t, 1, 0, E, E, R, l1, E, t->da2, E, 0.0f, g + t->off[w2], E, "head dW2"));
    TRY(colsum(t, R, E, t->da2, E, g + t->off[b2], "head db2"));
    TRY(gemm(t, 0, 1, R, E, E, t->da2, E, p + t->off[w2], E, 0.0f, t->da1, E, "head dl1"));
    relu_mask_kernel<<<blocks_for((int64_t)R * E), TPB, 0, t->stream>>>(t->da1, l1, (int64_t)R * E);
    LAUNCH(t, "relu_mask");
    TRY(gemm(t, 1, 0, H, E, R, t->hs, H, t->da1, E, 0.0f, g + t->off[w1], E, "head dW1"));
    TRY(colsum(t, R, E, t->da1, E, g + t->off[b1], "head db1"));
    TRY(gemm(t, 0, 1, R, H, E, t->da1, E, p + t->off[w1], E, dy_beta, t->dy, H, "head dy"));
    return 0;
}

/* The actor's and the critic's gradients, and d(hs) of both into t->dy. */
static int bwd_heads(CraftaxPPO *t, int Bc) {
    const int R = t->T * Bc;
    TRY(bwd_head(t, R, t->dlogits, t->A, t->a1, t->a2, P_W1, P_B1, P_W2, P_B2, P_W3, P_B3, 0.0f));
    TRY(bwd_head(t, R, t->dvalue, 1, t->c1, t->c2, P_W4, P_B4, P_W5, P_B5, P_W6, P_B6, 1.0f));
    return 0;
}

/* numpy_ppo.backward: gradients of every parameter into t->grads. */
static int segment_backward(CraftaxPPO *t, int Bc, const int32_t *index) {
    TRY(bwd_heads(t, Bc));
    TRY(bwd_gru_loop(t, Bc));
    TRY(bwd_gru_weights(t, Bc));
    return bwd_encoder(t, Bc, index);
}

#endif
