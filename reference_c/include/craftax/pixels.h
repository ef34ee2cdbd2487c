/* craftax/pixels.h: the pixel observation, make_craftax_pixel_renderer of
 * craftax/craftax/renderer.py: a (9 + 4) x 11 grid of cells of `block` pixels each, RGB
 * float32; Craftax-Pixels-v1 renders at block 10 and divides by 255 (130 x 110 x 3).
 *
 * The textures are upstream's images, prepared by pycraftax/textures.py exactly as upstream
 * prepares them, packed into one float32 atlas whose layout is CRAFTAX_PIXEL_SECTIONS below
 * (the packer reads it through craftax_pixels_atlas_section, so the layout lives here only).
 *
 * Upstream draws whole-view layers one after another; every layer touches one cell at a time,
 * so a pixel's value is its cell's layers applied in upstream's order, which is how this file
 * computes it: one pixel at a time (lanes share the pixels, common.h), with the cells' contents
 * looked up once per env (craftax_pixels_view). One function per upstream step:
 *   _add_block_type_to_pixels   craftax_pixels_add_block
 *   _add_item_type_to_pixels    craftax_pixels_add_item
 *   the player sprite           craftax_pixels_add_player
 *   _add_mob_to_pixels          craftax_pixels_add_mob
 *   _add_projectile_to_pixels   craftax_pixels_add_projectile (orientation: craftax_pixels_view)
 *   darkness, night, sleep      craftax_pixels_light_night_sleep
 *   _render_icon(_with_alpha)   craftax_pixels_render_icon, craftax_pixels_render_icon_with_alpha
 *   _render_digit               craftax_pixels_render_digit
 *   _render_two_digit_number    craftax_pixels_render_two_digit_number
 *   the inventory's order       craftax_pixels_inventory_cell
 *   render_craftax_pixels       craftax_render_pixels_lanes
 *
 * Float arithmetic: the map layers before the light are sums and 0/1-alpha blends of integer
 * texture values (exact). The light, night and sleep blend is the one place rounding happens;
 * its multiply-adds are fused as XLA:CPU's kernel for the pixel env fuses them (LLVM contracts
 * them in the one loop fusion that renders the view; read from its object code for the jitted,
 * vmapped reset_env and step_env of craftax 1.6.1 under jaxlib 0.10.2), written here as fmaf().
 */
#ifndef CRAFTAX_PIXELS_H
#define CRAFTAX_PIXELS_H

#include <math.h>
#include <stddef.h>

#include "obs.h"
#include "rng.h"
#include "state.h"

/* For the row renderer's body and the inventory draws under it, compiled once per agent block
 * size (the sizes constants: short copies become moves, loops get known trip counts). */
#if defined(__GNUC__) && !defined(__CUDACC__)
#define CRAFTAX_PIXEL_SPECIALISED static inline __attribute__((always_inline))
#else
#define CRAFTAX_PIXEL_SPECIALISED static inline
#endif

enum {
    CRAFTAX_PIXEL_INVENTORY_ROWS = 4, /* upstream INVENTORY_OBS_HEIGHT */
    CRAFTAX_PIXEL_AGENT_BLOCK = 10,   /* BLOCK_PIXEL_SIZE_AGENT: Craftax-Pixels-v1 */
    CRAFTAX_PIXEL_HUMAN_BLOCK = 64,   /* BLOCK_PIXEL_SIZE_HUMAN: upstream's play window */
    CRAFTAX_PIXEL_MIN_BLOCK = 3,
    CRAFTAX_PIXEL_MAX_BLOCK = 256,
    CRAFTAX_PIXEL_VIEW_CELLS = CRAFTAX_OBS_ROWS * CRAFTAX_OBS_COLS,
    /* the mob slots drawn, in upstream's order: melee 0-2, passive 3-5, ranged 6-7, mob
     * projectiles 8-10, player projectiles 11-13 (obs.h's scatter order) */
    CRAFTAX_PIXEL_SLOTS = CRAFTAX_OBS_MOB_SLOTS,
};

/* The sizes a section's dimensions are given in. */
enum {
    CRAFTAX_PIXEL_DIM_ONE,   /* 1 */
    CRAFTAX_PIXEL_DIM_BLOCK, /* a map cell: block */
    CRAFTAX_PIXEL_DIM_SMALL, /* an inventory icon: int(0.8 * block) */
    CRAFTAX_PIXEL_DIM_DIGIT, /* a digit: int(0.4 * block) (Classic: int(0.6 * block)) */
    CRAFTAX_PIXEL_DIM_VIEW_ROWS,
    CRAFTAX_PIXEL_DIM_VIEW_COLS,
};

/* X(ID, upstream texture name, count, rows, cols, channels): the atlas, section by section,
 * each float32 [count, rows, cols, channels] in C order as upstream's array of that name
 * (the full-map textures are the per-cell ones: upstream tiles or pads those). */
