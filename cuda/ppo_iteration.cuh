/* ppo_iteration.cuh: one training iteration enqueued on the trainer's stream: rollout (per step:
 * policy forward, sampling with threefry of (seed, iteration, step, env), the env key split on the
 * device exactly as CudaCraftaxEnv.step does, the env step with auto or optimistic resets through
 * the env's table (ppo_env.cuh), the episode log), bootstrap value, GAE, then epochs x minibatches
 * of (gather minibatch, forward, loss, BPTT backward, the gradients' average across ranks where
 * there are several, global-norm clip, Adam); and its capture as a CUDA graph. Host code only
 * enqueues, so the whole iteration replays as one graph.
 */
#ifndef CRAFTAX_PPO_ITERATION_CUH
#define CRAFTAX_PPO_ITERATION_CUH

#include "ppo_common.cuh"
#include "ppo_encoder.cuh"
#include "ppo_env.cuh"
#include "ppo_loss.cuh"
#include "ppo_model.cuh"
#include "ppo_nccl.cuh"
#include "ppo_optimizer.cuh"

static __device__ CraftaxKey policy_key(uint64_t seed, int64_t iteration) {
    const CraftaxKey base = {{(uint32_t)seed ^ 0x5050u, (uint32_t)(seed >> 32) ^ 0x4F52u}};
    return craftax_threefry2x32(base, (uint32_t)((uint64_t)iteration >> 32), (uint32_t)iteration);
}

/* Categorical sample by inverse CDF in double (numpy_ppo.sample_actions), uniform from
 * threefry(policy_key(seed, iteration); hi = step, lo = env): the env's own key stream is
 * never touched. Stores action and its log-prob. */
__global__ void sample_kernel(const float *logits, int N, int A, int t, uint64_t seed, const Scalars *sc,
                              int32_t *actions, float *logp) {
    const int64_t i = gtid();
    if (i >= N) return;
    const float *l = logits + i * A;
    float m, lse;
    log_softmax_row(l, A, &m, &lse);
    const CraftaxKey bits = craftax_threefry2x32(policy_key(seed, sc->counters[0]), (uint32_t)t, (uint32_t)i);
    const double u01 = ((double)(bits.k[0] >> 5) * 67108864.0 + (double)(bits.k[1] >> 6)) * (1.0 / 9007199254740992.0);
    double total = 0.0;
    for (int a = 0; a < A; a++) total += exp((double)((l[a] - m) - lse));
    const double u = u01 * total;
    double cdf = 0.0;
    int act = 0;
    for (int a = 0; a < A; a++) {
        cdf += exp((double)((l[a] - m) - lse));
        if (cdf < u) act = a + 1;
    }
    if (act > A - 1) act = A - 1;
    actions[i] = act;
    logp[i] = (l[act] - m) - lse;
}

/* env._key, sub = split(env._key); the step's keys = split(sub, N) (CudaCraftaxEnv.step). */
__global__ void env_key_advance_kernel(Scalars *sc) {
    const CraftaxKey k = {{sc->env_key[0], sc->env_key[1]}};
    CraftaxKey a, b; /* the same rule as future_keys_kernel's walk ahead */
    craftax_split2(k, &a, &b);
    sc->env_key[0] = a.k[0];
    sc->env_key[1] = a.k[1];
    sc->sub_key[0] = b.k[0];
    sc->sub_key[1] = b.k[1];
    sc->counters[2] += 1;
}

__global__ void env_key_split_kernel(const Scalars *sc, int N, uint32_t *keys) {
    const int64_t i = gtid();
    if (i >= N) return;
    const CraftaxKey sub = {{sc->sub_key[0], sc->sub_key[1]}};
    const CraftaxKey k = craftax_split_at(sub, (uint32_t)i);
    keys[2 * i] = k.k[0];
    keys[2 * i + 1] = k.k[1];
}

/* Random sort keys of an epoch's permutation: (threefry bits << 32) | env. */
__global__ void perm_keys_kernel(uint64_t seed, const Scalars *sc, int hi, int N, uint64_t *keys) {
    const int64_t i = gtid();
    if (i >= N) return;
    const CraftaxKey bits = craftax_threefry2x32(policy_key(seed, sc->counters[0]), (uint32_t)hi, (uint32_t)i);
    keys[i] = ((uint64_t)(bits.k[0] ^ bits.k[1]) << 32) | (uint32_t)i;
}

__global__ void perm_from_keys_kernel(const uint64_t *keys, int N, int32_t *perm) {
    const int64_t i = gtid();
    if (i >= N) return;
    perm[i] = (int32_t)(keys[i] & 0xFFFFFFFFu);
}

