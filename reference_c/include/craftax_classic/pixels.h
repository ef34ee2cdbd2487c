/* craftax_classic/pixels.h: Craftax-Classic's pixel observation, make_craftax_pixel_renderer
 * of craftax/craftax_classic/renderer.py: a (7 + 2) x 9 grid of cells of `block` pixels,
 * RGB float32; Craftax-Classic-Pixels-v1 renders at block 7 and divides by 255 (63 x 63 x 3).
 *
 * The atlas, layout and pixel-by-pixel evaluation are the full game's (craftax/pixels.h),
 * over Classic's own texture sections. One function per upstream step:
 *   _add_block_type_to_pixels   craftax_classic_pixels_add_block
 *   the player sprite           craftax_classic_pixels_add_player
 *   _add_{zombie,cow,skeleton}_to_pixels  craftax_classic_pixels_add_mob
 *   _add_arrow_to_pixels        craftax_classic_pixels_add_arrow
 *   night, enhance, tint, blend, sleep    craftax_classic_pixels_night_sleep
 *   _render_number              craftax_classic_pixels_render_number
 *   the inventory's order       craftax_classic_pixels_inventory_cell
 *   render_craftax_pixels       craftax_classic_render_pixels_lanes
 *
 * Float arithmetic: Classic's player and mob sprites blend with alpha / 255, and the night,
 * its luminance "enhance", the tint and the sleep filter are all rounding steps; each
 * multiply-add is fused as XLA:CPU fuses it in the jitted, vmapped reset_env and step_env of
 * craftax 1.6.1 under jaxlib 0.10.2 (read from the object code of the kernels), written here
 * as fmaf().
 */
#ifndef CRAFTAX_CLASSIC_PIXELS_H
#define CRAFTAX_CLASSIC_PIXELS_H

#include "craftax/pixels.h"
#include "craftax_classic/obs.h"

enum {
    CRAFTAX_CLASSIC_PIXEL_INVENTORY_ROWS = 2, /* upstream INVENTORY_OBS_HEIGHT */
    CRAFTAX_CLASSIC_PIXEL_AGENT_BLOCK = 7,    /* BLOCK_PIXEL_SIZE_AGENT: Craftax-Classic-Pixels-v1 */
    CRAFTAX_CLASSIC_PIXEL_VIEW_CELLS = CRAFTAX_CLASSIC_OBS_ROWS * CRAFTAX_CLASSIC_OBS_COLS,
};

#define CRAFTAX_CLASSIC_PIXEL_SECTIONS(X)                                           \
    X(BLOCK, "block_textures", 17, BLOCK, BLOCK, 3)                                 \
    X(SMALL_BLOCK, "smaller_block_textures", 17, SMALL, SMALL, 3)                   \
    X(PLAYER, "player_textures", 5, BLOCK, BLOCK, 3)                                \
    X(PLAYER_ALPHA, "player_textures_alpha", 5, BLOCK, BLOCK, 3)                    \
    X(DIGIT, "number_textures", 10, DIGIT, DIGIT, 3)                                \
    X(DIGIT_ALPHA, "number_textures_alpha", 10, DIGIT, DIGIT, 3)                    \
    X(HEALTH, "health_texture", 1, SMALL, SMALL, 3)                                 \
    X(HUNGER, "hunger_texture", 1, SMALL, SMALL, 3)                                 \
    X(THIRST, "thirst_texture", 1, SMALL, SMALL, 3)                                 \
    X(ENERGY, "energy_texture", 1, SMALL, SMALL, 3)                                 \
    X(WOOD_PICKAXE, "wood_pickaxe_texture", 1, SMALL, SMALL, 3)                     \
    X(STONE_PICKAXE, "stone_pickaxe_texture", 1, SMALL, SMALL, 3)                   \
    X(IRON_PICKAXE, "iron_pickaxe_texture", 1, SMALL, SMALL, 3)                     \
    X(WOOD_SWORD, "wood_sword_texture", 1, SMALL, SMALL, 3)                         \
    X(STONE_SWORD, "stone_sword_texture", 1, SMALL, SMALL, 3)                       \
    X(IRON_SWORD, "iron_sword_texture", 1, SMALL, SMALL, 3)                         \
    X(SAPLING, "sapling_texture", 1, SMALL, SMALL, 3)                               \
    X(ZOMBIE, "zombie_texture", 1, BLOCK, BLOCK, 3)                                 \
    X(ZOMBIE_ALPHA, "zombie_texture_alpha", 1, BLOCK, BLOCK, 3)                     \
    X(COW, "cow_texture", 1, BLOCK, BLOCK, 3)                                       \
    X(COW_ALPHA, "cow_texture_alpha", 1, BLOCK, BLOCK, 3)                           \
    X(SKELETON, "skeleton_texture", 1, BLOCK, BLOCK, 3)                             \
    X(SKELETON_ALPHA, "skeleton_texture_alpha", 1, BLOCK, BLOCK, 3)                 \
    X(ARROW, "arrow_texture", 1, BLOCK, BLOCK, 3)                                   \
    X(ARROW_ALPHA, "arrow_texture_alpha", 1, BLOCK, BLOCK, 3)                       \
    X(NIGHT_NOISE, "night_noise_intensity_texture", 1, VIEW_ROWS, VIEW_COLS, 3)