#define CRAFTAX_PIXEL_SECTIONS(X)                                                   \
    X(BLOCK, "block_textures", 37, BLOCK, BLOCK, 3)                                 \
    X(SMALL_BLOCK, "smaller_block_textures", 37, SMALL, SMALL, 3)                   \
    X(ITEM, "item_textures", 5, BLOCK, BLOCK, 4)                                    \
    X(PLAYER, "player_textures", 5, BLOCK, BLOCK, 4)                                \
    X(DIGIT, "number_textures", 10, DIGIT, DIGIT, 3)                                \
    X(DIGIT_ALPHA, "number_textures_alpha", 10, DIGIT, DIGIT, 3)                    \
    X(DIGIT0, "number_textures_with_zero", 10, DIGIT, DIGIT, 3)                     \
    X(DIGIT0_ALPHA, "number_textures_alpha_with_zero", 10, DIGIT, DIGIT, 3)         \
    X(HEALTH, "health_texture", 1, SMALL, SMALL, 3)                                 \
    X(HUNGER, "hunger_texture", 1, SMALL, SMALL, 3)                                 \
    X(THIRST, "thirst_texture", 1, SMALL, SMALL, 3)                                 \
    X(ENERGY, "energy_texture", 1, SMALL, SMALL, 3)                                 \
    X(MANA, "mana_texture", 1, SMALL, SMALL, 3)                                     \
    X(PICKAXE, "pickaxe_textures", 5, SMALL, SMALL, 3)                              \
    X(SWORD, "sword_textures", 5, SMALL, SMALL, 3)                                  \
    X(ARMOUR, "armour_textures", 12, SMALL, SMALL, 3)                               \
    X(BOW, "bow_textures", 2, SMALL, SMALL, 3)                                      \
    X(PLAYER_PROJECTILE, "player_projectile_textures", 4, SMALL, SMALL, 3)          \
    X(SAPLING, "sapling_texture", 1, SMALL, SMALL, 3)                               \
    X(TORCH, "torch_inv_texture", 1, SMALL, SMALL, 3)                               \
    X(MELEE, "melee_mob_textures", 8, BLOCK, BLOCK, 3)                              \
    X(MELEE_ALPHA, "melee_mob_texture_alphas", 8, BLOCK, BLOCK, 3)                  \
    X(PASSIVE, "passive_mob_textures", 3, BLOCK, BLOCK, 3)                          \
    X(PASSIVE_ALPHA, "passive_mob_texture_alphas", 3, BLOCK, BLOCK, 3)              \
    X(RANGED, "ranged_mob_textures", 8, BLOCK, BLOCK, 3)                            \
    X(RANGED_ALPHA, "ranged_mob_texture_alphas", 8, BLOCK, BLOCK, 3)                \
    X(PROJECTILE, "projectile_textures", 8, BLOCK, BLOCK, 3)                        \
    X(PROJECTILE_ALPHA, "projectile_texture_alphas", 8, BLOCK, BLOCK, 3)            \
    X(NIGHT_NOISE, "night_noise_intensity_texture", 1, VIEW_ROWS, VIEW_COLS, 3)     \
    X(POTION, "potion_textures", 6, SMALL, SMALL, 3)                                \
    X(BOOK, "book_texture", 1, SMALL, SMALL, 3)                                     \
    X(FIREBALL, "fireball_inv_texture", 1, SMALL, SMALL, 3)                         \
    X(ICEBALL, "iceball_inv_texture", 1, SMALL, SMALL, 3)                           \
    X(XP, "xp_texture", 1, SMALL, SMALL, 3)                                         \
    X(DEX, "dex_texture", 1, SMALL, SMALL, 3)                                       \
    X(STR, "str_texture", 1, SMALL, SMALL, 3)                                       \
    X(INT, "int_texture", 1, SMALL, SMALL, 3)                                       \
    X(ARMOUR_ENCHANTMENT, "armour_enchantment_textures", 12, SMALL, SMALL, 4)       \
    X(SWORD_ENCHANTMENT, "sword_enchantment_textures", 3, SMALL, SMALL, 4)          \
    X(ARROW_ENCHANTMENT, "arrow_enchantment_textures", 3, SMALL, SMALL, 4)

#define CRAFTAX_PIXEL_SECTION_ID(ID, name, count, rows, cols, channels) CRAFTAX_PIXEL_##ID,
enum { CRAFTAX_PIXEL_SECTIONS(CRAFTAX_PIXEL_SECTION_ID) CRAFTAX_PIXEL_NUM_SECTIONS };
#undef CRAFTAX_PIXEL_SECTION_ID

typedef struct {
    const char *name;
    int32_t count, rows, cols, channels; /* the dimension kinds CRAFTAX_PIXEL_DIM_* */
} CraftaxPixelSectionShape;

/* Where everything is in an atlas of one block size. */
typedef struct {
    int32_t block, small, digit;      /* pixels of a map cell, an inventory icon, a digit */
    int32_t view_rows, view_cols;     /* cells of the map view (upstream OBS_DIM) */
    int32_t inventory_rows;           /* cells of the inventory under it */
    int32_t height, width;            /* of the picture: (view_rows + inventory_rows) x view_cols cells */
    int32_t icon_left;                /* an icon's offset inside its cell */
    uint32_t offset[CRAFTAX_PIXEL_NUM_SECTIONS]; /* of each section, in floats */
    uint32_t size;                    /* of the whole atlas, in floats */
} CraftaxPixelLayout;

static inline CRAFTAX_HD int32_t craftax_pixel_dim(const CraftaxPixelLayout *l, int32_t kind) {
    switch (kind) {
    case CRAFTAX_PIXEL_DIM_BLOCK: return l->block;
    case CRAFTAX_PIXEL_DIM_SMALL: return l->small;
    case CRAFTAX_PIXEL_DIM_DIGIT: return l->digit;
    case CRAFTAX_PIXEL_DIM_VIEW_ROWS: return l->view_rows * l->block;
    case CRAFTAX_PIXEL_DIM_VIEW_COLS: return l->view_cols * l->block;
    default: return 1;
    }
}

