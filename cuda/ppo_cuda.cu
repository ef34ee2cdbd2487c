/* ppo_cuda.cu: PPO-RNN (the Craftax paper's baseline) trained on the GPU, beside the env.
 *
 * The executable spec is pycraftax/train/numpy_ppo.py; function names below follow it
 * (forward, backward, ppo_loss, gae, clip_by_global_norm, adam_update) so that one can be
 * held against the other. API: cuda/ppo_cuda.h. Built into cuda/build/libcraftax_cuda.so
 * by cuda/Makefile (same flags as the env: -fmad=false keeps the elementwise math rounding
 * like numpy's, op by op).
 *
 * Layout: every matrix is row-major; cuBLAS (column-major) computes C^T = op(B)^T op(A)^T,
 * see gemm(). Parameters, gradients and Adam moments are each one flat float buffer whose
 * blocks are the GEMM operands (the GRU's three input kernels side by side as Wi [E, 3H],
 * the hidden ones as Wh [H, 3H]); craftax_ppo_param_info maps numpy_ppo's flax names onto it.
 *
 * One iteration on the trainer's stream: rollout (per step: policy forward, sampling with
 * threefry of (seed, iteration, step, env), env key split on the device exactly as
 * CudaCraftaxEnv.step does, auto-reset env step, episode log), bootstrap value, GAE, then
 * epochs x minibatches of (gather minibatch, forward, loss, BPTT backward, global-norm clip,
 * Adam). Host code only enqueues; with use_graph the whole iteration is one CUDA graph.
 *
 * cuBLAS is dlopen'ed (libcublas.so.13, or the path given by craftax_ppo_set_cublas_path,
 * e.g. the one of the nvidia-cublas wheel PyTorch installs): the env half of the library
 * must keep loading where cuBLAS is absent, and CUDA 13 ships no static cuBLAS in the wheel.
 *
 * Determinism: no float atomics anywhere; cuBLAS is deterministic for a fixed handle,
 * stream and workspace (cublasSetWorkspace), so eager and graph iterations agree bitwise
 * and a resumed run continues bit-exactly.
 *
 * Forward passes never use cuBLAS: its kernel choice (and so its accumulation order) depends
 * on the number of rows, and the rollout (N rows per step), the update (T * B rows) and the
 * replay (T * N rows) must give every sample bitwise the same log-prob and value, so that
 * PPO's first-epoch ratio is exactly 1. fwd_gemm_kernel (fp32) and fwd_gemm_tf32_kernel (TF32
 * tensor cores, wmma) accumulate each output over K in one fixed order whatever M is;
 * mm_kernel (cp.async pipeline; also the whole GRU step in one launch) and narrow_gemm_kernel
 * compute the same sums in the same order, faster, and are used wherever their shapes fit
 * (PYCRAFTAX_PPO_LEGACY=1 at create turns them off, for comparisons). Backward GEMMs stay cuBLAS.
 *
 * Sparse encoder (default): the obs is 8217 one-hot map features + 51 scalars, about 4%
 * nonzero. Each obs row's nonzeros are listed once (sparse_compact_kernel, index order);
 * Dense_0's forward is a gather-sum of kernel rows in list order, its kernel gradient a
 * per-feature-row sum over a bitmap of the minibatch rows holding that feature (no sort,
 * no float atomics, fixed order) with TF32 off, one cuBLAS TF32 GEMM over the gathered dense
 * minibatch obs with TF32 on (6x faster; see encoder_backward).
 */
#include <cuda_runtime.h>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <dlfcn.h>
#include <mma.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "craftax/params.h"
#include "craftax/rng.h"
#include "craftax_cuda.h"
#include "ppo_cuda.h"

#define NUM_ACH 67
#define ACH_WORDS 3
#define TPB 256

/* ---- errors ---------------------------------------------------------------------------- */
static char g_error[1024] = "";

static int fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof(g_error), fmt, ap);
    va_end(ap);
    return code;
}

static int cuda_fail(cudaError_t err, const char *what) {
    int code = err == cudaErrorMemoryAllocation ? CRAFTAX_PPO_ERR_NO_MEMORY : CRAFTAX_PPO_ERR_CUDA;
    if (err == cudaErrorMemoryAllocation) cudaGetLastError(); /* not sticky: clear it */
    return fail(code, "%s: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
}

#define TRY(call)                  \
    do {                           \
        int rc_ = (call);          \
        if (rc_ != 0) return rc_;  \
    } while (0)

#define CUDA_TRY(call, what)                                      \
    do {                                                          \
        cudaError_t err_ = (call);                                \
        if (err_ != cudaSuccess) return cuda_fail(err_, what);    \
    } while (0)

/* ---- cuBLAS, loaded at run time -------------------------------------------------------- */
typedef int cublasStatus;
typedef void *cublasHandle;
enum { OP_N = 0, OP_T = 1, COMPUTE_32F = 68, COMPUTE_32F_FAST_TF32 = 77, GEMM_DEFAULT = -1, R_32F = 0 };

static struct {
    void *lib;
    cublasStatus (*create)(cublasHandle *);
    cublasStatus (*destroy)(cublasHandle);
    cublasStatus (*set_stream)(cublasHandle, cudaStream_t);
    cublasStatus (*set_workspace)(cublasHandle, void *, size_t);
    cublasStatus (*gemm_ex)(cublasHandle, int, int, int, int, int, const void *, const void *, int, int,
                            const void *, int, int, const void *, void *, int, int, int, int);
    const char *(*status_string)(cublasStatus);
} g_blas;
static char g_blas_path[4096] = "";

static int load_cublas(void) {
    if (g_blas.lib) return 0;
    const char *names[] = {g_blas_path[0] ? g_blas_path : NULL, "libcublas.so.13", "libcublas.so"};
    char tried[2048] = "";
    for (int i = 0; i < 3 && !g_blas.lib; i++) {
        if (!names[i]) continue;
        g_blas.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!g_blas.lib) {
            const char *e = dlerror();
            size_t n = strlen(tried);
            snprintf(tried + n, sizeof(tried) - n, "%s%s", n ? "; " : "", e ? e : names[i]);
        }
    }
    if (!g_blas.lib) return fail(CRAFTAX_PPO_ERR_CUBLAS, "cannot load cuBLAS (%s)", tried);
#define SYM(field, name)                                                                      \
    *(void **)&g_blas.field = dlsym(g_blas.lib, name);                                        \
    if (!g_blas.field) {                                                                      \
        dlclose(g_blas.lib);                                                                  \
        g_blas.lib = NULL;                                                                    \
        return fail(CRAFTAX_PPO_ERR_CUBLAS, "cuBLAS lacks %s", name);                         \
    }
    SYM(create, "cublasCreate_v2")
    SYM(destroy, "cublasDestroy_v2")
    SYM(set_stream, "cublasSetStream_v2")
    SYM(set_workspace, "cublasSetWorkspace_v2")
    SYM(gemm_ex, "cublasGemmEx")
    SYM(status_string, "cublasGetStatusString")
#undef SYM
    return 0;
}

static int blas_fail(cublasStatus st, const char *what) {
    return fail(CRAFTAX_PPO_ERR_CUBLAS, "%s: cuBLAS status %d (%s)", what, st,
                g_blas.status_string ? g_blas.status_string(st) : "?");
}

/* ---- the trainer ---------------------------------------------------------------------- */
/* Parameter blocks (offsets in floats, each 64-float aligned for the GEMMs). */
enum { P_W0, P_B0, P_WI, P_BI, P_WH, P_BHN, P_W1, P_B1, P_W2, P_B2, P_W3, P_B3, P_W4, P_B4, P_W5, P_B5, P_W6, P_B6,
       P_COUNT };

/* Device scalars of the optimiser, written and read by kernels only. */
typedef struct {
    int64_t counters[4]; /* iteration, adam count, key splits, spare */
    double sumsq;        /* of the current gradients */
    float grad_norm;
    float clip_scale;    /* multiplier of the gradients (1 or max_norm / norm, as optax) */
    float lr;
    float bc1, bc2;      /* 1 - b1^count, 1 - b2^count */
    float adv_mean, adv_std;
    uint32_t env_key[2];
    uint32_t sub_key[2];
    int32_t nnz_overflow;
} Scalars;

/* Forward GEMM tiles (see fwd_gemm_kernel / fwd_gemm_tf32_kernel). */
#define FBM 128
#define FBN 64
#define FBK 16
#define TBK 32
/* sparse_dw_kernel: groups of threads splitting a feature's rows, summed in group order */
#define DW_GROUPS 4

