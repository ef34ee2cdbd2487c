/* craftax/noise.h: Perlin and fractal noise of craftax/craftax/util/noise.py.
 *
 * Only the form world generation uses: a 48x48 field, one octave, resolutions that divide
 * 48. Every grid coordinate k*res/48 is then a dyadic fraction, so the ramps and the
 * interpolant are exact; the rounding that matters is glibc's cos/sin (mathf.h) and
 * where XLA:CPU fuses the lerps into multiply-adds, reproduced with explicit fmaf().
 */
#ifndef CRAFTAX_NOISE_H
#define CRAFTAX_NOISE_H

#include "constants.h"
#include "mathf.h"
#include "rng.h"

#define CRAFTAX_NOISE_N CRAFTAX_MAP_SIZE

static inline CRAFTAX_HD float craftax_noise_interpolant(float t) { return t * t * t * (t * (t * 6.0f - 15.0f) + 10.0f); }

/* generate_perlin_noise_2d(key, (48,48), (res0,res1), override_angles). `angles01`, when
 * not NULL, replaces the uniform draw ((res0+1)*(res1+1) values; upstream multiplies the
 * override by 2*pi just as it does the draw). `grad_x`, `grad_y`: space for 25 * 25
 * floats each, shared by the lanes (common.h). */
#define CRAFTAX_NOISE_GRADS (25 * 25) /* (res0+1) x (res1+1), res <= 24 */
static inline CRAFTAX_HD void craftax_perlin_noise_lanes(CraftaxKey key, int res0, int res1, const float *angles01,
                                                         float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N], float *grad_x,
                                                         float *grad_y, int lane, int lanes) {
    const int n = CRAFTAX_NOISE_N;
    const int d0 = n / res0, d1 = n / res1;
    CraftaxKey unused, sub;
    craftax_split2(key, &unused, &sub);
    const int cols = res1 + 1;
    craftax_lanes_sync(lanes); /* the previous field's lanes are done with the gradients */
    for (int i = lane; i < (res0 + 1) * cols; i += lanes) {
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
    for (int i_cj = lane; i_cj < n * res1; i_cj += lanes) { /* lanes take (row, gradient cell) pairs */
        const int i = i_cj / res1, cj = i_cj % res1;
        const float gx = (float)(i % d0) / (float)d0;
        const float t0 = craftax_noise_interpolant(gx);
        const int ci = i / d0;
        {
            const int a00 = ci * cols + cj, a10 = (ci + 1) * cols + cj;
            const float g00x = grad_x[a00], g00y = grad_y[a00], g10x = grad_x[a10], g10y = grad_y[a10];
            const float g01x = grad_x[a00 + 1], g01y = grad_y[a00 + 1], g11x = grad_x[a10 + 1], g11y = grad_y[a10 + 1];
            float *row = &out[i][cj * d1];
            for (int j = 0; j < d1; j++) {
                const float gy = gy_of[j], t1 = t1_of[j];
                /* sum(dstack(...) * g, 2): products, then a two-term reduction (not fused). */
                const float n00 = gx * g00x + gy * g00y;
                const float n10 = (gx - 1.0f) * g10x + gy * g10y;
                const float n01 = gx * g01x + (gy - 1.0f) * g01y;
                const float n11 = (gx - 1.0f) * g11x + (gy - 1.0f) * g11y;
                /* The three lerps as XLA:CPU's reset_env kernels fuse them (found by testing
                 * the fusion variants against 7,504 upstream worlds, CONFORMANCE.md). */
                const float n0 = fmaf(t0, n10, n00 * (1.0f - t0));
                const float n1 = fmaf(t0, n11, n01 * (1.0f - t0));
                row[j] = fmaf(n0, 1.0f - t1, t1 * n1); /* times sqrt(2) by the caller */
            }
        }
    }
    craftax_lanes_sync(lanes);
}
static inline CRAFTAX_HD void craftax_perlin_noise(CraftaxKey key, int res0, int res1, const float *angles01,
                                                   float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N]) {
    float grad_x[CRAFTAX_NOISE_GRADS], grad_y[CRAFTAX_NOISE_GRADS];
    craftax_perlin_noise_lanes(key, res0, res1, angles01, out, grad_x, grad_y, 0, 1);
}

/* generate_fractal_noise_2d with octaves=1, split at its normalisation. `out` receives
 * the Perlin interpolation L before its final `* sqrt(2)`. The field is sqrt(2) * L; XLA
 * takes min and max of the rounded products, but where it subtracts the minimum it fuses
 * the product into the subtraction, fma(L, sqrt2, -min), and then multiplies by
 * 1 / (max - min). Callers finish with craftax_noise_normalised. */
#define CRAFTAX_SQRT2_F 1.41421354f
static inline CRAFTAX_HD void craftax_fractal_noise_parts_lanes(CraftaxKey key, int res0, int res1,
                                                                const float *angles01,
                                                                float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N],
                                                                float *min_out, float *inv_range_out, float *grad_x,
                                                                float *grad_y, int lane, int lanes) {
    CraftaxKey unused, sub;
    craftax_split2(key, &unused, &sub);
    craftax_perlin_noise_lanes(sub, res0, res1, angles01, out, grad_x, grad_y, lane, lanes);
    float lo = CRAFTAX_SQRT2_F * out[0][0], hi = lo;
    for (int c = lane; c < CRAFTAX_NOISE_N * CRAFTAX_NOISE_N; c += lanes) {
        const int i = c / CRAFTAX_NOISE_N, j = c % CRAFTAX_NOISE_N;
        {
            const float v = CRAFTAX_SQRT2_F * out[i][j];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
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
                                                          float *min_out, float *inv_range_out) {
    float grad_x[CRAFTAX_NOISE_GRADS], grad_y[CRAFTAX_NOISE_GRADS];
    craftax_fractal_noise_parts_lanes(key, res0, res1, angles01, out, min_out, inv_range_out, grad_x, grad_y, 0, 1);
}

/* (noise - min) / (max - min) of one cell, as XLA computes it (see above). */
static inline CRAFTAX_HD float craftax_noise_normalised(float interpolation, float min, float inv_range) {
    return fmaf(interpolation, CRAFTAX_SQRT2_F, -min) * inv_range;
}

/* generate_fractal_noise_2d with octaves=1: one Perlin field rescaled to [0, 1]. */
static inline CRAFTAX_HD void craftax_fractal_noise_lanes(CraftaxKey key, int res0, int res1, const float *angles01,
                                                          float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N], float *grad_x,
                                                          float *grad_y, int lane, int lanes) {
    float lo, inv_range;
    craftax_fractal_noise_parts_lanes(key, res0, res1, angles01, out, &lo, &inv_range, grad_x, grad_y, lane, lanes);
    for (int c = lane; c < CRAFTAX_NOISE_N * CRAFTAX_NOISE_N; c += lanes) {
        const int i = c / CRAFTAX_NOISE_N, j = c % CRAFTAX_NOISE_N;
        out[i][j] = craftax_noise_normalised(out[i][j], lo, inv_range);
    }
    craftax_lanes_sync(lanes);
}
static inline CRAFTAX_HD void craftax_fractal_noise(CraftaxKey key, int res0, int res1, const float *angles01,
                                                    float out[CRAFTAX_NOISE_N][CRAFTAX_NOISE_N]) {
    float grad_x[CRAFTAX_NOISE_GRADS], grad_y[CRAFTAX_NOISE_GRADS];
    craftax_fractal_noise_lanes(key, res0, res1, angles01, out, grad_x, grad_y, 0, 1);
}

#endif