#define CRAFTAX_CLASSIC_PIXEL_SECTION_ID(ID, name, count, rows, cols, channels) CRAFTAX_CLASSIC_PIXEL_##ID,
enum { CRAFTAX_CLASSIC_PIXEL_SECTIONS(CRAFTAX_CLASSIC_PIXEL_SECTION_ID) CRAFTAX_CLASSIC_PIXEL_NUM_SECTIONS };
#undef CRAFTAX_CLASSIC_PIXEL_SECTION_ID

static CRAFTAX_LANE_TABLE CraftaxPixelSectionShape CRAFTAX_CLASSIC_PIXEL_SECTION_SHAPES[CRAFTAX_CLASSIC_PIXEL_NUM_SECTIONS] = {
    CRAFTAX_CLASSIC_PIXEL_SECTIONS(CRAFTAX_PIXEL_SECTION_SHAPE)};

static inline CRAFTAX_HD void craftax_classic_pixels_layout(CraftaxPixelLayout *l, int32_t block) {
    craftax_pixel_layout_of(l, block, 0.6, CRAFTAX_CLASSIC_OBS_ROWS, CRAFTAX_CLASSIC_OBS_COLS,
                            CRAFTAX_CLASSIC_PIXEL_INVENTORY_ROWS, CRAFTAX_CLASSIC_PIXEL_SECTION_SHAPES,
                            CRAFTAX_CLASSIC_PIXEL_NUM_SECTIONS);
    l->icon_left = (block - l->small) / 2 - 1; /* Classic's icons sit one pixel further up-left */
}

static inline CRAFTAX_HD const float *craftax_classic_pixel_texture(const float *atlas, const CraftaxPixelLayout *l,
                                                                   int section, int32_t index) {
    return craftax_pixel_texture(atlas, l, CRAFTAX_CLASSIC_PIXEL_SECTION_SHAPES, section, index);
}

/* -- the map view ------------------------------------------------------------------------- */

/* The mob slots drawn, in upstream's order: zombies 0-2, cows 3-5, skeletons 6-7, arrows 8-10. */
#define CRAFTAX_CLASSIC_PIXEL_SLOTS CRAFTAX_CLASSIC_OBS_NUM_MOBS

typedef struct {
    uint8_t block[CRAFTAX_CLASSIC_PIXEL_VIEW_CELLS];
    uint16_t slots[CRAFTAX_CLASSIC_PIXEL_VIEW_CELLS]; /* bit k: mob slot k is drawn in this cell */
    uint8_t arrow_orientation[CRAFTAX_CLASSIC_MAX_ARROWS]; /* bit 0 flip rows, bit 1 transpose */
    uint32_t player_texture, player_alpha;
    float daylight;
    int sleeping;
} CraftaxClassicPixelView;

