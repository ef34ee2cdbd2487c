/* craftax/noise.h: Perlin and fractal noise of craftax/craftax/util/noise.py.
 *
 * Only the form world generation uses: a 48x48 field, one octave, resolutions that divide
 * 48. Every grid coordinate k*res/48 is then a dyadic fraction, so the grid and the
 * interpolant are exact; the rounding that matters is glibc's cos/sin (mathf.h) and where
 * XLA:CPU contracts the ramps and the lerps into multiply-adds, which differs between the
 * kernels that read a field; each form is written here with explicit fmaf() (the CUDA
 * build does not contract). The forms were read from the optimized LLVM IR and object code
 * that XLA dumps for the batched jitted reset_env (XLA_FLAGS=--xla_dump_to=...).
 */
#ifndef CRAFTAX_NOISE_H
#define CRAFTAX_NOISE_H

#include "constants.h"
#include "mathf.h"
#include "rng.h"

#define CRAFTAX_NOISE_N CRAFTAX_MAP_SIZE

/* How a smooth floor evaluates its noise and ore draws: per cell where it needs them (a GPU
 * warp, whose working memory must fit in shared memory), or as whole fields into CPU-only
 * scratch (a CPU, where those loops vectorise). Same bits either way;
 * conformance/test_worldgen_paths.py builds the C tool both ways and compares. */
#if defined(__CUDACC__) && !defined(CRAFTAX_WORLDGEN_PER_CELL)
#define CRAFTAX_WORLDGEN_PER_CELL
#endif

static inline CRAFTAX_HD float craftax_noise_interpolant(float t) { return t * t * t * (t * (t * 6.0f - 15.0f) + 10.0f); }

/* One ramp, sum(dstack((x, y)) * g, 2), as XLA's multiply_reduce_fusion kernels compute it:
 * the reduction starts from 0 and LLVM contracts each step into an FMA, so the result is
 * fma(y, gy, fma(x, gx, 0)) (the inner fma is the rounded product, -0 becoming +0). */
static inline CRAFTAX_HD float craftax_noise_ramp(float x, float gx, float y, float gy) {
    return fmaf(y, gy, x * gx + 0.0f);
}

/* The bilinear blend of the four ramps, ((1-t1)*n0 + t1*n1) with n0 = n00*(1-t0) + t0*n10
 * and n1 likewise, before the final `* sqrt(2)`. XLA recomputes it inside every kernel that
 * reads a noise field, and LLVM contracts the lerps into FMAs per kernel: */

/* ... in the kernels of the min/max reduction, the map (water, sand, mountain, path, caves,
 * trees) and the lava tiles, which put the t0 product first: fma(n10, t0, n00*(1-t0)). */
static inline CRAFTAX_HD float craftax_noise_blend(float n00, float n10, float n01, float n11, float t0, float t1) {
    const float n0 = fmaf(t0, n10, n00 * (1.0f - t0));
    const float n1 = fmaf(t0, n11, n01 * (1.0f - t0));
    return fmaf(1.0f - t1, n0, t1 * n1);
}

/* ... in the kernel of the lava glow (the light map's lava mask, transpose_copy_fusion),
 * which puts the (1-t0) product first: fma(1-t0, n00, t0*n10). */
static inline CRAFTAX_HD float craftax_noise_blend_glow(float n00, float n10, float n01, float n11, float t0,
                                                        float t1) {
    const float n0 = fmaf(1.0f - t0, n00, t0 * n10);
    const float n1 = fmaf(1.0f - t0, n01, t0 * n11);
    return fmaf(1.0f - t1, n0, t1 * n1);
}

/* generate_fractal_noise_2d(key, (48,48), (res0,res1), octaves=1, override_angles) is one
 * generate_perlin_noise_2d field: a (res0+1) x (res1+1) grid of unit gradients at angles
 * 2*pi*u (u uniform, or `angles01`: upstream multiplies the override by 2*pi just as it does
 * the draw), blended over each gradient cell of 48/res0 x 48/res1 map cells, times sqrt(2),
 * then rescaled to [0, 1]. Every value of a cell is a pure function of the grid and (i, j),
 * so world generation evaluates it where it needs it instead of storing 48 x 48 fields.
 * 48/res is a power of two for every resolution used (3, 6, 12, 24: cells of 16, 8, 4, 2), so
 * a cell's gradient cell is a shift away and its fraction k / (48/res) = k * (res/48) exactly. */
#define CRAFTAX_NOISE_GRADS (25 * 25) /* (res0+1) x (res1+1), res <= 24 */
typedef struct {
    int res0, res1;
    int shift0, shift1;           /* log2(48 / res) */
    float inv_d0, inv_d1;         /* res / 48 */
    const float *grad_x, *grad_y; /* (res0+1) x (res1+1), row-major */
    float min, inv_range;         /* of sqrt(2) * blend over the field (craftax_noise_min_max) */
} CraftaxNoiseGrid;

