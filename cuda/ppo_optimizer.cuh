/* ppo_optimizer.cuh: the optimiser step, as numpy_ppo and optax: global gradient norm,
 * clip_by_global_norm, the learning-rate schedule and Adam. The scalars (norm, clip factor,
 * learning rate, bias corrections, step count) are computed by one device thread into Scalars, so
 * that an iteration needs no host round trip and replays as a graph.
 */
#ifndef CRAFTAX_PPO_OPTIMIZER_CUH
#define CRAFTAX_PPO_OPTIMIZER_CUH

#include "ppo_common.cuh"

/* The gradients' sum of squares in double, one partial sum per block (a fixed order, no atomics);
 * optimizer_scalars_kernel adds the parts in block order. */
__global__ void sumsq_kernel(const float *g, int64_t n, double *part) {
    __shared__ double sh[TPB];
    double s = 0.0;
    for (int64_t i = gtid(); i < n; i += (int64_t)gridDim.x * blockDim.x) s += (double)g[i] * (double)g[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = sh[0];
}

/* The baseline's linear_schedule (numpy_ppo.linear_schedule): base_lr decayed linearly over
 * num_updates updates, constant within one; update is the 0-based index of the update the step
 * belongs to (Adam steps so far / steps per update). In double, on the host (craftax_ppo_loss_grads,
 * the exported craftax_ppo_learning_rate) as on the device (optimizer_scalars_kernel), so every
 * caller gets the same value. */
static __host__ __device__ __forceinline__ double learning_rate(double base_lr, int anneal, int64_t update,
                                                                int64_t num_updates) {
    return anneal ? base_lr * (1.0 - (double)update / (double)num_updates) : base_lr;
}

/* Global norm, clip factor (optax clip_by_global_norm), learning rate (linear_schedule of
 * the count before this step) and Adam's bias corrections; count += 1. One thread. */
__global__ void optimizer_scalars_kernel(const double *part, int parts, Scalars *sc, float max_norm, double lr0,
                                         int anneal, int64_t steps_per_update, int64_t num_updates, double *stats) {
    double s = 0.0;
    for (int i = 0; i < parts; i++) s += part[i];
    const float norm = (float)sqrt(s);
    sc->sumsq = s;
    sc->grad_norm = norm;
    sc->clip_scale = norm < max_norm ? 1.0f : 0.0f; /* 0 marks "divide": see adam_kernel */
    const int64_t count = sc->counters[1];
    const double lr = learning_rate(lr0, anneal, count / steps_per_update, num_updates);
    sc->lr = (float)lr;
    const int64_t c1 = count + 1;
    sc->bc1 = 1.0f - powf(0.9f, (float)c1);
    sc->bc2 = 1.0f - powf(0.999f, (float)c1);
    sc->counters[1] = c1;
    if (stats) {
        stats[6] = (double)norm;
        stats[7] = lr;
    }
}

/* clip_by_global_norm then numpy_ppo.adam_update, elementwise. */
__global__ void adam_kernel(float *p, const float *g, float *mu, float *nu, int64_t n, const Scalars *sc,
                            float max_norm) {
    const int64_t i = gtid();
    if (i >= n) return;
    float gi = g[i];
    if (sc->clip_scale == 0.0f) gi = (gi / sc->grad_norm) * max_norm;
    float m = mu[i] * 0.9f;
    m = m + (1.0f - 0.9f) * gi;
    float v = nu[i] * 0.999f;
    v = v + (1.0f - 0.999f) * (gi * gi);
    mu[i] = m;
    nu[i] = v;
    const float mh = m / sc->bc1, vh = v / sc->bc2;
    const float upd = mh / (sqrtf(vh) + 1e-5f);
    p[i] = p[i] + (-sc->lr) * upd;
}

/* Global norm + optimiser scalars (stats[6], stats[7]: grad norm and lr). */
static int grad_norm(CraftaxPPO *t, double *stats) {
    sumsq_kernel<<<t->sumsq_blocks, TPB, 0, t->stream>>>(t->grads, t->P, t->sumsq_part);
    LAUNCH(t, "sumsq");
    const int64_t per_update = (int64_t)t->c.num_minibatches * t->c.update_epochs;
    optimizer_scalars_kernel<<<1, 1, 0, t->stream>>>(t->sumsq_part, t->sumsq_blocks, t->scal, t->c.max_grad_norm,
                                                     (double)t->c.lr, t->c.anneal_lr, per_update,
                                                     t->c.num_updates, stats);
    LAUNCH(t, "optimizer_scalars");
    return 0;
}

static int adam_step(CraftaxPPO *t) {
    adam_kernel<<<blocks_for(t->P), TPB, 0, t->stream>>>(t->params, t->grads, t->mu, t->nu, t->P, t->scal,
                                                         t->c.max_grad_norm);
    LAUNCH(t, "adam");
    return 0;
}

#endif
