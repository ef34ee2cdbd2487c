/* ppo_loss.cuh: numpy_ppo's GAE and PPO loss on the device: advantages and targets of a rollout,
 * the advantage statistics of a minibatch, the per-row loss terms with their gradients with respect
 * to the logits and the value, and their reduction to the minibatch's statistics in a fixed order
 * (in double, no float atomics, so a run repeats bitwise).
 */
#ifndef CRAFTAX_PPO_LOSS_CUH
#define CRAFTAX_PPO_LOSS_CUH

#include "ppo_common.cuh"

/* The max m and log-sum-exp lse of one row of A logits: log p[a] = (l[a] - m) - lse, numpy_ppo's
 * log_softmax, op by op. */
static __device__ void log_softmax_row(const float *l, int A, float *m_out, float *lse_out) {
    float m = l[0];
    for (int a = 1; a < A; a++) m = fmaxf(m, l[a]);
    float s = 0.0f;
    for (int a = 0; a < A; a++) s += expf(l[a] - m);
    *m_out = m;
    *lse_out = logf(s);
}

/* numpy_ppo.gae, one thread per env. dones[t] = reset flag of step t's input; dones[T],
 * values[T]: last_done and the bootstrap value. */
__global__ void gae_kernel(const float *rewards, const float *values, const uint8_t *dones, int T, int N, float gamma,
                           float lam, float *adv, float *targets) {
    const int64_t i = gtid();
    if (i >= N) return;
    float g = 0.0f;
    float next_value = values[(int64_t)T * N + i];
    float next_done = dones[(int64_t)T * N + i] ? 1.0f : 0.0f;
    const float gl = gamma * lam;
    for (int t = T - 1; t >= 0; t--) {
        const int64_t k = (int64_t)t * N + i;
        const float nd = 1.0f - next_done;
        const float delta = rewards[k] + gamma * next_value * nd - values[k];
        g = delta + gl * nd * g;
        adv[k] = g;
        targets[k] = g + values[k];
        next_value = values[k];
        next_done = dones[k] ? 1.0f : 0.0f;
    }
}

/* Mean and population std of the minibatch advantages (numpy: gae.mean(), gae.std()),
 * accumulated in double, one block. */
__global__ void adv_stats_kernel(const float *adv, int64_t R, Scalars *sc) {
    __shared__ double sh[TPB];
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < R; i += blockDim.x) s += adv[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    const float mean = (float)(sh[0] / (double)R);
    __syncthreads();
    double v = 0.0;
    for (int64_t i = threadIdx.x; i < R; i += blockDim.x) {
        const double d = (double)(adv[i] - mean);
        v += d * d;
    }
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        sc->adv_mean = mean;
        sc->adv_std = (float)sqrt(sh[0] / (double)R);
    }
}

/* numpy_ppo.ppo_loss per row: the five per-row terms (in double, summed later) and the
 * gradients dloss/dlogits, dloss/dvalue. */
