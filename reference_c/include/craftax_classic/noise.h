/* craftax_classic/noise.h: generate_fractal_noise_2d of craftax/craftax_classic/util/noise.py
 * on Classic's 64 x 64 map, one octave.
 *
 * The same Perlin noise as the full game's (craftax/noise.h, whose ramp, blend and
 * normalisation forms this header reuses); only the field is 64 x 64 and the resolutions
 * are Classic's: 4 (cells of 16), 8 (8), 16 (4) and 32 (2), all powers of two, so every
 * grid coordinate and interpolant is exact.
 */
#ifndef CRAFTAX_CLASSIC_NOISE_H
#define CRAFTAX_CLASSIC_NOISE_H

#include "craftax/noise.h"
#include "craftax_classic/constants.h"

#define CRAFTAX_CLASSIC_NOISE_N CRAFTAX_CLASSIC_MAP_SIZE
#define CRAFTAX_CLASSIC_NOISE_GRADS (33 * 33) /* (res0+1) x (res1+1), res <= 32 */

/* Whether res divides the 64 map cells into gradient cells of a power-of-two size. */
static inline CRAFTAX_HD int craftax_classic_noise_res_ok(int res) {
    return res == 4 || res == 8 || res == 16 || res == 32;
}
static inline CRAFTAX_HD int craftax_classic_noise_shift(int res) {
    int shift = 0;
    while ((1 << shift) < CRAFTAX_CLASSIC_NOISE_N / res) shift++;
    return shift;
}

/* The gradient grid from the fractal call's key: its split, then generate_perlin_noise_2d's
 * split, then uniform((res0+1, res1+1)) (or `angles01`, which upstream scales by 2*pi just
 * as it does the draw). Lanes (craftax/common.h) share the gradients; every lane gets the
 * grid, and the gradients are visible to all of them on return. */
static inline CRAFTAX_HD CraftaxNoiseGrid craftax_classic_noise_grid_lanes(CraftaxKey key, int res0, int res1,
                                                                          const float *angles01, float *grad_x,
                                                                          float *grad_y, int lane, int lanes) {
    CraftaxKey unused, fractal, perlin;
    craftax_split2(key, &unused, &fractal);
    craftax_split2(fractal, &unused, &perlin);
    CRAFTAX_FOR_LANE(i, (res0 + 1) * (res1 + 1), lane, lanes) {
        const float u = angles01 ? angles01[i] : craftax_uniform(perlin, (uint32_t)i);
        const float angle = 6.28318548f * u;
        grad_x[i] = craftax_cosf(angle);
        grad_y[i] = craftax_sinf(angle);
    }
    craftax_lanes_sync(lanes);
    CraftaxNoiseGrid g;
    g.res0 = res0;
    g.res1 = res1;
    g.shift0 = craftax_classic_noise_shift(res0);
    g.shift1 = craftax_classic_noise_shift(res1);
    g.inv_d0 = 1.0f / (float)(1 << g.shift0);
    g.inv_d1 = 1.0f / (float)(1 << g.shift1);
    g.grad_x = grad_x;
    g.grad_y = grad_y;
    g.min = g.inv_range = 0.0f;
    return g;
}
static inline CRAFTAX_HD CraftaxNoiseGrid craftax_classic_noise_grid(CraftaxKey key, int res0, int res1,
                                                                    const float *angles01, float *grad_x,
                                                                    float *grad_y) {
    return craftax_classic_noise_grid_lanes(key, res0, res1, angles01, grad_x, grad_y, 0, 1);
}

/* The Perlin blend of every cell (before its `* sqrt(2)`) into `out`, and the field's min and
 * max of sqrt(2) * blend into g (craftax_noise_set_range). craftax_noise_corners takes a
 * cell's gradient cell by shifts, so it serves the 64-cell field as it does the 48-cell one.
 * Lanes take cells in turn (min and max are exact in any order: the field has values on
 * both sides of 0); every lane gets the range, and `out` is visible to all on return. */
static inline CRAFTAX_HD void craftax_classic_noise_fill_lanes(CraftaxNoiseGrid *g,
                                                              float out[CRAFTAX_CLASSIC_NOISE_N][CRAFTAX_CLASSIC_NOISE_N],
                                                              int lane, int lanes) {
    float lo = INFINITY, hi = -INFINITY;
    CRAFTAX_FOR_LANE(c, CRAFTAX_CLASSIC_NOISE_N * CRAFTAX_CLASSIC_NOISE_N, lane, lanes) {
        const int i = c / CRAFTAX_CLASSIC_NOISE_N, j = c % CRAFTAX_CLASSIC_NOISE_N;
        const float blend = craftax_noise_at(g, i, j);
        out[i][j] = blend;
        const float v = CRAFTAX_SQRT2_F * blend;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    craftax_noise_set_range(g, craftax_lanes_min_f32(lo, lanes), craftax_lanes_max_f32(hi, lanes));
    craftax_lanes_sync(lanes);
}
static inline CRAFTAX_HD void craftax_classic_noise_fill(CraftaxNoiseGrid *g,
                                                        float out[CRAFTAX_CLASSIC_NOISE_N][CRAFTAX_CLASSIC_NOISE_N]) {
    craftax_classic_noise_fill_lanes(g, out, 0, 1);
}

#endif