__global__ void gather_rows_kernel(const int32_t *index, int T, int N, int B, int H, const uint8_t *dones,
                                   const int32_t *actions, const float *logp, const float *values, const float *adv,
                                   const float *targets, const float *h0, uint8_t *m_dones, int32_t *m_actions,
                                   float *m_logp, float *m_values, float *m_adv, float *m_targets, float *m_h0) {
    const int64_t r = gtid();
    if (r < (int64_t)T * B) {
        const int t = (int)(r / B), b = (int)(r % B);
        const int64_t k = (int64_t)t * N + index[b];
        m_dones[r] = dones[k];
        m_actions[r] = actions[k];
        m_logp[r] = logp[k];
        m_values[r] = values[k];
        m_adv[r] = adv[k];
        m_targets[r] = targets[k];
    }
    if (r < (int64_t)B * H) {
        const int b = (int)(r / H), j = (int)(r % H);
        m_h0[r] = h0[(int64_t)index[b] * H + j];
    }
}

__global__ void advance_iteration_kernel(Scalars *sc) { sc->counters[0] += 1; }

/* Gather the minibatch of envs `index` (device, Bc entries) from the rollout storage. */
static int gather_minibatch(CraftaxPPO *t, const int32_t *index, int Bc) {
    const int R = t->T * Bc;
    if (!t->sparse) { /* the sparse encoder reads the stored lists in place */
        gather_obs_kernel<<<R, 256, 0, t->stream>>>(t->obs, index, t->T, t->N, Bc, t->D, t->x);
        LAUNCH(t, "gather_obs");
    }
    const int64_t n = (int64_t)R > (int64_t)Bc * t->H ? (int64_t)R : (int64_t)Bc * t->H;
    gather_rows_kernel<<<blocks_for(n), TPB, 0, t->stream>>>(index, t->T, t->N, Bc, t->H, t->dones, t->actions,
                                                            t->logp, t->values, t->adv, t->targets, t->h0, t->m_dones,
                                                            t->m_actions, t->m_logp, t->m_values, t->m_adv,
                                                            t->m_targets, t->m_h0);
    LAUNCH(t, "gather_rows");
    return 0;
}

static int loss_and_grads(CraftaxPPO *t, int Bc, const int32_t *index, double *stats) {
    TRY(segment_forward(t, Bc, index));
    TRY(loss_terms(t, Bc, stats));
    return segment_backward(t, Bc, index);
}

/* ---- rollout ------------------------------------------------------------------------------ */
static int enqueue_update(CraftaxPPO *t);
static int env_step(CraftaxPPO *t, int s);
/* The policy at one step over all N envs: obs slot s, keep flags dones[s], state hstate. */
static int policy_step(CraftaxPPO *t, int s, int sample) {
    /* the new state goes to s_hnew (gru_step never writes in place); a sampling step then
     * makes it the state, the bootstrap step (sample = 0) leaves hstate alone */
    float *h_out = t->s_hnew;
    const int N = t->N, H = t->H, E = t->E, D = t->D;
    const float *p = t->params;
    TRY(encode(t, N, s, NULL, N, t->obs + (int64_t)s * N * D, t->s_pre));
    TRY(fwd_gemm(t, N, 3 * H, E, t->s_pre, E, p + t->off[P_WI], 3 * H, NULL, 0, t->s_xi, 3 * H, "GRU input (step)"));
    TRY(gru_step(t, N, t->hstate, t->dones + (int64_t)s * N, t->s_xi, t->s_hp, 0, h_out, NULL, NULL, NULL, NULL));
    if (sample)
        CUDA_TRY(cudaMemcpyAsync(t->hstate, h_out, (size_t)N * H * sizeof(float), cudaMemcpyDeviceToDevice,
                                 t->stream), "copy hstate");
    TRY(heads_forward(t, N, h_out, t->s_a1, t->s_a2, t->s_logits, t->s_c1, t->s_c2, t->values + (int64_t)s * N));
    if (sample) {
        sample_kernel<<<blocks_for(N), TPB, 0, t->stream>>>(t->s_logits, N, t->A, s, t->c.seed, t->scal,
                                                            t->actions + (int64_t)s * N, t->logp + (int64_t)s * N);
        LAUNCH(t, "sample");
    }
    return 0;
}

static int fork_pool_generation(CraftaxPPO *t);

