/* state_domain.h: the check of states against a game's leaf table (craftax_check_states and
 * craftax_classic_check_states), and the per-thread record of the last error, for
 * craftax_api.c and classic_api.c. Private to those files.
 *
 * set_state validates in Python, writes, and has these functions check the very bytes that
 * the step will read, so that no value outside the domain reaches the rules, whichever way
 * the Python side was fooled. The rules themselves stay unchecked (upstream's code has no
 * such checks, and the CUDA build shares them).
 */
#ifndef CRAFTAX_STATE_DOMAIN_H
#define CRAFTAX_STATE_DOMAIN_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "craftax_api.h"

/* The leaf's element `e` of one state as a double, and whether it is inside the leaf's
 * domain. Elements of a level-strided leaf are [level][rest...] with `per_level` rest elements. */
static inline int craftax_leaf_element_ok(const uint8_t *state, const CraftaxLeaf *leaf, int64_t e,
                                          int64_t per_level, double *value) {
    const size_t size = leaf->storage_dtype == CRAFTAX_DTYPE_UINT8 ? 1 : 4;
    size_t offset = leaf->offset;
    if (leaf->level_stride)
        offset += (size_t)(e / per_level) * (size_t)leaf->level_stride + (size_t)(e % per_level) * size;
    else
        offset += (size_t)e * size;
    const uint8_t *p = state + offset;
    switch (leaf->storage_dtype) {
    case CRAFTAX_DTYPE_UINT8: {
        *value = *p;
        return *p >= leaf->min_value && *p <= leaf->max_value;
    }
    case CRAFTAX_DTYPE_INT32: {
        int32_t v;
        memcpy(&v, p, 4);
        *value = v;
        return v >= leaf->min_value && v <= leaf->max_value;
    }
    case CRAFTAX_DTYPE_FLOAT32: {
        float v;
        memcpy(&v, p, 4);
        *value = v;
        return isfinite(v) && v >= leaf->min_float && v <= leaf->max_float;
    }
    default: /* uint32 (the RNG key): every value is one */
        *value = 0;
        return 1;
    }
}

/* Elements of a leaf, and of one level of it when level-strided. */
static inline int64_t craftax_leaf_size(const CraftaxLeaf *leaf, int64_t *per_level) {
    int64_t n = 1;
    for (int k = 0; k < leaf->ndim; k++) n *= leaf->shape[k];
    *per_level = leaf->ndim > 0 && leaf->shape[0] > 0 ? n / leaf->shape[0] : n;
    return n;
}

/* Whether any of the n contiguous elements at p is outside the leaf's domain: branch-free
 * loops that compilers vectorise (a state has some 100,000 elements to check). */
static inline int craftax_run_has_error(const uint8_t *p, int64_t n, const CraftaxLeaf *leaf) {
    int bad = 0;
    switch (leaf->storage_dtype) {
    case CRAFTAX_DTYPE_UINT8: { /* min/max reductions: byte-wide vector min/max */
        uint8_t mn = 255, mx = 0;
        for (int64_t i = 0; i < n; i++) {
            mn = p[i] < mn ? p[i] : mn;
            mx = p[i] > mx ? p[i] : mx;
        }
        bad = n > 0 && (mn < leaf->min_value || mx > leaf->max_value);
        break;
    }
    case CRAFTAX_DTYPE_INT32: {
        int32_t mn = INT32_MAX, mx = INT32_MIN;
        for (int64_t i = 0; i < n; i++) {
            int32_t v;
            memcpy(&v, p + 4 * i, 4);
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        bad = n > 0 && (mn < leaf->min_value || mx > leaf->max_value);
        break;
    }
    case CRAFTAX_DTYPE_FLOAT32: {
        /* NaN fails both comparisons, and the bounds are finite, so this also refuses NaN and inf */
        const float lo = leaf->min_float, hi = leaf->max_float;
        for (int64_t i = 0; i < n; i++) {
            float v;
            memcpy(&v, p + 4 * i, 4);
            bad |= !((v >= lo) & (v <= hi));
        }
        break;
    }
    default: break;
    }
    return bad;
}

/* 0 when every leaf of one state is inside its domain; else 1 with error->leaf, element and
 * value (rule CRAFTAX_STATE_RULE_RANGE) of the first element outside. */
static inline int craftax_leaf_table_error(const uint8_t *state, const CraftaxLeaf *leaves, int num_leaves,
                                           CraftaxStateError *error) {
    for (int l = 0; l < num_leaves; l++) {
        const CraftaxLeaf *leaf = &leaves[l];
        if (leaf->storage_dtype == CRAFTAX_DTYPE_UINT32) continue;
        int64_t per_level;
        const int64_t n = craftax_leaf_size(leaf, &per_level);
        const int64_t runs = leaf->level_stride ? leaf->shape[0] : 1, run = leaf->level_stride ? per_level : n;
        int bad = 0;
        for (int64_t r = 0; r < runs; r++)
            bad |= craftax_run_has_error(state + leaf->offset + (size_t)r * (size_t)leaf->level_stride, run, leaf);
        if (!bad) continue;
        for (int64_t e = 0; e < n; e++) {
            double value;
            if (!craftax_leaf_element_ok(state, leaf, e, per_level, &value)) {
                error->leaf = l;
                error->rule = CRAFTAX_STATE_RULE_RANGE;
                error->element = e;
                error->value = value;
                return 1;
            }
        }
    }
    return 0;
}

/* The first state of num_envs (state_size bytes each) that `state_error` finds outside the
 * domain: CRAFTAX_ERR_STATE with *error for the lowest such env, else 0. Envs are checked in
 * parallel. */
static inline int craftax_check_states_with(const void *states, int64_t num_envs, size_t state_size,
                                            int (*state_error)(const uint8_t *state, CraftaxStateError *error),
                                            CraftaxStateError *error, int num_threads) {
    const uint8_t *all = (const uint8_t *)states;
    int64_t first = num_envs;
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 16) reduction(min : first)
    for (int64_t i = 0; i < num_envs; i++) {
        CraftaxStateError e;
        if (i < first && state_error(all + (size_t)i * state_size, &e)) first = i;
    }
    if (first == num_envs) return 0;
    state_error(all + (size_t)first * state_size, error);
    error->env = first;
    return CRAFTAX_ERR_STATE;
}

/* The guard of the full game's batched observe and step calls (craftax_api.c): 0 when every
 * state's player_level is a level, else CRAFTAX_ERR_STATE with the calling thread's
 * craftax_last_state_error set. */
int craftax_guard_states(const void *states, int64_t num_envs);
/* Records the calling thread's craftax_last_state_error (craftax_api.c). */
void craftax_set_last_state_error(const CraftaxStateError *error);

/* This thread's last CRAFTAX_ERR_STATE (the API calls are made from many Python threads at
 * once, each reading its own error right after its call). */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define CRAFTAX_THREAD_LOCAL _Thread_local
#else
#define CRAFTAX_THREAD_LOCAL __thread
#endif

#endif
