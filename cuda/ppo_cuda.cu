/* ppo_cuda.cu: PPO-RNN (the Craftax paper's baseline) trained on the GPU, beside the env: the
 * extern "C" API of cuda/ppo_cuda.h (create, buffers, iterate, checks, profiling).
 *
 * The executable spec is pycraftax/train/numpy_ppo.py; function names follow it (forward,
 * backward, ppo_loss, gae, clip_by_global_norm, adam_update) so that one can be held against the
 * other. Built into cuda/build/libcraftax_cuda.so by cuda/Makefile (same flags as the env:
 * -fmad=false keeps the elementwise math rounding like numpy's, op by op).
 *
 * This file is the trainer's one translation unit; the parts it includes:
 *   ppo_common.cuh     the trainer's state, errors, launch helpers
 *   ppo_env.cuh        the envs it rolls out in (full game, Classic) behind one table
 *   ppo_gemm.cuh       cuBLAS (loaded at run time) and the forward GEMM kernels
 *   ppo_gru_cell.cuh   the GRU cell's arithmetic, shared by every forward path
 *   ppo_gru.cuh        the recurrent layer: steps, the persistent all-steps kernel, BPTT
 *   ppo_encoder.cuh    the observation encoder, dense or sparse
 *   ppo_loss.cuh       GAE and the PPO loss
 *   ppo_optimizer.cuh  gradient norm, clip, learning-rate schedule, Adam
 *   ppo_model.cuh      the network's forward and backward over a segment
 *   ppo_nccl.cuh       NCCL (loaded at run time): the gradients' average across GPUs
 *   ppo_iteration.cuh  rollout, update, one iteration, graph capture
 *
 * Layout: parameters, gradients and Adam moments are each one flat float buffer whose blocks are
 * the GEMM operands (the GRU's three input kernels side by side as Wi [E, 3H], the hidden ones as
 * Wh [H, 3H]); craftax_ppo_param_info maps numpy_ppo's flax names onto it.
 *
 * Determinism: no float atomics anywhere and a fixed cuBLAS workspace, so eager and graph
 * iterations agree bitwise and a resumed run continues bit-exactly.
 */
#include "ppo_common.cuh"
#include "ppo_env.cuh"
#include "ppo_gemm.cuh"
#include "ppo_gru.cuh"
#include "ppo_iteration.cuh"
#include "ppo_nccl.cuh"
#include "ppo_optimizer.cuh"

const char *craftax_ppo_last_error(void) { return g_error; }

int craftax_ppo_api_version(void) { return CRAFTAX_PPO_API_VERSION; }

int craftax_ppo_set_cublas_path(const char *path) {
    if (!path) {
        g_blas_path[0] = 0;
        return 0;
    }
    if (strlen(path) >= sizeof(g_blas_path)) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "cuBLAS path too long");
    snprintf(g_blas_path, sizeof(g_blas_path), "%s", path);
    return 0;
}

/* cudaMalloc recorded in t->allocs (release frees them all); out of memory names the buffer. */
static int dalloc(CraftaxPPO *t, void **p, size_t bytes, const char *what) {
    *p = NULL;
    if (t->num_allocs >= (int)(sizeof(t->allocs) / sizeof(t->allocs[0])))
        return fail(CRAFTAX_PPO_ERR_CUDA, "internal: too many allocations");
    cudaError_t err = cudaMalloc(p, bytes ? bytes : 16);
    if (err != cudaSuccess) {
        *p = NULL;
        cudaGetLastError();
        if (err == cudaErrorMemoryAllocation) {
            size_t free_b = 0, total_b = 0;
            cudaMemGetInfo(&free_b, &total_b);
            return fail(CRAFTAX_PPO_ERR_NO_MEMORY,
                        "out of GPU memory allocating %s (%.1f MiB; %.1f MiB free of %.1f MiB): use fewer envs, "
                        "steps or a smaller model",
                        what, bytes / 1048576.0, free_b / 1048576.0, total_b / 1048576.0);
        }
        return cuda_fail(err, what);
    }
    t->allocs[t->num_allocs++] = *p;
    return 0;
}
#define ALLOC(t, ptr, bytes) TRY(dalloc(t, (void **)&(ptr), (size_t)(bytes), #ptr))

/* ---- parameter tensors and buffers ----------------------------------------------------------- */
/* numpy_ppo's flax tensors, in its sorted order, and where each lies in the flat buffer. */
static const struct {
    const char *name;
    int block;
    int kind; /* 0: whole block; 1..3: gate column slice k-1 of a 3H-wide block */
} TENSORS[] = {
    {"params/Dense_0/bias", P_B0, 0},
    {"params/Dense_0/kernel", P_W0, 0},
    {"params/Dense_1/bias", P_B1, 0},
    {"params/Dense_1/kernel", P_W1, 0},
    {"params/Dense_2/bias", P_B2, 0},
    {"params/Dense_2/kernel", P_W2, 0},
    {"params/Dense_3/bias", P_B3, 0},
    {"params/Dense_3/kernel", P_W3, 0},
    {"params/Dense_4/bias", P_B4, 0},
    {"params/Dense_4/kernel", P_W4, 0},
    {"params/Dense_5/bias", P_B5, 0},
    {"params/Dense_5/kernel", P_W5, 0},
    {"params/Dense_6/bias", P_B6, 0},
    {"params/Dense_6/kernel", P_W6, 0},
    {"params/ScannedRNN_0/GRUCell_0/hn/bias", P_BHN, 0},
    {"params/ScannedRNN_0/GRUCell_0/hn/kernel", P_WH, 3},
    {"params/ScannedRNN_0/GRUCell_0/hr/kernel", P_WH, 1},
    {"params/ScannedRNN_0/GRUCell_0/hz/kernel", P_WH, 2},
    {"params/ScannedRNN_0/GRUCell_0/in/bias", P_BI, 3},
    {"params/ScannedRNN_0/GRUCell_0/in/kernel", P_WI, 3},
    {"params/ScannedRNN_0/GRUCell_0/ir/bias", P_BI, 1},
    {"params/ScannedRNN_0/GRUCell_0/ir/kernel", P_WI, 1},
    {"params/ScannedRNN_0/GRUCell_0/iz/bias", P_BI, 2},
    {"params/ScannedRNN_0/GRUCell_0/iz/kernel", P_WI, 2},
};
#define NUM_TENSORS ((int)(sizeof(TENSORS) / sizeof(TENSORS[0])))