struct CraftaxPPO {
    CraftaxPPOConfig c;
    int N, T, D, A, E, H, B, R, M;
    int64_t P;
    int64_t off[P_COUNT];
    int64_t rows_[P_COUNT], cols_[P_COUNT];
    /* env */
    void *env_states, *env_scratch;
    CraftaxParams env_params;
    int has_env;
    /* cuda */
    cudaStream_t stream;
    cublasHandle blas;
    void *workspace;
    size_t workspace_bytes;
    cudaGraph_t graph;
    cudaGraphExec_t graph_exec;
    int iterations_run;
    cudaEvent_t ev0, ev1;
    float last_ms;
    /* all device memory, one list, freed together */
    void *allocs[96];
    int num_allocs;
    /* parameters and optimiser */
    float *params, *grads, *mu, *nu;
    Scalars *scal;
    double *sumsq_part;
    int sumsq_blocks;
    double *losses; /* [epochs * minibatches, NUM_LOSS_STATS] */
    /* rollout storage */
    float *obs;     /* [T + 1, N, D] */
    uint8_t *dones; /* [T + 1, N] */
    int32_t *actions;
    float *logp, *values, *rewards, *adv, *targets, *h0, *hstate, *ret_acc;
    int32_t *len_acc;
    uint32_t *env_keys;
    uint32_t *scal_sub_key; /* &scal->sub_key: the wrapper key of the current step */
    int32_t *done_list;
    /* optimistic resets: the next rollout's worlds [T, W], their scratch, the wrapper keys
     * of its T steps, the step's work space; generated on pool_stream beside the update */
    int W;
    void *pool_worlds, *pool_scratch, *opt_work;
    uint32_t *pool_keys;
    cudaStream_t pool_stream;
    cudaEvent_t pool_fork, pool_join;
    uint8_t *terminated, *truncated, *final_ach;
    float *ep_return;
    int32_t *ep_length;
    uint32_t *ep_ach;
    /* rollout step activations (B = N rows) */
    float *s_pre, *s_xi, *s_hp, *s_hh, *s_a1, *s_a2, *s_logits, *s_c1, *s_c2;
    /* minibatch (R = T * B rows; replay uses T * N rows, hence sized for the larger) */
    int32_t *perm;      /* [N] of the current epoch */
    uint64_t *sort_keys, *sort_keys_out;
    void *sort_temp;
    size_t sort_temp_bytes;
    int32_t *mb_index;  /* [N]: the env of each minibatch column (host-given for checks) */
    float *x;           /* [Rmax, D] */
    uint8_t *m_dones;   /* [Rmax] */
    int32_t *m_actions;
    float *m_logp, *m_values, *m_adv, *m_targets, *m_h0;
    float *emb, *xi, *hps, *rs, *zs, *ns, *hns, *hs, *hh, *a1, *a2, *logits, *c1, *c2, *value;
    float *dlogits, *dvalue, *da2, *da1, *dy, *dxi, *dhh, *dhp, *demb, *ones;
    double *row_terms; /* [Rmax, 5] */
    float *replay;     /* [2, T, N] */
    int Rmax;
    /* sparse encoder: nonzeros of every stored obs row (slot-major like obs) */
    int sparse;
    int32_t *nz_idx; /* [T + 1, N, max_nnz] */
    float *nz_val;   /* [T + 1, N, max_nnz] */
    int32_t *nz_cnt; /* [T + 1, N] */
    uint32_t *bitmap; /* [D, bm_words]: bit r of feature d = minibatch row r holds d */
    int bm_words;
    int dw0_method;   /* DW0_*: how encoder_backward computes Dense_0's kernel gradient */
    int legacy;       /* PYCRAFTAX_PPO_LEGACY=1 at create: the 2026-11-29 kernels (no mm_kernel, sparse
                       * dW0), for before/after measurements and the bitwise-equality check */
    int64_t x_rows;   /* rows of x (dense minibatch obs); 0 where no x is kept */
    float *s_hnew;    /* [N, H]: a rollout step's new GRU state (mm_kernel must not write in place) */
    unsigned *gru_barrier; /* gru_seq_kernel's barrier counters, one per row tile of N rows */
    int gru_seq_blocks;    /* blocks of gru_seq_kernel the GPU holds at once (0: per-step launches;
                            * PYCRAFTAX_PPO_GRU_SEQ=0 at create turns it off) */
    /* profile: graphs of the parts timed alone */
    cudaGraphExec_t prof_exec[CRAFTAX_PPO_PROFILE_COUNT];
};

const char *craftax_ppo_last_error(void) { return g_error; }

int craftax_ppo_set_cublas_path(const char *path) {
    if (!path) {
        g_blas_path[0] = 0;
        return 0;
    }
    if (strlen(path) >= sizeof(g_blas_path)) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "cuBLAS path too long");
    snprintf(g_blas_path, sizeof(g_blas_path), "%s", path);
    return 0;
}

/* ---- kernels --------------------------------------------------------------------------- */
static __device__ __forceinline__ float sigmoidf_np(float x) { return 0.5f * (tanhf(0.5f * x) + 1.0f); }

static __device__ __forceinline__ int64_t gtid() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }

static unsigned blocks_for(int64_t n, int tpb = TPB) { return (unsigned)((n + tpb - 1) / tpb); }

/* hp = where(keep, 0, h) for rows of B envs. */
__global__ void reset_hidden_kernel(float *hp, const float *h, const uint8_t *keep, int B, int H) {
    const int64_t i = gtid();
    if (i >= (int64_t)B * H) return;
    hp[i] = keep[i / H] ? 0.0f : h[i];
}

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

/* The cell over B rows from a separate hh = hp @ Wh (the fallback path of gru_step). */
__global__ void gru_cell_kernel(const float *xi, const float *bi, const float *hh, const float *bhn, const float *hp,
                                float *h_out, float *r_out, float *z_out, float *n_out, float *hn_out, int B, int H) {
    const int64_t i = gtid();
    if (i >= (int64_t)B * H) return;
    const int64_t b = i / H;
    const int j = (int)(i % H);
    const float *g = hh + b * 3 * H;
    gru_cell_unit(xi + b * 3 * H + j, H, bi, bhn, H, j, g[j], g[H + j], g[2 * H + j], hp[i], i, h_out, r_out, z_out,
                  n_out, hn_out);
}

static __device__ void log_softmax_row(const float *l, int A, float *m_out, float *lse_out) {
    float m = l[0];
    for (int a = 1; a < A; a++) m = fmaxf(m, l[a]);
    float s = 0.0f;
    for (int a = 0; a < A; a++) s += expf(l[a] - m);
    *m_out = m;
    *lse_out = logf(s);
}

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

