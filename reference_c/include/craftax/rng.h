/* craftax/rng.h: JAX's random numbers, bit for bit.
 *
 * Reproduces jax 0.10.2 with its defaults: PRNG impl threefry2x32 and
 * jax_threefry_partitionable=True (jax/_src/random/{threefry2x32,prng,core}.py):
 *  - split(key, n)[i]       = threefry2x32(key; hi=0, lo=i)
 *  - random_bits(key)[i]    = y0 ^ y1 of threefry2x32(key; hi=0, lo=i), i the row-major flat index
 *  - uniform(key)[i]        = bitcast((bits >> 9) | 0x3F800000) - 1
 *  - randint(key, lo, hi)   = two-word modulo draw over split(key, 2)
 *  - choice(key, n, p)      = searchsorted(cumsum(p), cumsum[-1] * (1 - uniform))
 *  - permutation(key, n)    = one round of stable sort by random_bits(split(key)[1])
 * The only functions of jax.random the game calls are split, uniform, randint, choice
 * and permutation; fold_in and bernoulli are never called.
 */
#ifndef CRAFTAX_RNG_H
#define CRAFTAX_RNG_H

#include "common.h"

typedef struct {
    uint32_t k[2];
} CraftaxKey;

static inline CRAFTAX_HD uint32_t craftax_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

/* Threefry-2x32 with 20 rounds, the counter (x0, x1) = (hi, lo) of the flat index.
 * Written out round by round (no tables, no loops) so that loops over indices calling it
 * vectorise. */
#define CRAFTAX_TF_ROUND(r) \
    x0 += x1;               \
    x1 = craftax_rotl32(x1, r); \
    x1 ^= x0;
#define CRAFTAX_TF_GROUP_A CRAFTAX_TF_ROUND(13) CRAFTAX_TF_ROUND(15) CRAFTAX_TF_ROUND(26) CRAFTAX_TF_ROUND(6)
#define CRAFTAX_TF_GROUP_B CRAFTAX_TF_ROUND(17) CRAFTAX_TF_ROUND(29) CRAFTAX_TF_ROUND(16) CRAFTAX_TF_ROUND(24)
/* threefry2x32 of the counter (x0, x1): its two output words (a key where split uses them).
 * One GPU copy for all call sites (inlined at every split and draw it pushes the kernels out
 * of the instruction cache). The words come
 * back by value: through an out pointer each call stored and reloaded them in local memory. */
static CRAFTAX_GPU_NOINLINE CRAFTAX_HD CraftaxKey craftax_threefry2x32(CraftaxKey key, uint32_t x0, uint32_t x1) {
    const uint32_t k0 = key.k[0], k1 = key.k[1], k2 = key.k[0] ^ key.k[1] ^ 0x1BD11BDAu;
    x0 += k0;
    x1 += k1;
    CRAFTAX_TF_GROUP_A x0 += k1; x1 += k2 + 1u;
    CRAFTAX_TF_GROUP_B x0 += k2; x1 += k0 + 2u;
    CRAFTAX_TF_GROUP_A x0 += k0; x1 += k1 + 3u;
    CRAFTAX_TF_GROUP_B x0 += k1; x1 += k2 + 4u;
    CRAFTAX_TF_GROUP_A x0 += k2; x1 += k0 + 5u;
    const CraftaxKey out = {{x0, x1}};
    return out;
}
#undef CRAFTAX_TF_ROUND
#undef CRAFTAX_TF_GROUP_A
#undef CRAFTAX_TF_GROUP_B

/* jax.random.split(key, n)[index]. */
static inline CRAFTAX_HD CraftaxKey craftax_split_at(CraftaxKey key, uint32_t index) {
    return craftax_threefry2x32(key, 0u, index);
}

/* `a, b = jax.random.split(key)` */
static inline CRAFTAX_HD void craftax_split2(CraftaxKey key, CraftaxKey *first, CraftaxKey *second) {
    CraftaxKey a = craftax_split_at(key, 0), b = craftax_split_at(key, 1);
    *first = a;
    *second = b;
}

/* `rng, _rng = jax.random.split(rng)`: advances *rng, returns _rng. */
static inline CRAFTAX_HD CraftaxKey craftax_split_next(CraftaxKey *rng) {
    CraftaxKey first, second;
    craftax_split2(*rng, &first, &second);
    *rng = first;
    return second;
}

/* The same where _rng may go unread: advances *rng (the first half) and returns the parent,
 * whose second half craftax_split_at(parent, 1) is _rng, made only where it is read (a
 * threefry call saved for every draw a step does not select). */
static inline CRAFTAX_HD CraftaxKey craftax_split_lazily(CraftaxKey *rng) {
    const CraftaxKey parent = *rng;
    *rng = craftax_split_at(parent, 0);
    return parent;
}