static inline CRAFTAX_HD void craftax_classic_pixels_view(const CraftaxClassicState *s, const float *atlas,
                                                          const CraftaxPixelLayout *l, CraftaxClassicPixelView *v) {
    for (int r = 0; r < CRAFTAX_CLASSIC_OBS_ROWS; r++)
        for (int c = 0; c < CRAFTAX_CLASSIC_OBS_COLS; c++) {
            v->block[r * CRAFTAX_CLASSIC_OBS_COLS + c] = (uint8_t)craftax_classic_obs_block(s, r, c);
            v->slots[r * CRAFTAX_CLASSIC_OBS_COLS + c] = 0;
        }
    for (int k = 0; k < CRAFTAX_CLASSIC_PIXEL_SLOTS; k++) {
        uint8_t mask;
        int mob_class;
        const int32_t *pos = craftax_classic_obs_mob(s, k, &mask, &mob_class);
        const int32_t lx = craftax_wrap_sub_add(pos[0], s->player_position[0], CRAFTAX_CLASSIC_OBS_ROWS / 2);
        const int32_t ly = craftax_wrap_sub_add(pos[1], s->player_position[1], CRAFTAX_CLASSIC_OBS_COLS / 2);
        if (mask && lx >= 0 && ly >= 0 && lx < CRAFTAX_CLASSIC_OBS_ROWS && ly < CRAFTAX_CLASSIC_OBS_COLS)
            v->slots[lx * CRAFTAX_CLASSIC_OBS_COLS + ly] |= (uint16_t)(1u << k);
    }
    for (int k = 0; k < CRAFTAX_CLASSIC_MAX_ARROWS; k++) {
        const int32_t *d = s->arrow_directions[k];
        v->arrow_orientation[k] = (uint8_t)((d[0] > 0 || d[1] > 0) | (d[1] != 0) << 1);
    }
    const int32_t sprite = s->is_sleeping ? 4 : s->player_direction - 1;
    v->player_texture = (uint32_t)(craftax_classic_pixel_texture(atlas, l, CRAFTAX_CLASSIC_PIXEL_PLAYER, sprite) - atlas);
    v->player_alpha =
        (uint32_t)(craftax_classic_pixel_texture(atlas, l, CRAFTAX_CLASSIC_PIXEL_PLAYER_ALPHA, sprite) - atlas);
    v->daylight = s->light_level;
    v->sleeping = s->is_sleeping != 0;
}

/* _add_block_type_to_pixels (a block id outside the 17 draws black). */
static inline CRAFTAX_HD void craftax_classic_pixels_add_block(float p[3], const float *atlas,
                                                               const CraftaxPixelLayout *l, int block, int iy, int ix) {
    if (block >= CRAFTAX_CLASSIC_NUM_BLOCK_TYPES) {
        p[0] = p[1] = p[2] = 0.0f;
        return;
    }
    const float *t = atlas + l->offset[CRAFTAX_CLASSIC_PIXEL_BLOCK] +
                     ((uint32_t)block * l->block * l->block + (uint32_t)(iy * l->block + ix)) * 3u;
    p[0] = t[0];
    p[1] = t[1];
    p[2] = t[2];
}

/* The player sprite: pixel * (1 - alpha) + texture * alpha, alpha = a / 255; XLA fuses the
 * first product into the sum. */
static inline CRAFTAX_HD void craftax_classic_pixels_add_player(float p[3], const float *texture, const float *alpha,
                                                                const CraftaxPixelLayout *l, int iy, int ix) {
    const int at = (iy * l->block + ix) * 3;
    for (int k = 0; k < 3; k++) p[k] = fmaf(p[k], 1.0f - alpha[at + k], texture[at + k] * alpha[at + k]);
}

/* A zombie, cow or skeleton on screen: (1 - alpha) * pixel + texture * alpha, alpha = a / 255;
 * XLA fuses the second product into the sum. */
static inline CRAFTAX_HD void craftax_classic_pixels_add_mob(float p[3], const float *texture, const float *alpha,
                                                             const CraftaxPixelLayout *l, int iy, int ix) {
    const int at = (iy * l->block + ix) * 3;
    for (int k = 0; k < 3; k++) p[k] = fmaf(alpha[at + k], texture[at + k], (1.0f - alpha[at + k]) * p[k]);
}

