/* ppo_gru.cuh: the recurrent layer (flax GRUCell, as numpy_ppo.forward / backward write it):
 * one step over a batch of rows (the rollout's policy step, the update's fallback path), all T
 * steps of a minibatch in one persistent launch (the update's forward), and backpropagation
 * through time with the weight gradients.
 */
#ifndef CRAFTAX_PPO_GRU_CUH
#define CRAFTAX_PPO_GRU_CUH

#include "ppo_common.cuh"
#include "ppo_gemm.cuh"
#include "ppo_gru_cell.cuh"

/* hp = where(keep, 0, h) for rows of B envs. */
__global__ void reset_hidden_kernel(float *hp, const float *h, const uint8_t *keep, int B, int H) {
    const int64_t i = gtid();
    if (i >= (int64_t)B * H) return;
    hp[i] = keep[i / H] ? 0.0f : h[i];
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

/* ---- the update's GRU forward: all T steps in one persistent launch ---------------------------
 * Per-step launches over a minibatch's few rows are bound by latency: each step re-reads its Wh
 * slices from L2 and pays a launch. Here each block keeps the r, z and n column
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
    if (!t->baseline_kernels && H % MM_JT == 0 && aligned16(h_prev) && aligned16(Wh)) {
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
    if (t->baseline_kernels || (env && atoi(env) == 0) || t->H % 32 != 0) return 0;
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

#endif
