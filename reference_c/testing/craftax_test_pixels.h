/* craftax_test_pixels.h: a test hook of the pixel renderers (craftax/pixels.h,
 * craftax_classic/pixels.h). Part of the test extension pycraftax._craftax_test
 * (PYCRAFTAX_TEST_HOOKS=1), not of the shipped API. Read by cffi's cdef: plain declarations only.
 */
#ifndef CRAFTAX_TEST_PIXELS_H
#define CRAFTAX_TEST_PIXELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* craftax_pixels_render's picture (same arguments) drawn a pixel at a time by the lanes
 * renderer (craftax_render_pixels_lanes, one lane), the path a GPU kernel takes, where the C
 * API draws a row at a time: the two must be equal bit for bit. */
int craftax_test_pixels_render_per_pixel(int32_t game, const void *states, int64_t num_envs, const float *atlas,
                                         int32_t block_size, int32_t scaled, float *out);

#ifdef __cplusplus
}
#endif

#endif