/* CudaCraftaxEnv.step's episode bookkeeping, logged per (step, env) for the host. */
__global__ void track_kernel(const float *rewards, const uint8_t *dones, const uint8_t *final_ach, int N,
                             float *ret_acc, int32_t *len_acc, float *ep_return, int32_t *ep_length, uint32_t *ep_ach) {
    const int64_t i = gtid();
    if (i >= N) return;
    const int done = dones[i] != 0;
    const float ret = ret_acc[i] + rewards[i];
    const int32_t len = len_acc[i] + 1;
    ep_return[i] = done ? ret : 0.0f;
    ep_length[i] = done ? len : 0;
    ret_acc[i] = done ? 0.0f : ret;
    len_acc[i] = done ? 0 : len;
    uint32_t w[ACH_WORDS] = {0, 0, 0};
    if (done)
        for (int k = 0; k < NUM_ACH; k++)
            if (final_ach[i * NUM_ACH + k]) w[k >> 5] |= 1u << (k & 31);
    for (int k = 0; k < ACH_WORDS; k++) ep_ach[i * ACH_WORDS + k] = w[k];
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

/* Minibatch gather: row r = t * B + b of the minibatch is (step t, env index[b]). */
__global__ void gather_obs_kernel(const float *obs, const int32_t *index, int T, int N, int B, int64_t D, float *x) {
    const int64_t r = blockIdx.x;
    const int t = (int)(r / B), b = (int)(r % B);
    const float *src = obs + ((int64_t)t * N + index[b]) * D;
    float *dst = x + r * D;
    if ((D & 3) == 0) {
        const float4 *s4 = (const float4 *)src;
        float4 *d4 = (float4 *)dst;
        for (int64_t k = threadIdx.x; k < D / 4; k += blockDim.x) d4[k] = s4[k];
    } else {
        for (int64_t k = threadIdx.x; k < D; k += blockDim.x) dst[k] = src[k];
    }
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
    const float ratio = expf(lp - old_logp[r]);
    const float gae = (adv[r] - sc->adv_mean) / (sc->adv_std + 1e-8f);
    const float ratio_c = fminf(fmaxf(ratio, 1.0f - eps), 1.0f + eps);
    const float l1 = ratio * gae, l2 = ratio_c * gae;
    double *tr = terms + r * 5;
    tr[0] = -(double)fminf(l1, l2);
    tr[1] = (double)fmaxf(vl, vlc);
    tr[2] = (double)ent;
    tr[3] = (double)((ratio - 1.0f) - logf(ratio));
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

/* d *= (a > 0): the relu mask of a layer whose output a is. */
__global__ void relu_mask_kernel(float *d, const float *a, int64_t n) {
    const int64_t i = gtid();
    if (i >= n) return;
    d[i] = a[i] > 0.0f ? d[i] : 0.0f;
}

/* One step of numpy_ppo.backward's GRU loop (t descending). dhp holds, on entry, the dhp
 * of step t+1 (dh_next before the keep mask); on exit dh * z, to which the caller's GEMM
 * adds dhh[t] @ Wh^T. */
__global__ void gru_backward_kernel(const float *dy, float *dhp, const uint8_t *keep_next, int has_next,
                                    const float *hp, const float *r_, const float *z_, const float *n_,
                                    const float *hn_, float *dxi, float *dhh, int B, int H) {
    const int64_t i = gtid();
    if (i >= (int64_t)B * H) return;
    const int64_t b = i / H;
    const int j = (int)(i % H);
    float dh = dy[i];
    if (has_next && !keep_next[b]) dh = dh + dhp[i];
    const float r = r_[i], z = z_[i], n = n_[i], hn = hn_[i];
    const float dn = dh * (1.0f - z);
    const float dz = dh * (hp[i] - n);
    const float da_n = dn * (1.0f - n * n);
    const float da_r = (da_n * hn) * r * (1.0f - r);
    const float da_z = dz * z * (1.0f - z);
    float *x = dxi + b * 3 * H;
    float *g = dhh + b * 3 * H;
    x[j] = da_r;
    x[H + j] = da_z;
    x[2 * H + j] = da_n;
    g[j] = da_r;
    g[H + j] = da_z;
    g[2 * H + j] = da_n * r;
    dhp[i] = dh * z;
}

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
    const double lr = anneal ? lr0 * (1.0 - (double)(count / steps_per_update) / (double)num_updates) : lr0;
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

__global__ void advance_iteration_kernel(Scalars *sc) { sc->counters[0] += 1; }

__global__ void fill_kernel(float *p, float v, int64_t n) {
    const int64_t i = gtid();
    if (i < n) p[i] = v;
}

__global__ void copy_column_kernel(const float *src, float *dst, int64_t n) {
    const int64_t i = gtid();
    if (i < n) dst[i] = src[i];
}

/* ---- forward GEMMs: accumulation order independent of the number of rows ----------------- */
/* C[M, Nc] = A[M, K] @ B[K, Nc] (+ bias, relu), row-major with leading dims lda, ldb, ldc.
 * Each output is fmaf-accumulated over k = 0, 1, ..., K-1 from +0 by one thread, whatever M
 * and the output's position in its tile: a sample's result does not depend on which batch it
 * is computed in. bias (may be NULL) is added to the rounded sum, as numpy's a @ W + b. */
__global__ void __launch_bounds__(256) fwd_gemm_kernel(int M, int Nc, int K, const float *__restrict__ A, int lda,
                                                       const float *__restrict__ B, int ldb,
                                                       const float *__restrict__ bias, int relu, float *C, int ldc) {
    __shared__ __align__(16) float As[FBK][FBM + 4]; /* transposed, padded against bank conflicts */
    __shared__ __align__(16) float Bs[FBK][FBN];
    const int m0 = blockIdx.y * FBM, n0 = blockIdx.x * FBN;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    float acc[8][4];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += FBK) {
#pragma unroll
        for (int q = 0; q < FBM * FBK / 256; q++) {
            const int i = tid + q * 256, m = i / FBK, k = i % FBK;
            const int gm = m0 + m, gk = k0 + k;
            As[k][m] = (gm < M && gk < K) ? A[(int64_t)gm * lda + gk] : 0.0f;
        }
#pragma unroll
        for (int q = 0; q < FBK * FBN / 256; q++) {
            const int i = tid + q * 256, k = i / FBN, n = i % FBN;
            const int gk = k0 + k, gn = n0 + n;
            Bs[k][n] = (gk < K && gn < Nc) ? B[(int64_t)gk * ldb + gn] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < FBK; k++) {
            const float4 a0 = *(const float4 *)&As[k][ty * 8], a1 = *(const float4 *)&As[k][ty * 8 + 4];
            const float4 b4 = *(const float4 *)&Bs[k][tx * 4];
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[4] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int gm = m0 + ty * 8 + i;
        if (gm >= M) break;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int gn = n0 + tx * 4 + j;
            if (gn >= Nc) break;
            float v = acc[i][j];
            if (bias) v = v + bias[gn];
            if (relu) v = v > 0.0f ? v : 0.0f;
            C[(int64_t)gm * ldc + gn] = v;
        }
    }
}

/* The same product on TF32 tensor cores (wmma m16n16k8): 128 x 64 tiles, 8 warps of 32 x 32.
 * Every output goes through the same sequence of mma instructions over k whatever M is (the
 * hardware reduces each output from its own row and column only), so this too is
 * independent of the batch. Operands are rounded to TF32 when staged in shared memory. */
__global__ void __launch_bounds__(256) fwd_gemm_tf32_kernel(int M, int Nc, int K, const float *__restrict__ A, int lda,
                                                            const float *__restrict__ B, int ldb,
                                                            const float *__restrict__ bias, int relu, float *C,
                                                            int ldc) {
    using namespace nvcuda;
    const int LDA_S = TBK + 4, LDB_S = FBN + 4, LDC_S = FBN + 4;
    __shared__ __align__(128) float smem[FBM * (FBN + 4)]; /* A and B tiles, then the C tile */
    float *As = smem, *Bs = smem + FBM * LDA_S;
    const int m0 = blockIdx.y * FBM, n0 = blockIdx.x * FBN;
    const int tid = threadIdx.x, warp = tid / 32, wm = warp / 2, wn = warp % 2;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int k0 = 0; k0 < K; k0 += TBK) {
#pragma unroll
        for (int q = 0; q < FBM * TBK / 256; q++) {
            const int i = tid + q * 256, m = i / TBK, k = i % TBK;
            const int gm = m0 + m, gk = k0 + k;
            As[m * LDA_S + k] = wmma::__float_to_tf32((gm < M && gk < K) ? A[(int64_t)gm * lda + gk] : 0.0f);
        }
#pragma unroll
        for (int q = 0; q < TBK * FBN / 256; q++) {
            const int i = tid + q * 256, k = i / FBN, n = i % FBN;
            const int gk = k0 + k, gn = n0 + n;
            Bs[k * LDB_S + n] = wmma::__float_to_tf32((gk < K && gn < Nc) ? B[(int64_t)gk * ldb + gn] : 0.0f);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TBK; kk += 8) {
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b[2];
#pragma unroll
            for (int i = 0; i < 2; i++) wmma::load_matrix_sync(a[i], As + (wm * 32 + i * 16) * LDA_S + kk, LDA_S);
#pragma unroll
            for (int j = 0; j < 2; j++) wmma::load_matrix_sync(b[j], Bs + kk * LDB_S + wn * 32 + j * 16, LDB_S);
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(smem + (wm * 32 + i * 16) * LDC_S + wn * 32 + j * 16, acc[i][j], LDC_S,
                                    wmma::mem_row_major);
    __syncthreads();
    for (int i = tid; i < FBM * FBN; i += 256) {
        const int m = i / FBN, n = i % FBN, gm = m0 + m, gn = n0 + n;
        if (gm >= M || gn >= Nc) continue;
        float v = smem[m * LDC_S + n];
        if (bias) v = v + bias[gn];
        if (relu) v = v > 0.0f ? v : 0.0f;
        C[(int64_t)gm * ldc + gn] = v;
    }
}

/* Narrow layers (Nc < 64: the actor's 43 logits, the critic's value): one thread per output,
 * fmaf over k = 0 .. K-1 from +0 in fwd_gemm_kernel's order (bitwise the same), cw threads per
 * row (cw: Nc rounded up to a power of two), 256 / cw rows per block: the 128 x 64 tile gave a
 * 1024-row rollout step 8 blocks, each walking 32 k-chunks one L2 round trip at a time. */
__global__ void __launch_bounds__(256) narrow_gemm_kernel(int M, int Nc, int K, int cw, const float *__restrict__ A,
                                                          int lda, const float *__restrict__ B, int ldb,
                                                          const float *__restrict__ bias, int relu, float *C,
                                                          int ldc) {
    const int m = blockIdx.x * (blockDim.x / cw) + threadIdx.x / cw, n = threadIdx.x % cw;
    if (m >= M || n >= Nc) return;
    const float *a = A + (int64_t)m * lda;
    float acc = 0.0f;
#pragma unroll 8
    for (int k = 0; k < K; k++) acc = fmaf(a[k], B[(int64_t)k * ldb + n], acc);
    float v = acc;
    if (bias) v = v + bias[n];
    if (relu) v = v > 0.0f ? v : 0.0f;
    C[(int64_t)m * ldc + n] = v;
}

/* ---- forward GEMMs v2: cp.async pipeline, same per-output order as the kernels above -------
 * mm_kernel computes the same products as fwd_gemm_kernel / fwd_gemm_tf32_kernel, bitwise:
 * every output is still accumulated from +0 over k = 0, 1, ... (fp32: one fmaf per k; TF32:
 * one wmma m16n16k8 per 8 k, operands rounded with __float_to_tf32), with K zero-padded to a
 * multiple of 32 as before. What changes is only how operands reach shared memory: 16-byte
 * cp.async copies, MM_STAGES chunks of 32 k in flight, so a block no longer waits one L2 round
 * trip per chunk (the GRU's per-step GEMMs over 128 rows were latency-bound that way: about
 * 35 us a step). Since the
 * result of an output depends only on its own row, column and this k order, the tile shape can
 * be chosen per call (by M too) and the old kernels stay as the fallback for unaligned shapes.
 *
 * GRU = 1: one step of the GRU forward in one launch. A = h_prev [M, H] read through the reset
 * mask (rows with keep[r] zero-filled by the copy itself), B = Wh [H, 3H]; a block owns MM_JT
 * hidden units j0.. and takes the r, z and n gate columns of each (its B tile is the three
 * column slices side by side), so the GRU cell runs in the epilogue on the block's own hh
 * values: no hh buffer, no reset / cell launches. Same float ops as reset_hidden_kernel +
 * gru_cell_kernel. */
#define MM_KC 32
#define MM_JT 16

struct MMArgs {
    int M, Nc, K; /* GRU: Nc = H, K = H */
    const float *A;
    int lda;
    const float *B;
    int ldb;
    const float *bias;
    int relu;
    float *C;
    int ldc;
    /* GRU only */
    const uint8_t *keep;
    const float *xi, *bi, *bhn;
    float *h_out, *hp_out, *r_out, *z_out, *n_out, *hn_out;
};

static __device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool valid) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    const int n = valid ? 16 : 0; /* 0: the 16 bytes are zero-filled, gmem not read */
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <int BM, int BN, int STAGES> struct MMShape {
    static constexpr int LDA_S = MM_KC + 4, LDB_S = BN + 4, LDC_S = BN + 4;
    static constexpr int STAGE = BM * LDA_S + MM_KC * LDB_S; /* floats; a multiple of 8 (32 B) */
    static constexpr int SMEM_FLOATS = STAGES * STAGE > BM * LDC_S ? STAGES * STAGE : BM * LDC_S;
    static constexpr size_t SMEM_BYTES = SMEM_FLOATS * sizeof(float);
};

template <int BM, int BN, int WARPS_M, int WARPS_N, int TF32, int GRU, int MM_STAGES>
__global__ void __launch_bounds__(WARPS_M *WARPS_N * 32) mm_kernel(const MMArgs p) {
    using namespace nvcuda;
    typedef MMShape<BM, BN, MM_STAGES> S;
    constexpr int NT = WARPS_M * WARPS_N * 32;
    static_assert(!GRU || BN == 3 * MM_JT, "a GRU tile is the r, z, n slices of MM_JT units");
    extern __shared__ __align__(128) float4 mm_smem4[];
    float *sm = (float *)mm_smem4;
    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM;
    const int n0 = blockIdx.x * (GRU ? MM_JT : BN); /* GRU: the first hidden unit j0 */
    const int M = p.M, K = p.K;
    const int nchunks = (K + MM_KC - 1) / MM_KC;

    auto load_stage = [&](int stage, int chunk) {
        float *As = sm + stage * S::STAGE, *Bs = As + BM * S::LDA_S;
        const int k0 = chunk * MM_KC;
        for (int i = tid; i < BM * (MM_KC / 4); i += NT) {
            const int m = i / (MM_KC / 4), kq = (i % (MM_KC / 4)) * 4;
            const int gm = m0 + m, gk = k0 + kq;
            bool valid = gm < M && gk < K;
            if (GRU && valid) valid = !p.keep[gm];
            cp_async16(As + m * S::LDA_S + kq, valid ? p.A + (int64_t)gm * p.lda + gk : p.A, valid);
        }
        for (int i = tid; i < MM_KC * (BN / 4); i += NT) {
            const int k = i / (BN / 4), cq = (i % (BN / 4)) * 4;
            const int gk = k0 + k;
            const int gn = GRU ? (cq / MM_JT) * p.Nc + n0 + cq % MM_JT : n0 + cq;
            const bool valid = gk < K && (GRU || gn < p.Nc);
            cp_async16(Bs + k * S::LDB_S + cq, valid ? p.B + (int64_t)gk * p.ldb + gn : p.B, valid);
        }
    };

    /* accumulators: wmma fragments (TF32) or a register tile (fp32) */
    constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N, FM = WTM / 16, FN = WTN / 16;
    const int warp = tid / 32, wm = warp / WARPS_N, wn = warp % WARPS_N;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[TF32 ? FM : 1][TF32 ? FN : 1];
    /* fp32: TX threads along the columns, each RPT rows x CPT columns: generic columns
     * tx * CPT + c (a float4 of B), GRU column tx (one thread per column of the 3 gate slices) */
    constexpr int TX = GRU ? BN : 16, CPT = GRU ? 1 : BN / 16, RPT = BM / (NT / TX);
    static_assert(NT % TX == 0 && BM % (NT / TX) == 0, "fp32 thread layout");
    const int tx = tid % TX, ty = tid / TX;
    float sacc[TF32 ? 1 : RPT][TF32 ? 1 : CPT];
    auto scol = [&](int c) { return GRU ? tx : tx * CPT + c; };
    if constexpr (TF32) {
#pragma unroll
        for (int i = 0; i < FM; i++)
#pragma unroll
            for (int j = 0; j < FN; j++) wmma::fill_fragment(acc[i][j], 0.0f);
    } else {
#pragma unroll
        for (int i = 0; i < RPT; i++)
#pragma unroll
            for (int c = 0; c < CPT; c++) sacc[i][c] = 0.0f;
    }

#pragma unroll
    for (int s = 0; s < MM_STAGES - 1; s++) {
        if (s < nchunks) load_stage(s, s);
        cp_async_commit();
    }
    for (int c = 0; c < nchunks; c++) {
        cp_async_wait<MM_STAGES - 2>();
        __syncthreads(); /* chunk c landed for every thread; stage (c - 1) % STAGES is free */
        const int pf = c + MM_STAGES - 1;
        if (pf < nchunks) load_stage(pf % MM_STAGES, pf);
        cp_async_commit();
        const float *As = sm + (c % MM_STAGES) * S::STAGE, *Bs = As + BM * S::LDA_S;
        if constexpr (TF32) {
#pragma unroll
            for (int kk = 0; kk < MM_KC; kk += 8) {
                wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a[FM];
                wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b[FN];
#pragma unroll
                for (int i = 0; i < FM; i++) {
                    wmma::load_matrix_sync(a[i], As + (wm * WTM + i * 16) * S::LDA_S + kk, S::LDA_S);
#pragma unroll
                    for (int e = 0; e < a[i].num_elements; e++) a[i].x[e] = wmma::__float_to_tf32(a[i].x[e]);
                }
#pragma unroll
                for (int j = 0; j < FN; j++) {
                    wmma::load_matrix_sync(b[j], Bs + kk * S::LDB_S + wn * WTN + j * 16, S::LDB_S);
#pragma unroll
                    for (int e = 0; e < b[j].num_elements; e++) b[j].x[e] = wmma::__float_to_tf32(b[j].x[e]);
                }
#pragma unroll
                for (int i = 0; i < FM; i++)
#pragma unroll
                    for (int j = 0; j < FN; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
            }
        } else {
#pragma unroll 4
            for (int k = 0; k < MM_KC; k++) {
                float b[CPT];
#pragma unroll
                for (int q = 0; q < CPT; q++) b[q] = Bs[k * S::LDB_S + scol(q)];
#pragma unroll
                for (int i = 0; i < RPT; i++) {
                    const float a = As[(ty * RPT + i) * S::LDA_S + k];
#pragma unroll
                    for (int q = 0; q < CPT; q++) sacc[i][q] = fmaf(a, b[q], sacc[i][q]);
                }
            }
        }
    }
    cp_async_wait<0>();
    __syncthreads(); /* all stages consumed: the C tile reuses the memory */
    float *Cs = sm;
    if constexpr (TF32) {
#pragma unroll
        for (int i = 0; i < FM; i++)
#pragma unroll
            for (int j = 0; j < FN; j++)
                wmma::store_matrix_sync(Cs + (wm * WTM + i * 16) * S::LDC_S + wn * WTN + j * 16, acc[i][j], S::LDC_S,
                                        wmma::mem_row_major);
    } else {
#pragma unroll
        for (int i = 0; i < RPT; i++)
#pragma unroll
            for (int q = 0; q < CPT; q++) Cs[(ty * RPT + i) * S::LDC_S + scol(q)] = sacc[i][q];
    }
    __syncthreads();
    if constexpr (!GRU) {
        for (int i = tid; i < BM * BN; i += NT) {
            const int m = i / BN, n = i % BN, gm = m0 + m, gn = n0 + n;
            if (gm >= M || gn >= p.Nc) continue;
            float v = Cs[m * S::LDC_S + n];
            if (p.bias) v = v + p.bias[gn];
            if (p.relu) v = v > 0.0f ? v : 0.0f;
            p.C[(int64_t)gm * p.ldc + gn] = v;
        }
    } else {
        const int H = p.Nc;
        for (int i = tid; i < BM * MM_JT; i += NT) {
            const int m = i / MM_JT, jj = i % MM_JT, gm = m0 + m, j = n0 + jj;
            if (gm >= M) continue;
            const float *c = Cs + m * S::LDC_S;
            const int64_t o = (int64_t)gm * H + j;
            const float hp = p.keep[gm] ? 0.0f : p.A[(int64_t)gm * p.lda + j];
            gru_cell_unit(p.xi + (int64_t)gm * 3 * H + j, H, p.bi, p.bhn, H, j, c[jj], c[MM_JT + jj], c[2 * MM_JT + jj],
                          hp, o, p.h_out, p.r_out, p.z_out, p.n_out, p.hn_out);
            if (p.hp_out) p.hp_out[o] = hp;
        }
    }
}

/* The instantiations used (tile, warps, stages): generic 128 x 64 with 8 warps, 3 stages; GRU
 * steps 32 rows x 16 units (6 warps, one per gate and 16 rows; the update's 128-row minibatch
 * steps give 4 x 32 blocks, one per SM, 8 stages) or 128 rows x 16 units (12 warps, 4 stages;
 * rollout steps over all envs, the fast recipe's 2048-row minibatches). The first version, 2
 * and 4 warps a block, took ~38 us a step: too few warps to hide the per-chunk latencies. */
#define MM_GENERIC(tf) mm_kernel<128, 64, 4, 2, tf, 0, 3>
#define MM_GRU_SMALL(tf) mm_kernel<32, 3 * MM_JT, 2, 3, tf, 1, 8>
#define MM_GRU_LARGE(tf) mm_kernel<128, 3 * MM_JT, 4, 3, tf, 1, 4>
#define MM_GENERIC_SMEM (MMShape<128, 64, 3>::SMEM_BYTES)
#define MM_GRU_SMALL_SMEM (MMShape<32, 3 * MM_JT, 8>::SMEM_BYTES)
#define MM_GRU_LARGE_SMEM (MMShape<128, 3 * MM_JT, 4>::SMEM_BYTES)

/* ---- the update's GRU forward: all T steps in one persistent launch ---------------------------
 * The per-step launches above wait ~20 us a step for a minibatch of 128 rows: each step
 * re-reads its Wh slices from L2 and pays a launch. Here each block keeps the r, z and n column
 * slices of its MM_JT hidden units (all H rows of Wh: 106 KB at H = 512) in shared memory for
 * the whole segment. For each step it copies its GS_BM rows of h_prev (zero-filled where the
 * env was reset, as mm_kernel's copy does) in four quarters of k, multiplying each quarter as
 * it lands, together with the rows' input projections of its units; runs the cell; and waits
 * until the other blocks of its row tile (the only writers of the rows it reads next) have
 * stored the step. Launched cooperatively (all blocks co-resident; graph-capturable) where the
 * grid fits the GPU at once; else the per-step path.
 * Bitwise the same as MM_GRU_SMALL/LARGE: the same warp tiles (6 warps, 16 rows x one gate's
 * 16 columns each), every output accumulated from +0 over k = 0, 8, 16, ... by one wmma
 * m16n16k8 with TF32-rounded operands (Wh rounded once when it is loaded; the rounding is
 * idempotent, so the fragments hold the same values), or by one fmaf per k ascending in fp32,
 * and the same cell (gru_cell_unit). Needs H % 32 == 0 (no zero padding of K). */
#define GS_BM 32
#define GS_THREADS 192
#define GS_QUARTERS 4

struct GruSeqArgs {
    int T, M, H;
    const float *h0;     /* [M, H] */
    const uint8_t *keep; /* [T, M]: reset the state before step t */
    const float *xi;     /* [T, M, 3H]: raw input projections */
    const float *Wh, *bi, *bhn;
    float *hs, *hps, *rs, *zs, *ns, *hns; /* [T, M, H] */
    unsigned *barrier;                    /* one counter per row tile, zero at launch */
};

static size_t gru_seq_smem_bytes(int H) {
    const size_t ld = 3 * MM_JT + 4; /* Wh slices, hh tile */
    return sizeof(float) * ((size_t)H * ld + (size_t)GS_BM * (H + 4) + (size_t)GS_BM * ld + (size_t)GS_BM * 3 * MM_JT);
}

/* Every block of this row tile has stored step s: the next step may read the tile's rows. */
static __device__ __forceinline__ void row_tile_barrier(unsigned *counter, unsigned target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(counter, 1u);
        while (*(volatile unsigned *)counter < target) __nanosleep(20);
        __threadfence();
    }
    __syncthreads();
}

static __device__ __forceinline__ void cp_async_wait_quarter(int q) {
    /* groups: xi slice, then the quarters 0..3 of h_prev; quarter q is in once at most 3 - q are pending */
    if (q == 0) cp_async_wait<3>();
    else if (q == 1) cp_async_wait<2>();
    else if (q == 2) cp_async_wait<1>();
    else cp_async_wait<0>();
}

template <int TF32>
__global__ void __launch_bounds__(GS_THREADS) gru_seq_kernel(const GruSeqArgs p) {
    using namespace nvcuda;
    constexpr int BN = 3 * MM_JT, LDB = BN + 4, LDC = BN + 4, NT = GS_THREADS;
    static_assert(GS_QUARTERS == 4, "cp_async_wait_quarter counts four groups of h_prev");
    const int H = p.H, M = p.M, LDA = H + 4, KQ = H / GS_QUARTERS;
    extern __shared__ __align__(128) float4 gs_smem4[];
    float *Bs = (float *)gs_smem4;  /* [H][LDB]: the r, z, n slices of this block's units */
    float *As = Bs + H * LDB;       /* [GS_BM][LDA]: this block's rows of h_prev */
    float *Cs = As + GS_BM * LDA;   /* [GS_BM][LDC]: hp @ Wh at this block's columns */
    float *Xs = Cs + GS_BM * LDC;   /* [GS_BM][BN]: the rows' raw input projections, r | z | n */
    const int tid = threadIdx.x, warp = tid / 32, wm = warp / 3, wn = warp % 3;
    const int j0 = blockIdx.x * MM_JT, m0 = blockIdx.y * GS_BM;
    unsigned *counter = p.barrier + blockIdx.y;

    for (int i = tid; i < H * (BN / 4); i += NT) {
        const int k = i / (BN / 4), cq = (i % (BN / 4)) * 4;
        cp_async16(Bs + k * LDB + cq, p.Wh + (int64_t)k * 3 * H + (cq / MM_JT) * H + j0 + cq % MM_JT, true);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    if constexpr (TF32)
        for (int i = tid; i < H * LDB; i += NT) Bs[i] = wmma::__float_to_tf32(Bs[i]);

    for (int s = 0; s < p.T; s++) {
        const float *h_prev = s == 0 ? p.h0 : p.hs + (int64_t)(s - 1) * M * H;
        const uint8_t *keep = p.keep + (int64_t)s * M;
        for (int i = tid; i < GS_BM * (BN / 4); i += NT) {
            const int m = i / (BN / 4), cq = (i % (BN / 4)) * 4, gm = m0 + m;
            const float *src = p.xi + ((int64_t)s * M + gm) * 3 * H + (cq / MM_JT) * H + j0 + cq % MM_JT;
            cp_async16(Xs + m * BN + cq, gm < M ? src : p.xi, gm < M);
        }
        cp_async_commit();
        for (int q = 0; q < GS_QUARTERS; q++) {
            for (int i = tid; i < GS_BM * (KQ / 4); i += NT) {
                const int m = i / (KQ / 4), kq = q * KQ + (i % (KQ / 4)) * 4, gm = m0 + m;
                const bool valid = gm < M && !keep[gm];
                cp_async16(As + m * LDA + kq, valid ? h_prev + (int64_t)gm * H + kq : h_prev, valid);
            }
            cp_async_commit();
        }
        if constexpr (TF32) {
            wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
            wmma::fill_fragment(acc, 0.0f);
            for (int q = 0; q < GS_QUARTERS; q++) {
                cp_async_wait_quarter(q);
                __syncthreads(); /* the quarter landed for every thread (first pass: Wh's rounding too) */
#pragma unroll 4
                for (int kk = q * KQ; kk < (q + 1) * KQ; kk += 8) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
                    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
                    wmma::load_matrix_sync(a, As + wm * 16 * LDA + kk, LDA);
#pragma unroll
                    for (int e = 0; e < a.num_elements; e++) a.x[e] = wmma::__float_to_tf32(a.x[e]);
                    wmma::load_matrix_sync(b, Bs + kk * LDB + wn * 16, LDB);
                    wmma::mma_sync(acc, a, b, acc);
                }
            }
            wmma::store_matrix_sync(Cs + wm * 16 * LDC + wn * 16, acc, LDC, wmma::mem_row_major);
        } else {
            constexpr int RPT = GS_BM / (NT / BN); /* mm_kernel's fp32 layout: column tx, RPT rows */
            const int tx = tid % BN, ty = tid / BN;
            float sacc[RPT];
#pragma unroll
            for (int i = 0; i < RPT; i++) sacc[i] = 0.0f;
            for (int q = 0; q < GS_QUARTERS; q++) {
                cp_async_wait_quarter(q);
                __syncthreads();
#pragma unroll 4
                for (int k = q * KQ; k < (q + 1) * KQ; k++) {
                    const float b = Bs[k * LDB + tx];
#pragma unroll
                    for (int i = 0; i < RPT; i++) sacc[i] = fmaf(As[(ty * RPT + i) * LDA + k], b, sacc[i]);
                }
            }
#pragma unroll
            for (int i = 0; i < RPT; i++) Cs[(ty * RPT + i) * LDC + tx] = sacc[i];
        }
        __syncthreads();
        const int64_t so = (int64_t)s * M * H;
        for (int i = tid; i < GS_BM * MM_JT; i += NT) {
            const int m = i / MM_JT, jj = i % MM_JT, gm = m0 + m, j = j0 + jj;
            if (gm >= M) continue;
            const float *c = Cs + m * LDC;
            const float hp = As[m * LDA + j]; /* zero where reset, as mm_kernel's hp */
            const int64_t o = so + (int64_t)gm * H + j;
            gru_cell_unit(Xs + m * BN + jj, MM_JT, p.bi, p.bhn, H, j, c[jj], c[MM_JT + jj], c[2 * MM_JT + jj], hp, o,
                          p.hs, p.rs, p.zs, p.ns, p.hns);
            p.hps[o] = hp;
        }
        if (s + 1 < p.T) row_tile_barrier(counter, (unsigned)(s + 1) * gridDim.x);
    }
}

/* ---- sparse encoder ------------------------------------------------------------------------ */
/* The row of list storage that minibatch row r = t * Bc + b reads: slot t0 + t, env index[b]
 * (b itself where index is NULL). */
static __device__ __forceinline__ int64_t list_row(int64_t r, int t0, int Bc, const int32_t *index, int N) {
    const int t = t0 + (int)(r / Bc), b = (int)(r % Bc);
    return (int64_t)t * N + (index ? index[b] : b);
}

/* Nonzeros of obs row blockIdx.x in index order into (idx, val)[row, :cnt]; beyond max_nnz
 * they are counted in nnz_overflow (the trainer refuses to go on). One block per row. */
__global__ void __launch_bounds__(TPB) sparse_compact_kernel(const float *obs, int D, int max_nnz, int32_t *idx,
                                                             float *val, int32_t *cnt, Scalars *sc) {
    typedef cub::BlockScan<int, TPB> Scan;
    __shared__ typename Scan::TempStorage tmp;
    __shared__ int base;
    const int64_t row = blockIdx.x;
    const float *x = obs + row * D;
    int32_t *oi = idx + row * max_nnz;
    float *ov = val + row * max_nnz;
    if (threadIdx.x == 0) base = 0;
    __syncthreads();
    for (int start = 0; start < D; start += TPB * 4) {
        float v[4];
        int n = 0;
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int k = start + threadIdx.x * 4 + q;
            v[q] = k < D ? x[k] : 0.0f;
            n += v[q] != 0.0f;
        }
        int off, total;
        Scan(tmp).ExclusiveSum(n, off, total);
        int pos = base + off;
#pragma unroll
        for (int q = 0; q < 4; q++)
            if (v[q] != 0.0f) {
                if (pos < max_nnz) {
                    oi[pos] = start + threadIdx.x * 4 + q;
                    ov[pos] = v[q];
                }
                pos++;
            }
        __syncthreads(); /* every thread has read base and is done with tmp */
        if (threadIdx.x == 0) base += total;
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        cnt[row] = base < max_nnz ? base : max_nnz;
        if (base > max_nnz) atomicAdd(&sc->nnz_overflow, base - max_nnz);
    }
}