/* A section's shape, with the dimension kinds as given in a CRAFTAX_PIXEL_SECTIONS table. */
#define CRAFTAX_PIXEL_SECTION_SHAPE(ID, name, count, rows, cols, channels) \
    {name, count, CRAFTAX_PIXEL_DIM_##rows, CRAFTAX_PIXEL_DIM_##cols, channels},
static CRAFTAX_LANE_TABLE CraftaxPixelSectionShape CRAFTAX_PIXEL_SECTION_SHAPES[CRAFTAX_PIXEL_NUM_SECTIONS] = {
    CRAFTAX_PIXEL_SECTIONS(CRAFTAX_PIXEL_SECTION_SHAPE)};

/* Floats of one entry of a section ([rows, cols, channels]) */
static inline CRAFTAX_HD uint32_t craftax_pixel_entry_size(const CraftaxPixelLayout *l,
                                                          const CraftaxPixelSectionShape *s) {
    return (uint32_t)(craftax_pixel_dim(l, s->rows) * craftax_pixel_dim(l, s->cols) * s->channels);
}

/* The layout of a game's sections (`shapes`, n of them) at `block` pixels a cell; `digit_scale`
 * is the digit size over the block size (0.4 in the full game, 0.6 in Classic), computed as
 * upstream's int(block * scale) in double precision. */
static inline CRAFTAX_HD void craftax_pixel_layout_of(CraftaxPixelLayout *l, int32_t block, double digit_scale,
                                                     int32_t view_rows, int32_t view_cols, int32_t inventory_rows,
                                                     const CraftaxPixelSectionShape *shapes, int n) {
    l->block = block;
    l->small = (int32_t)(block * 0.8);
    l->digit = (int32_t)(block * digit_scale);
    l->view_rows = view_rows;
    l->view_cols = view_cols;
    l->inventory_rows = inventory_rows;
    l->height = (view_rows + inventory_rows) * block;
    l->width = view_cols * block;
    l->icon_left = (block - l->small) / 2;
    uint32_t at = 0;
    for (int i = 0; i < n; i++) {
        l->offset[i] = at;
        at += (uint32_t)shapes[i].count * craftax_pixel_entry_size(l, &shapes[i]);
    }
    l->size = at;
}

static inline CRAFTAX_HD void craftax_pixels_layout(CraftaxPixelLayout *l, int32_t block) {
    craftax_pixel_layout_of(l, block, 0.4, CRAFTAX_OBS_ROWS, CRAFTAX_OBS_COLS, CRAFTAX_PIXEL_INVENTORY_ROWS,
                            CRAFTAX_PIXEL_SECTION_SHAPES, CRAFTAX_PIXEL_NUM_SECTIONS);
}

/* Entry `index` of section `section`, index as JAX gathers it: a negative index wraps once,
 * then it is clamped to the section. */
static inline CRAFTAX_HD const float *craftax_pixel_texture(const float *atlas, const CraftaxPixelLayout *l,
                                                           const CraftaxPixelSectionShape *shapes, int section,
                                                           int32_t index) {
    const int32_t count = shapes[section].count;
    if (index < 0) index += count;
    index = index < 0 ? 0 : index >= count ? count - 1 : index;
    return atlas + l->offset[section] + (uint32_t)index * craftax_pixel_entry_size(l, &shapes[section]);
}

/* int32 a - b + c with two's-complement wrap-around, as XLA computes it. */
static inline CRAFTAX_HD int32_t craftax_wrap_sub_add(int32_t a, int32_t b, int32_t c) {
    return (int32_t)((uint32_t)a - (uint32_t)b + (uint32_t)c);
}

/* -- the map view ------------------------------------------------------------------------- */

/* What upstream's whole-view layers read, per cell of the 9 x 11 view and per mob slot. */
typedef struct {
    uint8_t block[CRAFTAX_PIXEL_VIEW_CELLS]; /* after the necromancer's vulnerable swap */
    uint8_t item[CRAFTAX_PIXEL_VIEW_CELLS];  /* after the blocked-ladder swap */
    float light[CRAFTAX_PIXEL_VIEW_CELLS];   /* light map, 0 off the map */
    uint16_t slots[CRAFTAX_PIXEL_VIEW_CELLS]; /* bit k: mob slot k is drawn in this cell */
    /* per slot: texture and alpha entry (float offsets in the atlas) and, for projectiles,
     * the sprite's orientation: bit 0 flip its rows, bit 1 transpose it */
    uint32_t slot_texture[CRAFTAX_PIXEL_SLOTS], slot_alpha[CRAFTAX_PIXEL_SLOTS];
    uint8_t slot_orientation[CRAFTAX_PIXEL_SLOTS];
    uint32_t player_texture; /* the player's sprite entry */
    float daylight, sleep_level;
    int night_noise;         /* whether the night noise is mixed in (its weight is not 0) */
} CraftaxPixelView;

static inline CRAFTAX_HD int craftax_pixels_slot_section(int slot, int *index_in_class) {
    if (slot < 3) return *index_in_class = slot, CRAFTAX_PIXEL_MELEE;
    if (slot < 6) return *index_in_class = slot - 3, CRAFTAX_PIXEL_PASSIVE;
    if (slot < 8) return *index_in_class = slot - 6, CRAFTAX_PIXEL_RANGED;
    if (slot < 11) return *index_in_class = slot - 8, CRAFTAX_PIXEL_PROJECTILE;
    return *index_in_class = slot - 11, CRAFTAX_PIXEL_PROJECTILE;
}

/* The view of state `s` (lane 0's work; it is small). */
static inline CRAFTAX_HD void craftax_pixels_view(const CraftaxState *s, const float *atlas,
                                                  const CraftaxPixelLayout *l, CraftaxPixelView *v) {
    const int level = s->player_level;
    const CraftaxPixelSectionShape *shapes = CRAFTAX_PIXEL_SECTION_SHAPES;
    const int boss_block = craftax_is_boss_vulnerable(s) ? BLOCK_NECROMANCER_VULNERABLE : BLOCK_NECROMANCER;
    const int ladder_down =
        s->monsters_killed[level] >= CRAFTAX_MONSTERS_KILLED_TO_CLEAR_LEVEL ? ITEM_LADDER_DOWN : ITEM_LADDER_DOWN_BLOCKED;
    for (int r = 0; r < CRAFTAX_OBS_ROWS; r++) {
        for (int c = 0; c < CRAFTAX_OBS_COLS; c++) {
            const int cell = r * CRAFTAX_OBS_COLS + c;
            const int32_t x = s->player_position[0] - CRAFTAX_OBS_ROWS / 2 + r;
            const int32_t y = s->player_position[1] - CRAFTAX_OBS_COLS / 2 + c;
            const int inside = x >= 0 && y >= 0 && x < CRAFTAX_MAP_SIZE && y < CRAFTAX_MAP_SIZE;
            int block = inside ? s->map[level][x][y] : BLOCK_OUT_OF_BOUNDS;
            int item = inside ? s->item_map[level][x][y] : ITEM_NONE;
            v->block[cell] = (uint8_t)(block == BLOCK_NECROMANCER ? boss_block : block);
            v->item[cell] = (uint8_t)(item == ITEM_LADDER_DOWN ? ladder_down : item);
            v->light[cell] = inside ? s->light_map[level][x][y] : 0.0f;
            v->slots[cell] = 0;
        }
    }
    const CraftaxLevelMobs *m = &s->mobs[level];
    for (int slot = 0; slot < CRAFTAX_PIXEL_SLOTS; slot++) {
        const int32_t *pos;
        uint8_t mask;
        int32_t type_id;
        craftax_obs_mob_slot_fields(m, slot, &pos, &mask, &type_id);
        int k;
        const int section = craftax_pixels_slot_section(slot, &k);
        v->slot_texture[slot] =
            (uint32_t)(craftax_pixel_texture(atlas, l, shapes, section, type_id) - atlas);
        v->slot_alpha[slot] = (uint32_t)(craftax_pixel_texture(atlas, l, shapes, section + 1, type_id) - atlas);
        uint8_t orientation = 0;
        if (slot >= 8) {
            const int32_t *d = slot < 11 ? m->mob_projectile_directions[k] : m->player_projectile_directions[k];
            orientation = (uint8_t)((d[0] > 0 || d[1] > 0) | (d[1] != 0) << 1);
        }
        v->slot_orientation[slot] = orientation;
        const int32_t lx = craftax_wrap_sub_add(pos[0], s->player_position[0], CRAFTAX_OBS_ROWS / 2);
        const int32_t ly = craftax_wrap_sub_add(pos[1], s->player_position[1], CRAFTAX_OBS_COLS / 2);
        if (mask && lx >= 0 && ly >= 0 && lx < CRAFTAX_OBS_ROWS && ly < CRAFTAX_OBS_COLS)
            v->slots[lx * CRAFTAX_OBS_COLS + ly] |= (uint16_t)(1u << slot);
    }
    v->player_texture = (uint32_t)(craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_PLAYER,
                                                         s->is_sleeping ? 4 : s->player_direction - 1) -
                                   atlas);
    v->daylight = level == 0 ? s->light_level : 1.0f;
    v->sleep_level = 1.0f - (s->is_sleeping ? 0.5f : 0.0f);
    v->night_noise = fmaxf((0.5f - v->daylight) * 2.0f, 0.0f) != 0.0f;
}