/* Whether res divides the 48 map cells into gradient cells of a power-of-two size. */
static inline CRAFTAX_HD int craftax_noise_res_ok(int res) {
    if (res <= 0 || res > 24 || CRAFTAX_NOISE_N % res) return 0;
    const int d = CRAFTAX_NOISE_N / res;
    return (d & (d - 1)) == 0;
}
static inline CRAFTAX_HD int craftax_noise_shift(int res) {
    int shift = 0;
    while ((1 << shift) < CRAFTAX_NOISE_N / res) shift++;
    return shift;
}

/* The grid's gradients from the fractal call's key (its split, then generate_perlin_noise_2d's
 * split, then the uniform draw). grad_x, grad_y: shared by the lanes (common.h). Ends synced. */
static CRAFTAX_GPU_NOINLINE CRAFTAX_HD CraftaxNoiseGrid craftax_noise_grid_lanes(CraftaxKey key, int res0, int res1,
                                                                                const float *angles01, float *grad_x,
                                                                                float *grad_y, int lane, int lanes) {
    CraftaxKey unused, fractal, perlin;
    craftax_split2(key, &unused, &fractal);
    craftax_split2(fractal, &unused, &perlin);
    CRAFTAX_FOR_LANE(i, (res0 + 1) * (res1 + 1), lane, lanes) {
        float u = angles01 ? angles01[i] : craftax_uniform(perlin, (uint32_t)i);
        float angle = 6.28318548f * u; /* 2*jnp.pi (a Python float) times a float32 array */
        grad_x[i] = craftax_cosf(angle);
        grad_y[i] = craftax_sinf(angle);
    }
    craftax_lanes_sync(lanes);
    CraftaxNoiseGrid g;
    g.res0 = res0;
    g.res1 = res1;
    g.shift0 = craftax_noise_shift(res0);
    g.shift1 = craftax_noise_shift(res1);
    g.inv_d0 = 1.0f / (float)(1 << g.shift0);
    g.inv_d1 = 1.0f / (float)(1 << g.shift1);
    g.grad_x = grad_x;
    g.grad_y = grad_y;
    g.min = g.inv_range = 0.0f;
    return g;
}

/* The four ramps of cell (i, j) and its interpolants (mgrid[0:res:res/48] % 1). */
typedef struct {
    float n00, n10, n01, n11, t0, t1;
} CraftaxNoiseCorners;
static inline CRAFTAX_HD CraftaxNoiseCorners craftax_noise_corners(const CraftaxNoiseGrid *g, int i, int j) {
    const int cols = g->res1 + 1;
    const float gx = (float)(i & ((1 << g->shift0) - 1)) * g->inv_d0;
    const float gy = (float)(j & ((1 << g->shift1) - 1)) * g->inv_d1;
    const int a00 = (i >> g->shift0) * cols + (j >> g->shift1), a10 = a00 + cols;
    CraftaxNoiseCorners c;
    c.n00 = craftax_noise_ramp(gx, g->grad_x[a00], gy, g->grad_y[a00]);
    c.n10 = craftax_noise_ramp(gx - 1.0f, g->grad_x[a10], gy, g->grad_y[a10]);
    c.n01 = craftax_noise_ramp(gx, g->grad_x[a00 + 1], gy - 1.0f, g->grad_y[a00 + 1]);
    c.n11 = craftax_noise_ramp(gx - 1.0f, g->grad_x[a10 + 1], gy - 1.0f, g->grad_y[a10 + 1]);
    c.t0 = craftax_noise_interpolant(gx);
    c.t1 = craftax_noise_interpolant(gy);
    return c;
}
/* The blend L of cell (i, j) (before its `* sqrt(2)`) as the map's kernels compute it. */
static inline CRAFTAX_HD float craftax_noise_at(const CraftaxNoiseGrid *g, int i, int j) {
    const CraftaxNoiseCorners c = craftax_noise_corners(g, i, j);
    return craftax_noise_blend(c.n00, c.n10, c.n01, c.n11, c.t0, c.t1);
}

/* generate_fractal_noise_2d's normalisation: min and max of sqrt(2) * L over the field come
 * from their own kernel, which blends like the map's; XLA takes them of the rounded products,
 * but where it subtracts the minimum it fuses the product into the subtraction,
 * fma(L, sqrt2, -min), then multiplies by 1 / (max - min) (craftax_noise_normalised). Lanes
 * take cells; min and max are exact in any order. Sets g->min, g->inv_range in every lane. */