/* Dense_0 forward on the lists: emb[r, :] = relu(sum over the row's list, in order, of
 * val * W[idx, :] + b). One block per row, a float4 of columns per thread. */
__global__ void sparse_encode_kernel(const int32_t *idx, const float *val, const int32_t *cnt, int max_nnz, int N,
                                     int t0, const int32_t *index, int Bc, const float *__restrict__ W,
                                     const float *__restrict__ bias, int E, float *emb) {
    __shared__ int s_i[256];
    __shared__ float s_v[256];
    const int64_t r = blockIdx.x;
    const int64_t lr = list_row(r, t0, Bc, index, N);
    const int n = cnt[lr];
    const int32_t *li = idx + lr * max_nnz;
    const float *lv = val + lr * max_nnz;
    const int E4 = E / 4;
    for (int c0 = 0; c0 < E4; c0 += blockDim.x) {
        const int j4 = c0 + threadIdx.x;
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int k0 = 0; k0 < n; k0 += 256) {
            __syncthreads();
            for (int k = threadIdx.x; k < 256 && k0 + k < n; k += blockDim.x) {
                s_i[k] = li[k0 + k];
                s_v[k] = lv[k0 + k];
            }
            __syncthreads();
            const int m = n - k0 < 256 ? n - k0 : 256;
            if (j4 < E4) {
#pragma unroll 8
                for (int k = 0; k < m; k++) {
                    const float v = s_v[k];
                    const float4 w = __ldg((const float4 *)(W + (int64_t)s_i[k] * E) + j4);
                    acc.x = fmaf(v, w.x, acc.x);
                    acc.y = fmaf(v, w.y, acc.y);
                    acc.z = fmaf(v, w.z, acc.z);
                    acc.w = fmaf(v, w.w, acc.w);
                }
            }
        }
        if (j4 < E4) {
            const float4 b = ((const float4 *)bias)[j4];
            float4 o = make_float4(acc.x + b.x, acc.y + b.y, acc.z + b.z, acc.w + b.w);
            o.x = o.x > 0.0f ? o.x : 0.0f;
            o.y = o.y > 0.0f ? o.y : 0.0f;
            o.z = o.z > 0.0f ? o.z : 0.0f;
            o.w = o.w > 0.0f ? o.w : 0.0f;
            ((float4 *)(emb + r * E))[j4] = o;
        }
    }
}