__global__ void ppo_loss_kernel(const float *logits, const float *value, const int32_t *actions, const float *old_logp,
                                const float *old_values, const float *adv, const float *targets, int64_t R, int A,
                                float eps, float vf_coef, float ent_coef, const Scalars *sc, float *dlogits,
                                float *dvalue, double *terms) {
    const int64_t r = gtid();
    if (r >= R) return;
    const float *l = logits + r * A;
    float m, lse;
    log_softmax_row(l, A, &m, &lse);
    const int act = actions[r];
    const float lp = (l[act] - m) - lse;
    float ent = 0.0f;
    for (int a = 0; a < A; a++) {
        const float la = (l[a] - m) - lse;
        ent += expf(la) * la;
    }
    ent = -ent;
    const float v = value[r], ov = old_values[r], tg = targets[r];
    const float dv = v - ov;
    const float vc = ov + fminf(fmaxf(dv, -eps), eps);
    const float vl = (v - tg) * (v - tg);
    const float vlc = (vc - tg) * (vc - tg);
    const float log_ratio = lp - old_logp[r];
    const float ratio = expf(log_ratio);
    const float gae = (adv[r] - sc->adv_mean) / (sc->adv_std + 1e-8f);
    const float ratio_c = fminf(fmaxf(ratio, 1.0f - eps), 1.0f + eps);
    const float l1 = ratio * gae, l2 = ratio_c * gae;
    double *tr = terms + r * 5;
    tr[0] = -(double)fminf(l1, l2);
    tr[1] = (double)fmaxf(vl, vlc);
    tr[2] = (double)ent;
    tr[3] = (double)((ratio - 1.0f) - log_ratio);  /* not logf(ratio): -inf once expf underflows */
    tr[4] = fabsf(ratio - 1.0f) > eps ? 1.0 : 0.0;
    const float Nf = (float)R;
    const float inside_v = fabsf(dv) < eps ? 1.0f : 0.0f;
    const float g_un = 2.0f * (v - tg);
    const float g_cl = 2.0f * (vc - tg) * inside_v;
    const float w_un = vl > vlc ? 1.0f : (vl == vlc ? 0.5f : 0.0f);
    dvalue[r] = vf_coef * 0.5f / Nf * (w_un * g_un + (1.0f - w_un) * g_cl);
    const float inside_r = (ratio > 1.0f - eps && ratio < 1.0f + eps) ? 1.0f : 0.0f;
    const float w1 = l1 < l2 ? 1.0f : (l1 == l2 ? 0.5f : 0.0f);
    const float dratio = -(w1 * gae + (1.0f - w1) * gae * inside_r) / Nf;
    const float dlogp = dratio * ratio;
    const float ec = ent_coef / Nf;
    float *dl = dlogits + r * A;
    for (int a = 0; a < A; a++) {
        const float la = (l[a] - m) - lse;
        const float p = expf(la);
        dl[a] = dlogp * ((a == act ? 1.0f : 0.0f) - p) + ec * p * (la + ent);
    }
}

/* Log-prob of the stored action (sample_kernel's formula) and value of row r = t * Bc + b
 * into out[0 or 1, t, b] of [2, T, N]. */
__global__ void replay_kernel(const float *logits, const float *value, const int32_t *actions, int64_t R, int A,
                              int Bc, int T, int N, float *out) {
    const int64_t r = gtid();
    if (r >= R) return;
    const float *l = logits + r * A;
    float m, lse;
    log_softmax_row(l, A, &m, &lse);
    const int64_t o = (r / Bc) * N + r % Bc;
    out[o] = (l[actions[r]] - m) - lse;
    out[(int64_t)T * N + o] = value[r];
}

/* The minibatch's loss statistics from the per-row terms, in a fixed order (one block). */
__global__ void loss_reduce_kernel(const double *terms, int64_t R, float vf_coef, float ent_coef, double *out) {
    __shared__ double sh[5][TPB];
    double s[5] = {0, 0, 0, 0, 0};
    for (int64_t i = threadIdx.x; i < R; i += blockDim.x)
        for (int k = 0; k < 5; k++) s[k] += terms[i * 5 + k];
    for (int k = 0; k < 5; k++) sh[k][threadIdx.x] = s[k];
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w)
            for (int k = 0; k < 5; k++) sh[k][threadIdx.x] += sh[k][threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const double actor = sh[0][0] / R, value_loss = 0.5 * sh[1][0] / R, entropy = sh[2][0] / R;
        out[0] = actor + (double)vf_coef * value_loss - (double)ent_coef * entropy;
        out[1] = value_loss;
        out[2] = actor;
        out[3] = entropy;
        out[4] = sh[3][0] / R;
        out[5] = sh[4][0] / R;
    }
}

/* ppo_loss on the gathered minibatch: forward, loss terms, backward; stats row `stats`. */
static int loss_terms(CraftaxPPO *t, int Bc, double *stats) {
    const int R = t->T * Bc;
    adv_stats_kernel<<<1, TPB, 0, t->stream>>>(t->m_adv, R, t->scal);
    LAUNCH(t, "adv_stats");
    ppo_loss_kernel<<<blocks_for(R), TPB, 0, t->stream>>>(t->logits, t->value, t->m_actions, t->m_logp, t->m_values,
                                                          t->m_adv, t->m_targets, R, t->A, t->c.clip_eps,
                                                          t->c.vf_coef, t->c.ent_coef, t->scal, t->dlogits, t->dvalue,
                                                          t->row_terms);
    LAUNCH(t, "ppo_loss");
    loss_reduce_kernel<<<1, TPB, 0, t->stream>>>(t->row_terms, R, t->c.vf_coef, t->c.ent_coef, stats);
    LAUNCH(t, "loss_reduce");
    return 0;
}

#endif