/* _add_arrow_to_pixels: flipped when it moves down or right, transposed when it moves
 * sideways; its alpha is 0/1, so the blend is exact. */
static inline CRAFTAX_HD void craftax_classic_pixels_add_arrow(float p[3], const float *atlas,
                                                               const CraftaxPixelLayout *l, int orientation, int iy,
                                                               int ix) {
    int r = (orientation & 2) ? ix : iy, c = (orientation & 2) ? iy : ix;
    if (orientation & 1) r = l->block - 1 - r;
    const int at = (r * l->block + c) * 3;
    const float *t = atlas + l->offset[CRAFTAX_CLASSIC_PIXEL_ARROW];
    const float *a = atlas + l->offset[CRAFTAX_CLASSIC_PIXEL_ARROW_ALPHA];
    for (int k = 0; k < 3; k++) p[k] = (1.0f - a[at + k]) * p[k] + t[at + k] * a[at + k];
}

/* Luminance 0.299 r + 0.587 g + 0.114 b as XLA fuses it. */
static inline CRAFTAX_HD float craftax_classic_luminance(const float p[3]) {
    return fmaf(p[2], 0.114f, fmaf(p[0], 0.299f, p[1] * 0.587f));
}

/* Night, enhance, tint, blend and sleep of map pixel p at picture row y, column x:
 *   noisy  = (1 - mask) * p + mask * (95 uniform(state_rng)[y, x] + 32), mask = weight * max(2 (0.5 - daylight), 0)
 *   night  = noisy where daylight < 0.5, else p
 *   night  = 0.5 (0.4 night + 0.6 luminance(night)) + 0.5 (0, 16, 64)
 *   p      = daylight * p + (1 - daylight) * night
 *   asleep = 0.5 luminance(p) + 0.5 (0, 0, 16), taken where sleeping
 * The noise is drawn only where it is used (daylight < 0.5). */
static inline CRAFTAX_HD void craftax_classic_pixels_night_sleep(float p[3], const CraftaxClassicState *s,
                                                                 const float *atlas, const CraftaxPixelLayout *l,
                                                                 const CraftaxClassicPixelView *v, int y, int x) {
    const float half_tint[3] = {0.0f, 8.0f, 32.0f}, half_sleep_tint[3] = {0.0f, 0.0f, 8.0f};
    const float d = v->daylight;
    float night[3] = {p[0], p[1], p[2]};
    if (d < 0.5f) {
        const int view_cols = l->view_cols * l->block;
        const float intensity = fmaxf((0.5f - d) * 2.0f, 0.0f);
        const CraftaxKey key = {{s->state_rng[0], s->state_rng[1]}};
        const float noise = fmaf(craftax_uniform(key, (uint32_t)(y * view_cols + x)), 95.0f, 32.0f);
        const float *weight = atlas + l->offset[CRAFTAX_CLASSIC_PIXEL_NIGHT_NOISE] + (uint32_t)(y * view_cols + x) * 3u;
        for (int k = 0; k < 3; k++) {
            const float mask = intensity * weight[k];
            night[k] = fmaf(noise, mask, (1.0f - mask) * p[k]);
        }
    }
    const float enhance = craftax_classic_luminance(night) * 0.6f;
    float blended[3];
    for (int k = 0; k < 3; k++) {
        const float tinted = fmaf(fmaf(night[k], 0.4f, enhance), 0.5f, half_tint[k]);
        blended[k] = fmaf(d, p[k], (1.0f - d) * tinted);
    }
    if (v->sleeping) {
        const float grey = craftax_classic_luminance(blended) * 0.5f;
        for (int k = 0; k < 3; k++) p[k] = grey + half_sleep_tint[k];
    } else {
        for (int k = 0; k < 3; k++) p[k] = blended[k];
    }
}

#define CRAFTAX_CLASSIC_PIXEL_CENTRE_CELL \
    ((CRAFTAX_CLASSIC_OBS_ROWS / 2) * CRAFTAX_CLASSIC_OBS_COLS + CRAFTAX_CLASSIC_OBS_COLS / 2)

/* The layers over the block of cell `cell` at (iy, ix) inside it: the player, then the mobs
 * and arrows, in upstream's order. */
