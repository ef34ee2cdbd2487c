/* craftax_test_primitives.h: test hooks of the jax.random, noise and float primitives of the
 * rules headers, one key each, for the parity tests. Part of the test extension
 * pycraftax._craftax_test (PYCRAFTAX_TEST_HOOKS=1), not of the shipped API. Read by cffi's cdef:
 * plain declarations only.
 */
#ifndef CRAFTAX_TEST_PRIMITIVES_H
#define CRAFTAX_TEST_PRIMITIVES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The rules fingerprint this test extension was compiled with (craftax_rules_fingerprint's twin:
 * the parity hooks compile the rules headers themselves, so the two extensions can differ). */
const char *craftax_test_rules_fingerprint(void);

void craftax_test_uniform(const uint32_t *key, uint32_t num, float *out);
void craftax_test_randint(const uint32_t *key, uint32_t num, int32_t minval, int32_t maxval, int32_t *out);
int32_t craftax_test_choice_p(const uint32_t *key, const float *p, int32_t n);
void craftax_test_choice_p_many(const uint32_t *key, const float *p, int32_t n, uint32_t num, int32_t *out);
/* choice(key, arange(2304), p=mask / mask.sum()) (normalised != 0) or p=mask over a 0/1 mask of
 * the 48 x 48 cells, as world generation and spawn_mobs draw it from bit rows (cell_choice.h):
 * the flat index of the chosen cell. */
int32_t craftax_test_cell_choice(const uint32_t *key, const uint8_t *mask, int32_t normalised);
void craftax_test_cumsum(const float *x, int32_t n, float *out);
void craftax_test_permutation(const uint32_t *key, int32_t n, int32_t *out);
void craftax_test_sincosf(const float *x, int64_t num, float *sin_out, float *cos_out);
float craftax_test_light_level(int32_t timestep, int32_t day_length);
/* generate_fractal_noise_2d(key, (48, 48), (res0, res1), octaves=1) as world generation
 * evaluates it; res0, res1 in {3, 6, 12, 24} (CRAFTAX_ERR_ARGUMENT otherwise). */
int craftax_test_fractal_noise(const uint32_t *key, int32_t res0, int32_t res1, const float *angles, float *out);

#ifdef __cplusplus
}
#endif

#endif
