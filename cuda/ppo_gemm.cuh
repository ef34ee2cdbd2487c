/* ppo_gemm.cuh: the trainer's matrix products: cuBLAS, loaded at run time, for the backward pass,
 * and the trainer's own kernels for every forward product.
 *
 * cuBLAS is dlopen'ed (libcublas.so.13, or the path given by craftax_ppo_set_cublas_path, e.g.
 * the one of the nvidia-cublas wheel PyTorch installs): the env half of the library must keep
 * loading where cuBLAS is absent, and CUDA 13 ships no static cuBLAS. The six entry points used are
 * declared here, so no cuBLAS header is needed to build. Every matrix is row-major; cuBLAS
 * (column-major) computes C^T = op(B)^T op(A)^T, see gemm(). cuBLAS is deterministic for a fixed
 * handle, stream and workspace (cublasSetWorkspace), so eager and graph iterations agree bitwise.
 *
 * Forward passes never use cuBLAS: its kernel choice (and so its accumulation order) depends on
 * the number of rows, and the rollout (N rows per step), the update (T * B rows) and the replay
 * (T * N rows) must give every sample bitwise the same log-prob and value, so that PPO's
 * first-epoch ratio is exactly 1. fwd_gemm_kernel (fp32) and fwd_gemm_tf32_kernel (TF32 tensor
 * cores, wmma) accumulate each output over K in one fixed order whatever M is; mm_kernel
 * (cp.async pipeline; also the whole GRU step in one launch) and narrow_gemm_kernel compute the
 * same sums in the same order, faster, and are used wherever their shapes fit
 * (PYCRAFTAX_PPO_LEGACY=1 at create turns them off, for comparisons).
 */
#ifndef CRAFTAX_PPO_GEMM_CUH
#define CRAFTAX_PPO_GEMM_CUH

#include "ppo_common.cuh"
#include "ppo_gru_cell.cuh"

/* ---- cuBLAS, loaded at run time: the backward pass's products ------------------------------ */
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

/* Forward GEMM tiles (see fwd_gemm_kernel / fwd_gemm_tf32_kernel). */
#define FBM 128
#define FBN 64
#define FBK 16
#define TBK 32

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

/* ---- forward GEMMs, pipelined: cp.async, same per-output order as the kernels above --------
 * mm_kernel computes the same products as fwd_gemm_kernel / fwd_gemm_tf32_kernel, bitwise:
 * every output is accumulated from +0 over k = 0, 1, ... (fp32: one fmaf per k; TF32: one wmma
 * m16n16k8 per 8 k, operands rounded with __float_to_tf32), with K zero-padded to a multiple of
 * 32. Only the way operands reach shared memory differs: 16-byte cp.async copies, MM_STAGES
 * chunks of 32 k in flight, so a block does not wait one L2 round trip per chunk (which bounds
 * the GRU's per-step GEMMs over a minibatch's few rows by latency). Since the result of an
 * output depends only on its own row, column and this k order, the tile shape can be chosen per
 * call (by M too); fwd_gemm_kernel and fwd_gemm_tf32_kernel remain for the shapes whose rows
 * are not 16-byte aligned.
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
 * rollout steps over all envs, the fast recipe's 2048-row minibatches). Fewer warps a block
 * leave too few to hide the per-chunk latencies. */
#define MM_GENERIC(tf) mm_kernel<128, 64, 4, 2, tf, 0, 3>
#define MM_GRU_SMALL(tf) mm_kernel<32, 3 * MM_JT, 2, 3, tf, 1, 8>
#define MM_GRU_LARGE(tf) mm_kernel<128, 3 * MM_JT, 4, 3, tf, 1, 4>
#define MM_GENERIC_SMEM (MMShape<128, 64, 3>::SMEM_BYTES)
#define MM_GRU_SMALL_SMEM (MMShape<32, 3 * MM_JT, 8>::SMEM_BYTES)
#define MM_GRU_LARGE_SMEM (MMShape<128, 3 * MM_JT, 4>::SMEM_BYTES)

/* ---- host side: cuBLAS products, and the choice of forward kernel ----------------------- */
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

static int aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Forward C[M, Nc] = A[M, K] @ B[K, Nc] (+ bias, relu): fp32, or on TF32 tensor cores where
 * tf32 is on and the layer is wide enough to fill a tile (Nc >= FBN). Precision and kernel are
 * chosen by the layer's shape and alignment alone, never by M, so every batch of a sample
 * agrees bitwise. */
static int fwd_gemm(CraftaxPPO *t, int M, int Nc, int K, const float *A, int lda, const float *B, int ldb,
                    const float *bias, int relu, float *C, int ldc, const char *what) {
    const dim3 grid((unsigned)((Nc + FBN - 1) / FBN), (unsigned)((M + FBM - 1) / FBM));
    const int tc = t->c.tf32 && Nc >= FBN;
    if (!t->baseline_kernels && Nc < FBN) { /* narrow: fp32 whatever tf32 says, as the tile rule */
        int cw = 1;
        while (cw < Nc) cw *= 2;
        narrow_gemm_kernel<<<(unsigned)((M + 256 / cw - 1) / (256 / cw)), 256, 0, t->stream>>>(
            M, Nc, K, cw, A, lda, B, ldb, bias, relu, C, ldc);
        return check_launch(t, what);
    }
    /* mm_kernel where its 16-byte copies fit the shape (bitwise the same as the tile kernels) */
    if (!t->baseline_kernels && K % 4 == 0 && lda % 4 == 0 && ldb % 4 == 0 && Nc % 4 == 0 && aligned16(A) && aligned16(B)) {
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

/* ---- dense-layer backward helpers ---------------------------------------------------------- */
/* d *= (a > 0): the relu mask of a layer whose output a is. */
__global__ void relu_mask_kernel(float *d, const float *a, int64_t n) {
    const int64_t i = gtid();
    if (i >= n) return;
    d[i] = a[i] > 0.0f ? d[i] : 0.0f;
}

#endif