#define CRAFTAX_SQRT2_F 1.41421354f
/* The field's min and inverse range from min and max of sqrt(2) * L. */
static inline CRAFTAX_HD void craftax_noise_set_range(CraftaxNoiseGrid *g, float lo, float hi) {
    lo = lo + 0.0f; /* `noise = zeros + 1 * perlin` turns -0 into +0 */
    hi = hi + 0.0f;
    g->min = lo;
    g->inv_range = 1.0f / (hi - lo);
}
/* The blends of every cell into `out` (global memory on a GPU), with the field's min and max:
 * the per-cell form of craftax_noise_fill_min_max. */
static inline CRAFTAX_HD void craftax_noise_fill_min_max_lanes(CraftaxNoiseGrid *g,
                                                               float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N], int lane,
                                                               int lanes) {
    float lo = INFINITY, hi = -INFINITY; /* every lane has cells */
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        const float blend = craftax_noise_at(g, i, j);
        out[i][j] = blend;
        const float v = CRAFTAX_SQRT2_F * blend;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    craftax_noise_set_range(g, craftax_lanes_min_f32(lo, lanes), craftax_lanes_max_f32(hi, lanes));
}

/* (noise - min) / (max - min) of one blend value, as XLA computes it (see above). */
static inline CRAFTAX_HD float craftax_noise_normalised(float blend, const CraftaxNoiseGrid *g) {
    return fmaf(blend, CRAFTAX_SQRT2_F, -g->min) * g->inv_range;
}

#ifndef CRAFTAX_WORLDGEN_PER_CELL
/* A CPU's form of craftax_noise_fill_min_max_lanes: the blends of every cell walked gradient
 * cell by gradient cell, where the four gradients and the row's interpolant are constants and
 * the inner loop is plain arithmetic that vectorises (same operations per cell as
 * craftax_noise_corners, so the same bits), then their min and max. */
static inline void craftax_noise_fill_min_max(CraftaxNoiseGrid *g, float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N]) {
    const int d0 = 1 << g->shift0, d1 = 1 << g->shift1, cols = g->res1 + 1;
    float t1_of[CRAFTAX_NOISE_N], gy_of[CRAFTAX_NOISE_N];
    for (int j = 0; j < d1; j++) {
        gy_of[j] = (float)j * g->inv_d1;
        t1_of[j] = craftax_noise_interpolant(gy_of[j]);
    }
    for (int i = 0; i < CRAFTAX_NOISE_N; i++) {
        const float gx = (float)(i & (d0 - 1)) * g->inv_d0, t0 = craftax_noise_interpolant(gx);
        for (int cj = 0; cj < g->res1; cj++) {
            const int a00 = (i >> g->shift0) * cols + cj, a10 = a00 + cols;
            const float g00x = g->grad_x[a00], g00y = g->grad_y[a00], g10x = g->grad_x[a10], g10y = g->grad_y[a10];
            const float g01x = g->grad_x[a00 + 1], g01y = g->grad_y[a00 + 1];
            const float g11x = g->grad_x[a10 + 1], g11y = g->grad_y[a10 + 1];
            float *row = &out[i][cj * d1];
            for (int j = 0; j < d1; j++) {
                const float gy = gy_of[j], t1 = t1_of[j];
                const float n00 = craftax_noise_ramp(gx, g00x, gy, g00y);
                const float n10 = craftax_noise_ramp(gx - 1.0f, g10x, gy, g10y);
                const float n01 = craftax_noise_ramp(gx, g01x, gy - 1.0f, g01y);
                const float n11 = craftax_noise_ramp(gx - 1.0f, g11x, gy - 1.0f, g11y);
                row[j] = craftax_noise_blend(n00, n10, n01, n11, t0, t1);
            }
        }
    }
    float lo = CRAFTAX_SQRT2_F * out[0][0], hi = lo;
    for (int i = 0; i < CRAFTAX_NOISE_N; i++)
        for (int j = 0; j < CRAFTAX_NOISE_N; j++) {
            const float v = CRAFTAX_SQRT2_F * out[i][j];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    craftax_noise_set_range(g, lo, hi);
}
#endif

/* The whole field as the map's kernels see it (craftax_test_fractal_noise; world generation
 * evaluates cells where it needs them). */
static inline void craftax_fractal_noise(CraftaxKey key, int res0, int res1, const float *angles01,
                                         float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N]) {
    float grad_x[CRAFTAX_NOISE_GRADS], grad_y[CRAFTAX_NOISE_GRADS];
    CraftaxNoiseGrid g = craftax_noise_grid_lanes(key, res0, res1, angles01, grad_x, grad_y, 0, 1);
    craftax_noise_fill_min_max_lanes(&g, out, 0, 1);
    for (int i = 0; i < CRAFTAX_NOISE_N; i++)
        for (int j = 0; j < CRAFTAX_NOISE_N; j++) out[i][j] = craftax_noise_normalised(out[i][j], &g);
}

#endif