static inline CRAFTAX_HD void craftax_classic_pixels_add_sprites(float p[3], const float *atlas,
                                                                 const CraftaxPixelLayout *l,
                                                                 const CraftaxClassicPixelView *v, int cell, int iy,
                                                                 int ix) {
    if (cell == CRAFTAX_CLASSIC_PIXEL_CENTRE_CELL)
        craftax_classic_pixels_add_player(p, atlas + v->player_texture, atlas + v->player_alpha, l, iy, ix);
    for (uint32_t slots = v->slots[cell]; slots; slots &= slots - 1) {
        const int slot = craftax_popc32((slots & (0u - slots)) - 1u);
        /* zombies 0-2, cows 3-5, skeletons 6-7, arrows 8-10 (no table: a static one inside a
         * host-and-device function does not compile for CUDA) */
        const int section = slot < 3   ? CRAFTAX_CLASSIC_PIXEL_ZOMBIE
                            : slot < 6 ? CRAFTAX_CLASSIC_PIXEL_COW
                            : slot < 8 ? CRAFTAX_CLASSIC_PIXEL_SKELETON
                                       : CRAFTAX_CLASSIC_PIXEL_ARROW;
        if (section == CRAFTAX_CLASSIC_PIXEL_ARROW)
            craftax_classic_pixels_add_arrow(p, atlas, l, v->arrow_orientation[slot - 8], iy, ix);
        else
            craftax_classic_pixels_add_mob(p, atlas + l->offset[section], atlas + l->offset[section + 1], l, iy, ix);
    }
}

static inline CRAFTAX_HD void craftax_classic_pixels_map_pixel(float p[3], const CraftaxClassicState *s,
                                                               const float *atlas, const CraftaxPixelLayout *l,
                                                               const CraftaxClassicPixelView *v, int y, int x) {
    const int b = l->block;
    const int cell = (y / b) * CRAFTAX_CLASSIC_OBS_COLS + x / b, iy = y % b, ix = x % b;
    craftax_classic_pixels_add_block(p, atlas, l, v->block[cell], iy, ix);
    craftax_classic_pixels_add_sprites(p, atlas, l, v, cell, iy, ix);
    craftax_classic_pixels_night_sleep(p, s, atlas, l, v, y, x);
}

/* -- the inventory ------------------------------------------------------------------------ */

