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

/* generate_perlin_noise_2d(key, (48,48), (res0,res1), override_angles) without its final
 * `* sqrt(2)`: `out` receives craftax_noise_blend of every cell and, when not NULL,
 * `out_glow` craftax_noise_blend_glow. `angles01`, when not NULL, replaces the uniform draw
 * ((res0+1)*(res1+1) values; upstream multiplies the override by 2*pi just as it does the
 * draw). `grad_x`, `grad_y`: space for 25 * 25 floats each, shared by the lanes (common.h). */
#define CRAFTAX_NOISE_GRADS (25 * 25) /* (res0+1) x (res1+1), res <= 24 */
static inline CRAFTAX_HD void craftax_perlin_noise_lanes(CraftaxKey key, int res0, int res1, const float *angles01,
                                                         float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N],
                                                         float out_glow[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N],
                                                         float *grad_x, float *grad_y, int lane, int lanes) {
    const int n = CRAFTAX_NOISE_N;
    const int d0 = n / res0, d1 = n / res1;
    CraftaxKey unused, sub;
    craftax_split2(key, &unused, &sub);
    const int cols = res1 + 1;
    craftax_lanes_sync(lanes); /* the previous field's lanes are done with the gradients */
    CRAFTAX_FOR_LANE(i, (res0 + 1) * cols, lane, lanes) {
        float u = angles01 ? angles01[i] : craftax_uniform(sub, (uint32_t)i);
        float angle = 6.28318548f * u; /* 2*jnp.pi (a Python float) times a float32 array */
        grad_x[i] = craftax_cosf(angle);
        grad_y[i] = craftax_sinf(angle);
    }
    craftax_lanes_sync(lanes);
    /* Walk the field gradient cell by gradient cell: inside one cell the four gradients
     * are constants, so the inner loop over j is plain arithmetic that vectorises. */
    float t1_of[CRAFTAX_NOISE_N], gy_of[CRAFTAX_NOISE_N];
    for (int j = 0; j < d1; j++) {
        gy_of[j] = (float)j / (float)d1; /* mgrid[0:res:res/48] % 1, exact */
        t1_of[j] = craftax_noise_interpolant(gy_of[j]);
    }
    CRAFTAX_FOR_LANE(i_cj, n * res1, lane, lanes) { /* lanes take (row, gradient cell) pairs */
        const int i = i_cj / res1, cj = i_cj % res1;
        const float gx = (float)(i % d0) / (float)d0;
        const float t0 = craftax_noise_interpolant(gx);
        const int ci = i / d0;
        const int a00 = ci * cols + cj, a10 = (ci + 1) * cols + cj;
        const float g00x = grad_x[a00], g00y = grad_y[a00], g10x = grad_x[a10], g10y = grad_y[a10];
        const float g01x = grad_x[a00 + 1], g01y = grad_y[a00 + 1], g11x = grad_x[a10 + 1], g11y = grad_y[a10 + 1];
        float *row = &out[i][cj * d1];
        float *row_glow = out_glow ? &out_glow[i][cj * d1] : 0;
        for (int j = 0; j < d1; j++) {
            const float gy = gy_of[j], t1 = t1_of[j];
            const float n00 = craftax_noise_ramp(gx, g00x, gy, g00y);
            const float n10 = craftax_noise_ramp(gx - 1.0f, g10x, gy, g10y);
            const float n01 = craftax_noise_ramp(gx, g01x, gy - 1.0f, g01y);
            const float n11 = craftax_noise_ramp(gx - 1.0f, g11x, gy - 1.0f, g11y);
            row[j] = craftax_noise_blend(n00, n10, n01, n11, t0, t1);
            if (row_glow) row_glow[j] = craftax_noise_blend_glow(n00, n10, n01, n11, t0, t1);
        }
    }
    craftax_lanes_sync(lanes);
}
static inline CRAFTAX_HD void craftax_perlin_noise(CraftaxKey key, int res0, int res1, const float *angles01,
                                                   float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N],
                                                   float out_glow[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N]) {
    float grad_x[CRAFTAX_NOISE_GRADS], grad_y[CRAFTAX_NOISE_GRADS];
    craftax_perlin_noise_lanes(key, res0, res1, angles01, out, out_glow, grad_x, grad_y, 0, 1);
}