int craftax_ppo_num_tensors(void) { return NUM_TENSORS; }

int craftax_ppo_param_info(const CraftaxPPO *t, int i, char *name, int name_size, int64_t *rows, int64_t *cols,
                           int64_t *offset, int64_t *ld) {
    if (!t || !name || !rows || !cols || !offset || !ld) return fail(CRAFTAX_PPO_ERR_NULL, "param_info: NULL");
    if (i < 0 || i >= NUM_TENSORS) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "param_info: index %d", i);
    snprintf(name, (size_t)name_size, "%s", TENSORS[i].name);
    const int b = TENSORS[i].block, k = TENSORS[i].kind;
    *rows = t->rows_[b];
    *ld = t->cols_[b];
    *cols = k ? t->cols_[b] / 3 : t->cols_[b];
    *offset = t->off[b] + (k ? (int64_t)(k - 1) * (t->cols_[b] / 3) : 0);
    return 0;
}

int64_t craftax_ppo_num_params(const CraftaxPPO *t) { return t ? t->P : 0; }

static int buffer_ptr(CraftaxPPO *t, int which, void **ptr, size_t *bytes) {
    const size_t N = t->N, T = t->T, D = t->D, H = t->H, P = t->P;
    const size_t f = sizeof(float);
    switch (which) {
    case CRAFTAX_PPO_BUF_PARAMS: *ptr = t->params; *bytes = P * f; return 0;
    case CRAFTAX_PPO_BUF_GRADS: *ptr = t->grads; *bytes = P * f; return 0;
    case CRAFTAX_PPO_BUF_ADAM_MU: *ptr = t->mu; *bytes = P * f; return 0;
    case CRAFTAX_PPO_BUF_ADAM_NU: *ptr = t->nu; *bytes = P * f; return 0;
    case CRAFTAX_PPO_BUF_COUNTERS: *ptr = (char *)t->scal + offsetof(Scalars, counters); *bytes = 4 * sizeof(int64_t); return 0;
    case CRAFTAX_PPO_BUF_HSTATE: *ptr = t->hstate; *bytes = N * H * f; return 0;
    case CRAFTAX_PPO_BUF_LAST_DONE: *ptr = t->dones + T * N; *bytes = N; return 0;
    case CRAFTAX_PPO_BUF_ENV_KEY: *ptr = (char *)t->scal + offsetof(Scalars, env_key); *bytes = 2 * sizeof(uint32_t); return 0;
    case CRAFTAX_PPO_BUF_RET_ACC: *ptr = t->ret_acc; *bytes = N * f; return 0;
    case CRAFTAX_PPO_BUF_LEN_ACC: *ptr = t->len_acc; *bytes = N * sizeof(int32_t); return 0;
    case CRAFTAX_PPO_BUF_OBS: *ptr = t->obs; *bytes = (T + 1) * N * D * f; return 0;
    case CRAFTAX_PPO_BUF_DONES: *ptr = t->dones; *bytes = (T + 1) * N; return 0;
    case CRAFTAX_PPO_BUF_ACTIONS: *ptr = t->actions; *bytes = T * N * sizeof(int32_t); return 0;
    case CRAFTAX_PPO_BUF_LOGP: *ptr = t->logp; *bytes = T * N * f; return 0;
    case CRAFTAX_PPO_BUF_VALUES: *ptr = t->values; *bytes = (T + 1) * N * f; return 0;
    case CRAFTAX_PPO_BUF_REWARDS: *ptr = t->rewards; *bytes = T * N * f; return 0;
    case CRAFTAX_PPO_BUF_ADVANTAGES: *ptr = t->adv; *bytes = T * N * f; return 0;
    case CRAFTAX_PPO_BUF_TARGETS: *ptr = t->targets; *bytes = T * N * f; return 0;
    case CRAFTAX_PPO_BUF_H0: *ptr = t->h0; *bytes = N * H * f; return 0;
    case CRAFTAX_PPO_BUF_EPISODES: *ptr = t->ep_return; *bytes = T * N * (2 + ACH_WORDS) * 4; return 0;
    case CRAFTAX_PPO_BUF_LOSSES:
        *ptr = t->losses;
        *bytes = (size_t)t->c.update_epochs * t->M * CRAFTAX_PPO_NUM_LOSS_STATS * sizeof(double);
        return 0;
    case CRAFTAX_PPO_BUF_REPLAY: *ptr = t->replay; *bytes = 2 * T * N * f; return 0;
    case CRAFTAX_PPO_BUF_CUR_OBS: *ptr = t->obs + T * N * D; *bytes = N * D * f; return 0;
    default: return fail(CRAFTAX_PPO_ERR_ARGUMENT, "unknown buffer %d", which);
    }
}