static int enqueue_rollout(CraftaxPPO *t) {
    const int N = t->N, T = t->T, H = t->H;
    const int64_t D = t->D;
    /* the current obs / last_done live in slot T between iterations */
    CUDA_TRY(cudaMemcpyAsync(t->obs, t->obs + (int64_t)T * N * D, (size_t)N * D * sizeof(float),
                             cudaMemcpyDeviceToDevice, t->stream), "copy obs slot");
    CUDA_TRY(cudaMemcpyAsync(t->dones, t->dones + (int64_t)T * N, (size_t)N, cudaMemcpyDeviceToDevice, t->stream),
             "copy dones slot");
    CUDA_TRY(cudaMemcpyAsync(t->h0, t->hstate, (size_t)N * H * sizeof(float), cudaMemcpyDeviceToDevice, t->stream),
             "copy h0");
    TRY(compact_slots(t, 0, 1));
    for (int s = 0; s < T; s++) {
        TRY(policy_step(t, s, 1));
        TRY(env_step(t, s));
        TRY(compact_slots(t, s + 1, 1));
    }
    /* bootstrap value of the final obs (values slot T) */
    TRY(policy_step(t, T, 0));
    gae_kernel<<<blocks_for(N), TPB, 0, t->stream>>>(t->rewards, t->values, t->dones, T, N, t->c.gamma,
                                                     t->c.gae_lambda, t->adv, t->targets);
    LAUNCH(t, "gae");
    return fork_pool_generation(t);
}

/* The wrapper keys (sub keys) of the next T env steps, from the env key as it stands. */
__global__ void future_keys_kernel(const Scalars *sc, int T, uint32_t *keys) {
    CraftaxKey k = {{sc->env_key[0], sc->env_key[1]}};
    for (int s = 0; s < T; s++) {
        CraftaxKey next, sub;
        craftax_split2(k, &next, &sub);
        keys[2 * s] = sub.k[0];
        keys[2 * s + 1] = sub.k[1];
        k = next;
    }
}

/* Optimistic resets: the worlds of the next rollout depend on the env key alone, so they are
 * generated ahead, on pool_stream, while the update runs; pool_join orders the next rollout
 * after them. Called at the end of a rollout (and once by begin). */
static int fork_pool_generation(CraftaxPPO *t) {
    if (!t->W) return 0;
    CUDA_TRY(cudaEventRecord(t->pool_fork, t->stream), "pool fork");
    CUDA_TRY(cudaStreamWaitEvent(t->pool_stream, t->pool_fork, 0), "pool fork");
    future_keys_kernel<<<1, 1, 0, t->pool_stream>>>(t->scal, t->T, t->pool_keys);
    CUDA_TRY(cudaGetLastError(), "future_keys");
    int rc = t->env_ops->generate_worlds(t);
    if (rc != 0) return fail(CRAFTAX_PPO_ERR_CUDA, "generate worlds: %s (code %d)", craftax_cuda_last_error(), rc);
    CUDA_TRY(cudaEventRecord(t->pool_join, t->pool_stream), "pool join");
    return 0;
}

static int join_pool_generation(CraftaxPPO *t) {
    if (t->W) CUDA_TRY(cudaStreamWaitEvent(t->stream, t->pool_join, 0), "pool join");
    return 0;
}

/* The env's share of one rollout step: key split, env step (auto or optimistic resets), obs
 * lists, episode log. */
static int env_step(CraftaxPPO *t, int s) {
    const int N = t->N;
    const int64_t D = t->D;
    env_key_advance_kernel<<<1, 1, 0, t->stream>>>(t->scal);
    LAUNCH(t, "env_key_advance");
    const CraftaxPPOEnvOps *env = t->env_ops;
    const int32_t *actions = t->actions + (int64_t)s * N;
    float *obs = t->obs + (int64_t)(s + 1) * N * D, *rewards = t->rewards + (int64_t)s * N;
    uint8_t *dones = t->dones + (int64_t)(s + 1) * N;
    int rc;
    if (t->W) {
        rc = env->step_optimistic(t, actions, obs, rewards, dones,
                                  (const char *)t->pool_worlds + (size_t)s * t->W * t->env_state_size);
    } else {
        env_key_split_kernel<<<blocks_for(N), TPB, 0, t->stream>>>(t->scal, N, t->env_keys);
        LAUNCH(t, "env_key_split");
        rc = env->step_autoreset(t, actions, obs, rewards, dones);
    }
    if (rc != 0) return fail(CRAFTAX_PPO_ERR_CUDA, "env step: %s (code %d)", craftax_cuda_last_error(), rc);
    LAUNCH(t, "env step");
    env->track<<<blocks_for(N), TPB, 0, t->stream>>>(rewards, dones, t->final_ach, N, t->ret_acc, t->len_acc,
                                                     t->ep_return + (int64_t)s * N, t->ep_length + (int64_t)s * N,
                                                     t->ep_ach + (int64_t)s * N * ACH_WORDS);
    LAUNCH(t, "track");
    return 0;
}