/* generate_fractal_noise_2d with octaves=1, split at its normalisation. `out` (and
 * `out_glow`, when not NULL) receive the Perlin blend L before its final `* sqrt(2)`. The
 * field is sqrt(2) * L; XLA takes min and max of the rounded products, but where it
 * subtracts the minimum it fuses the product into the subtraction, fma(L, sqrt2, -min), and
 * then multiplies by 1 / (max - min). Callers finish with craftax_noise_normalised. */
#define CRAFTAX_SQRT2_F 1.41421354f
static inline CRAFTAX_HD void craftax_fractal_noise_parts_lanes(CraftaxKey key, int res0, int res1,
                                                                const float *angles01,
                                                                float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N],
                                                                float out_glow[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N],
                                                                float *min_out, float *inv_range_out, float *grad_x,
                                                                float *grad_y, int lane, int lanes) {
    CraftaxKey unused, sub;
    craftax_split2(key, &unused, &sub);
    craftax_perlin_noise_lanes(sub, res0, res1, angles01, out, out_glow, grad_x, grad_y, lane, lanes);
    /* min and max come from their own kernel, which blends like the map's (craftax_noise_blend). */
    float lo = CRAFTAX_SQRT2_F * out[0][0], hi = lo;
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        const float v = CRAFTAX_SQRT2_F * out[i][j];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    lo = craftax_lanes_min_f32(lo, lanes); /* min and max are exact in any order */
    hi = craftax_lanes_max_f32(hi, lanes);
    lo = lo + 0.0f; /* `noise = zeros + 1 * perlin` turns -0 into +0 */
    hi = hi + 0.0f;
    *min_out = lo;
    *inv_range_out = 1.0f / (hi - lo);
}
static inline CRAFTAX_HD void craftax_fractal_noise_parts(CraftaxKey key, int res0, int res1, const float *angles01,
                                                          float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N],
                                                          float out_glow[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N],
                                                          float *min_out, float *inv_range_out) {
    float grad_x[CRAFTAX_NOISE_GRADS], grad_y[CRAFTAX_NOISE_GRADS];
    craftax_fractal_noise_parts_lanes(key, res0, res1, angles01, out, out_glow, min_out, inv_range_out, grad_x,
                                      grad_y, 0, 1);
}

/* (noise - min) / (max - min) of one cell, as XLA computes it (see above). */
static inline CRAFTAX_HD float craftax_noise_normalised(float interpolation, float min, float inv_range) {
    return fmaf(interpolation, CRAFTAX_SQRT2_F, -min) * inv_range;
}

/* generate_fractal_noise_2d with octaves=1: one Perlin field rescaled to [0, 1], in `out`
 * as the map's kernels blend it and, when not NULL, in `out_glow` as the lava glow's does. */
static inline CRAFTAX_HD void craftax_fractal_noise_lanes(CraftaxKey key, int res0, int res1, const float *angles01,
                                                          float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N],
                                                          float out_glow[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N],
                                                          float *grad_x, float *grad_y, int lane, int lanes) {
    float lo, inv_range;
    craftax_fractal_noise_parts_lanes(key, res0, res1, angles01, out, out_glow, &lo, &inv_range, grad_x, grad_y, lane,
                                      lanes);
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        out[i][j] = craftax_noise_normalised(out[i][j], lo, inv_range);
        if (out_glow) out_glow[i][j] = craftax_noise_normalised(out_glow[i][j], lo, inv_range);
    }
    craftax_lanes_sync(lanes);
}
static inline CRAFTAX_HD void craftax_fractal_noise(CraftaxKey key, int res0, int res1, const float *angles01,
                                                    float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N],
                                                    float out_glow[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N]) {
    float grad_x[CRAFTAX_NOISE_GRADS], grad_y[CRAFTAX_NOISE_GRADS];
    craftax_fractal_noise_lanes(key, res0, res1, angles01, out, out_glow, grad_x, grad_y, 0, 1);
}

#endif
