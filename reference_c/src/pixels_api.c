/* pixels_api.c: the atlas layout and the renderer at any block size of craftax_api_pixels.h
 * (the pixel envs' calls are in craftax_api.c, step_api.c and classic_api.c). */
#include "craftax_api_pixels.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "craftax_api.h"
#include "env_variants.h"

static int valid_block(int32_t block) {
    return block >= CRAFTAX_PIXELS_MIN_BLOCK && block <= CRAFTAX_PIXELS_MAX_BLOCK;
}

/* game's layout at `block`, and its section shapes; 0 or CRAFTAX_ERR_ARGUMENT */
static int layout_of(int32_t game, int32_t block, CraftaxPixelLayout *l, const CraftaxPixelSectionShape **shapes,
                     int *num_sections) {
    if (!valid_block(block)) return CRAFTAX_ERR_ARGUMENT;
    if (game == CRAFTAX_PIXELS_GAME_FULL) {
        craftax_pixels_layout(l, block);
        *shapes = CRAFTAX_PIXEL_SECTION_SHAPES;
        *num_sections = CRAFTAX_PIXEL_NUM_SECTIONS;
    } else if (game == CRAFTAX_PIXELS_GAME_CLASSIC) {
        craftax_classic_pixels_layout(l, block);
        *shapes = CRAFTAX_CLASSIC_PIXEL_SECTION_SHAPES;
        *num_sections = CRAFTAX_CLASSIC_PIXEL_NUM_SECTIONS;
    } else {
        return CRAFTAX_ERR_ARGUMENT;
    }
    return 0;
}

int craftax_pixels_num_sections(int32_t game) {
    if (game == CRAFTAX_PIXELS_GAME_FULL) return CRAFTAX_PIXEL_NUM_SECTIONS;
    if (game == CRAFTAX_PIXELS_GAME_CLASSIC) return CRAFTAX_CLASSIC_PIXEL_NUM_SECTIONS;
    return CRAFTAX_ERR_ARGUMENT;
}

int craftax_pixels_section(int32_t game, int32_t block_size, int32_t index, CraftaxPixelSection *out) {
    if (!out) return CRAFTAX_ERR_NULL;
    CraftaxPixelLayout l;
    const CraftaxPixelSectionShape *shapes;
    int n;
    const int err = layout_of(game, block_size, &l, &shapes, &n);
    if (err) return err;
    if (index < 0 || index >= n) return CRAFTAX_ERR_ARGUMENT;
    out->name = shapes[index].name;
    out->offset = l.offset[index];
    out->count = shapes[index].count;
    out->rows = craftax_pixel_dim(&l, shapes[index].rows);
    out->cols = craftax_pixel_dim(&l, shapes[index].cols);
    out->channels = shapes[index].channels;
    return 0;
}

int64_t craftax_pixels_atlas_size(int32_t game, int32_t block_size) {
    CraftaxPixelLayout l;
    const CraftaxPixelSectionShape *shapes;
    int n;
    const int err = layout_of(game, block_size, &l, &shapes, &n);
    return err ? err : (int64_t)l.size;
}

int craftax_pixels_picture_shape(int32_t game, int32_t block_size, int32_t *height, int32_t *width) {
    if (!height || !width) return CRAFTAX_ERR_NULL;
    CraftaxPixelLayout l;
    const CraftaxPixelSectionShape *shapes;
    int n;
    const int err = layout_of(game, block_size, &l, &shapes, &n);
    if (err) return err;
    *height = l.height;
    *width = l.width;
    return 0;
}

int craftax_pixels_render(int32_t game, const void *states, int64_t num_envs, const float *atlas, int32_t block_size,
                          int32_t scaled, float *out) {
    if (!states || !atlas || !out) return CRAFTAX_ERR_NULL;
    if (num_envs < 0) return CRAFTAX_ERR_NUM_ENVS;
    CraftaxPixelLayout l;
    const CraftaxPixelSectionShape *shapes;
    int n;
    const int err = layout_of(game, block_size, &l, &shapes, &n);
    if (err) return err;
    const int64_t size = (int64_t)l.height * l.width * 3;
#pragma omp parallel for num_threads(craftax_get_num_threads()) schedule(static)
    for (int64_t i = 0; i < num_envs; i++) {
        if (game == CRAFTAX_PIXELS_GAME_FULL)
            craftax_render_pixels((const CraftaxState *)states + i, atlas, &l, out + i * size, scaled != 0);
        else
            craftax_classic_render_pixels((const CraftaxClassicState *)states + i, atlas, &l, out + i * size,
                                          scaled != 0);
    }
    return 0;
}
