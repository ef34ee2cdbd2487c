/* pixel_hooks.c: the pixel renderers' per-pixel path (craftax_test_pixels.h), for
 * tests/test_pixels_env.py. Built into pycraftax._craftax_test only (PYCRAFTAX_TEST_HOOKS=1).
 */
#include "craftax_test_pixels.h"

#include "craftax_api.h"
#include "craftax_api_pixels.h"
#include "craftax/pixels.h"
#include "craftax_classic/pixels.h"

int craftax_test_pixels_render_per_pixel(int32_t game, const void *states, int64_t num_envs, const float *atlas,
                                         int32_t block_size, int32_t scaled, float *out) {
    if (!states || !atlas || !out) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    if (block_size < CRAFTAX_PIXELS_MIN_BLOCK || block_size > CRAFTAX_PIXELS_MAX_BLOCK) return CRAFTAX_ERR_ARGUMENT;
    if (game != CRAFTAX_PIXELS_GAME_FULL && game != CRAFTAX_PIXELS_GAME_CLASSIC) return CRAFTAX_ERR_ARGUMENT;
    CraftaxPixelLayout l;
    if (game == CRAFTAX_PIXELS_GAME_FULL)
        craftax_pixels_layout(&l, block_size);
    else
        craftax_classic_pixels_layout(&l, block_size);
    const int64_t size = (int64_t)l.height * l.width * 3;
    for (int64_t i = 0; i < num_envs; i++) {
        if (game == CRAFTAX_PIXELS_GAME_FULL) {
            CraftaxPixelView v;
            craftax_render_pixels_lanes((const CraftaxState *)states + i, atlas, &l, &v, out + i * size, scaled != 0,
                                        0, 1);
        } else {
            CraftaxClassicPixelView v;
            craftax_classic_render_pixels_lanes((const CraftaxClassicState *)states + i, atlas, &l, &v,
                                                out + i * size, scaled != 0, 0, 1);
        }
    }
    return 0;
}