/* _render_number: pixels *= 1 - alpha, then += texture, in the digit square that ends one
 * pixel before the cell's bottom-right corner. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_classic_pixels_render_number(CraftaxPixelCellPoint *q, const float *atlas,
                                                                   const CraftaxPixelLayout *l, int32_t number) {
    const int start = l->block - l->digit - 1;
    craftax_pixels_put_digit_at(q, l, craftax_classic_pixel_texture(atlas, l, CRAFTAX_CLASSIC_PIXEL_DIGIT, number),
                                craftax_classic_pixel_texture(atlas, l, CRAFTAX_CLASSIC_PIXEL_DIGIT_ALPHA, number),
                                start, start);
}

/* Inventory cell (cx, cy): its icon where the count is > 0 (else the empty icon), then the
 * count's digit. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_classic_pixels_inventory_cell(CraftaxPixelCellPoint *q,
                                                                    const CraftaxClassicState *s, const float *atlas,
                                                                    const CraftaxPixelLayout *l, int cx, int cy) {
    const CraftaxClassicInventory *inv = &s->inventory;
    int section, index = 0;
    int32_t count;
    switch (cy * 16 + cx) {
    case 0: section = CRAFTAX_CLASSIC_PIXEL_HEALTH, count = s->player_health; break;
    case 1: section = CRAFTAX_CLASSIC_PIXEL_HUNGER, count = s->player_food; break;
    case 2: section = CRAFTAX_CLASSIC_PIXEL_THIRST, count = s->player_drink; break;
    case 3: section = CRAFTAX_CLASSIC_PIXEL_ENERGY, count = s->player_energy; break;
    case 4: section = CRAFTAX_CLASSIC_PIXEL_SAPLING, count = inv->sapling; break;
    case 5: section = CRAFTAX_CLASSIC_PIXEL_SMALL_BLOCK, index = BLOCK_WOOD, count = inv->wood; break;
    case 6: section = CRAFTAX_CLASSIC_PIXEL_SMALL_BLOCK, index = BLOCK_STONE, count = inv->stone; break;
    case 7: section = CRAFTAX_CLASSIC_PIXEL_SMALL_BLOCK, index = BLOCK_COAL, count = inv->coal; break;
    case 8: section = CRAFTAX_CLASSIC_PIXEL_SMALL_BLOCK, index = BLOCK_IRON, count = inv->iron; break;
    case 16: section = CRAFTAX_CLASSIC_PIXEL_SMALL_BLOCK, index = BLOCK_DIAMOND, count = inv->diamond; break;
    case 17: section = CRAFTAX_CLASSIC_PIXEL_WOOD_PICKAXE, count = inv->wood_pickaxe; break;
    case 18: section = CRAFTAX_CLASSIC_PIXEL_STONE_PICKAXE, count = inv->stone_pickaxe; break;
    case 19: section = CRAFTAX_CLASSIC_PIXEL_IRON_PICKAXE, count = inv->iron_pickaxe; break;
    case 20: section = CRAFTAX_CLASSIC_PIXEL_WOOD_SWORD, count = inv->wood_sword; break;
    case 21: section = CRAFTAX_CLASSIC_PIXEL_STONE_SWORD, count = inv->stone_sword; break;
    case 22: section = CRAFTAX_CLASSIC_PIXEL_IRON_SWORD, count = inv->iron_sword; break;
    default: return;
    }
    craftax_pixels_render_icon(q, l, count > 0 ? craftax_classic_pixel_texture(atlas, l, section, index) : NULL);
    craftax_classic_pixels_render_number(q, atlas, l, count);
}

/* -- the picture ---------------------------------------------------------------------------- */

/* render_craftax_pixels(state) into out [height, width, 3] (times 1/255 when `scaled`), as
 * craftax_render_pixels_lanes. */
static inline CRAFTAX_HD void craftax_classic_render_pixels_lanes(const CraftaxClassicState *s, const float *atlas,
                                                                  const CraftaxPixelLayout *l,
                                                                  CraftaxClassicPixelView *v, float *out, int scaled,
                                                                  int lane, int lanes) {
    if (lane == 0) craftax_classic_pixels_view(s, atlas, l, v);
    craftax_lanes_sync(lanes);
    const float scale = scaled ? CRAFTAX_PIXEL_SCALE : 1.0f;
    const int map_rows = l->view_rows * l->block;
    CRAFTAX_FOR_LANE(i, l->height * l->width, lane, lanes) {
        const int y = i / l->width, x = i % l->width;
        float p[3];
        if (y < map_rows) {
            craftax_classic_pixels_map_pixel(p, s, atlas, l, v, y, x);
        } else {
            CraftaxPixelCellPoint q = {{0.0f, 0.0f, 0.0f}, (y - map_rows) % l->block, x % l->block, NULL};
            craftax_classic_pixels_inventory_cell(&q, s, atlas, l, x / l->block, (y - map_rows) / l->block);
            p[0] = q.p[0];
            p[1] = q.p[1];
            p[2] = q.p[2];
        }
        for (int k = 0; k < 3; k++) out[i * 3 + k] = p[k] * scale;
    }
    craftax_lanes_sync(lanes);
}

/* -- the picture a row at a time (CPU) ------------------------------------------------------- */