/* _add_block_type_to_pixels: the cell's block texture (a block id outside the 37 draws black). */
static inline CRAFTAX_HD void craftax_pixels_add_block(float p[3], const float *atlas, const CraftaxPixelLayout *l,
                                                       int block, int iy, int ix) {
    if (block >= CRAFTAX_NUM_BLOCK_TYPES) {
        p[0] = p[1] = p[2] = 0.0f;
        return;
    }
    const float *t = atlas + l->offset[CRAFTAX_PIXEL_BLOCK] + ((uint32_t)block * l->block * l->block +
                                                             (uint32_t)(iy * l->block + ix)) * 3u;
    p[0] = t[0];
    p[1] = t[1];
    p[2] = t[2];
}

/* _add_item_type_to_pixels: items 1..4 blend with their 0/1 alpha. */
static inline CRAFTAX_HD void craftax_pixels_add_item(float p[3], const float *atlas, const CraftaxPixelLayout *l,
                                                      int item, int iy, int ix) {
    if (item < 1 || item >= CRAFTAX_NUM_ITEM_TYPES) return;
    const float *t = atlas + l->offset[CRAFTAX_PIXEL_ITEM] + ((uint32_t)item * l->block * l->block +
                                                            (uint32_t)(iy * l->block + ix)) * 4u;
    for (int k = 0; k < 3; k++) p[k] = p[k] * (1.0f - t[3]) + t[k] * t[3];
}

/* The player's sprite, in the centre cell: rgb over the map with its alpha. */
static inline CRAFTAX_HD void craftax_pixels_add_player(float p[3], const float *texture, const CraftaxPixelLayout *l,
                                                        int iy, int ix) {
    const float *t = texture + (iy * l->block + ix) * 4;
    for (int k = 0; k < 3; k++) p[k] = p[k] * (1.0f - t[3]) + t[k] * t[3];
}

/* _add_mob_to_pixels of an on-screen mob: (1 - alpha) * pixel + texture * alpha (the texture
 * already carries its 0/1 alpha). Off-screen and dead slots leave the pixels as they are. */
static inline CRAFTAX_HD void craftax_pixels_add_mob(float p[3], const float *texture, const float *alpha,
                                                     const CraftaxPixelLayout *l, int iy, int ix) {
    const int at = (iy * l->block + ix) * 3;
    for (int k = 0; k < 3; k++) p[k] = (1.0f - alpha[at + k]) * p[k] + texture[at + k] * alpha[at + k];
}

/* _add_projectile_to_pixels: the sprite flipped upside down when it moves down or right
 * (direction[0] > 0 or direction[1] > 0), then transposed when it moves sideways. */
static inline CRAFTAX_HD void craftax_pixels_add_projectile(float p[3], const float *texture, const float *alpha,
                                                            const CraftaxPixelLayout *l, int orientation, int iy,
                                                            int ix) {
    int r = (orientation & 2) ? ix : iy, c = (orientation & 2) ? iy : ix;
    if (orientation & 1) r = l->block - 1 - r;
    craftax_pixels_add_mob(p, texture, alpha, l, r, c);
}

/* Darkness, night and sleep of one map pixel of light map value `light` (its cell's), at
 * picture row `y`, column `x`:
 *   lit   = light * pixel
 *   night = 0.5 * night_colour + 0.5 * ((1 - mask) * lit + mask * noise), mask = intensity * max(2 (0.5 - daylight), 0)
 *   out   = sleep_level * (daylight * lit + (1 - daylight) * night)
 * noise = 95 * uniform(state_rng, view pixels)[y, x] + 32, drawn only where its weight is not
 * 0 (it enters as weight * noise, which is then 0 whatever the noise). */
static inline CRAFTAX_HD void craftax_pixels_light_night_sleep(float p[3], const CraftaxState *s, const float *atlas,
                                                               const CraftaxPixelLayout *l,
                                                               const CraftaxPixelView *v, float light, int y, int x) {
    const float half_night_colour[3] = {0.0f, 8.0f, 32.0f}; /* 0.5 * (0, 16, 64), folded by XLA */
    const float d = v->daylight;
    const float intensity = fmaxf((0.5f - d) * 2.0f, 0.0f);
    const int view_cols = l->view_cols * l->block;
    float noise = 0.0f;
    if (v->night_noise) {
        const CraftaxKey key = {{s->state_rng[0], s->state_rng[1]}};
        noise = fmaf(craftax_uniform(key, (uint32_t)(y * view_cols + x)), 95.0f, 32.0f);
    }
    const float *weight = atlas + l->offset[CRAFTAX_PIXEL_NIGHT_NOISE] + (uint32_t)(y * view_cols + x) * 3u;
    for (int k = 0; k < 3; k++) {
        const float lit = light * p[k];
        const float mask = weight[k] * intensity;
        const float mixed = fmaf(noise, mask, (1.0f - mask) * lit);
        const float night = fmaf(mixed, 0.5f, half_night_colour[k]);
        p[k] = v->sleep_level * fmaf(d, lit, (1.0f - d) * night);
    }
}

#define CRAFTAX_PIXEL_CENTRE_CELL ((CRAFTAX_OBS_ROWS / 2) * CRAFTAX_OBS_COLS + CRAFTAX_OBS_COLS / 2)

/* The layers over the block of cell `cell` at (iy, ix) inside it: its item, the player, its
 * mobs and projectiles, in upstream's order. */