/* Element `index` of jax.random.bits(key, shape) (32-bit). */
static inline CRAFTAX_HD uint32_t craftax_random_bits(CraftaxKey key, uint32_t index) {
    const CraftaxKey y = craftax_threefry2x32(key, 0u, index);
    return y.k[0] ^ y.k[1];
}

static inline CRAFTAX_HD float craftax_bits_to_unit_float(uint32_t bits) {
    return craftax_bits_f32((bits >> 9) | 0x3F800000u) - 1.0f;
}

/* Element `index` of jax.random.uniform(key, shape) in [0, 1). */
static inline CRAFTAX_HD float craftax_uniform(CraftaxKey key, uint32_t index) {
    return craftax_bits_to_unit_float(craftax_random_bits(key, index));
}

/* jax.random.uniform(key, (n,)) into out: a branch-free loop that compilers vectorise,
 * cheaper than drawing a few hundred elements one by one. */
static inline CRAFTAX_HD void craftax_uniform_field_lanes(CraftaxKey key, int n, float *out, int lane, int lanes) {
    CRAFTAX_FOR_LANE(i, n, lane, lanes) out[i] = craftax_uniform(key, (uint32_t)i);
}
static inline CRAFTAX_HD void craftax_uniform_field(CraftaxKey key, int n, float *out) {
    craftax_uniform_field_lanes(key, n, out, 0, 1);
}

/* jax.random.randint's per-element formula, given the two split keys of `key`. */
static inline CRAFTAX_HD int32_t craftax_randint_from_keys(CraftaxKey k1, CraftaxKey k2, uint32_t index,
                                                          int32_t minval, int32_t maxval) {
    uint32_t higher = craftax_random_bits(k1, index);
    uint32_t lower = craftax_random_bits(k2, index);
    uint32_t span = maxval <= minval ? 1u : (uint32_t)maxval - (uint32_t)minval;
    uint32_t multiplier = (65536u % span);
    multiplier = (multiplier * multiplier) % span;
    uint32_t offset = ((higher % span) * multiplier + (lower % span)) % span;
    return (int32_t)((uint32_t)minval + offset);
}

/* Element `index` of jax.random.randint(key, shape, minval, maxval) for int32. */
static inline CRAFTAX_HD int32_t craftax_randint(CraftaxKey key, uint32_t index, int32_t minval, int32_t maxval) {
    CraftaxKey k1, k2;
    craftax_split2(key, &k1, &k2);
    return craftax_randint_from_keys(k1, k2, index, minval, maxval);
}

/* Cumulative sum as XLA:CPU computes jnp.cumsum of a float32 vector: a blocked scan of
 * base 16. Within a block of 16 the prefix is sequential; the block totals are scanned
 * the same way; each block then adds the inclusive scan of the totals before it.
 * Supports n <= 16 * 16 * 16, which covers every call of the game (n <= 4096).
 * Lanes (common.h) take blocks of 16 in turn; `block_prefix` (256 floats) is shared by
 * them, and the small second level runs on lane 0. */
static inline CRAFTAX_HD void craftax_cumsum_f32_lanes(const float *x, int n, float *out, float *block_prefix,
                                                       int lane, int lanes) {
    const int num_blocks = (n + 15) / 16;
    CRAFTAX_FOR_LANE(blk, num_blocks, lane, lanes) {
        const int end = blk * 16 + 16 < n ? blk * 16 + 16 : n;
        float acc = 0.0f;
        for (int i = blk * 16; i < end; i++) {
            acc = (i % 16 == 0) ? x[i] : acc + x[i];
            out[i] = acc;
        }
    }
    if (n <= 16) return;
    craftax_lanes_sync(lanes);
    if (lane == 0) {
        for (int b = 0; b < num_blocks; b++) {
            int last = b * 16 + 15 < n ? b * 16 + 15 : n - 1;
            block_prefix[b] = out[last];
        }
        /* Second level (<= 256 totals): blocked again, each group of 16 sequential, then
         * the (at most 16) group totals sequentially. */
        float group_total_prefix[16];
        float acc2 = 0.0f;
        for (int b = 0; b < num_blocks; b++) {
            acc2 = (b % 16 == 0) ? block_prefix[b] : acc2 + block_prefix[b];
            block_prefix[b] = acc2;
        }
        const int num_groups = (num_blocks + 15) / 16;
        float acc3 = 0.0f;
        for (int g = 0; g < num_groups; g++) {
            int last = g * 16 + 15 < num_blocks ? g * 16 + 15 : num_blocks - 1;
            acc3 = g == 0 ? block_prefix[last] : acc3 + block_prefix[last];
            group_total_prefix[g] = acc3;
        }
        for (int b = 16; b < num_blocks; b++) block_prefix[b] += group_total_prefix[b / 16 - 1];
    }
    craftax_lanes_sync(lanes);
    for (int i = 16 + CRAFTAX_LANE_FIRST(lane); i < n; i += CRAFTAX_LANE_STRIDE(lanes)) out[i] += block_prefix[i / 16 - 1];
}
static inline CRAFTAX_HD void craftax_cumsum_f32(const float *x, int n, float *out) {
    float block_prefix[256];
    craftax_cumsum_f32_lanes(x, n, out, block_prefix, 0, 1);
}