/* Bit r of feature d's bitmap row: minibatch row r holds d (integer atomics: exact). */
__global__ void sparse_bits_kernel(const int32_t *idx, const int32_t *cnt, int max_nnz, int N, const int32_t *index,
                                   int Bc, int words, uint32_t *bm) {
    const int64_t r = blockIdx.x;
    const int64_t lr = list_row(r, 0, Bc, index, N);
    const int n = cnt[lr];
    const int32_t *li = idx + lr * max_nnz;
    for (int k = threadIdx.x; k < n; k += blockDim.x)
        atomicOr(&bm[(int64_t)li[k] * words + (r >> 5)], 1u << (r & 31));
}

/* dW0[d, :] = sum over minibatch rows r holding d of x[r, d] * demb[r, :]: one block per
 * feature d, DW_GROUPS groups of threads taking bitmap words w = g, g + G, ... in order, the
 * group sums added in group order. x[r, d] is read from the stored dense obs. Features held
 * by no row get 0. */
__global__ void sparse_dw_kernel(const uint32_t *bm, int words, const float *obs, int64_t D, int N,
                                 const int32_t *index, int Bc, const float *__restrict__ demb, int E, float *dW) {
    extern __shared__ float4 part[]; /* [DW_GROUPS][blockDim.x / DW_GROUPS] */
    const int d = blockIdx.x;
    const int TG = blockDim.x / DW_GROUPS, g = threadIdx.x / TG, lt = threadIdx.x % TG;
    const uint32_t *row = bm + (int64_t)d * words;
    const int E4 = E / 4;
    const float4 *demb4 = (const float4 *)demb;
    for (int c0 = 0; c0 < E4; c0 += TG) {
        const int j4 = c0 + lt;
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (j4 < E4) {
            for (int w = g; w < words; w += DW_GROUPS) {
                uint32_t bits = row[w];
                while (bits) {
                    /* up to 8 rows at a time: their loads overlap, the sum keeps row order */
                    int rr[8];
                    int m = 0;
#pragma unroll
                    for (int q = 0; q < 8; q++) {
                        rr[q] = 0;
                        if (bits) {
                            rr[q] = w * 32 + __ffs(bits) - 1;
                            bits &= bits - 1;
                            m = q + 1;
                        }
                    }
                    float4 xv[8];
                    float v[8];
#pragma unroll
                    for (int q = 0; q < 8; q++)
                        if (q < m) {
                            xv[q] = demb4[(int64_t)rr[q] * E4 + j4];
                            v[q] = obs[list_row(rr[q], 0, Bc, index, N) * D + d];
                        }
#pragma unroll
                    for (int q = 0; q < 8; q++)
                        if (q < m) {
                            acc.x = fmaf(v[q], xv[q].x, acc.x);
                            acc.y = fmaf(v[q], xv[q].y, acc.y);
                            acc.z = fmaf(v[q], xv[q].z, acc.z);
                            acc.w = fmaf(v[q], xv[q].w, acc.w);
                        }
                }
            }
        }
        part[g * TG + lt] = acc;
        __syncthreads();
        if (g == 0 && j4 < E4) {
            float4 s = part[lt];
            for (int gg = 1; gg < DW_GROUPS; gg++) {
                const float4 p = part[gg * TG + lt];
                s.x = s.x + p.x;
                s.y = s.y + p.y;
                s.z = s.z + p.z;
                s.w = s.w + p.w;
            }
            ((float4 *)(dW + (int64_t)d * E))[j4] = s;
        }
        __syncthreads();
    }
}