static inline CRAFTAX_HD void craftax_pixels_add_sprites(float p[3], const float *atlas, const CraftaxPixelLayout *l,
                                                         const CraftaxPixelView *v, int cell, int iy, int ix) {
    craftax_pixels_add_item(p, atlas, l, v->item[cell], iy, ix);
    if (cell == CRAFTAX_PIXEL_CENTRE_CELL) craftax_pixels_add_player(p, atlas + v->player_texture, l, iy, ix);
    for (uint32_t slots = v->slots[cell]; slots; slots &= slots - 1) {
        const int slot = craftax_popc32((slots & (0u - slots)) - 1u);
        const float *texture = atlas + v->slot_texture[slot], *alpha = atlas + v->slot_alpha[slot];
        if (slot < 8)
            craftax_pixels_add_mob(p, texture, alpha, l, iy, ix);
        else
            craftax_pixels_add_projectile(p, texture, alpha, l, v->slot_orientation[slot], iy, ix);
    }
}

/* Whether cell `cell` has anything over its block (else its pixels are the block texture's). */
static inline CRAFTAX_HD int craftax_pixels_has_sprites(const CraftaxPixelView *v, int cell) {
    return (v->item[cell] >= 1 && v->item[cell] < CRAFTAX_NUM_ITEM_TYPES) || cell == CRAFTAX_PIXEL_CENTRE_CELL ||
           v->slots[cell] != 0;
}

/* Map pixel (y, x) of the view, all layers, before the division by 255. */
static inline CRAFTAX_HD void craftax_pixels_map_pixel(float p[3], const CraftaxState *s, const float *atlas,
                                                       const CraftaxPixelLayout *l, const CraftaxPixelView *v, int y,
                                                       int x) {
    const int b = l->block;
    const int cell = (y / b) * CRAFTAX_OBS_COLS + x / b, iy = y % b, ix = x % b;
    craftax_pixels_add_block(p, atlas, l, v->block[cell], iy, ix);
    craftax_pixels_add_sprites(p, atlas, l, v, cell, iy, ix);
    craftax_pixels_light_night_sleep(p, s, atlas, l, v, v->light[cell], y, x);
}

/* -- the inventory ------------------------------------------------------------------------ */

/* What an inventory draw paints: one pixel (p, at (iy, ix) in its cell), or, where `tile` is
 * not NULL, the whole cell at once (tile [block, block, 3], p and iy, ix unused): the draws
 * below apply the same arithmetic to every pixel of their square. */
typedef struct {
    float p[3];
    int iy, ix;
    float *tile;
} CraftaxPixelCellPoint;

/* Calls BODY(p, r, c) for every pixel p of the square [top, top + size) x [left, left + size)
 * that q paints, (r, c) its place in the square. */
#define CRAFTAX_PIXELS_FOR_SQUARE(q, l, top, left, size, BODY)                                  \
    do {                                                                                        \
        if ((q)->tile) {                                                                        \
            for (int r = 0; r < (size); r++)                                                    \
                for (int c = 0; c < (size); c++) {                                              \
                    float *p = (q)->tile + (((top) + r) * (l)->block + (left) + c) * 3;         \
                    BODY                                                                        \
                }                                                                               \
        } else {                                                                                \
            const int r = (q)->iy - (top), c = (q)->ix - (left);                                \
            if (r >= 0 && c >= 0 && r < (size) && c < (size)) {                                 \
                float *p = (q)->p;                                                              \
                BODY                                                                            \
            }                                                                                   \
        }                                                                                       \
    } while (0)

/* _render_icon: the icon's square (upstream's slice of the cell) set to `texture`
 * ([small, small, 3]; NULL: smaller_empty_texture, zeros). */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_render_icon(CraftaxPixelCellPoint *q, const CraftaxPixelLayout *l,
                                                         const float *texture) {
    CRAFTAX_PIXELS_FOR_SQUARE(q, l, l->icon_left, l->icon_left, l->small, {
        for (int k = 0; k < 3; k++) p[k] = texture ? texture[(r * l->small + c) * 3 + k] : 0.0f;
    });
}

/* _render_icon_with_alpha: `texture` [small, small, 4] over the icon's square. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_render_icon_with_alpha(CraftaxPixelCellPoint *q,
                                                                    const CraftaxPixelLayout *l, const float *texture) {
    CRAFTAX_PIXELS_FOR_SQUARE(q, l, l->icon_left, l->icon_left, l->small, {
        const float *t = texture + (r * l->small + c) * 4;
        for (int k = 0; k < 3; k++) p[k] = p[k] * (1.0f - t[3]) + t[k] * t[3];
    });
}

/* One digit (texture and alpha [digit, digit, 3]) in the square of side `digit` at (top,
 * left) of the cell: pixels *= 1 - alpha, then += texture. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_put_digit_at(CraftaxPixelCellPoint *q, const CraftaxPixelLayout *l,
                                                          const float *texture, const float *alpha, int top,
                                                          int left) {
    CRAFTAX_PIXELS_FOR_SQUARE(q, l, top, left, l->digit, {
        const int at = (r * l->digit + c) * 3;
        for (int k = 0; k < 3; k++) p[k] = p[k] * (1.0f - alpha[at + k]);
        for (int k = 0; k < 3; k++) p[k] = p[k] + texture[at + k];
    });
}

/* One digit in the cell's bottom-right digit square, `left` pixels from the cell's left edge. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_put_digit(CraftaxPixelCellPoint *q, const CraftaxPixelLayout *l,
                                                       const float *texture, const float *alpha, int left) {
    craftax_pixels_put_digit_at(q, l, texture, alpha, l->block - l->digit, left);
}

/* _render_digit: `number` in the ones place, drawn with number_textures (0 draws nothing). */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_render_digit(CraftaxPixelCellPoint *q, const float *atlas,
                                                          const CraftaxPixelLayout *l, int32_t number) {
    const CraftaxPixelSectionShape *shapes = CRAFTAX_PIXEL_SECTION_SHAPES;
    craftax_pixels_put_digit(q, l, craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_DIGIT, number),
                             craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_DIGIT_ALPHA, number),
                             l->block - l->digit);
}

/* Python's floor division and modulo of int32 by 10 (jnp's // and %). */
static inline CRAFTAX_HD int32_t craftax_floor_div10(int32_t n) {
    const int32_t q = n / 10;
    return (n % 10 != 0 && n < 0) ? q - 1 : q;
}

