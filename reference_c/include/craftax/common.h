/* craftax/common.h: portability macros shared by the C reference and the CUDA build.
 *
 * Every rule of the game is a `static inline CRAFTAX_HD` function so that gcc and nvcc
 * compile the very same source. Nothing here may allocate, use globals or call libc
 * randomness: the RNG is JAX's threefry (rng.h) and lives in the state or is passed in.
 */
#ifndef CRAFTAX_COMMON_H
#define CRAFTAX_COMMON_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define CRAFTAX_HD __host__ __device__
#define CRAFTAX_CONST __constant__ const
#else
#define CRAFTAX_HD
#define CRAFTAX_CONST const
#endif

/* Bit casts without aliasing UB: memcpy of 4 bytes compiles to a register move. */
static inline CRAFTAX_HD uint32_t craftax_f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}
static inline CRAFTAX_HD float craftax_bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}
static inline CRAFTAX_HD uint64_t craftax_f64_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}

static inline CRAFTAX_HD int32_t craftax_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
static inline CRAFTAX_HD int32_t craftax_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }

/* XLA's clamp/min/max on f32 propagate NaN; the game never produces NaN in a clamp, so
 * the plain comparisons are enough and keep C and CUDA identical. */
static inline CRAFTAX_HD float craftax_clip_f32(float x, float lo, float hi) {
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
}

#endif