/* ---- host helpers ---------------------------------------------------------------------- */
static int check_launch(CraftaxPPO *t, const char *what) {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return cuda_fail(err, what);
    if (t->c.debug) {
        err = cudaStreamSynchronize(t->stream);
        if (err != cudaSuccess) return cuda_fail(err, what);
    }
    return 0;
}
#define LAUNCH(t, what) TRY(check_launch(t, what))

/* Row-major C[M, N] = op(A)[M, K] @ op(B)[K, N] + beta C; lda/ldb/ldc: row lengths of the
 * arrays as stored. Column-major cuBLAS sees each stored array transposed, so it computes
 * C^T = op(B)^T op(A)^T with the transpose flags passed through unchanged. */
static int gemm(CraftaxPPO *t, int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                float beta, float *C, int ldc, const char *what) {
    const float one = 1.0f;
    cublasStatus st = g_blas.gemm_ex(t->blas, tb ? OP_T : OP_N, ta ? OP_T : OP_N, N, M, K, &one, B, R_32F, ldb, A,
                                     R_32F, lda, &beta, C, R_32F, ldc,
                                     t->c.tf32 ? COMPUTE_32F_FAST_TF32 : COMPUTE_32F, GEMM_DEFAULT);
    if (st != 0) return blas_fail(st, what);
    if (t->c.debug) {
        cudaError_t err = cudaStreamSynchronize(t->stream);
        if (err != cudaSuccess) return cuda_fail(err, what);
    }
    return 0;
}

/* bias gradient = column sums, as ones[1, R] @ d[R, N] (deterministic, one GEMM). */
static int colsum(CraftaxPPO *t, int R, int N, const float *d, int ldd, float *out, const char *what) {
    return gemm(t, 0, 0, 1, N, R, t->ones, R, d, ldd, 0.0f, out, N, what);
}

/* Forward C[M, Nc] = A[M, K] @ B[K, Nc] (+ bias, relu): fwd_gemm_kernel, or on TF32 tensor
 * cores where tf32 is on and the layer is wide enough to fill a tile. The kernel is chosen
 * by the layer's shape alone, never by M, so every batch of a sample agrees bitwise. */
static int aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

static int fwd_gemm(CraftaxPPO *t, int M, int Nc, int K, const float *A, int lda, const float *B, int ldb,
                    const float *bias, int relu, float *C, int ldc, const char *what) {
    const dim3 grid((unsigned)((Nc + FBN - 1) / FBN), (unsigned)((M + FBM - 1) / FBM));
    const int tc = t->c.tf32 && Nc >= FBN; /* by the layer's shape only, as before */
    if (!t->legacy && Nc < FBN) { /* narrow: fp32 whatever tf32 says, as the old rule */
        int cw = 1;
        while (cw < Nc) cw *= 2;
        narrow_gemm_kernel<<<(unsigned)((M + 256 / cw - 1) / (256 / cw)), 256, 0, t->stream>>>(
            M, Nc, K, cw, A, lda, B, ldb, bias, relu, C, ldc);
        return check_launch(t, what);
    }
    /* mm_kernel where its 16-byte copies fit the shape (bitwise the same as the old kernels) */
    if (!t->legacy && K % 4 == 0 && lda % 4 == 0 && ldb % 4 == 0 && Nc % 4 == 0 && aligned16(A) && aligned16(B)) {
        MMArgs a;
        memset(&a, 0, sizeof(a));
        a.M = M, a.Nc = Nc, a.K = K, a.A = A, a.lda = lda, a.B = B, a.ldb = ldb, a.bias = bias, a.relu = relu;
        a.C = C, a.ldc = ldc;
        const size_t smem = MM_GENERIC_SMEM;
        if (tc)
            MM_GENERIC(1)<<<grid, 256, smem, t->stream>>>(a);
        else
            MM_GENERIC(0)<<<grid, 256, smem, t->stream>>>(a);
        return check_launch(t, what);
    }
    if (tc)
        fwd_gemm_tf32_kernel<<<grid, 256, 0, t->stream>>>(M, Nc, K, A, lda, B, ldb, bias, relu, C, ldc);
    else
        fwd_gemm_kernel<<<grid, 256, 0, t->stream>>>(M, Nc, K, A, lda, B, ldb, bias, relu, C, ldc);
    return check_launch(t, what);
}

/* One GRU step over M rows (numpy_ppo.forward's loop body): hp = where(keep, 0, h_prev),
 * h_out = cell(xi + bi, hp @ Wh); hp is stored where store_hp (the update's cache; the
 * fallback always writes it, as its GEMM input), r/z/n/hn where r is given. h_out must not
 * alias h_prev (mm_kernel's blocks read all of h_prev's row while others write theirs). One
 * fused mm_kernel launch where H % MM_JT == 0, else reset + GEMM + cell (bitwise the same). */
static int gru_step(CraftaxPPO *t, int M, const float *h_prev, const uint8_t *keep, const float *xi, float *hp,
                    int store_hp, float *h_out, float *r, float *z, float *n, float *hn) {
    const int H = t->H;
    const float *p = t->params;
    const float *Wh = p + t->off[P_WH];
    const int tc = t->c.tf32 && 3 * H >= FBN; /* fwd_gemm's rule for this GEMM */
    if (!t->legacy && H % MM_JT == 0 && aligned16(h_prev) && aligned16(Wh)) {
        MMArgs a;
        memset(&a, 0, sizeof(a));
        a.M = M, a.Nc = H, a.K = H, a.A = h_prev, a.lda = H, a.B = Wh, a.ldb = 3 * H;
        a.keep = keep, a.xi = xi, a.bi = p + t->off[P_BI], a.bhn = p + t->off[P_BHN];
        a.h_out = h_out, a.hp_out = store_hp ? hp : NULL, a.r_out = r, a.z_out = z, a.n_out = n, a.hn_out = hn;
        if (M >= 512) { /* many rows: taller tiles read each Wh slice for more rows */
            const dim3 grid((unsigned)(H / MM_JT), (unsigned)((M + 127) / 128));
            const size_t smem = MM_GRU_LARGE_SMEM;
            if (tc)
                MM_GRU_LARGE(1)<<<grid, 384, smem, t->stream>>>(a);
            else
                MM_GRU_LARGE(0)<<<grid, 384, smem, t->stream>>>(a);
        } else { /* a minibatch's few rows: small tiles, more blocks */
            const dim3 grid((unsigned)(H / MM_JT), (unsigned)((M + 31) / 32));
            const size_t smem = MM_GRU_SMALL_SMEM;
            if (tc)
                MM_GRU_SMALL(1)<<<grid, 192, smem, t->stream>>>(a);
            else
                MM_GRU_SMALL(0)<<<grid, 192, smem, t->stream>>>(a);
        }
        return check_launch(t, "gru_step");
    }
    reset_hidden_kernel<<<blocks_for((int64_t)M * H), TPB, 0, t->stream>>>(hp, h_prev, keep, M, H);
    LAUNCH(t, "reset_hidden");
    TRY(fwd_gemm(t, M, 3 * H, H, hp, H, Wh, 3 * H, NULL, 0, t->hh, 3 * H, "GRU hidden"));
    gru_cell_kernel<<<blocks_for((int64_t)M * H), TPB, 0, t->stream>>>(xi, p + t->off[P_BI], t->hh,
                                                                       p + t->off[P_BHN], hp, h_out, r, z, n, hn, M, H);
    return check_launch(t, "gru_cell");
}

/* Whether the update's GRU forward can run as gru_seq_kernel: the GPU launches cooperative
 * kernels, the Wh slices fit shared memory, and a cooperative launch can be captured in a
 * graph (probed once: the iteration is a graph). Sets t->gru_seq_blocks (0: per-step path). */