size_t craftax_ppo_buffer_bytes(const CraftaxPPO *t, int which) {
    void *p = NULL;
    size_t bytes = 0;
    if (!t || buffer_ptr((CraftaxPPO *)t, which, &p, &bytes) != 0) return 0;
    return bytes;
}

int craftax_ppo_read(CraftaxPPO *t, int which, void *host, size_t bytes) {
    if (!t || !host) return fail(CRAFTAX_PPO_ERR_NULL, "read: NULL");
    void *p = NULL;
    size_t n = 0;
    TRY(buffer_ptr(t, which, &p, &n));
    if (bytes != n) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "read buffer %d: %zu bytes given, %zu expected", which, bytes, n);
    CUDA_TRY(cudaStreamSynchronize(t->stream), "read: synchronize");
    CUDA_TRY(cudaMemcpy(host, p, n, cudaMemcpyDeviceToHost), "read: copy");
    return 0;
}

int craftax_ppo_write(CraftaxPPO *t, int which, const void *host, size_t bytes) {
    if (!t || !host) return fail(CRAFTAX_PPO_ERR_NULL, "write: NULL");
    void *p = NULL;
    size_t n = 0;
    TRY(buffer_ptr(t, which, &p, &n));
    if (bytes != n) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "write buffer %d: %zu bytes given, %zu expected", which, bytes, n);
    CUDA_TRY(cudaStreamSynchronize(t->stream), "write: synchronize");
    CUDA_TRY(cudaMemcpy(p, host, n, cudaMemcpyHostToDevice), "write: copy");
    /* the sparse encoder reads the nonzero lists, not the obs: keep them in step */
    if (which == CRAFTAX_PPO_BUF_OBS) TRY(compact_slots(t, 0, t->T + 1));
    if (which == CRAFTAX_PPO_BUF_CUR_OBS) TRY(compact_slots(t, t->T, 1));
    return sync(t, "write");
}