/* _render_two_digit_number: the ones digit (number_textures_with_zero, unless the number is
 * 0), then the tens digit left of it (number_textures, so a 0 draws nothing). */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_render_two_digit_number(CraftaxPixelCellPoint *q, const float *atlas,
                                                                     const CraftaxPixelLayout *l, int32_t number) {
    const CraftaxPixelSectionShape *shapes = CRAFTAX_PIXEL_SECTION_SHAPES;
    const int32_t tens = craftax_floor_div10(number), ones = number - 10 * tens;
    const int zero = number == 0;
    craftax_pixels_put_digit(
        q, l, craftax_pixel_texture(atlas, l, shapes, zero ? CRAFTAX_PIXEL_DIGIT : CRAFTAX_PIXEL_DIGIT0, ones),
        craftax_pixel_texture(atlas, l, shapes, zero ? CRAFTAX_PIXEL_DIGIT_ALPHA : CRAFTAX_PIXEL_DIGIT0_ALPHA, ones),
        l->block - l->digit);
    craftax_pixels_put_digit(q, l, craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_DIGIT, tens),
                             craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_DIGIT_ALPHA, tens),
                             l->block - 2 * l->digit);
}

/* XLA's float to int32 conversion: saturating, NaN to 0. */
static inline CRAFTAX_HD int32_t craftax_f32_to_i32(float x) {
    if (x != x) return 0;
    if (x >= 2147483648.0f) return INT32_MAX;
    if (x <= -2147483648.0f) return INT32_MIN;
    return (int32_t)x;
}

/* An icon of section `section`, entry `index`, where `shown`, else the empty icon. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_icon_if(CraftaxPixelCellPoint *q, const float *atlas,
                                                     const CraftaxPixelLayout *l, int shown, int section,
                                                     int32_t index) {
    craftax_pixels_render_icon(
        q, l, shown ? craftax_pixel_texture(atlas, l, CRAFTAX_PIXEL_SECTION_SHAPES, section, index) : NULL);
}
/* A count: its icon where it is > 0, then its two digits. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_count(CraftaxPixelCellPoint *q, const float *atlas,
                                                   const CraftaxPixelLayout *l, int section, int32_t index,
                                                   int32_t count) {
    craftax_pixels_icon_if(q, atlas, l, count > 0, section, index);
    craftax_pixels_render_two_digit_number(q, atlas, l, count);
}

/* The inventory cell (cx, cy): upstream's draws that fall in it, in upstream's order (every
 * draw lies inside one cell, so cells are independent). */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_inventory_cell(CraftaxPixelCellPoint *q, const CraftaxState *s,
                                                            const float *atlas, const CraftaxPixelLayout *l, int cx,
                                                            int cy) {
    const CraftaxInventory *inv = &s->inventory;
    const CraftaxPixelSectionShape *shapes = CRAFTAX_PIXEL_SECTION_SHAPES;
    switch (cy * 16 + cx) {
    case 0 * 16 + 0: {
        /* health: max(floor(health), 1) as int, so its icon always shows */
        int32_t health = craftax_f32_to_i32(fmaxf(floorf(s->player_health), 1.0f));
        if (s->player_health != s->player_health) health = 0; /* XLA's max propagates NaN */
        craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_HEALTH, 0, health);
        return;
    }
    case 0 * 16 + 1: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_HUNGER, 0, s->player_food); return;
    case 0 * 16 + 2: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_THIRST, 0, s->player_drink); return;
    case 0 * 16 + 3: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_ENERGY, 0, s->player_energy); return;
    case 0 * 16 + 4: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_MANA, 0, s->player_mana); return;
    case 2 * 16 + 0: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_SMALL_BLOCK, BLOCK_WOOD, inv->wood); return;
    case 2 * 16 + 1: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_SMALL_BLOCK, BLOCK_STONE, inv->stone); return;
    case 1 * 16 + 0: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_SMALL_BLOCK, BLOCK_COAL, inv->coal); return;
    case 1 * 16 + 1: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_SMALL_BLOCK, BLOCK_IRON, inv->iron); return;
    case 1 * 16 + 2: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_SMALL_BLOCK, BLOCK_DIAMOND, inv->diamond); return;
    case 1 * 16 + 3: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_SMALL_BLOCK, BLOCK_SAPPHIRE, inv->sapphire); return;
    case 1 * 16 + 4: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_SMALL_BLOCK, BLOCK_RUBY, inv->ruby); return;
    case 1 * 16 + 5: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_SAPLING, 0, inv->sapling); return;
    case 2 * 16 + 8:
        craftax_pixels_render_icon(q, l, craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_PICKAXE, inv->pickaxe));
        return;
    case 1 * 16 + 8:
        craftax_pixels_render_icon(q, l, craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_SWORD, inv->sword));
        craftax_pixels_render_icon_with_alpha(
            q, l, craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_SWORD_ENCHANTMENT, s->sword_enchantment));
        return;
    case 1 * 16 + 6:
        craftax_pixels_render_icon(q, l, craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_BOW, inv->bow));
        return;
    case 2 * 16 + 6:
        craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_PLAYER_PROJECTILE, 0, inv->arrows);
        craftax_pixels_render_icon_with_alpha(
            q, l, craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_ARROW_ENCHANTMENT,
                                        s->bow_enchantment * (inv->arrows > 0)));
        return;
    case 0 * 16 + 7:
    case 1 * 16 + 7:
    case 2 * 16 + 7:
    case 3 * 16 + 7: {
        /* armour piece cy: [level, piece] of a [3, 4] table, each index clamped on its own */
        int32_t tier = inv->armour[cy], enchantment = s->armour_enchantments[cy];
        tier = tier < 0 ? tier + 3 : tier;
        tier = tier < 0 ? 0 : tier > 2 ? 2 : tier;
        enchantment = enchantment < 0 ? enchantment + 3 : enchantment;
        enchantment = enchantment < 0 ? 0 : enchantment > 2 ? 2 : enchantment;
        craftax_pixels_render_icon(q, l, craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_ARMOUR, tier * 4 + cy));
        craftax_pixels_render_icon_with_alpha(
            q, l, craftax_pixel_texture(atlas, l, shapes, CRAFTAX_PIXEL_ARMOUR_ENCHANTMENT, enchantment * 4 + cy));
        return;
    }
    case 2 * 16 + 2: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_TORCH, 0, inv->torches); return;
    case 3 * 16 + 0:
    case 3 * 16 + 1:
    case 3 * 16 + 2:
    case 3 * 16 + 3:
    case 3 * 16 + 4:
    case 3 * 16 + 5: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_POTION, cx, inv->potions[cx]); return;
    case 2 * 16 + 3: craftax_pixels_count(q, atlas, l, CRAFTAX_PIXEL_BOOK, 0, inv->books); return;
    case 2 * 16 + 4: craftax_pixels_icon_if(q, atlas, l, s->learned_spells[0], CRAFTAX_PIXEL_FIREBALL, 0); return;
    case 2 * 16 + 5: craftax_pixels_icon_if(q, atlas, l, s->learned_spells[1], CRAFTAX_PIXEL_ICEBALL, 0); return;
    case 0 * 16 + 6: craftax_pixels_render_digit(q, atlas, l, s->player_level); return;
    case 0 * 16 + 9:
        craftax_pixels_icon_if(q, atlas, l, s->player_xp > 0, CRAFTAX_PIXEL_XP, 0);
        craftax_pixels_render_digit(q, atlas, l, s->player_xp);
        return;
    case 1 * 16 + 9:
        craftax_pixels_icon_if(q, atlas, l, 1, CRAFTAX_PIXEL_DEX, 0);
        craftax_pixels_render_digit(q, atlas, l, s->player_dexterity);
        return;
    case 2 * 16 + 9:
        craftax_pixels_icon_if(q, atlas, l, 1, CRAFTAX_PIXEL_STR, 0);
        craftax_pixels_render_digit(q, atlas, l, s->player_strength);
        return;
    case 3 * 16 + 9:
        craftax_pixels_icon_if(q, atlas, l, 1, CRAFTAX_PIXEL_INT, 0);
        craftax_pixels_render_digit(q, atlas, l, s->player_intelligence);
        return;
    default: return;
    }
}

