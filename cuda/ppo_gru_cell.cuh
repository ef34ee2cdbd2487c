/* ppo_gru_cell.cuh: the GRU cell's arithmetic for one hidden unit, the one definition that every
 * forward path of the recurrent layer calls (the per-step cell kernel, the GEMM with the cell fused
 * into its epilogue, the persistent all-steps kernel), so that they agree bitwise. It sits apart
 * from ppo_gru.cuh because the fused GEMM (ppo_gemm.cuh) needs it and ppo_gru.cuh needs the GEMMs.
 */
#ifndef CRAFTAX_PPO_GRU_CELL_CUH
#define CRAFTAX_PPO_GRU_CELL_CUH

#include "ppo_common.cuh"

/* sigmoid as numpy_ppo writes it (via tanh, not 1 / (1 + exp(-x))). */
static __device__ __forceinline__ float sigmoidf_np(float x) { return 0.5f * (tanhf(0.5f * x) + 1.0f); }

/* The GRU cell for hidden unit j of one row (flax GRUCell as numpy_ppo.forward writes it): x
 * holds the unit's raw input projections for the r, z and n gates at x[0], x[gate_stride] and
 * x[2 * gate_stride] (bias bi added here, before hh, as numpy's (emb @ Wi + bi) + hh); hr, hz,
 * hnn are the row's hp @ Wh at the unit's r, z and n columns. Stores h and, where r_out is
 * given, the caches backward reads, at o. Every forward path calls this one. */
static __device__ __forceinline__ void gru_cell_unit(const float *x, int gate_stride, const float *bi,
                                                     const float *bhn, int H, int j, float hr, float hz, float hnn,
                                                     float hp, int64_t o, float *h_out, float *r_out, float *z_out,
                                                     float *n_out, float *hn_out) {
    const float xr = x[0] + bi[j], xz = x[gate_stride] + bi[H + j], xn = x[2 * gate_stride] + bi[2 * H + j];
    const float r = sigmoidf_np(xr + hr);
    const float z = sigmoidf_np(xz + hz);
    const float hn = hnn + bhn[j];
    const float n = tanhf(xn + r * hn);
    const float h = (1.0f - z) * n + z * hp;
    h_out[o] = h;
    if (r_out) {
        r_out[o] = r;
        z_out[o] = z;
        n_out[o] = n;
        hn_out[o] = hn;
    }
}

#endif