/* Row iy of cell `cell` before the night: its b pixels into seg [b, 3]. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_classic_pixels_cell_row(float *seg, const float *atlas,
                                                                          const CraftaxPixelLayout *l,
                                                                          const CraftaxClassicPixelView *v, int cell,
                                                                          int iy, int b) {
    const int block = v->block[cell];
    if (block >= CRAFTAX_CLASSIC_NUM_BLOCK_TYPES) {
        for (int j = 0; j < b * 3; j++) seg[j] = 0.0f;
    } else {
        const float *t =
            atlas + l->offset[CRAFTAX_CLASSIC_PIXEL_BLOCK] + ((uint32_t)block * b * b + (uint32_t)(iy * b)) * 3u;
        for (int j = 0; j < b * 3; j++) seg[j] = t[j];
    }
    if (cell == CRAFTAX_CLASSIC_PIXEL_CENTRE_CELL || v->slots[cell])
        for (int ix = 0; ix < b; ix++) craftax_classic_pixels_add_sprites(seg + ix * 3, atlas, l, v, cell, iy, ix);
}

/* The inventory under the map, a cell at a time, times `scale`, into out; l->block is b. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_classic_pixels_inventory_tiles(const CraftaxClassicState *s,
                                                                                 const float *atlas,
                                                                                 const CraftaxPixelLayout *l,
                                                                                 float *out, float scale, int b) {
    const int row_floats = l->width * 3, map_rows = l->view_rows * b;
    /* l's sizes recomputed from b (craftax_classic_pixels_layout's formulas): constants where b is */
    CraftaxPixelLayout sized = *l;
    sized.block = b;
    sized.small = (int32_t)(b * 0.8);
    sized.digit = (int32_t)(b * 0.6);
    sized.icon_left = (b - sized.small) / 2 - 1;
    float tile[CRAFTAX_PIXEL_ROWS_MAX_BLOCK * CRAFTAX_PIXEL_ROWS_MAX_BLOCK * 3];
    for (int cy = 0; cy < l->inventory_rows; cy++)
        for (int cx = 0; cx < l->view_cols; cx++) {
            for (int j = 0; j < b * b * 3; j++) tile[j] = 0.0f;
            CraftaxPixelCellPoint q = {{0.0f, 0.0f, 0.0f}, 0, 0, tile};
            craftax_classic_pixels_inventory_cell(&q, s, atlas, &sized, cx, cy);
            for (int iy = 0; iy < b; iy++) {
                float *o = out + (map_rows + cy * b + iy) * row_floats + cx * b * 3;
                const float *t = tile + iy * b * 3;
                for (int j = 0; j < b * 3; j++) o[j] = t[j] * scale;
            }
        }
}