/* -- the picture ---------------------------------------------------------------------------- */

/* upstream's pixels / 255 of the pixel env (XLA multiplies by the float32 reciprocal) */
#define CRAFTAX_PIXEL_SCALE 0.00392156886f

/* render_craftax_pixels(state) of `block` pixels a cell into out [height, width, 3]: times
 * 1/255 as the pixel envs' get_obs when `scaled`, else upstream's 0..255 values. `v` is the
 * view's scratch (lane 0 fills it; on a GPU shared by the lanes). Lanes share the pixels. */
static inline CRAFTAX_HD void craftax_render_pixels_lanes(const CraftaxState *s, const float *atlas,
                                                          const CraftaxPixelLayout *l, CraftaxPixelView *v,
                                                          float *out, int scaled, int lane, int lanes) {
    if (lane == 0) craftax_pixels_view(s, atlas, l, v);
    craftax_lanes_sync(lanes);
    const float scale = scaled ? CRAFTAX_PIXEL_SCALE : 1.0f;
    const int map_rows = l->view_rows * l->block;
    CRAFTAX_FOR_LANE(i, l->height * l->width, lane, lanes) {
        const int y = i / l->width, x = i % l->width;
        float p[3];
        if (y < map_rows) {
            craftax_pixels_map_pixel(p, s, atlas, l, v, y, x);
        } else {
            CraftaxPixelCellPoint q = {{0.0f, 0.0f, 0.0f}, (y - map_rows) % l->block, x % l->block, NULL};
            craftax_pixels_inventory_cell(&q, s, atlas, l, x / l->block, (y - map_rows) / l->block);
            p[0] = q.p[0];
            p[1] = q.p[1];
            p[2] = q.p[2];
        }
        for (int k = 0; k < 3; k++) out[i * 3 + k] = p[k] * scale;
    }
    craftax_lanes_sync(lanes);
}

/* -- the picture a row at a time (CPU) ------------------------------------------------------- */

/* The row renderer's largest block (its row buffers are on the stack); larger pictures (the
 * human sizes) are drawn a pixel at a time. */
enum { CRAFTAX_PIXEL_ROWS_MAX_BLOCK = 16 };
#define CRAFTAX_PIXEL_ROW_FLOATS (CRAFTAX_OBS_COLS * CRAFTAX_PIXEL_ROWS_MAX_BLOCK * 3)

/* The night noise of view pixels [first, first + n): 95 * uniform(state_rng)[i] + 32. Where
 * GCC builds for x86-64 on glibc (ifunc), a clone of the loop for AVX-512 CPUs is picked at load
 * time: its rotates are one instruction and its lanes twice as many (the hash about 2x faster on
 * this project's EPYC); the integer hash and the fused multiply-add are exact either way. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__) && defined(__x86_64__) && \
    defined(__ELF__) && defined(__GLIBC__)
#define CRAFTAX_PIXEL_NOISE_CLONES 1
__attribute__((target_clones("arch=x86-64-v4", "default"), unused)) static void
craftax_pixels_night_noise_host(CraftaxKey key, uint32_t first, int n, float *out) {
    for (int x = 0; x < n; x++) out[x] = fmaf(craftax_uniform(key, first + (uint32_t)x), 95.0f, 32.0f);
}
#endif
static inline CRAFTAX_HD void craftax_pixels_night_noise(CraftaxKey key, uint32_t first, int n, float *out) {
#if defined(CRAFTAX_PIXEL_NOISE_CLONES) && !defined(__CUDA_ARCH__)
    craftax_pixels_night_noise_host(key, first, n, out);
#else
    for (int x = 0; x < n; x++) out[x] = fmaf(craftax_uniform(key, first + (uint32_t)x), 95.0f, 32.0f);
#endif
}

/* Row iy of cell `cell` before the light: its b pixels into seg [b, 3]. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_cell_row(float *seg, const float *atlas,
                                                                  const CraftaxPixelLayout *l,
                                                                  const CraftaxPixelView *v, int cell, int iy, int b) {
    const int block = v->block[cell];
    if (block >= CRAFTAX_NUM_BLOCK_TYPES) {
        for (int j = 0; j < b * 3; j++) seg[j] = 0.0f;
    } else {
        const float *t = atlas + l->offset[CRAFTAX_PIXEL_BLOCK] + ((uint32_t)block * b * b + (uint32_t)(iy * b)) * 3u;
        for (int j = 0; j < b * 3; j++) seg[j] = t[j];
    }
    if (craftax_pixels_has_sprites(v, cell))
        for (int ix = 0; ix < b; ix++) craftax_pixels_add_sprites(seg + ix * 3, atlas, l, v, cell, iy, ix);
}

/* The inventory under the map, a cell at a time (craftax_pixels_inventory_cell over the tile),
 * times `scale`, into out [height, width, 3]; l->block is b. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_inventory_tiles(const CraftaxState *s, const float *atlas,
                                                                         const CraftaxPixelLayout *l, float *out,
                                                                         float scale, int b) {
    const int row_floats = l->width * 3, map_rows = l->view_rows * b;
    /* l's sizes recomputed from b (craftax_pixels_layout's formulas): constants where b is */
    CraftaxPixelLayout sized = *l;
    sized.block = b;
    sized.small = (int32_t)(b * 0.8);
    sized.digit = (int32_t)(b * 0.4);
    sized.icon_left = (b - sized.small) / 2;
    float tile[CRAFTAX_PIXEL_ROWS_MAX_BLOCK * CRAFTAX_PIXEL_ROWS_MAX_BLOCK * 3];
    for (int cy = 0; cy < l->inventory_rows; cy++)
        for (int cx = 0; cx < l->view_cols; cx++) {
            for (int j = 0; j < b * b * 3; j++) tile[j] = 0.0f;
            CraftaxPixelCellPoint q = {{0.0f, 0.0f, 0.0f}, 0, 0, tile};
            craftax_pixels_inventory_cell(&q, s, atlas, &sized, cx, cy);
            for (int iy = 0; iy < b; iy++) {
                float *o = out + (map_rows + cy * b + iy) * row_floats + cx * b * 3;
                const float *t = tile + iy * b * 3;
                for (int j = 0; j < b * 3; j++) o[j] = t[j] * scale;
            }
        }
}

