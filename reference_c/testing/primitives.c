/* primitives.c: test hooks of the jax.random, noise and float primitives of the rules headers
 * (craftax_test_primitives.h), for the parity tests of conformance/test_rng.py, test_noise.py and
 * test_mathf.py. Built into pycraftax._craftax_test only (PYCRAFTAX_TEST_HOOKS=1).
 */
#include "craftax_test_primitives.h"

#include <stdlib.h>

#include "craftax/obs.h"
#include "craftax/worldgen.h"
#include "craftax_api.h"

#ifndef CRAFTAX_RULES_FINGERPRINT
#define CRAFTAX_RULES_FINGERPRINT "unknown"
#endif
const char *craftax_test_rules_fingerprint(void) { return CRAFTAX_RULES_FINGERPRINT; }

static CraftaxKey key_of(const uint32_t *key) {
    CraftaxKey k = {{key[0], key[1]}};
    return k;
}

void craftax_test_uniform(const uint32_t *key, uint32_t num, float *out) {
    for (uint32_t i = 0; i < num; i++) out[i] = craftax_uniform(key_of(key), i);
}

void craftax_test_randint(const uint32_t *key, uint32_t num, int32_t minval, int32_t maxval, int32_t *out) {
    for (uint32_t i = 0; i < num; i++) out[i] = craftax_randint(key_of(key), i, minval, maxval);
}

int32_t craftax_test_choice_p(const uint32_t *key, const float *p, int32_t n) {
    float *scratch = (float *)malloc(sizeof(float) * (size_t)n);
    if (!scratch) return CRAFTAX_ERR_NO_MEMORY;
    int32_t r = craftax_choice_p(key_of(key), p, n, scratch);
    free(scratch);
    return r;
}

void craftax_test_choice_p_many(const uint32_t *key, const float *p, int32_t n, uint32_t num, int32_t *out) {
    float *cumsum = (float *)malloc(sizeof(float) * (size_t)n);
    if (!cumsum) return;
    craftax_cumsum_f32(p, n, cumsum);
    for (uint32_t i = 0; i < num; i++) out[i] = craftax_choice_from_cumsum(key_of(key), i, cumsum, n);
    free(cumsum);
}

int32_t craftax_test_cell_choice(const uint32_t *key, const uint8_t *mask, int32_t normalised) {
    CraftaxCellChoice *c = (CraftaxCellChoice *)malloc(sizeof(CraftaxCellChoice));
    if (!c) return CRAFTAX_ERR_NO_MEMORY;
    craftax_cell_rows_clear(c->rows, 0, 1);
    for (int cell = 0; cell < CRAFTAX_CELLS; cell++) craftax_cell_rows_mark(c->rows, cell, mask[cell] != 0, 0, 1);
    int32_t out[2];
    if (normalised)
        craftax_cell_choice_normalised(key_of(key), c, craftax_cell_choice_count(c), 0, 1, out);
    else
        craftax_cell_choice_counts(key_of(key), c, 0, 1, out);
    free(c);
    return out[0] * CRAFTAX_MAP_SIZE + out[1];
}

void craftax_test_cumsum(const float *x, int32_t n, float *out) { craftax_cumsum_f32(x, n, out); }

void craftax_test_permutation(const uint32_t *key, int32_t n, int32_t *out) {
    craftax_permutation(key_of(key), n, out);
}

void craftax_test_sincosf(const float *x, int64_t num, float *sin_out, float *cos_out) {
    for (int64_t i = 0; i < num; i++) {
        sin_out[i] = craftax_sinf(x[i]);
        cos_out[i] = craftax_cosf(x[i]);
    }
}

float craftax_test_light_level(int32_t timestep, int32_t day_length) {
    return craftax_light_level(timestep, day_length);
}

int craftax_test_fractal_noise(const uint32_t *key, int32_t res0, int32_t res1, const float *angles, float *out) {
    if (!craftax_noise_res_ok(res0) || !craftax_noise_res_ok(res1)) return CRAFTAX_ERR_ARGUMENT;
    craftax_fractal_noise(key_of(key), res0, res1, angles, (float(*)[CRAFTAX_MAP_SIZE])out);
    return 0;
}