/* craftax_classic_render_pixels_rows's body for l->block == b <= CRAFTAX_PIXEL_ROWS_MAX_BLOCK:
 * each pixel row's colours split into planes (the recipe mixes the channels), then
 * craftax_classic_pixels_night_sleep's operations in its order over the whole row. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_classic_pixels_rows_of_block(const CraftaxClassicState *s,
                                                                               const float *atlas,
                                                                               const CraftaxPixelLayout *l,
                                                                               const CraftaxClassicPixelView *v,
                                                                               float *out, float scale, int b) {
    enum { MAX_WIDTH = CRAFTAX_CLASSIC_OBS_COLS * CRAFTAX_PIXEL_ROWS_MAX_BLOCK };
    const int cols = CRAFTAX_CLASSIC_OBS_COLS, width = cols * b, seg = b * 3;
    const float d = v->daylight, one_minus_d = 1.0f - d;
    const int dark = d < 0.5f, sleeping = v->sleeping;
    const float intensity = fmaxf((0.5f - d) * 2.0f, 0.0f);
    const CraftaxKey key = {{s->state_rng[0], s->state_rng[1]}};
    float pre[MAX_WIDTH * 3], p0[MAX_WIDTH], p1[MAX_WIDTH], p2[MAX_WIDTH], n0[MAX_WIDTH], n1[MAX_WIDTH],
        n2[MAX_WIDTH], noise_row[MAX_WIDTH];
    for (int r = 0; r < CRAFTAX_CLASSIC_OBS_ROWS; r++)
        for (int iy = 0; iy < b; iy++) {
            const int y = r * b + iy;
            for (int c = 0; c < cols; c++)
                craftax_classic_pixels_cell_row(pre + c * seg, atlas, l, v, r * cols + c, iy, b);
            for (int x = 0; x < width; x++) {
                p0[x] = pre[3 * x];
                p1[x] = pre[3 * x + 1];
                p2[x] = pre[3 * x + 2];
            }
            if (dark) {
                const float *weight = atlas + l->offset[CRAFTAX_CLASSIC_PIXEL_NIGHT_NOISE] + (uint32_t)(y * width * 3);
                craftax_pixels_night_noise(key, (uint32_t)(y * width), width, noise_row);
                for (int x = 0; x < width; x++) {
                    const float noise = noise_row[x];
                    const float m0 = intensity * weight[3 * x], m1 = intensity * weight[3 * x + 1],
                                m2 = intensity * weight[3 * x + 2];
                    n0[x] = fmaf(noise, m0, (1.0f - m0) * p0[x]);
                    n1[x] = fmaf(noise, m1, (1.0f - m1) * p1[x]);
                    n2[x] = fmaf(noise, m2, (1.0f - m2) * p2[x]);
                }
            }
            const float *night0 = dark ? n0 : p0, *night1 = dark ? n1 : p1, *night2 = dark ? n2 : p2;
            /* the blend into p, the sleep filter over it, then back to interleaved pixels */
            for (int x = 0; x < width; x++) {
                const float enhance =
                    fmaf(night2[x], 0.114f, fmaf(night0[x], 0.299f, night1[x] * 0.587f)) * 0.6f;
                const float t0 = fmaf(fmaf(night0[x], 0.4f, enhance), 0.5f, 0.0f);
                const float t1 = fmaf(fmaf(night1[x], 0.4f, enhance), 0.5f, 8.0f);
                const float t2 = fmaf(fmaf(night2[x], 0.4f, enhance), 0.5f, 32.0f);
                p0[x] = fmaf(d, p0[x], one_minus_d * t0);
                p1[x] = fmaf(d, p1[x], one_minus_d * t1);
                p2[x] = fmaf(d, p2[x], one_minus_d * t2);
            }
            if (sleeping)
                for (int x = 0; x < width; x++) {
                    const float grey = fmaf(p2[x], 0.114f, fmaf(p0[x], 0.299f, p1[x] * 0.587f)) * 0.5f;
                    p0[x] = grey + 0.0f;
                    p1[x] = grey + 0.0f;
                    p2[x] = grey + 8.0f;
                }
            float *o = out + y * width * 3;
            for (int x = 0; x < width; x++) {
                o[3 * x] = p0[x] * scale;
                o[3 * x + 1] = p1[x] * scale;
                o[3 * x + 2] = p2[x] * scale;
            }
        }
    craftax_classic_pixels_inventory_tiles(s, atlas, l, out, scale, b);
}

/* craftax_classic_render_pixels_lanes's picture (one lane), a pixel row at a time as
 * craftax_render_pixels_rows; blocks above CRAFTAX_PIXEL_ROWS_MAX_BLOCK a pixel at a time. */
static inline CRAFTAX_HD void craftax_classic_render_pixels_rows(const CraftaxClassicState *s, const float *atlas,
                                                                 const CraftaxPixelLayout *l,
                                                                 CraftaxClassicPixelView *v, float *out, int scaled) {
    if (l->block > CRAFTAX_PIXEL_ROWS_MAX_BLOCK || l->view_rows != CRAFTAX_CLASSIC_OBS_ROWS ||
        l->view_cols != CRAFTAX_CLASSIC_OBS_COLS) {
        craftax_classic_render_pixels_lanes(s, atlas, l, v, out, scaled, 0, 1);
        return;
    }
    craftax_classic_pixels_view(s, atlas, l, v);
    const float scale = scaled ? CRAFTAX_PIXEL_SCALE : 1.0f;
    if (l->block == CRAFTAX_CLASSIC_PIXEL_AGENT_BLOCK)
        craftax_classic_pixels_rows_of_block(s, atlas, l, v, out, scale, CRAFTAX_CLASSIC_PIXEL_AGENT_BLOCK);
    else
        craftax_classic_pixels_rows_of_block(s, atlas, l, v, out, scale, l->block);
}

static inline CRAFTAX_HD void craftax_classic_render_pixels(const CraftaxClassicState *s, const float *atlas,
                                                            const CraftaxPixelLayout *l, float *out, int scaled) {
    CraftaxClassicPixelView v;
    craftax_classic_render_pixels_rows(s, atlas, l, &v, out, scaled);
}

#endif