/* craftax_render_pixels_rows's body for l->block == b <= CRAFTAX_PIXEL_ROWS_MAX_BLOCK. */
CRAFTAX_PIXEL_SPECIALISED CRAFTAX_HD void craftax_pixels_rows_of_block(const CraftaxState *s, const float *atlas,
                                                                       const CraftaxPixelLayout *l,
                                                                       const CraftaxPixelView *v, float *out,
                                                                       float scale, int b) {
    const int cols = CRAFTAX_OBS_COLS, width = cols * b, row_floats = width * 3, seg = b * 3;
    const float d = v->daylight, one_minus_d = 1.0f - d, sleep = v->sleep_level;
    const float intensity = fmaxf((0.5f - d) * 2.0f, 0.0f);
    const CraftaxKey key = {{s->state_rng[0], s->state_rng[1]}};
    float pre[CRAFTAX_PIXEL_ROW_FLOATS], light[CRAFTAX_PIXEL_ROW_FLOATS], noise[CRAFTAX_PIXEL_ROW_FLOATS];
    float half_night[CRAFTAX_PIXEL_ROW_FLOATS], noise_row[CRAFTAX_OBS_COLS * CRAFTAX_PIXEL_ROWS_MAX_BLOCK];
    for (int j = 0; j < row_floats; j++) {
        half_night[j] = j % 3 == 0 ? 0.0f : j % 3 == 1 ? 8.0f : 32.0f; /* 0.5 * (0, 16, 64), folded by XLA */
        noise[j] = 0.0f;
    }
    for (int r = 0; r < CRAFTAX_OBS_ROWS; r++) {
        for (int c = 0; c < cols; c++)
            for (int j = 0; j < seg; j++) light[c * seg + j] = v->light[r * cols + c];
        for (int iy = 0; iy < b; iy++) {
            const int y = r * b + iy;
            for (int c = 0; c < cols; c++) craftax_pixels_cell_row(pre + c * seg, atlas, l, v, r * cols + c, iy, b);
            if (v->night_noise) {
                craftax_pixels_night_noise(key, (uint32_t)(y * width), width, noise_row);
                for (int x = 0; x < width; x++) noise[3 * x] = noise[3 * x + 1] = noise[3 * x + 2] = noise_row[x];
            }
            const float *weight = atlas + l->offset[CRAFTAX_PIXEL_NIGHT_NOISE] + (uint32_t)(y * row_floats);
            float *o = out + y * row_floats;
            for (int j = 0; j < row_floats; j++) {
                const float lit = light[j] * pre[j];
                const float mask = weight[j] * intensity;
                const float mixed = fmaf(noise[j], mask, (1.0f - mask) * lit);
                const float night = fmaf(mixed, 0.5f, half_night[j]);
                o[j] = (sleep * fmaf(d, lit, one_minus_d * night)) * scale;
            }
        }
    }
    craftax_pixels_inventory_tiles(s, atlas, l, out, scale, b);
}

/* craftax_render_pixels_lanes's picture (one lane), a pixel row at a time: each cell row's
 * pixels gathered from the textures (sprites drawn only in the cells that have them), then
 * the light, night and sleep of craftax_pixels_light_night_sleep, the same operations in the
 * same order, over the whole row in one loop that compilers vectorise; the inventory a cell
 * at a time. Blocks above CRAFTAX_PIXEL_ROWS_MAX_BLOCK (the human sizes) go a pixel at a time. */
static inline CRAFTAX_HD void craftax_render_pixels_rows(const CraftaxState *s, const float *atlas,
                                                         const CraftaxPixelLayout *l, CraftaxPixelView *v, float *out,
                                                         int scaled) {
    if (l->block > CRAFTAX_PIXEL_ROWS_MAX_BLOCK || l->view_rows != CRAFTAX_OBS_ROWS ||
        l->view_cols != CRAFTAX_OBS_COLS) {
        craftax_render_pixels_lanes(s, atlas, l, v, out, scaled, 0, 1);
        return;
    }
    craftax_pixels_view(s, atlas, l, v);
    const float scale = scaled ? CRAFTAX_PIXEL_SCALE : 1.0f;
    if (l->block == CRAFTAX_PIXEL_AGENT_BLOCK)
        craftax_pixels_rows_of_block(s, atlas, l, v, out, scale, CRAFTAX_PIXEL_AGENT_BLOCK);
    else
        craftax_pixels_rows_of_block(s, atlas, l, v, out, scale, l->block);
}

static inline CRAFTAX_HD void craftax_render_pixels(const CraftaxState *s, const float *atlas,
                                                    const CraftaxPixelLayout *l, float *out, int scaled) {
    CraftaxPixelView v;
    craftax_render_pixels_rows(s, atlas, l, &v, out, scaled);
}

#endif
