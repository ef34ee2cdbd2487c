/* craftax/mathf.h: the float32 sine and cosine that upstream's numbers were made with.
 *
 * XLA:CPU lowers jnp.cos/jnp.sin on float32 to calls of the C library's cosf/sinf, so
 * upstream's world noise and light level carry glibc's rounding (measured
 * identical on 50,000 angles, while the correctly rounded value differs in ~1.3% of
 * cases). CUDA's cosf does not round the same way, so this header carries our own
 * implementation of glibc's algorithm (glibc >= 2.28, sysdeps/ieee754/flt-32/s_sinf.c,
 * s_cosf.c): evaluate in double, reduce by pi/2 with one multiply-subtract below 120 and
 * with a 192-bit 4/pi table above, then a degree-7/8 polynomial. On x86-64 with FMA the
 * loader picks glibc's FMA build (s_sinf-fma), whose compiler fused every a + b*c of the
 * polynomial and the reduction; we call fma() at exactly those sites.
 * conformance/test_mathf.py checks all 2^23 angles 2*pi*u of the noise and the light
 * level's arguments against the C library that JAX uses.
 */
#ifndef CRAFTAX_MATHF_H
#define CRAFTAX_MATHF_H

#include <math.h>

#include "common.h"

typedef struct {
    double sign[4];
    double c0, c1, c2, c3, c4; /* cosine polynomial (negated in the second table) */
    double s1, s2, s3;         /* sine polynomial */
} CraftaxSinCosPoly;

/* Polynomial coefficients of glibc's sincosf_data: minimax fits on [-pi/4, pi/4]. */
static CRAFTAX_CONST CraftaxSinCosPoly CRAFTAX_SINCOS_POLY[2] = {
    {{1.0, -1.0, -1.0, 1.0},
     0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16,
     -0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
    {{1.0, -1.0, -1.0, 1.0},
     -0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16,
     -0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
};

#define CRAFTAX_HALF_PI_INV_2P24 0x1.45F306DC9C883p+23 /* 2/pi * 2^24 */
#define CRAFTAX_HALF_PI 0x1.921FB54442D18p0
#define CRAFTAX_PI63 0x1.921FB54442D18p-62 /* 2*pi * 2^-64 */

/* 4/pi = 0.a2f9836e4e441529fc2757d1f534ddc0db6295993c439041... (hex). Entry i holds the
 * 32 bits ending 8*(i+1) bits after the binary point. */
static CRAFTAX_CONST uint32_t CRAFTAX_INV_PIO4[24] = {
    0xa2,       0xa2f9,     0xa2f983,   0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
    0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
    0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
};

static inline CRAFTAX_HD uint32_t craftax_abstop12(float x) { return (craftax_f32_bits(x) >> 20) & 0x7ff; }

/* Sine (n even) or cosine (n odd) polynomial of the reduced argument. */
static inline CRAFTAX_HD float craftax_sinf_poly(double x, double x2, const CraftaxSinCosPoly *p, int n) {
    if ((n & 1) == 0) {
        double x3 = x * x2;
        double s1 = fma(x2, p->s3, p->s2);
        double x7 = x3 * x2;
        double s = fma(x3, p->s1, x);
        return (float)fma(x7, s1, s);
    }
    double x4 = x2 * x2;
    double c2 = fma(x2, p->c4, p->c3);
    double c1 = fma(x2, p->c1, p->c0);
    double x6 = x4 * x2;
    double c = fma(x4, p->c2, c1);
    return (float)fma(x6, c2, c);
}

/* |x| < 120: x - n*pi/2 with the quadrant n rounded via a 2^24-scaled integer. */
static inline CRAFTAX_HD double craftax_reduce_fast(double x, int *np) {
    double r = x * CRAFTAX_HALF_PI_INV_2P24;
    int n = ((int32_t)r + 0x800000) >> 24;
    *np = n;
    return fma(-(double)n, CRAFTAX_HALF_PI, x);
}

/* |x| >= 120: exact 2.62 fixed-point product with 4/pi from the table. */
static inline CRAFTAX_HD double craftax_reduce_large(uint32_t xi, int *np) {
    const uint32_t *arr = &CRAFTAX_INV_PIO4[(xi >> 26) & 15];
    int shift = (xi >> 23) & 7;
    xi = (xi & 0xffffff) | 0x800000;
    xi <<= shift;
    uint64_t res0 = (uint64_t)(uint32_t)(xi * arr[0]);
    uint64_t res1 = (uint64_t)xi * arr[4];
    uint64_t res2 = (uint64_t)xi * arr[8];
    res0 = (res2 >> 32) | (res0 << 32);
    res0 += res1;
    uint64_t n = (res0 + (1ULL << 61)) >> 62;
    res0 -= n << 62;
    *np = (int)n;
    return (double)(int64_t)res0 * CRAFTAX_PI63;
}

/* cos (want_cos = 1) or sin (0) of a finite float, rounded as glibc rounds it. */
static inline CRAFTAX_HD float craftax_sincosf_one(float y, int want_cos) {
    double x = y;
    int n;
    const CraftaxSinCosPoly *p = &CRAFTAX_SINCOS_POLY[0];
    if (craftax_abstop12(y) < craftax_abstop12(0x1.921FB6p-1f)) { /* |y| < pi/4 */
        if (craftax_abstop12(y) < craftax_abstop12(0x1p-12f)) return want_cos ? 1.0f : y;
        return craftax_sinf_poly(x, x * x, p, want_cos);
    }
    if (craftax_abstop12(y) < craftax_abstop12(120.0f)) {
        x = craftax_reduce_fast(x, &n);
        double s = p->sign[n & 3];
        if (n & 2) p = &CRAFTAX_SINCOS_POLY[1];
        return craftax_sinf_poly(x * s, x * x, p, want_cos ? n ^ 1 : n);
    }
    if (craftax_abstop12(y) < craftax_abstop12(INFINITY)) {
        uint32_t xi = craftax_f32_bits(y);
        int sign = (int)(xi >> 31);
        x = craftax_reduce_large(xi, &n);
        double s = p->sign[(n + sign) & 3];
        if ((n + sign) & 2) p = &CRAFTAX_SINCOS_POLY[1];
        return craftax_sinf_poly(x * s, x * x, p, want_cos ? n ^ 1 : n);
    }
    return (y - y) / (y - y); /* inf or NaN -> NaN, as glibc */
}

static inline CRAFTAX_HD float craftax_cosf(float x) { return craftax_sincosf_one(x, 1); }
static inline CRAFTAX_HD float craftax_sinf(float x) { return craftax_sincosf_one(x, 0); }

/* light level of game_logic_utils.calculate_light_level, as batched XLA computes it:
 * t / day_length becomes t * (1 / day_length), 1 - a**3 becomes fma(-(a*a), a, 1). */
static inline CRAFTAX_HD float craftax_light_level(int32_t timestep, int32_t day_length) {
    float progress = fmodf((float)timestep * (1.0f / (float)day_length), 1.0f) + 0.3f;
    float a = fabsf(craftax_cosf(3.14159274f * progress));
    return fmaf(-(a * a), a, 1.0f);
}

#endif
