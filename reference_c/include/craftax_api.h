/* craftax_api.h: the C API of pycraftax, exported by the C reference (reference_c/src)
 * and, with the same signatures, by the CUDA build.
 *
 * cffi reads this file and craftax/params.h as its cdef (pycraftax/_build.py strips the
 * preprocessor lines), so everything below the includes is plain declarations.
 * Functions return 0 on success or a negative CRAFTAX_ERR_* code.
 *
 * States are opaque byte buffers of craftax_state_size() bytes per env; the leaf table
 * describes where each upstream EnvState leaf lives inside one state.
 *
 * This is the public API only: the parity tests' hooks (craftax_test_*) are declared in
 * reference_c/testing/ and built into the separate test extension pycraftax._craftax_test.
 */
#ifndef CRAFTAX_API_H
#define CRAFTAX_API_H

#include <stddef.h>
#include <stdint.h>

#include "craftax/params.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CRAFTAX_ERR_NULL -1
#define CRAFTAX_ERR_NUM_ENVS -2
#define CRAFTAX_ERR_NO_MEMORY -3
#define CRAFTAX_ERR_ARGUMENT -4
/* A state holds a value outside the domain set_state accepts (CraftaxStateError says where). */
#define CRAFTAX_ERR_STATE -5

/* Storage and upstream dtypes of a leaf. */
#define CRAFTAX_DTYPE_UINT8 0
#define CRAFTAX_DTYPE_INT32 1
#define CRAFTAX_DTYPE_FLOAT32 2
#define CRAFTAX_DTYPE_UINT32 3
#define CRAFTAX_DTYPE_BOOL 4

typedef struct {
    const char *name;      /* dotted path of the upstream EnvState leaf, e.g. "inventory.wood" */
    uint32_t offset;       /* byte offset inside one state */
    int32_t storage_dtype; /* how it is stored here */
    int32_t dtype;         /* upstream dtype */
    int32_t ndim;
    int32_t shape[4];
    int32_t min_value;     /* inclusive domain of integer and bool leaves, for set_state validation */
    int32_t max_value;
    int32_t level_stride;  /* 0: the leaf is one C-order array; else its dim 0 (the level) steps
                              this many bytes and the rest is C-order (the per-level mob records) */
    float min_float;       /* inclusive domain of float32 leaves (finite values only) */
    float max_float;
} CraftaxLeaf;

/* Where a state leaves the domain (craftax_check_states). rule 0: element `element` (flat,
 * C order over the leaf's shape) of leaf `leaf` (craftax_leaf index) is `value`, outside the
 * leaf's domain. rule 1: a masked mob of a class that lives (melee, passive, ranged; Classic's
 * zombies, cows, skeletons) has health `value` <= 0 at element `element` of the health leaf
 * `leaf`. */
#define CRAFTAX_STATE_RULE_RANGE 0
#define CRAFTAX_STATE_RULE_LIVING_MOB 1
typedef struct {
    int64_t env;
    int32_t leaf;
    int32_t rule;
    int64_t element;
    double value;
} CraftaxStateError;

int craftax_api_version(void);
/* The rules fingerprint of this build (pycraftax/_rules_hash.py: a hash of the rules headers it
 * compiled), 12 hex digits; "unknown" where the build did not define CRAFTAX_RULES_FINGERPRINT. */
const char *craftax_rules_fingerprint(void);
size_t craftax_state_size(void);
/* Byte offset of CraftaxState.floors_pending (uint32; the CUDA build's lazy levels, always 0 here). */
size_t craftax_state_floors_pending_offset(void);
int craftax_num_leaves(void);
const CraftaxLeaf *craftax_leaf(int index);
void craftax_default_params(CraftaxParams *params);

/* Check num_envs states against the domain set_state accepts: every leaf inside its table
 * domain (integers and bools in [min_value, max_value], floats finite and in [min_float,
 * max_float]) and every masked mob of the classes that live with health > 0. Returns 0, or
 * CRAFTAX_ERR_STATE with *error describing the first offending element of the lowest env. */
int craftax_check_states(const void *states, int64_t num_envs, CraftaxStateError *error);

/* Threads used by the batched calls (OpenMP); 0 restores the default. */
void craftax_set_num_threads(int num_threads);
int craftax_get_num_threads(void);

/* reset_env(keys[i], params) for each env: keys is uint32 [num_envs, 2]; obs, when not
 * NULL, receives float32 [num_envs, CRAFTAX_OBS_SIZE]. */
int craftax_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs, const CraftaxParams *params,
                            float *obs);
/* render_craftax_symbolic for each env. The observe and step calls check first that every
 * state's player_level is a level (the index of the state's per-level arrays) and return
 * CRAFTAX_ERR_STATE, changing nothing, where one is not (craftax_last_state_error says which). */
int craftax_observe(const void *states, int64_t num_envs, float *obs);
int craftax_obs_size(void);
/* The compact observation record of each env (craftax/obs.h: uint8 [num_envs,
 * craftax_obs_compact_size()], the CUDA build's obs="compact"): craftax_observe's floats
 * bit for bit once expanded (pycraftax.obs_compact.expand). */
int craftax_observe_compact(const void *states, int64_t num_envs, uint8_t *records);
int craftax_obs_compact_size(void);

/* The CraftaxStateError of this thread's last call that returned CRAFTAX_ERR_STATE. */
void craftax_last_state_error(CraftaxStateError *error);

/* jax.random.split(key, num) of one raw key: out is uint32 [num, 2]. */
void craftax_key_split(const uint32_t *key, uint32_t num, uint32_t *out);

/* FNV-1a (64-bit) of n bytes, continuing from h (start with 14695981039346656037):
 * the trajectory hash of the anchors (CONFORMANCE.md). */
uint64_t craftax_fnv1a(uint64_t h, const void *data, size_t n);

#ifdef __cplusplus
}
#endif

#endif