static int validate(const CraftaxPPOConfig *c) {
#define POS(f)                                                                          \
    if (c->f < 1) return fail(CRAFTAX_PPO_ERR_CONFIG, #f " must be >= 1, got %lld", (long long)c->f);
    POS(num_envs) POS(num_steps) POS(obs_size) POS(num_actions) POS(width) POS(hidden) POS(update_epochs)
    POS(num_minibatches) POS(num_updates)
#undef POS
    if (c->reset_ratio < 0 || (c->reset_ratio > 0 && c->num_envs % c->reset_ratio))
        return fail(CRAFTAX_PPO_ERR_CONFIG, "reset_ratio %d must be 0 (auto resets) or divide num_envs %d",
                    c->reset_ratio, c->num_envs);
    if (c->num_envs % c->num_minibatches)
        return fail(CRAFTAX_PPO_ERR_CONFIG, "num_minibatches (%d) must divide num_envs (%d)", c->num_minibatches,
                    c->num_envs);
    if (!(c->lr > 0) || !(c->gamma >= 0 && c->gamma <= 1) || !(c->gae_lambda >= 0 && c->gae_lambda <= 1) ||
        !(c->clip_eps > 0) || !(c->ent_coef >= 0) || !(c->vf_coef >= 0) || !(c->max_grad_norm > 0))
        return fail(CRAFTAX_PPO_ERR_CONFIG, "a loss/optimiser coefficient is out of range or not finite");
    if (!env_ops_of(c->env))
        return fail(CRAFTAX_PPO_ERR_CONFIG, "env %d: not CRAFTAX_PPO_ENV_CRAFTAX (0) or CRAFTAX_PPO_ENV_CLASSIC (1)",
                    c->env);
    if (c->encoder != CRAFTAX_PPO_ENCODER_DENSE && c->encoder != CRAFTAX_PPO_ENCODER_SPARSE)
        return fail(CRAFTAX_PPO_ERR_CONFIG, "encoder %d: not CRAFTAX_PPO_ENCODER_DENSE (0) or _SPARSE (1)",
                    c->encoder);
    if (c->encoder == CRAFTAX_PPO_ENCODER_SPARSE) {
        if (c->max_nnz < 1 || c->max_nnz > c->obs_size)
            return fail(CRAFTAX_PPO_ERR_CONFIG, "max_nnz %d not in [1, obs_size %d]", c->max_nnz, c->obs_size);
        if (c->width % 4)
            return fail(CRAFTAX_PPO_ERR_CONFIG, "the sparse encoder needs width %% 4 == 0, got width %d", c->width);
    }
    /* int GEMM dimensions: rows of the replay (T * N) and the largest product */
    if ((int64_t)c->num_steps * c->num_envs > (1LL << 30) || (int64_t)c->num_envs * c->obs_size > (1LL << 40))
        return fail(CRAFTAX_PPO_ERR_CONFIG, "num_steps * num_envs too large");
    return 0;
}

static void release(CraftaxPPO *t) {
    if (!t) return;
    if (t->stream) cudaStreamSynchronize(t->stream);
    if (t->pool_stream) cudaStreamSynchronize(t->pool_stream);
    if (t->graph_exec) cudaGraphExecDestroy(t->graph_exec);
    for (int i = 0; i < CRAFTAX_PPO_PROFILE_COUNT; i++)
        if (t->prof_exec[i]) cudaGraphExecDestroy(t->prof_exec[i]);
    dist_release(t);
    if (t->blas && g_blas.destroy) g_blas.destroy(t->blas);
    for (int i = 0; i < t->num_allocs; i++) cudaFree(t->allocs[i]);
    if (t->ev0) cudaEventDestroy(t->ev0);
    if (t->ev1) cudaEventDestroy(t->ev1);
    if (t->pool_fork) cudaEventDestroy(t->pool_fork);
    if (t->pool_join) cudaEventDestroy(t->pool_join);
    if (t->pool_stream) cudaStreamDestroy(t->pool_stream);
    if (t->stream) cudaStreamDestroy(t->stream);
    free(t);
}

static int create(const CraftaxPPOConfig *config, void *env_states, void *env_scratch, const void *env_params,
                  size_t env_params_size, CraftaxPPO *t) {
    t->c = *config;
    const CraftaxPPOConfig *c = &t->c;
    t->N = c->num_envs;
    t->T = c->num_steps;
    t->D = c->obs_size;
    t->A = c->num_actions;
    t->E = c->width;
    t->H = c->hidden;
    t->M = c->num_minibatches;
    t->B = t->N / t->M;
    t->R = t->T * t->B;
    t->Rmax = t->T * t->N; /* replay runs all envs as one minibatch */
    const CraftaxPPOEnvOps *env = env_ops_of(c->env);
    t->env_ops = env;
    if (env_states || env_scratch) {
        const int takes_scratch = env->world_scratch_size() != 0;
        if (!env_states || !env_params || (takes_scratch && !env_scratch))
            return fail(CRAFTAX_PPO_ERR_NULL, "%s: env_states, env_params%s go together", env->name,
                        takes_scratch ? " and env_scratch" : "");
        if (env_params_size != env->params_size)
            return fail(CRAFTAX_PPO_ERR_ARGUMENT, "env params size %zu != %zu, the size of %s's params",
                        env_params_size, env->params_size, env->name);
        if (t->D != env->obs_size())
            return fail(CRAFTAX_PPO_ERR_CONFIG, "obs_size %d != %s's %d", t->D, env->name, env->obs_size());
        if (t->A != env->num_actions)
            return fail(CRAFTAX_PPO_ERR_CONFIG, "num_actions %d != %s's %d", t->A, env->name, env->num_actions);
        memcpy(&t->env_params, env_params, env->params_size);
        t->env_states = env_states;
        t->env_scratch = takes_scratch ? env_scratch : NULL;
        t->env_state_size = env->state_size();
        t->has_env = 1;
    }
    TRY(load_cublas());
    TRY(mm_setup());
    CUDA_TRY(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    CUDA_TRY(cudaEventCreate(&t->ev0), "cudaEventCreate");
    CUDA_TRY(cudaEventCreate(&t->ev1), "cudaEventCreate");
    cublasStatus st = g_blas.create(&t->blas);
    if (st != 0) {
        t->blas = NULL;
        return blas_fail(st, "cublasCreate");
    }
    st = g_blas.set_stream(t->blas, t->stream);
    if (st != 0) return blas_fail(st, "cublasSetStream");
    /* own workspace: graph capture must not make cuBLAS allocate, and a fixed workspace keeps
     * its kernels' choice (and so the results) stable */
    t->workspace_bytes = 64u << 20;
    ALLOC(t, t->workspace, t->workspace_bytes);
    st = g_blas.set_workspace(t->blas, t->workspace, t->workspace_bytes);
    if (st != 0) return blas_fail(st, "cublasSetWorkspace");

    /* parameter layout */
    const int64_t D = t->D, E = t->E, H = t->H, A = t->A;
    const int64_t shapes[P_COUNT][2] = {{D, E}, {1, E}, {E, 3 * H}, {1, 3 * H}, {H, 3 * H}, {1, H},
                                        {H, E}, {1, E}, {E, E},     {1, E},     {E, A},     {1, A},
                                        {H, E}, {1, E}, {E, E},     {1, E},     {E, 1},     {1, 1}};
    int64_t off = 0;
    for (int b = 0; b < P_COUNT; b++) {
        t->off[b] = off;
        t->rows_[b] = shapes[b][0];
        t->cols_[b] = shapes[b][1];
        off += (shapes[b][0] * shapes[b][1] + 63) / 64 * 64;
    }
    t->P = off;
    const size_t f = sizeof(float);
    const size_t N = t->N, T = t->T, R = t->Rmax, Bn = t->N;
    ALLOC(t, t->params, t->P * f);
    ALLOC(t, t->grads, t->P * f);
    ALLOC(t, t->mu, t->P * f);
    ALLOC(t, t->nu, t->P * f);
    ALLOC(t, t->scal, sizeof(Scalars));
    t->sumsq_blocks = 264;
    ALLOC(t, t->sumsq_part, t->sumsq_blocks * sizeof(double));
    ALLOC(t, t->losses, (size_t)c->update_epochs * t->M * CRAFTAX_PPO_NUM_LOSS_STATS * sizeof(double));
    ALLOC(t, t->obs, (T + 1) * N * D * f);
    ALLOC(t, t->dones, (T + 1) * N);
    ALLOC(t, t->actions, T * N * 4);
    ALLOC(t, t->logp, T * N * f);
    ALLOC(t, t->values, (T + 1) * N * f);
    ALLOC(t, t->rewards, T * N * f);
    ALLOC(t, t->adv, T * N * f);
    ALLOC(t, t->targets, T * N * f);
    ALLOC(t, t->h0, N * H * f);
    ALLOC(t, t->hstate, N * H * f);
    ALLOC(t, t->ret_acc, N * f);
    ALLOC(t, t->len_acc, N * 4);
    ALLOC(t, t->env_keys, N * 2 * 4);
    ALLOC(t, t->done_list, (N + 1) * 4);
    t->scal_sub_key = (uint32_t *)((char *)t->scal + offsetof(Scalars, sub_key));
    if (t->has_env && c->reset_ratio > 0) {
        t->W = (int)(N / c->reset_ratio);
        CUDA_TRY(cudaStreamCreateWithFlags(&t->pool_stream, cudaStreamNonBlocking), "cudaStreamCreate");
        CUDA_TRY(cudaEventCreateWithFlags(&t->pool_fork, cudaEventDisableTiming), "cudaEventCreate");
        CUDA_TRY(cudaEventCreateWithFlags(&t->pool_join, cudaEventDisableTiming), "cudaEventCreate");
        ALLOC(t, t->pool_worlds, T * t->W * t->env_state_size);
        if (env->world_scratch_size()) ALLOC(t, t->pool_scratch, T * t->W * env->world_scratch_size());
        ALLOC(t, t->pool_keys, T * 2 * 4);
        ALLOC(t, t->opt_work, env->optimistic_work_size((int64_t)N));
    }
    ALLOC(t, t->terminated, N);
    ALLOC(t, t->truncated, N);
    ALLOC(t, t->final_ach, N * env->num_achievements);
    /* episode log: ep_return, ep_length, ep_ach contiguous (one read) */
    ALLOC(t, t->ep_return, T * N * (2 + ACH_WORDS) * 4);
    t->ep_length = (int32_t *)(t->ep_return + T * N);
    t->ep_ach = (uint32_t *)(t->ep_length + T * N);
    ALLOC(t, t->s_pre, N * E * f);
    ALLOC(t, t->s_xi, N * 3 * H * f);
    ALLOC(t, t->s_hp, N * H * f);
    ALLOC(t, t->s_a1, N * E * f);
    ALLOC(t, t->s_a2, N * E * f);
    ALLOC(t, t->s_logits, N * A * f);
    ALLOC(t, t->s_c1, N * (E > H ? E : H) * f);
    ALLOC(t, t->s_c2, N * E * f);
    ALLOC(t, t->perm, N * 4);
    ALLOC(t, t->sort_keys, N * 8);
    ALLOC(t, t->sort_keys_out, N * 8);
    t->sort_temp_bytes = 0;
    {
        cudaError_t err = cub::DeviceRadixSort::SortKeys((void *)NULL, t->sort_temp_bytes, t->sort_keys,
                                                         t->sort_keys_out, (int)N, 0, 64, t->stream);
        if (err != cudaSuccess) return cuda_fail(err, "sort temp size");
    }
    ALLOC(t, t->sort_temp, t->sort_temp_bytes);
    ALLOC(t, t->mb_index, N * 4);
    /* the gathered minibatch obs: the dense encoder's input (replay's all-env batch included);
     * with the sparse encoder only for dW0 as a TF32 GEMM (the update's T * B rows) */
    t->sparse = c->encoder == CRAFTAX_PPO_ENCODER_SPARSE;
    {
        const char *legacy = getenv("PYCRAFTAX_PPO_LEGACY");
        t->baseline_kernels = legacy && atoi(legacy) == 1;
    }
    t->dw0_method = t->sparse && (!c->tf32 || t->baseline_kernels) ? DW0_SPARSE : DW0_GEMM;
    t->x_rows = !t->sparse ? (int64_t)R : c->tf32 ? (int64_t)t->R : 0;
    ALLOC(t, t->x, (t->x_rows ? t->x_rows * D : 1) * f);
    ALLOC(t, t->s_hnew, N * H * f);
    ALLOC(t, t->gru_barrier, (N + GS_BM - 1) / GS_BM * sizeof(unsigned)); /* Bc <= N rows */
    TRY(gru_seq_setup(t));
    ALLOC(t, t->m_dones, R + Bn);
    ALLOC(t, t->m_actions, R * 4);
    ALLOC(t, t->m_logp, R * f);
    ALLOC(t, t->m_values, R * f);
    ALLOC(t, t->m_adv, R * f);
    ALLOC(t, t->m_targets, R * f);
    ALLOC(t, t->m_h0, Bn * H * f);
    ALLOC(t, t->emb, R * E * f);
    ALLOC(t, t->xi, R * 3 * H * f);
    ALLOC(t, t->hps, R * H * f);
    ALLOC(t, t->rs, R * H * f);
    ALLOC(t, t->zs, R * H * f);
    ALLOC(t, t->ns, R * H * f);
    ALLOC(t, t->hns, R * H * f);
    ALLOC(t, t->hs, R * H * f);
    ALLOC(t, t->hh, Bn * 3 * H * f);
    ALLOC(t, t->a1, R * E * f);
    ALLOC(t, t->a2, R * E * f);
    ALLOC(t, t->logits, R * A * f);
    ALLOC(t, t->c1, R * E * f);
    ALLOC(t, t->c2, R * E * f);
    ALLOC(t, t->value, R * f);
    ALLOC(t, t->dlogits, R * A * f);
    ALLOC(t, t->dvalue, R * f);
    ALLOC(t, t->da2, R * E * f);
    ALLOC(t, t->da1, R * E * f);
    ALLOC(t, t->dy, R * H * f);
    ALLOC(t, t->dxi, R * 3 * H * f);
    ALLOC(t, t->dhh, R * 3 * H * f);
    ALLOC(t, t->dhp, Bn * H * f);
    ALLOC(t, t->demb, R * E * f);
    ALLOC(t, t->ones, R * f);
    ALLOC(t, t->row_terms, R * 5 * sizeof(double));
    ALLOC(t, t->replay, 2 * T * N * f);
    if (t->sparse) {
        const size_t nz = (T + 1) * N * (size_t)c->max_nnz;
        ALLOC(t, t->nz_idx, nz * 4);
        ALLOC(t, t->nz_val, nz * f);
        ALLOC(t, t->nz_cnt, (T + 1) * N * 4);
        CUDA_TRY(cudaMemsetAsync(t->nz_cnt, 0, (T + 1) * N * 4, t->stream), "memset");
        t->bm_words = (int)((T * (size_t)t->B + 31) / 32);
        ALLOC(t, t->bitmap, D * (size_t)t->bm_words * 4);
    }
    /* zero everything the first iteration reads before writing */
    CUDA_TRY(cudaMemsetAsync(t->params, 0, t->P * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->grads, 0, t->P * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->mu, 0, t->P * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->nu, 0, t->P * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->scal, 0, sizeof(Scalars), t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->losses, 0, (size_t)c->update_epochs * t->M * CRAFTAX_PPO_NUM_LOSS_STATS * 8, t->stream),
             "memset");
    CUDA_TRY(cudaMemsetAsync(t->obs, 0, (T + 1) * N * D * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->dones, 0, (T + 1) * N, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->actions, 0, T * N * 4, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->logp, 0, T * N * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->values, 0, (T + 1) * N * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->rewards, 0, T * N * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->adv, 0, T * N * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->targets, 0, T * N * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->h0, 0, N * H * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->hstate, 0, N * H * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->ret_acc, 0, N * f, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->len_acc, 0, N * 4, t->stream), "memset");
    CUDA_TRY(cudaMemsetAsync(t->ep_return, 0, T * N * (2 + ACH_WORDS) * 4, t->stream), "memset");
    { /* the identity permutation until the first update: the profiler's phases read perm */
        int32_t *iota = (int32_t *)malloc(N * 4);
        if (!iota) return fail(CRAFTAX_PPO_ERR_NO_MEMORY, "create: host out of memory");
        for (size_t i = 0; i < N; i++) iota[i] = (int32_t)i;
        cudaError_t err = cudaMemcpy(t->perm, iota, N * 4, cudaMemcpyHostToDevice);
        free(iota);
        if (err != cudaSuccess) return cuda_fail(err, "create: perm");
    }
    fill_kernel<<<blocks_for(R), TPB, 0, t->stream>>>(t->ones, 1.0f, (int64_t)R);
    LAUNCH(t, "fill ones");
    return sync(t, "create");
}

int craftax_ppo_create(const CraftaxPPOConfig *config, void *env_states, void *env_scratch, const void *env_params,
                       size_t env_params_size, CraftaxPPO **out) {
    if (!config || !out) return fail(CRAFTAX_PPO_ERR_NULL, "create: NULL config or out");
    *out = NULL;
    TRY(validate(config));
    CraftaxPPO *t = (CraftaxPPO *)calloc(1, sizeof(CraftaxPPO));
    if (!t) return fail(CRAFTAX_PPO_ERR_NO_MEMORY, "create: host out of memory");
    int rc = create(config, env_states, env_scratch, env_params, env_params_size, t);
    if (rc != 0) {
        char saved[sizeof(g_error)];
        memcpy(saved, g_error, sizeof(saved));
        release(t);
        cudaGetLastError();
        memcpy(g_error, saved, sizeof(saved));
        return rc;
    }
    *out = t;
    return 0;
}

void craftax_ppo_destroy(CraftaxPPO *t) { release(t); }

int craftax_ppo_begin(CraftaxPPO *t, const uint32_t *env_key) {
    if (!t || !env_key) return fail(CRAFTAX_PPO_ERR_NULL, "begin: NULL");
    if (!t->has_env) return fail(CRAFTAX_PPO_ERR_NO_ENV, "begin: this trainer has no env");
    const size_t N = t->N, T = t->T, D = t->D, H = t->H;
    TRY(sync(t, "begin"));
    int rc = t->env_ops->observe(t->env_states, (int64_t)N, t->obs + T * N * D);
    if (rc != 0) return fail(CRAFTAX_PPO_ERR_CUDA, "begin: observe: %s", craftax_cuda_last_error());
    CUDA_TRY(cudaMemset(t->dones + T * N, 0, N), "begin: memset");
    CUDA_TRY(cudaMemset(t->hstate, 0, N * H * sizeof(float)), "begin: memset");
    CUDA_TRY(cudaMemset(t->ret_acc, 0, N * sizeof(float)), "begin: memset");
    CUDA_TRY(cudaMemset(t->len_acc, 0, N * sizeof(int32_t)), "begin: memset");
    CUDA_TRY(cudaMemcpy((char *)t->scal + offsetof(Scalars, env_key), env_key, 2 * sizeof(uint32_t), cudaMemcpyHostToDevice), "begin: key");
    CUDA_TRY(cudaDeviceSynchronize(), "begin");
    TRY(compact_slots(t, (int)T, 1));
    TRY(fork_pool_generation(t));
    TRY(join_pool_generation(t));
    TRY(sync(t, "begin"));
    return 0;
}

int craftax_ppo_iterate(CraftaxPPO *t) {
    if (!t) return fail(CRAFTAX_PPO_ERR_NULL, "iterate: NULL");
    if (!t->has_env) return fail(CRAFTAX_PPO_ERR_NO_ENV, "iterate: this trainer has no env");
    TRY(dist_ready(t, "iterate"));
    CUDA_TRY(cudaEventRecord(t->ev0, t->stream), "event");
    TRY(run_iteration(t));
    CUDA_TRY(cudaEventRecord(t->ev1, t->stream), "event");
    TRY(dist_sync(t, "iterate"));
    cudaEventElapsedTime(&t->last_ms, t->ev0, t->ev1);
    t->iterations_run++;
    return 0;
}

int craftax_ppo_rollout(CraftaxPPO *t) {
    if (!t) return fail(CRAFTAX_PPO_ERR_NULL, "rollout: NULL");
    if (!t->has_env) return fail(CRAFTAX_PPO_ERR_NO_ENV, "rollout: this trainer has no env");
    TRY(enqueue_rollout(t));
    TRY(join_pool_generation(t));
    advance_iteration_kernel<<<1, 1, 0, t->stream>>>(t->scal);
    LAUNCH(t, "advance_iteration");
    return sync(t, "rollout");
}

int craftax_ppo_replay(CraftaxPPO *t, const int32_t *env_index, int count) {
    if (!t) return fail(CRAFTAX_PPO_ERR_NULL, "replay: NULL");
    const int N = t->N, T = t->T;
    if (!env_index) count = N;
    if (count < 1 || count > N) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "replay: count %d not in [1, %d]", count, N);
    int32_t *idx = (int32_t *)malloc((size_t)count * 4);
    if (!idx) return fail(CRAFTAX_PPO_ERR_NO_MEMORY, "replay: host memory");
    for (int i = 0; i < count; i++) {
        idx[i] = env_index ? env_index[i] : i;
        if (idx[i] < 0 || idx[i] >= N) {
            free(idx);
            return fail(CRAFTAX_PPO_ERR_ARGUMENT, "replay: env index %d out of range", env_index[i]);
        }
    }
    cudaError_t err = cudaMemcpy(t->mb_index, idx, (size_t)count * 4, cudaMemcpyHostToDevice);
    free(idx);
    if (err != cudaSuccess) return cuda_fail(err, "replay: copy index");
    TRY(gather_minibatch(t, t->mb_index, count));
    TRY(segment_forward(t, count, t->mb_index));
    CUDA_TRY(cudaMemsetAsync(t->replay, 0, 2 * (size_t)T * N * sizeof(float), t->stream), "replay: memset");
    replay_kernel<<<blocks_for((int64_t)T * count), TPB, 0, t->stream>>>(t->logits, t->value, t->m_actions,
                                                                         (int64_t)T * count, t->A, count, T, N,
                                                                         t->replay);
    LAUNCH(t, "replay");
    TRY(sync(t, "replay"));
    return 0;
}

int craftax_ppo_gae(CraftaxPPO *t) {
    if (!t) return fail(CRAFTAX_PPO_ERR_NULL, "gae: NULL");
    gae_kernel<<<blocks_for(t->N), TPB, 0, t->stream>>>(t->rewards, t->values, t->dones, t->T, t->N, t->c.gamma,
                                                        t->c.gae_lambda, t->adv, t->targets);
    LAUNCH(t, "gae");
    return sync(t, "gae");
}

int craftax_ppo_loss_grads(CraftaxPPO *t, const int32_t *env_index, double *out_stats) {
    if (!t || !env_index) return fail(CRAFTAX_PPO_ERR_NULL, "loss_grads: NULL");
    for (int b = 0; b < t->B; b++)
        if (env_index[b] < 0 || env_index[b] >= t->N)
            return fail(CRAFTAX_PPO_ERR_ARGUMENT, "loss_grads: env index %d out of range", env_index[b]);
    CUDA_TRY(cudaMemcpy(t->mb_index, env_index, (size_t)t->B * 4, cudaMemcpyHostToDevice), "loss_grads: index");
    double *stats = t->losses; /* row 0 */
    TRY(gather_minibatch(t, t->mb_index, t->B));
    TRY(loss_and_grads(t, t->B, t->mb_index, stats));
    sumsq_kernel<<<t->sumsq_blocks, TPB, 0, t->stream>>>(t->grads, t->P, t->sumsq_part);
    LAUNCH(t, "sumsq");
    TRY(sync(t, "loss_grads"));
    if (out_stats) {
        double host[CRAFTAX_PPO_NUM_LOSS_STATS];
        CUDA_TRY(cudaMemcpy(host, stats, sizeof(host), cudaMemcpyDeviceToHost), "loss_grads: stats");
        double *part = (double *)malloc(t->sumsq_blocks * sizeof(double));
        if (!part) return fail(CRAFTAX_PPO_ERR_NO_MEMORY, "host memory");
        cudaError_t err = cudaMemcpy(part, t->sumsq_part, t->sumsq_blocks * sizeof(double), cudaMemcpyDeviceToHost);
        double s = 0;
        for (int i = 0; i < t->sumsq_blocks; i++) s += part[i];
        free(part);
        if (err != cudaSuccess) return cuda_fail(err, "loss_grads: norm");
        Scalars sc;
        CUDA_TRY(cudaMemcpy(&sc, t->scal, sizeof(sc), cudaMemcpyDeviceToHost), "loss_grads: scalars");
        const int64_t per_update = (int64_t)t->c.num_minibatches * t->c.update_epochs;
        host[6] = sqrt(s);
        host[7] = learning_rate(t->c.lr, t->c.anneal_lr, sc.counters[1] / per_update, t->c.num_updates);
        memcpy(out_stats, host, sizeof(host));
    }
    return 0;
}

int craftax_ppo_apply_grads(CraftaxPPO *t) {
    if (!t) return fail(CRAFTAX_PPO_ERR_NULL, "apply_grads: NULL");
    TRY(grad_norm(t, NULL));
    TRY(adam_step(t));
    return sync(t, "apply_grads");
}

int craftax_ppo_profile(CraftaxPPO *t, int part, int reps, float *ms) {
    if (!t || !ms) return fail(CRAFTAX_PPO_ERR_NULL, "profile: NULL");
    if (part < 0 || part >= CRAFTAX_PPO_PROFILE_COUNT)
        return fail(CRAFTAX_PPO_ERR_ARGUMENT, "profile: unknown part %d", part);
    if (reps < 1) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "profile: reps %d < 1", reps);
    if (!t->has_env && part < CRAFTAX_PPO_PROFILE_UPDATE)
        return fail(CRAFTAX_PPO_ERR_NO_ENV, "profile: this trainer has no env");
    if (part == CRAFTAX_PPO_PROFILE_ENCODER_BACKWARD_ALT && !t->sparse)
        return fail(CRAFTAX_PPO_ERR_ARGUMENT, "profile: no other dW0 method for the dense encoder");
    if (part == CRAFTAX_PPO_PROFILE_ENCODER_BACKWARD_ALT && t->dw0_method == DW0_SPARSE && !t->x_rows)
        return fail(CRAFTAX_PPO_ERR_ARGUMENT, "profile: dW0 as a GEMM needs TF32 with the sparse encoder");
    return time_part(t, part, reps, ms);
}