/* Profiler parts: the rollout's policy work without env steps (over the stored obs), the
 * env steps without the policy (the stored actions), the update alone. */
/* One phase of one minibatch's update (the first minibatch of the current permutation, over
 * whatever the buffers hold: craftax_ppo_profile runs the whole minibatch once first). */
static int enqueue_phase(CraftaxPPO *t, int part) {
    const int B = t->B;
    const int32_t *index = t->perm;
    switch (part) {
    case CRAFTAX_PPO_PROFILE_GATHER: return gather_minibatch(t, index, B);
    case CRAFTAX_PPO_PROFILE_ENCODE: return fwd_encode(t, B, index);
    case CRAFTAX_PPO_PROFILE_GRU_INPUT: return fwd_gru_input(t, B);
    case CRAFTAX_PPO_PROFILE_GRU_FORWARD: return fwd_gru_loop(t, B);
    case CRAFTAX_PPO_PROFILE_HEADS_FORWARD:
        return heads_forward(t, t->T * B, t->hs, t->a1, t->a2, t->logits, t->c1, t->c2, t->value);
    case CRAFTAX_PPO_PROFILE_LOSS: return loss_terms(t, B, t->losses);
    case CRAFTAX_PPO_PROFILE_HEADS_BACKWARD: return bwd_heads(t, B);
    case CRAFTAX_PPO_PROFILE_GRU_BPTT: return bwd_gru_loop(t, B);
    case CRAFTAX_PPO_PROFILE_GRU_WEIGHTS: return bwd_gru_weights(t, B);
    case CRAFTAX_PPO_PROFILE_ENCODER_BACKWARD: return bwd_encoder(t, B, index);
    case CRAFTAX_PPO_PROFILE_OPTIMIZER:
        TRY(grad_norm(t, NULL));
        return adam_step(t);
    case CRAFTAX_PPO_PROFILE_ENCODER_BACKWARD_ALT:
        if (!t->sparse) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "profile: no other dW0 method for the dense encoder");
        return encoder_backward(t, B, index, t->dw0_method == DW0_GEMM ? DW0_SPARSE : DW0_GEMM);
    default: return fail(CRAFTAX_PPO_ERR_ARGUMENT, "profile: unknown part %d", part);
    }
}

static int enqueue_part(CraftaxPPO *t, int part) {
    const int T = t->T;
    if (part == CRAFTAX_PPO_PROFILE_UPDATE) return enqueue_update(t);
    if (part > CRAFTAX_PPO_PROFILE_UPDATE) return enqueue_phase(t, part);
    for (int s = 0; s < T; s++) {
        if (part == CRAFTAX_PPO_PROFILE_POLICY) {
            TRY(compact_slots(t, s, 1));
            TRY(policy_step(t, s, 1));
        } else {
            TRY(env_step(t, s));
        }
    }
    if (part == CRAFTAX_PPO_PROFILE_POLICY) {
        TRY(policy_step(t, T, 0));
        gae_kernel<<<blocks_for(t->N), TPB, 0, t->stream>>>(t->rewards, t->values, t->dones, T, t->N, t->c.gamma,
                                                            t->c.gae_lambda, t->adv, t->targets);
        LAUNCH(t, "gae");
    }
    return 0;
}

static int enqueue_update(CraftaxPPO *t) {
    const int N = t->N, B = t->B, M = t->M;
    for (int e = 0; e < t->c.update_epochs; e++) {
        perm_keys_kernel<<<blocks_for(N), TPB, 0, t->stream>>>(t->c.seed, t->scal, t->T + e, N, t->sort_keys);
        LAUNCH(t, "perm_keys");
        size_t bytes = t->sort_temp_bytes;
        cudaError_t err = cub::DeviceRadixSort::SortKeys(t->sort_temp, bytes, t->sort_keys, t->sort_keys_out, N, 0, 64,
                                                         t->stream);
        if (err != cudaSuccess) return cuda_fail(err, "permutation sort");
        LAUNCH(t, "permutation sort");
        perm_from_keys_kernel<<<blocks_for(N), TPB, 0, t->stream>>>(t->sort_keys_out, N, t->perm);
        LAUNCH(t, "perm_from_keys");
        for (int m = 0; m < M; m++) {
            double *stats = t->losses + (int64_t)(e * M + m) * CRAFTAX_PPO_NUM_LOSS_STATS;
            TRY(gather_minibatch(t, t->perm + (int64_t)m * B, B));
            TRY(loss_and_grads(t, B, t->perm + (int64_t)m * B, stats));
            TRY(allreduce_grads(t)); /* across ranks; nothing with one process */
            TRY(grad_norm(t, stats));
            TRY(adam_step(t));
        }
    }
    return 0;
}