/* Key of IEEE total order after jax's _canonicalize_float_for_sort (-0 -> 0, NaN -> +NaN). */
static inline CRAFTAX_HD int32_t craftax_total_order_key(float x) {
    uint32_t bits = craftax_f32_bits(x);
    if (x == 0.0f) bits = 0u;
    if (x != x) bits = 0x7FC00000u;
    int32_t i = (int32_t)bits;
    return i ^ (int32_t)((uint32_t)(i >> 31) >> 1);
}

/* jnp.searchsorted(values, query, side='left', method='scan') over n values that
 * VALUE_AT(j) gives (an array, or a sum computed where the search looks): upstream's probe
 * sequence, comparisons in the total order; the insertion index into `high`. */
#define CRAFTAX_SEARCHSORTED_LEFT(n, query, VALUE_AT, high)                                    \
    do {                                                                                        \
        const int n_ = (n);                                                                     \
        uint32_t low_ = 0;                                                                      \
        (high) = (uint32_t)n_;                                                                  \
        int levels_ = 0;                                                                        \
        while ((1 << levels_) < n_ + 1) levels_++;                                              \
        const int32_t q_ = craftax_total_order_key(query);                                      \
        for (int it_ = 0; it_ < levels_; it_++) {                                               \
            const uint32_t mid_ = low_ + ((high) - low_) / 2;                                   \
            const uint32_t read_ = mid_ < (uint32_t)n_ ? mid_ : (uint32_t)n_ - 1;               \
            if (q_ <= craftax_total_order_key(VALUE_AT((int)read_)))                           \
                (high) = mid_;                                                                  \
            else                                                                                \
                low_ = mid_;                                                                    \
        }                                                                                       \
    } while (0)
static inline CRAFTAX_HD int32_t craftax_searchsorted_left(const float *sorted, int n, float query) {
    uint32_t high;
#define CRAFTAX_ARRAY_AT(j) sorted[j]
    CRAFTAX_SEARCHSORTED_LEFT(n, query, CRAFTAX_ARRAY_AT, high);
#undef CRAFTAX_ARRAY_AT
    return (int32_t)high;
}

/* Element `index` of jax.random.choice(key, arange(n), shape, p=p) given cumsum(p). */
static inline CRAFTAX_HD int32_t craftax_choice_from_cumsum(CraftaxKey key, uint32_t index, const float *cumsum, int n) {
    float r = cumsum[n - 1] * (1.0f - craftax_uniform(key, index));
    int32_t i = craftax_searchsorted_left(cumsum, n, r);
    return i < n ? i : n - 1; /* the gather into arange(n) clamps */
}

/* jax.random.choice(key, arange(n), p=p) for a scalar draw; `scratch` holds n floats. */
static inline CRAFTAX_HD int32_t craftax_choice_p(CraftaxKey key, const float *p, int n, float *scratch) {
    craftax_cumsum_f32(p, n, scratch);
    return craftax_choice_from_cumsum(key, 0, scratch, n);
}

/* jax.random.permutation(key, n) for n <= 32: one round (ceil(3 ln n / ln(2^32-1)) = 1)
 * of a stable sort of arange(n) keyed by random bits of the second split key. */
static inline CRAFTAX_HD void craftax_permutation(CraftaxKey key, int n, int32_t *out) {
    CraftaxKey unused, sub;
    craftax_split2(key, &unused, &sub);
    uint32_t sort_keys[32];
    for (int i = 0; i < n; i++) {
        sort_keys[i] = craftax_random_bits(sub, (uint32_t)i);
        out[i] = i;
    }
    for (int i = 1; i < n; i++) { /* insertion sort: stable */
        uint32_t k = sort_keys[i];
        int32_t v = out[i];
        int j = i - 1;
        while (j >= 0 && sort_keys[j] > k) {
            sort_keys[j + 1] = sort_keys[j];
            out[j + 1] = out[j];
            j--;
        }
        sort_keys[j + 1] = k;
        out[j + 1] = v;
    }
}

#endif