int64_t craftax_ppo_nnz_overflow(CraftaxPPO *t) {
    if (!t) return -1;
    Scalars sc;
    if (cudaMemcpy(&sc, t->scal, sizeof(sc), cudaMemcpyDeviceToHost) != cudaSuccess) return -1;
    return sc.nnz_overflow;
}

float craftax_ppo_last_iterate_ms(const CraftaxPPO *t) { return t ? t->last_ms : 0.0f; }
int craftax_ppo_gru_seq_blocks(const CraftaxPPO *t) { return t ? t->gru_seq_blocks : 0; }

double craftax_ppo_learning_rate(double base_lr, int anneal, int64_t update, int64_t num_updates) {
    return learning_rate(base_lr, anneal, update, num_updates);
}

int craftax_ppo_set_nccl_path(const char *path) {
    if (!path) {
        g_nccl_path[0] = 0;
        return 0;
    }
    if (strlen(path) >= sizeof(g_nccl_path)) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "NCCL path too long");
    snprintf(g_nccl_path, sizeof(g_nccl_path), "%s", path);
    return 0;
}

int craftax_ppo_nccl_unique_id(uint8_t *out, size_t bytes) {
    if (!out) return fail(CRAFTAX_PPO_ERR_NULL, "nccl_unique_id: NULL");
    if (bytes != CRAFTAX_PPO_NCCL_ID_BYTES)
        return fail(CRAFTAX_PPO_ERR_ARGUMENT, "nccl_unique_id: %zu bytes given, %d expected", bytes,
                    CRAFTAX_PPO_NCCL_ID_BYTES);
    return nccl_unique_id(out);
}

int craftax_ppo_set_distributed(CraftaxPPO *t, int rank, int world, const uint8_t *unique_id, size_t id_bytes,
                                double timeout_s) {
    if (!t) return fail(CRAFTAX_PPO_ERR_NULL, "set_distributed: NULL");
    if (unique_id && id_bytes != CRAFTAX_PPO_NCCL_ID_BYTES)
        return fail(CRAFTAX_PPO_ERR_ARGUMENT, "set_distributed: unique id of %zu bytes, %d expected", id_bytes,
                    CRAFTAX_PPO_NCCL_ID_BYTES);
    return dist_init(t, rank, world, unique_id, timeout_s);
}

int craftax_ppo_world_size(const CraftaxPPO *t) { return t ? (t->dist ? t->dist->world : 1) : 0; }
