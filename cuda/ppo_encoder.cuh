/* ppo_encoder.cuh: the observation encoder (Dense_0, obs -> relu(obs @ W0 + b0)), forward and
 * kernel gradient, dense or sparse.
 *
 * Sparse encoder (the default): the obs is 8217 one-hot map features + 51 scalars, about 4%
 * nonzero. Each obs row's nonzeros are listed once (sparse_compact_kernel, index order); the
 * forward is a gather-sum of kernel rows in list order, the kernel gradient a per-feature-row sum
 * over a bitmap of the minibatch rows holding that feature (no sort, no float atomics, fixed
 * order) with TF32 off, one cuBLAS TF32 GEMM over the gathered dense minibatch obs with TF32 on
 * (see encoder_backward). Dense encoder: a forward GEMM over the gathered obs and a cuBLAS kernel
 * gradient.
 */
#ifndef CRAFTAX_PPO_ENCODER_CUH
#define CRAFTAX_PPO_ENCODER_CUH

#include "ppo_common.cuh"
#include "ppo_gemm.cuh"

/* sparse_dw_kernel: groups of threads splitting a feature's rows, summed in group order */
#define DW_GROUPS 4

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
 * With TF32 on, the sparse encoder uses the GEMM: the walk reads a demb row per nonzero (for an
 * 8192-row minibatch at width 512, ~5 GB), which is slower than the GEMM's 69 GFLOP on tensor
 * cores. */
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

/* The update's encoder forward over the minibatch's T * Bc rows (a profiler phase). */
static int fwd_encode(CraftaxPPO *t, int Bc, const int32_t *index) {
    return encode(t, t->T * Bc, 0, index, Bc, t->x, t->emb);
}

static int bwd_encoder(CraftaxPPO *t, int Bc, const int32_t *index) {
    TRY(encoder_backward(t, Bc, index, t->dw0_method));
    return colsum(t, t->T * Bc, t->E, t->demb, t->E, t->grads + t->off[P_B0], "db0");
}

#endif