static int gru_seq_setup(CraftaxPPO *t) {
    t->gru_seq_blocks = 0;
    const char *env = getenv("PYCRAFTAX_PPO_GRU_SEQ");
    if (t->legacy || (env && atoi(env) == 0) || t->H % 32 != 0) return 0;
    int dev = 0, coop = 0, sms = 0, max_smem = 0, per_sm = 0;
    CUDA_TRY(cudaGetDevice(&dev), "cudaGetDevice");
    CUDA_TRY(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev), "device attribute");
    CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "device attribute");
    CUDA_TRY(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "device attribute");
    const size_t smem = gru_seq_smem_bytes(t->H);
    if (!coop || smem > (size_t)max_smem) return 0;
    /* the opt-in maximum, not this H's need: the attribute is per kernel, shared by trainers */
    CUDA_TRY(cudaFuncSetAttribute(gru_seq_kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem), "smem");
    CUDA_TRY(cudaFuncSetAttribute(gru_seq_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem), "smem");
    const int tc = t->c.tf32 && 3 * t->H >= FBN;
    CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                 &per_sm, tc ? (const void *)gru_seq_kernel<1> : (const void *)gru_seq_kernel<0>, GS_THREADS, smem),
             "occupancy");
    cudaStream_t probe = NULL;
    CUDA_TRY(cudaStreamCreateWithFlags(&probe, cudaStreamNonBlocking), "cudaStreamCreate");
    GruSeqArgs a;
    memset(&a, 0, sizeof(a)); /* T = 0: never run, only captured */
    void *args[] = {&a};
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaError_t err = cudaStreamBeginCapture(probe, cudaStreamCaptureModeThreadLocal);
    if (err == cudaSuccess) {
        const cudaError_t launched =
            cudaLaunchCooperativeKernel((const void *)gru_seq_kernel<1>, dim3(1), dim3(GS_THREADS), args, 0, probe);
        err = cudaStreamEndCapture(probe, &g);
        if (launched != cudaSuccess) err = launched;
        if (err == cudaSuccess) err = cudaGraphInstantiate(&ge, g, 0);
    }
    if (ge) cudaGraphExecDestroy(ge);
    if (g) cudaGraphDestroy(g);
    cudaStreamDestroy(probe);
    (void)cudaGetLastError(); /* a refused probe leaves no sticky error: the per-step path is used */
    if (err == cudaSuccess) t->gru_seq_blocks = per_sm * sms;
    return 0;
}

/* Dynamic shared memory above 48 KiB must be allowed per kernel, once. */
static int mm_setup(void) {
#define MM_ATTR(kern, bytes) \
    CUDA_TRY(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(bytes)), "mm smem")
    MM_ATTR(MM_GENERIC(0), MM_GENERIC_SMEM);
    MM_ATTR(MM_GENERIC(1), MM_GENERIC_SMEM);
    MM_ATTR(MM_GRU_SMALL(0), MM_GRU_SMALL_SMEM);
    MM_ATTR(MM_GRU_SMALL(1), MM_GRU_SMALL_SMEM);
    MM_ATTR(MM_GRU_LARGE(0), MM_GRU_LARGE_SMEM);
    MM_ATTR(MM_GRU_LARGE(1), MM_GRU_LARGE_SMEM);
#undef MM_ATTR
    return 0;
}

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

/* ---- forward / backward --------------------------------------------------------------- */
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

/* Encoder: emb[rows, E] = relu(x @ W0 + b0) for rows r = t * Bc + b = (slot t0 + t, env
 * index[b]) (index NULL: env b). Dense: x is those rows of the obs, gathered; sparse: the
 * stored nonzero lists of the same rows. */
static int encode(CraftaxPPO *t, int rows, int t0, const int32_t *index, int Bc, const float *x, float *emb) {
    const int E = t->E, D = t->D;
    const float *W = t->params + t->off[P_W0], *b = t->params + t->off[P_B0];
    if (!t->sparse) return fwd_gemm(t, rows, E, D, x, D, W, E, b, 1, emb, E, "Dense_0");
    const int E4 = E / 4;
    const int threads = E4 >= 128 ? 128 : (E4 + 31) / 32 * 32;
    sparse_encode_kernel<<<rows, threads, 0, t->stream>>>(t->nz_idx, t->nz_val, t->nz_cnt, t->c.max_nnz, t->N, t0,
                                                          index, Bc, W, b, E, emb);
    return check_launch(t, "sparse Dense_0");
}

/* Nonzero lists of obs slots [s0, s0 + count). */
static int compact_slots(CraftaxPPO *t, int s0, int count) {
    if (!t->sparse) return 0;
    const int64_t row0 = (int64_t)s0 * t->N, rows = (int64_t)count * t->N;
    sparse_compact_kernel<<<(unsigned)rows, TPB, 0, t->stream>>>(t->obs + row0 * t->D, t->D, t->c.max_nnz,
                                                                t->nz_idx + row0 * t->c.max_nnz,
                                                                t->nz_val + row0 * t->c.max_nnz, t->nz_cnt + row0,
                                                                t->scal);
    return check_launch(t, "sparse_compact");
}

/* Dense_0's kernel gradient from demb [T * Bc, E] of the minibatch (index, Bc).
 * DW0_GEMM: x^T @ demb by cuBLAS over the dense minibatch obs (the sparse encoder gathers them
 * here, from the stored obs, into x); DW0_SPARSE: the bitmap walk (exact fp32, fixed order).
 * With TF32 on, the sparse encoder uses the GEMM: 69 GFLOP on tensor cores beat the walk,
 * which reads a demb row per nonzero (~5 GB per 8192-row minibatch). */
enum { DW0_GEMM = 0, DW0_SPARSE = 1 };
static int encoder_backward(CraftaxPPO *t, int Bc, const int32_t *index, int method) {
    const int T = t->T, E = t->E, D = t->D;
    const int R = T * Bc;
    float *dW = t->grads + t->off[P_W0];
    if (method == DW0_GEMM) {
        if (t->sparse) {
            if (!t->x_rows || R > t->x_rows)
                return fail(CRAFTAX_PPO_ERR_ARGUMENT, "dW0 as a GEMM needs TF32 with the sparse encoder");
            gather_obs_kernel<<<R, 256, 0, t->stream>>>(t->obs, index, T, t->N, Bc, D, t->x);
            LAUNCH(t, "gather_obs");
        }
        return gemm(t, 1, 0, D, E, R, t->x, D, t->demb, E, 0.0f, dW, E, "dW0");
    }
    if (!t->sparse) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "the sparse dW0 needs the sparse encoder");
    const int words = (R + 31) / 32;
    if (words > t->bm_words) return fail(CRAFTAX_PPO_ERR_ARGUMENT, "internal: bitmap too small");
    CUDA_TRY(cudaMemsetAsync(t->bitmap, 0, (size_t)D * words * sizeof(uint32_t), t->stream), "bitmap memset");
    sparse_bits_kernel<<<R, 128, 0, t->stream>>>(t->nz_idx, t->nz_cnt, t->c.max_nnz, t->N, index, Bc, words,
                                                 t->bitmap);
    TRY(check_launch(t, "sparse_bits"));
    const int E4 = E / 4;
    const int tg = E4 >= 128 ? 128 : (E4 + 31) / 32 * 32;
    sparse_dw_kernel<<<D, tg * DW_GROUPS, tg * DW_GROUPS * sizeof(float4), t->stream>>>(
        t->bitmap, words, t->obs, D, t->N, index, Bc, t->demb, E, dW);
    return check_launch(t, "sparse_dw");
}

/* numpy_ppo.forward over a segment of T steps of Bc columns (rows r = t * Bc + b), from
 * m_h0 with keep flags m_dones; caches everything backward needs. */
/* The forward's parts (each a profiler phase too). */
static int fwd_encode(CraftaxPPO *t, int Bc, const int32_t *index) {
    return encode(t, t->T * Bc, 0, index, Bc, t->x, t->emb);
}

/* The GRU's input projection of all T steps at once (it does not depend on the state). */
static int fwd_gru_input(CraftaxPPO *t, int Bc) {
    const int H = t->H, E = t->E;
    return fwd_gemm(t, t->T * Bc, 3 * H, E, t->emb, E, t->params + t->off[P_WI], 3 * H, NULL, 0, t->xi, 3 * H,
                    "GRU input");
}

static int fwd_gru_loop(CraftaxPPO *t, int Bc) {
    const int T = t->T, H = t->H;
    const dim3 grid((unsigned)(H / MM_JT), (unsigned)((Bc + GS_BM - 1) / GS_BM));
    const float *p = t->params;
    if (t->gru_seq_blocks && (int64_t)grid.x * grid.y <= t->gru_seq_blocks && aligned16(p + t->off[P_WH])) {
        GruSeqArgs a = {T, Bc, H, t->m_h0, t->m_dones, t->xi, p + t->off[P_WH], p + t->off[P_BI], p + t->off[P_BHN],
                        t->hs, t->hps, t->rs, t->zs, t->ns, t->hns, t->gru_barrier};
        void *args[] = {&a};
        const int tc = t->c.tf32 && 3 * H >= FBN; /* gru_step's rule */
        CUDA_TRY(cudaMemsetAsync(t->gru_barrier, 0, grid.y * sizeof(unsigned), t->stream), "gru barrier");
        CUDA_TRY(cudaLaunchCooperativeKernel(tc ? (const void *)gru_seq_kernel<1> : (const void *)gru_seq_kernel<0>,
                                             grid, dim3(GS_THREADS), args, gru_seq_smem_bytes(H), t->stream),
                 "gru_seq");
        return check_launch(t, "gru_seq");
    }
    for (int s = 0; s < T; s++) {
        const int64_t o = (int64_t)s * Bc * H;
        const float *h_prev = s == 0 ? t->m_h0 : t->hs + o - (int64_t)Bc * H;
        TRY(gru_step(t, Bc, h_prev, t->m_dones + (int64_t)s * Bc, t->xi + (int64_t)s * Bc * 3 * H, t->hps + o, 1,
                     t->hs + o, t->rs + o, t->zs + o, t->ns + o, t->hns + o));
    }
    return 0;
}

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

/* numpy_ppo.backward: gradients of every parameter into t->grads. */
static int bwd_heads(CraftaxPPO *t, int Bc) {
    const int R = t->T * Bc;
    TRY(bwd_head(t, R, t->dlogits, t->A, t->a1, t->a2, P_W1, P_B1, P_W2, P_B2, P_W3, P_B3, 0.0f));
    TRY(bwd_head(t, R, t->dvalue, 1, t->c1, t->c2, P_W4, P_B4, P_W5, P_B5, P_W6, P_B6, 1.0f));
    return 0;
}

/* GRU, BPTT over the segment (h0 is a constant): dxi, dhh of every step. */
static int bwd_gru_loop(CraftaxPPO *t, int Bc) {
    const int T = t->T, H = t->H;
    const float *p = t->params;
    for (int s = T - 1; s >= 0; s--) {
        const int64_t o = (int64_t)s * Bc * H;
        gru_backward_kernel<<<blocks_for((int64_t)Bc * H), TPB, 0, t->stream>>>(
            t->dy + o, t->dhp, t->m_dones + (int64_t)(s + 1) * Bc, s < T - 1, t->hps + o, t->rs + o, t->zs + o,
            t->ns + o, t->hns + o, t->dxi + (int64_t)s * Bc * 3 * H, t->dhh + (int64_t)s * Bc * 3 * H, Bc, H);
        LAUNCH(t, "gru_backward");
        if (s > 0)
            TRY(gemm(t, 0, 1, Bc, H, 3 * H, t->dhh + (int64_t)s * Bc * 3 * H, 3 * H, p + t->off[P_WH], 3 * H, 1.0f,
                     t->dhp, H, "dhp"));
    }
    return 0;
}