static int enqueue_iteration(CraftaxPPO *t) {
    TRY(enqueue_rollout(t));
    TRY(enqueue_update(t));
    TRY(join_pool_generation(t));
    advance_iteration_kernel<<<1, 1, 0, t->stream>>>(t->scal);
    LAUNCH(t, "advance_iteration");
    return 0;
}

/* ---- graphs: an iteration (or a profiler part) captured once and replayed ------------------- */
/* Work enqueued on the trainer's stream: a whole iteration, or one profiler part
 * (CRAFTAX_PPO_PROFILE_*). */
#define WORK_ITERATION (-1)
static int enqueue_work(CraftaxPPO *t, int work) {
    return work == WORK_ITERATION ? enqueue_iteration(t) : enqueue_part(t, work);
}

/* Captures `work` as a CUDA graph into *exec. The work must have run eagerly once before:
 * cuBLAS picks and loads its kernels outside capture. */
static int capture_graph(CraftaxPPO *t, int work, cudaGraphExec_t *exec) {
    CUDA_TRY(cudaStreamBeginCapture(t->stream, cudaStreamCaptureModeThreadLocal), "begin capture");
    int rc = enqueue_work(t, work);
    cudaGraph_t g = NULL;
    cudaError_t err = cudaStreamEndCapture(t->stream, &g);
    if (rc != 0) {
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
        return rc;
    }
    if (err != cudaSuccess) return cuda_fail(err, "end capture");
    err = cudaGraphInstantiate(exec, g, 0);
    cudaGraphDestroy(g);
    if (err != cudaSuccess) {
        *exec = NULL;
        return cuda_fail(err, "graph instantiate");
    }
    return 0;
}

/* One iteration enqueued: the first eagerly; with use_graph (and not debug) every later one as
 * the graph captured at the second. */
static int run_iteration(CraftaxPPO *t) {
    if (!t->c.use_graph || t->c.debug || t->iterations_run == 0) return enqueue_iteration(t);
    if (!t->graph_exec) TRY(capture_graph(t, WORK_ITERATION, &t->graph_exec));
    CUDA_TRY(cudaGraphLaunch(t->graph_exec, t->stream), "graph launch");
    return 0;
}

/* Device milliseconds per repetition of one profiler part alone (craftax_ppo_profile, whose
 * arguments are checked): replayed as a graph with use_graph (captured at the first call), else
 * enqueued reps times. */
static int time_part(CraftaxPPO *t, int part, int reps, float *ms) {
    const int graph = t->c.use_graph && !t->c.debug;
    if (part > CRAFTAX_PPO_PROFILE_UPDATE) { /* a phase: fill every buffer it reads first */
        TRY(gather_minibatch(t, t->perm, t->B));
        TRY(loss_and_grads(t, t->B, t->perm, t->losses));
        TRY(sync(t, "profile"));
    }
    if (graph && !t->prof_exec[part]) {
        TRY(enqueue_part(t, part)); /* eagerly once: cuBLAS loads its kernels outside capture */
        TRY(sync(t, "profile"));
        TRY(capture_graph(t, part, &t->prof_exec[part]));
        CUDA_TRY(cudaGraphLaunch(t->prof_exec[part], t->stream), "graph launch"); /* warm */
    }
    CUDA_TRY(cudaEventRecord(t->ev0, t->stream), "event");
    for (int i = 0; i < reps; i++) {
        if (graph)
            CUDA_TRY(cudaGraphLaunch(t->prof_exec[part], t->stream), "graph launch");
        else
            TRY(enqueue_part(t, part));
    }
    CUDA_TRY(cudaEventRecord(t->ev1, t->stream), "event");
    TRY(sync(t, "profile"));
    float total = 0.0f;
    CUDA_TRY(cudaEventElapsedTime(&total, t->ev0, t->ev1), "event time");
    *ms = total / reps;
    return 0;
}

#endif
