/* ppo_common.cuh: what every part of the CUDA PPO trainer shares: the trainer's state (struct
 * CraftaxPPO and the device-side Scalars), error reporting, and the launch helpers.
 *
 * The trainer compiles as one translation unit: cuda/ppo_cuda.cu (the extern "C" API) includes
 * the parts ppo_*.cuh, each of which includes the parts it builds on. One unit needs no
 * relocatable device code (-rdc), so every kernel compiles exactly as a whole-program kernel,
 * and the parts share static helpers without exporting them from the library. A part is not
 * compiled on its own.
 */
#ifndef CRAFTAX_PPO_COMMON_CUH
#define CRAFTAX_PPO_COMMON_CUH

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
#include "craftax_classic_cuda.h"
#include "craftax_cuda.h"
#include "ppo_cuda.h"

#define ACH_WORDS 3 /* uint32 words of an episode's achievement bits */
#define TPB 256     /* threads per block of the elementwise kernels */

/* ---- errors: the message of the last failure, for craftax_ppo_last_error --------------- */
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

/* ---- cuBLAS types and constants (no cuBLAS header: it is loaded at run time, ppo_gemm.cuh) */
typedef int cublasStatus;
typedef void *cublasHandle;
enum { OP_N = 0, OP_T = 1, COMPUTE_32F = 68, COMPUTE_32F_FAST_TF32 = 77, GEMM_DEFAULT = -1, R_32F = 0 };

/* ---- the trainer's state ---------------------------------------------------------------- */
/* Parameter blocks (offsets in floats, each 64-float aligned for the GEMMs). */
enum { P_W0, P_B0, P_WI, P_BI, P_WH, P_BHN, P_W1, P_B1, P_W2, P_B2, P_W3, P_B3, P_W4, P_B4, P_W5, P_B5, P_W6, P_B6,
       P_COUNT };

/* Device scalars of the optimiser and the key streams, written by kernels only (the host reads
 * them back for checks and buffers: craftax_ppo_read, craftax_ppo_loss_grads). */
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

struct CraftaxPPOEnvOps; /* the env's calls, ppo_env.cuh */

struct CraftaxPPO {
    CraftaxPPOConfig c;
    int N, T, D, A, E, H, B, R, M;
    int64_t P;
    int64_t off[P_COUNT];
    int64_t rows_[P_COUNT], cols_[P_COUNT];
    /* env */
    const struct CraftaxPPOEnvOps *env_ops; /* of c.env, also without env buffers (has_env 0) */
    void *env_states, *env_scratch;
    size_t env_state_size; /* bytes of one env's state (a pool world's) */
    union {
        CraftaxParams craftax;
        CraftaxClassicParams classic;
    } env_params; /* the member of c.env */
    int has_env;
    /* cuda */
    cudaStream_t stream;
    cublasHandle blas;
    void *workspace;
    size_t workspace_bytes;
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
    float *s_pre, *s_xi, *s_hp, *s_a1, *s_a2, *s_logits, *s_c1, *s_c2;
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
    int baseline_kernels; /* PYCRAFTAX_PPO_LEGACY=1 at create: the baseline kernels only (fwd_gemm_kernel,
                           * fwd_gemm_tf32_kernel, per-step GRU, sparse dW0), which the faster ones must
                           * match bitwise (conformance/test_cuda_trainer.py) */
    int64_t x_rows;   /* rows of x (dense minibatch obs); 0 where no x is kept */
    float *s_hnew;    /* [N, H]: a rollout step's new GRU state (mm_kernel must not write in place) */
    unsigned *gru_barrier; /* gru_seq_kernel's barrier counters, one per row tile of N rows */
    int gru_seq_blocks;    /* blocks of gru_seq_kernel the GPU holds at once (0: per-step launches;
                            * PYCRAFTAX_PPO_GRU_SEQ=0 at create turns it off) */
    struct CraftaxDist *dist; /* data-parallel training (ppo_nccl.cuh); NULL: one process */
    /* profile: graphs of the parts timed alone */
    cudaGraphExec_t prof_exec[CRAFTAX_PPO_PROFILE_COUNT];
};

/* ---- launch helpers --------------------------------------------------------------------- */
static __device__ __forceinline__ int64_t gtid() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }

static unsigned blocks_for(int64_t n, int tpb = TPB) { return (unsigned)((n + tpb - 1) / tpb); }

/* A launch's error, and with debug the kernel's own (synchronised), named by `what`. */
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

static int sync(CraftaxPPO *t, const char *what) {
    CUDA_TRY(cudaStreamSynchronize(t->stream), what);
    return 0;
}

/* p[0..n) = v. */
__global__ void fill_kernel(float *p, float v, int64_t n) {
    const int64_t i = gtid();
    if (i < n) p[i] = v;
}

#endif