/* The GRU's weight and bias gradients (all steps at once) and demb. */
static int bwd_gru_weights(CraftaxPPO *t, int Bc) {
    const int H = t->H, E = t->E;
    const int R = t->T * Bc;
    const float *p = t->params;
    float *g = t->grads;
    TRY(gemm(t, 1, 0, H, 3 * H, R, t->hps, H, t->dhh, 3 * H, 0.0f, g + t->off[P_WH], 3 * H, "dWh"));
    TRY(colsum(t, R, H, t->dhh + 2 * H, 3 * H, g + t->off[P_BHN], "dbhn"));
    TRY(gemm(t, 1, 0, E, 3 * H, R, t->emb, E, t->dxi, 3 * H, 0.0f, g + t->off[P_WI], 3 * H, "dWi"));
    TRY(colsum(t, R, 3 * H, t->dxi, 3 * H, g + t->off[P_BI], "dbi"));
    TRY(gemm(t, 0, 1, R, E, 3 * H, t->dxi, 3 * H, p + t->off[P_WI], 3 * H, 0.0f, t->demb, E, "demb"));
    relu_mask_kernel<<<blocks_for((int64_t)R * E), TPB, 0, t->stream>>>(t->demb, t->emb, (int64_t)R * E);
    LAUNCH(t, "relu_mask");
    return 0;
}

static int bwd_encoder(CraftaxPPO *t, int Bc, const int32_t *index) {
    TRY(encoder_backward(t, Bc, index, t->dw0_method));
    return colsum(t, t->T * Bc, t->E, t->demb, t->E, t->grads + t->off[P_B0], "db0");
}

/* numpy_ppo.backward: gradients of every parameter into t->grads. */
static int segment_backward(CraftaxPPO *t, int Bc, const int32_t *index) {
    TRY(bwd_heads(t, Bc));
    TRY(bwd_gru_loop(t, Bc));
    TRY(bwd_gru_weights(t, Bc));
    return bwd_encoder(t, Bc, index);
}

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

static int loss_and_grads(CraftaxPPO *t, int Bc, const int32_t *index, double *stats) {
    TRY(segment_forward(t, Bc, index));
    TRY(loss_terms(t, Bc, stats));
    return segment_backward(t, Bc, index);
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

/* ---- rollout --------------------------------------------------------------------------- */
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
    int rc = craftax_cuda_generate_worlds_stream(t->pool_worlds, t->pool_keys, t->T, t->W, &t->env_params,
                                                 t->pool_scratch, (uintptr_t)t->pool_stream);
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
    int rc;
    if (t->W) {
        rc = craftax_cuda_step_optimistic_stream(
            t->env_states, t->actions + (int64_t)s * N, t->scal_sub_key, N, t->c.reset_ratio, &t->env_params,
            (const char *)t->pool_worlds + (size_t)s * t->W * craftax_cuda_state_size(),
            t->obs + (int64_t)(s + 1) * N * D, NULL, t->rewards + (int64_t)s * N, t->dones + (int64_t)(s + 1) * N,
            t->terminated, t->truncated, t->final_ach, NULL, t->env_scratch, t->opt_work, (uintptr_t)t->stream);
    } else {
        env_key_split_kernel<<<blocks_for(N), TPB, 0, t->stream>>>(t->scal, N, t->env_keys);
        LAUNCH(t, "env_key_split");
        rc = craftax_cuda_step_autoreset_stream(
            t->env_states, t->actions + (int64_t)s * N, t->env_keys, N, &t->env_params,
            t->obs + (int64_t)(s + 1) * N * D, t->rewards + (int64_t)s * N, t->dones + (int64_t)(s + 1) * N,
            t->terminated, t->truncated, t->final_ach, t->env_scratch, t->done_list, (uintptr_t)t->stream);
    }
    if (rc != 0) return fail(CRAFTAX_PPO_ERR_CUDA, "env step: %s (code %d)", craftax_cuda_last_error(), rc);
    LAUNCH(t, "env step");
    track_kernel<<<blocks_for(N), TPB, 0, t->stream>>>(
        t->rewards + (int64_t)s * N, t->dones + (int64_t)(s + 1) * N, t->final_ach, N, t->ret_acc, t->len_acc,
        t->ep_return + (int64_t)s * N, t->ep_length + (int64_t)s * N, t->ep_ach + (int64_t)s * N * ACH_WORDS);
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

static int sync(CraftaxPPO *t, const char *what) {
    CUDA_TRY(cudaStreamSynchronize(t->stream), what);
    return 0;
}

/* ---- API ------------------------------------------------------------------------------- */
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
    if (t->graph) cudaGraphDestroy(t->graph);
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
    if (env_states || env_scratch) {
        if (!env_states || !env_scratch || !env_params)
            return fail(CRAFTAX_PPO_ERR_NULL, "env_states, env_scratch and env_params go together");
        if (env_params_size != sizeof(CraftaxParams))
            return fail(CRAFTAX_PPO_ERR_ARGUMENT, "env params size %zu != sizeof(CraftaxParams) %zu", env_params_size,
                        sizeof(CraftaxParams));
        if (t->D != craftax_cuda_obs_size())
            return fail(CRAFTAX_PPO_ERR_CONFIG, "obs_size %d != the env's %d", t->D, craftax_cuda_obs_size());
        memcpy(&t->env_params, env_params, sizeof(CraftaxParams));
        t->env_states = env_states;
        t->env_scratch = env_scratch;
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
        ALLOC(t, t->pool_worlds, T * t->W * craftax_cuda_state_size());
        ALLOC(t, t->pool_scratch, T * t->W * craftax_cuda_scratch_size());
        ALLOC(t, t->pool_keys, T * 2 * 4);
        ALLOC(t, t->opt_work, craftax_cuda_optimistic_work_size((int64_t)N));
    }
    ALLOC(t, t->terminated, N);
    ALLOC(t, t->truncated, N);
    ALLOC(t, t->final_ach, N * NUM_ACH);
    /* episode log: ep_return, ep_length, ep_ach contiguous (one read) */
    ALLOC(t, t->ep_return, T * N * (2 + ACH_WORDS) * 4);
    t->ep_length = (int32_t *)(t->ep_return + T * N);
    t->ep_ach = (uint32_t *)(t->ep_length + T * N);
    ALLOC(t, t->s_pre, N * E * f);
    ALLOC(t, t->s_xi, N * 3 * H * f);
    ALLOC(t, t->s_hp, N * H * f);
    ALLOC(t, t->s_hh, N * 3 * H * f);
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
        t->legacy = legacy && atoi(legacy) == 1;
    }
    t->dw0_method = t->sparse && (!c->tf32 || t->legacy) ? DW0_SPARSE : DW0_GEMM;
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
    int rc = craftax_cuda_observe(t->env_states, (int64_t)N, t->obs + T * N * D);
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
    CUDA_TRY(cudaEventRecord(t->ev0, t->stream), "event");
    /* the first iteration runs eagerly: cuBLAS picks and loads its kernels outside capture */
    if (t->c.use_graph && !t->c.debug && t->iterations_run > 0) {
        if (!t->graph_exec) {
            CUDA_TRY(cudaStreamBeginCapture(t->stream, cudaStreamCaptureModeThreadLocal), "begin capture");
            int rc = enqueue_iteration(t);
            cudaGraph_t graph = NULL;
            cudaError_t err = cudaStreamEndCapture(t->stream, &graph);
            if (rc != 0) {
                if (graph) cudaGraphDestroy(graph);
                cudaGetLastError();
                return rc;
            }
            if (err != cudaSuccess) return cuda_fail(err, "end capture");
            t->graph = graph;
            err = cudaGraphInstantiate(&t->graph_exec, graph, 0);
            if (err != cudaSuccess) {
                t->graph_exec = NULL;
                return cuda_fail(err, "graph instantiate");
            }
        }
        CUDA_TRY(cudaGraphLaunch(t->graph_exec, t->stream), "graph launch");
    } else {
        TRY(enqueue_iteration(t));
    }
    CUDA_TRY(cudaEventRecord(t->ev1, t->stream), "event");
    TRY(sync(t, "iterate"));
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
        host[7] = t->c.anneal_lr ? t->c.lr * (1.0 - (double)(sc.counters[1] / per_update) / (double)t->c.num_updates)
                                 : t->c.lr;
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
    const int graph = t->c.use_graph && !t->c.debug;
    if (part > CRAFTAX_PPO_PROFILE_UPDATE) { /* a phase: fill every buffer it reads first */
        TRY(gather_minibatch(t, t->perm, t->B));
        TRY(loss_and_grads(t, t->B, t->perm, t->losses));
        TRY(sync(t, "profile"));
    }
    if (graph && !t->prof_exec[part]) {
        TRY(enqueue_part(t, part)); /* eagerly once: cuBLAS loads its kernels outside capture */
        TRY(sync(t, "profile"));
        CUDA_TRY(cudaStreamBeginCapture(t->stream, cudaStreamCaptureModeThreadLocal), "begin capture");
        int rc = enqueue_part(t, part);
        cudaGraph_t g = NULL;
        cudaError_t err = cudaStreamEndCapture(t->stream, &g);
        if (rc != 0) {
            if (g) cudaGraphDestroy(g);
            cudaGetLastError();
            return rc;
        }
        if (err != cudaSuccess) return cuda_fail(err, "end capture");
        err = cudaGraphInstantiate(&t->prof_exec[part], g, 0);
        cudaGraphDestroy(g);
        if (err != cudaSuccess) {
            t->prof_exec[part] = NULL;
            return cuda_fail(err, "graph instantiate");
        }
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

int64_t craftax_ppo_nnz_overflow(CraftaxPPO *t) {
    if (!t) return -1;
    Scalars sc;
    if (cudaMemcpy(&sc, t->scal, sizeof(sc), cudaMemcpyDeviceToHost) != cudaSuccess) return -1;
    return sc.nnz_overflow;
}

float craftax_ppo_last_iterate_ms(const CraftaxPPO *t) { return t ? t->last_ms : 0.0f; }
int craftax_ppo_gru_seq_blocks(const CraftaxPPO *t) { return t ? t->gru_seq_blocks : 0; }
