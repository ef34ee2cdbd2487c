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
    int32_t min_value;     /* inclusive domain of integer leaves, for set_state validation */
    int32_t max_value;
    int32_t level_stride;  /* 0: the leaf is one C-order array; else its dim 0 (the level) steps
                              this many bytes and the rest is C-order (the per-level mob records) */
} CraftaxLeaf;

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

/* Threads used by the batched calls (OpenMP); 0 restores the default. */
void craftax_set_num_threads(int num_threads);
int craftax_get_num_threads(void);

/* reset_env(keys[i], params) for each env: keys is uint32 [num_envs, 2]; obs, when not
 * NULL, receives float32 [num_envs, CRAFTAX_OBS_SIZE]. */
int craftax_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs, const CraftaxParams *params,
                            float *obs);
/* render_craftax_symbolic for each env. */
int craftax_observe(const void *states, int64_t num_envs, float *obs);
int craftax_obs_size(void);
/* The compact observation record of each env (craftax/obs.h: uint8 [num_envs,
 * craftax_obs_compact_size()], the CUDA build's obs="compact"): craftax_observe's floats
 * bit for bit once expanded (pycraftax.obs_compact.expand). */
int craftax_observe_compact(const void *states, int64_t num_envs, uint8_t *records);
int craftax_obs_compact_size(void);

/* jax.random.split(key, num) of one raw key: out is uint32 [num, 2]. */
void craftax_key_split(const uint32_t *key, uint32_t num, uint32_t *out);

/* FNV-1a (64-bit) of n bytes, continuing from h (start with 14695981039346656037):
 * the trajectory hash of the anchors (CONFORMANCE.md). */
uint64_t craftax_fnv1a(uint64_t h, const void *data, size_t n);

#ifdef __cplusplus
}
#endif

#endif
