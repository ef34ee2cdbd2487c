/* craftax/worldgen.h: world generation of all nine floors.
 * Upstream: craftax/craftax/world_gen/world_gen.py (generate_world, generate_smoothworld,
 * generate_dungeon) and envs/craftax_symbolic_env.py (reset_env). RNG keys are split
 * in upstream's order; each function below names the upstream lines it follows.
 */
#ifndef CRAFTAX_WORLDGEN_H
#define CRAFTAX_WORLDGEN_H

#include "cell_choice.h"
#include "noise.h"
#include "state.h"

#define CRAFTAX_N CRAFTAX_MAP_SIZE

/* A smooth floor's four noise grids (water and mountain 3 x 3, path 6 x 24, tree 12 x 12
 * gradient cells), packed. */
#define CRAFTAX_SMOOTH_GRADS (2 * 4 * 4 + 7 * 25 + 13 * 13)

/* Working memory of one floor, small enough (6.6 KB in the CUDA build) for a GPU warp to keep
 * in shared memory: no 48 x 48 float fields, p or cumsum arrays (noise is evaluated per cell,
 * choices go over bit masks). Callers pass it in. */
typedef struct {
    union {
        struct { /* shared by the lanes, read at every cell */
            float grad_x[CRAFTAX_SMOOTH_GRADS], grad_y[CRAFTAX_SMOOTH_GRADS];
            CraftaxNoiseGrid grids[4]; /* water, mountain, path, tree */
            CraftaxKey ore_keys[5];
        } smooth;
        struct { /* the rooms and corridors before the per-cell passes */
            uint8_t map[CRAFTAX_N][CRAFTAX_N], items[CRAFTAX_N][CRAFTAX_N];
        } dungeon;
    } u;
    CraftaxCellChoice choice;                /* the mask of the floor's current cell choice */
    uint64_t ladder_rows[CRAFTAX_MAP_SIZE]; /* bit y of [x]: cell (x, y) can hold a ladder */
    uint64_t glow_rows[CRAFTAX_MAP_SIZE];   /* bit y of [x]: cell (x, y) glows as lava */
    /* The four fields' blends (water, mountain, path, tree), kept from the min/max pass for the
     * map pass, which would otherwise evaluate every field a second time per cell (a sixth of the
     * GPU floor kernel's instructions), and (per cell) the cells that the tree and ore draws are
     * made for (craftax_smooth_trees_and_ores). 45 KB: a GPU keeps them in global memory (the
     * CUDA build points these at its warp's global scratch entry: cuda/env_common.cuh), not in
     * the warp's shared memory. */
#ifdef __CUDACC__
    float (*blend)[CRAFTAX_N][CRAFTAX_N];
    uint16_t *tree_cells, *ore_cells;
#else
    float blend[4][CRAFTAX_N][CRAFTAX_N];
#ifdef CRAFTAX_WORLDGEN_PER_CELL
    uint16_t tree_cells[CRAFTAX_CELLS], ore_cells[CRAFTAX_CELLS];
#endif
#endif
#ifndef CRAFTAX_WORLDGEN_PER_CELL
    /* A CPU draws each ore's whole uniform field in a loop that it vectorises, faster there
     * than a draw per qualifying cell (which a GPU warp makes). Same bits either way. */
    float ore_uniform[5][CRAFTAX_CELLS];
    float tree_uniform[CRAFTAX_CELLS]; /* the tree draws, the same way */
#endif
} CraftaxWorldGenScratch;

/* Start index of jax.lax.dynamic_(update_)slice along a dimension of `size` for a window
 * of `window`: negative starts wrap once, then the start is clamped into [0, size-window]. */
static inline CRAFTAX_HD int32_t craftax_dynamic_slice_start(int32_t start, int32_t size, int32_t window) {
    if (start < 0) start += size;
    return craftax_min_i32(craftax_max_i32(start, 0), size - window);
}

/* water = noise + proximity - 1, as the map kernel computes it from the Perlin blend L:
 * fma(L, sqrt2, -min) (noise.h), then the normalising multiply fused with the + proximity. */
static inline CRAFTAX_HD float craftax_water_field(float blend, const CraftaxNoiseGrid *g, float proximity) {
    return fmaf(fmaf(blend, CRAFTAX_SQRT2_F, -g->min), g->inv_range, proximity) - 1.0f;
}

/* mountain = noise + 0.05 + proximity - 1, as every kernel that reads it computes it: the
 * normalising multiply fused with the + 0.05, then the unfused + proximity and - 1. */
static inline CRAFTAX_HD float craftax_mountain_field(float blend, const CraftaxNoiseGrid *g, float proximity) {
    return fmaf(fmaf(blend, CRAFTAX_SQRT2_F, -g->min), g->inv_range, 0.05f) + proximity - 1.0f;
}

/* Element `index` of uniform(key, (48, 48)): one copy of threefry for the floor's many draw
 * sites on a GPU (common.h: CRAFTAX_GPU_NOINLINE). */
static CRAFTAX_GPU_NOINLINE CRAFTAX_HD float craftax_worldgen_uniform(CraftaxKey key, uint32_t index) {
    return craftax_uniform(key, index);
}

/* Field f's glow blend at cell (i, j) (f: 1 mountain, 3 tree), from the field's corners: the
 * map pass asks for it only at the few cells that can glow (craftax_glow_margin). */
static inline CRAFTAX_HD float craftax_smooth_glow_blend(const CraftaxWorldGenScratch *w, int f, int i, int j) {
    const CraftaxNoiseCorners c = craftax_noise_corners(&w->u.smooth.grids[f], i, j);
    return craftax_noise_blend_glow(c.n00, c.n10, c.n01, c.n11, c.t0, c.t1);
}

/* How far below a glow threshold a field's map value (normalised with inv_range) can lie while
 * its glow value (the same field blended in the glow kernel's order) passes: the two blends are
 * the same real number rounded twice each (< 1e-6 apart, |ramps| <= sqrt 2), and the
 * normalisation scales that by sqrt(2) * inv_range; 1e-4 (1 + inv_range) bounds it 50 times
 * over. A range too small for that (inv_range not finite, or > 1e4) gives an infinite margin:
 * every cell then evaluates its glow. */
static inline CRAFTAX_HD float craftax_glow_margin(const CraftaxNoiseGrid *g) {
    const float margin = 1e-4f * (1.0f + g->inv_range);
    return margin < 1.0f ? margin : INFINITY;
}

/* The copy of `rows` (bit y of rows[x]) into the choice's mask. */
static inline CRAFTAX_HD void craftax_worldgen_load_mask(CraftaxCellChoice *c, const uint64_t *rows, int lane,
                                                         int lanes) {
    craftax_lanes_sync(lanes);
    CRAFTAX_FOR_LANE(x, CRAFTAX_MAP_SIZE, lane, lanes) c->rows[x] = rows[x];
    craftax_lanes_sync(lanes);
}

/* A smooth floor's masks of its final block: the stone cells (always_diamond's choice) and
 * the cells that can hold a ladder (patched later for the diamond and the spawn). */
static inline CRAFTAX_HD void craftax_smooth_mark_rows(CraftaxWorldGenScratch *w, const CraftaxSmoothGenConfig *cfg,
                                                       int cell, uint8_t block, int lane, int lanes) {
    craftax_cell_rows_mark(w->choice.rows, cell, block == BLOCK_STONE, lane, lanes);
    craftax_cell_rows_mark(w->ladder_rows, cell, block == cfg->valid_ladder, lane, lanes);
}

#ifdef CRAFTAX_WORLDGEN_PER_CELL
/* Appends `cell` to list where flag is set; *count (every lane's) grows by the lanes' flags. */
static inline CRAFTAX_HD void craftax_cell_list_push(uint16_t *list, int32_t *count, uint32_t cell, int flag, int lane,
                                                     int lanes) {
    int32_t total;
    const int32_t rank = craftax_lanes_prefix_count(flag, lane, lanes, &total);
    if (flag) list[*count + rank - 1] = (uint16_t)cell;
    *count += total;
}

/* The trees, then the five ores, over the blocks the map pass wrote, a listed cell a lane:
 * drawn inside the map pass, a warp's 32 cells needed their draws at different points of the
 * rules, and each threefry call would run for ~5 of 32 lanes. An ore cell goes through
 * the five ores in turn in registers (one load and at most one store of its block): cells are
 * independent, and as an ore seldom lands the lanes draw in step. Then the masks of the final
 * blocks. */
static inline CRAFTAX_HD void craftax_smooth_trees_and_ores(const CraftaxSmoothGenConfig *cfg,
                                                            uint8_t map[CRAFTAX_N][CRAFTAX_N], CraftaxKey tree_key,
                                                            CraftaxWorldGenScratch *w, int32_t tree_count,
                                                            int32_t ore_count, int lane, int lanes) {
    uint8_t *blocks = &map[0][0];
    craftax_lanes_sync(lanes); /* the lists and blocks of every lane */
    for (int32_t m = lane; m < tree_count; m += lanes) {
        const uint32_t cell = w->tree_cells[m];
        if (craftax_worldgen_uniform(tree_key, cell) > cfg->tree_threshold_uniform) blocks[cell] = cfg->tree;
    }
    craftax_lanes_sync(lanes); /* the trees (an ore's requirement on the boss floor) */
    for (int32_t m = lane; m < ore_count; m += lanes) {
        const uint32_t cell = w->ore_cells[m];
        const uint8_t before = blocks[cell];
        uint8_t block = before;
        for (int ore = 0; ore < 5; ore++)
            if (block == cfg->ore_requirement_blocks[ore] && cfg->ore_chances[ore] > 0.0f &&
                craftax_worldgen_uniform(w->u.smooth.ore_keys[ore], cell) < cfg->ore_chances[ore])
                block = cfg->ores[ore];
        if (block != before) blocks[cell] = block;
    }
    craftax_lanes_sync(lanes);
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) craftax_smooth_mark_rows(w, cfg, i * CRAFTAX_N + j, map[i][j], lane, lanes);
}
#endif

/* generate_smoothworld for one config; writes level `level` of the state. Each cell's map
 * block depends only on its own noise values and uniform draws (the map, its trees, the five
 * ores in turn and the lava), so one pass makes it; the noise values come from the blends that
 * the min/max pass kept (evaluated per cell on a GPU, filled row by row on a CPU), and the cells
 * that the later choices and the lava glow read go into bit masks. Lanes (common.h): per-cell
 * passes are shared cell by cell (c = lane, lane + lanes, ...); single writes (a chosen cell, the spawn) are made by lane 0 or by every
 * lane with the same value, followed by a sync before anything else reads that cell. */
static inline CRAFTAX_HD void craftax_generate_smoothworld(CraftaxKey rng, const CraftaxSmoothGenConfig *cfg,
                                                           const CraftaxParams *params, CraftaxState *s, int level,
                                                           CraftaxWorldGenScratch *w, int lane, int lanes) {
    uint8_t(*map)[CRAFTAX_N] = s->map[level];
    uint8_t(*item_map)[CRAFTAX_N] = s->item_map[level];
    float(*light_map)[CRAFTAX_N] = s->light_map[level];
    const int centre = CRAFTAX_N / 2;
    CraftaxKey sub;
    float *gx = w->u.smooth.grad_x, *gy = w->u.smooth.grad_y;

    craftax_lanes_sync(lanes); /* the previous floor's lanes are done with the scratch */
    craftax_cell_rows_clear(w->choice.rows, lane, lanes);
    craftax_cell_rows_clear(w->ladder_rows, lane, lanes);
    craftax_cell_rows_clear(w->glow_rows, lane, lanes); /* (craftax_noise_grid_lanes syncs) */
    /* The four fields' keys, then their grids and normalisations, kept in the scratch (a
     * warp's shared memory) for the per-cell passes to read. */
    CraftaxKey field_keys[4];
    craftax_split2(rng, &rng, &field_keys[0]);
    craftax_split2(rng, &rng, &sub); /* unused by upstream */
    craftax_split2(rng, &rng, &field_keys[1]);
    craftax_split2(rng, &rng, &field_keys[2]);
    craftax_split2(rng, &rng, &sub); /* unused by upstream */
    craftax_split2(rng, &rng, &field_keys[3]);
    /* The tree field draws from the carry key itself, which is then split again. */
    const CraftaxKey tree_key = rng;
    {
        const int res[4][2] = {{3, 3}, {3, 3}, {6, 24}, {12, 12}};
        const int offset[4] = {0, 16, 32, 32 + 7 * 25};
        const float *angles[4] = {params->has_angles[0] ? params->angles_water : 0,
                                  params->has_angles[1] ? params->angles_mountain : 0,
                                  params->has_angles[2] ? params->angles_path : 0,
                                  params->has_angles[3] ? params->angles_tree : 0};
        /* one copy of the grid and min/max pass for the four fields, not four (floor kernel 120 -> 108 KB) */
        CRAFTAX_GPU_NO_UNROLL for (int f = 0; f < 4; f++) {
            CraftaxNoiseGrid g = craftax_noise_grid_lanes(field_keys[f], res[f][0], res[f][1], angles[f],
                                                          gx + offset[f], gy + offset[f], lane, lanes);
#ifdef CRAFTAX_WORLDGEN_PER_CELL
            craftax_noise_fill_min_max_lanes(&g, w->blend[f], lane, lanes);
#else
            craftax_noise_fill_min_max(&g, w->blend[f]);
#endif
            if (lane == 0) w->u.smooth.grids[f] = g;
        }
    }
    const CraftaxNoiseGrid *water = &w->u.smooth.grids[0], *mountain = &w->u.smooth.grids[1];
    const CraftaxNoiseGrid *path = &w->u.smooth.grids[2], *tree = &w->u.smooth.grids[3];

    /* Ores: a scan over five (requirement, ore, chance) triples, keys chained. */
    craftax_split2(rng, &rng, &sub);
    {
        CraftaxKey ore_carry = sub, ore_key;
        for (int ore = 0; ore < 5; ore++) {
            craftax_split2(ore_carry, &ore_carry, &ore_key);
            if (lane == 0) w->u.smooth.ore_keys[ore] = ore_key;
        }
    }
    craftax_lanes_sync(lanes);
#ifndef CRAFTAX_WORLDGEN_PER_CELL
    for (int ore = 0; ore < 5; ore++)
        if (cfg->ore_chances[ore] > 0.0f) craftax_uniform_field(w->u.smooth.ore_keys[ore], CRAFTAX_CELLS, w->ore_uniform[ore]);
    craftax_uniform_field(tree_key, CRAFTAX_CELLS, w->tree_uniform);
#endif

    /* `proximity / strength` by a config constant: XLA folds the division into a multiply by
     * the float reciprocal (0.2f, 1/17f, 0.1f), which rounds differently near the centre. */
    const float water_inv_strength = 1.0f / (float)cfg->water_strength;
    const float mountain_inv_strength = 1.0f / (float)cfg->mountain_strength;
    /* The lava glow's kernel blends mountain and tree noise its own way (noise.h:
     * craftax_noise_blend_glow), so its lava mask can differ from the lava tiles. */
    const int glows = cfg->lava == BLOCK_LAVA;
#ifdef CRAFTAX_WORLDGEN_PER_CELL
    int32_t tree_count = 0, ore_count = 0; /* (every lane's) */
#endif
    const float mountain_margin = craftax_glow_margin(mountain), tree_margin = craftax_glow_margin(tree);
    /* A lane's next cell's blends are loaded one cell ahead: the loop stores to the map, which
     * the compiler cannot tell apart from the blends, so it would keep each load after the
     * previous cell's stores, and a GPU warp would wait a memory latency per cell. */
    const float *water_blends = &w->blend[0][0][0], *mountain_blends = &w->blend[1][0][0];
    const float *tree_blends = &w->blend[3][0][0];
    float water_next = water_blends[CRAFTAX_LANE_FIRST(lane)], mountain_next = mountain_blends[CRAFTAX_LANE_FIRST(lane)];
    float tree_next = tree_blends[CRAFTAX_LANE_FIRST(lane)];
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        const float water_blend = water_next, mountain_blend = mountain_next, tree_blend = tree_next;
        const int next = i * CRAFTAX_N + j + CRAFTAX_LANE_STRIDE(lanes);
        if (next < CRAFTAX_CELLS) {
            water_next = water_blends[next];
            mountain_next = mountain_blends[next];
            tree_next = tree_blends[next];
        }
        const int32_t dx = i - centre, dy = j - centre;
        const float proximity = sqrtf((float)(dx * dx + dy * dy));
        const float prox_water = craftax_clip_f32(proximity * water_inv_strength, 0.0f, cfg->water_max);
        const float prox_mountain = craftax_clip_f32(proximity * mountain_inv_strength, 0.0f, cfg->mountain_max);
        const float water_v = craftax_water_field(water_blend, water, prox_water);
        const float mountain_v = craftax_mountain_field(mountain_blend, mountain, prox_mountain);
        const float tree_v = craftax_noise_normalised(tree_blend, tree);
        int glow = 0;
        /* Only where both map values come within the margins of the glow thresholds can the
         * glow values pass (craftax_glow_margin); elsewhere a cell does not glow. (`!(v <= t)`:
         * a NaN value evaluates the glow too.) */
        if (glows && !(mountain_v <= 0.85f - mountain_margin) && !(tree_v <= 0.7f - tree_margin)) {
            const float mountain_glow =
                craftax_mountain_field(craftax_smooth_glow_blend(w, 1, i, j), mountain, prox_mountain);
            const float tree_glow = craftax_noise_normalised(craftax_smooth_glow_blend(w, 3, i, j), tree);
            glow = mountain_glow > 0.85f && tree_glow > 0.7f;
        }
        /* The map kernel (broadcast_select_fusion): one value of each field serves all its tests. */
        uint8_t block = water_v > cfg->water_threshold ? cfg->sea_block : cfg->default_block;
        if (water_v > cfg->sand_threshold && block != cfg->sea_block) block = cfg->coast_block;
        if (mountain_v > 0.7f) {
            block = cfg->mountain_block;
            if (craftax_noise_normalised(w->blend[2][i][j], path) > 0.8f ||
                craftax_noise_normalised(w->blend[2][j][i], path) > 0.8f)
                block = cfg->path_block;
        }
        if (mountain_v > 0.85f && water_v > 0.4f) block = cfg->inner_mountain_block;
        const uint32_t cell = (uint32_t)(i * CRAFTAX_N + j);
        const int lava = mountain_v > 0.85f && tree_v > 0.7f;
#ifdef CRAFTAX_WORLDGEN_PER_CELL
        /* The trees and ores come after this pass (craftax_smooth_trees_and_ores), drawn for
         * the cells listed here: every threshold is positive, so a cell below the perlin
         * threshold (value 0) never becomes a tree; lava overwrites whatever the trees and ores
         * made. A cell joins the ore list where its block is some drawn ore's requirement now
         * or can become one as a tree (the boss floor's tree, the grave, is one). */
        if (lava) block = cfg->lava;
        const int tree_candidate = !lava && block == cfg->tree_requirement_block && tree_v > cfg->tree_threshold_perlin;
        int ore_candidate = 0;
        for (int ore = 0; ore < 5; ore++)
            ore_candidate |= cfg->ore_chances[ore] > 0.0f &&
                             (block == cfg->ore_requirement_blocks[ore] ||
                              (tree_candidate && cfg->tree == cfg->ore_requirement_blocks[ore]));
        craftax_cell_list_push(w->tree_cells, &tree_count, cell, tree_candidate, lane, lanes);
        craftax_cell_list_push(w->ore_cells, &ore_count, cell, !lava && ore_candidate, lane, lanes);
        map[i][j] = block;
#else
        /* A CPU reads the uniform fields it drew whole (a GPU's form is above). */
        if (lava) {
            block = cfg->lava; /* over whatever the trees and ores made: their draws are left out */
        } else {
            if (block == cfg->tree_requirement_block && tree_v > cfg->tree_threshold_perlin &&
                w->tree_uniform[cell] > cfg->tree_threshold_uniform)
                block = cfg->tree;
            for (int ore = 0; ore < 5; ore++)
                if (block == cfg->ore_requirement_blocks[ore] && cfg->ore_chances[ore] > 0.0f &&
                    w->ore_uniform[ore][cell] < cfg->ore_chances[ore])
                    block = cfg->ores[ore];
        }
        map[i][j] = block;
        craftax_smooth_mark_rows(w, cfg, (int)cell, block, lane, lanes);
#endif
        craftax_cell_rows_mark(w->glow_rows, (int)cell, glow, lane, lanes);
    }
#ifdef CRAFTAX_WORLDGEN_PER_CELL
    craftax_smooth_trees_and_ores(cfg, map, tree_key, w, tree_count, ore_count, lane, lanes);
#endif
    craftax_lanes_sync(lanes);

    /* always_diamond: one STONE cell (chosen even when the flag is off) becomes DIAMOND. */
    craftax_split2(rng, &rng, &sub);
    {
        int32_t cell[2];
        craftax_cell_choice_normalised(sub, &w->choice, craftax_cell_choice_count(&w->choice), lane, lanes, cell);
        const int adding_diamond = cfg->default_block == BLOCK_GRASS && params->always_diamond;
        const uint8_t block = adding_diamond ? BLOCK_DIAMOND : BLOCK_STONE;
        if (lane == 0) {
            map[cell[0]][cell[1]] = block;
            map[centre][centre] = cfg->player_spawn;
            craftax_cell_rows_set(w->ladder_rows, cell[0], cell[1], block == cfg->valid_ladder);
            craftax_cell_rows_set(w->ladder_rows, centre, centre, cfg->player_spawn == cfg->valid_ladder);
        }
    }
    craftax_worldgen_load_mask(&w->choice, w->ladder_rows, lane, lanes);
    int32_t down[2], up[2];
    craftax_split2(rng, &rng, &sub);
    craftax_cell_choice_counts(sub, &w->choice, lane, lanes, down);
    craftax_split2(rng, &rng, &sub);
    craftax_cell_choice_counts(sub, &w->choice, lane, lanes, up);

    /* Light: the default, the torch-shaped halo around the up ladder, then the lava glow
     * (light += convolve2d_same(lava, [[.2,.7,.2],[.7,1,.7],[.2,.7,.2]]) with the glow's own
     * lava mask) and the clip. JAX's dynamic_update_slice first wraps a negative halo start
     * once (+48), then clamps it so the 9x9 patch lies inside the map: a ladder in rows or
     * columns 0-3 gets its halo at the far edge (start 39). Items: the ladders. */
    const int32_t x0 = craftax_dynamic_slice_start(up[0] - 4, CRAFTAX_N, 9);
    const int32_t y0 = craftax_dynamic_slice_start(up[1] - 4, CRAFTAX_N, 9);
    const float dl = cfg->default_light;
    const float kernel[3][3] = {{0.2f, 0.7f, 0.2f}, {0.7f, 1.0f, 0.7f}, {0.2f, 0.7f, 0.2f}};
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        float light = dl;
        if (i >= x0 && i < x0 + 9 && j >= y0 && j < y0 + 9) light = CRAFTAX_TORCH_LIGHT_MAP[i - x0][j - y0] * (1.0f - dl) + dl;
        const uint64_t near = (uint64_t)7 << (j > 0 ? j - 1 : 0); /* columns j-1..j+1 */
        if (glows && ((w->glow_rows[i] | (i > 0 ? w->glow_rows[i - 1] : 0) |
                       (i < CRAFTAX_N - 1 ? w->glow_rows[i + 1] : 0)) & near)) {
            float glow = 0.0f;
            for (int a = -1; a <= 1; a++)
                for (int b = -1; b <= 1; b++) {
                    const int x = i + a, y = j + b;
                    if (x < 0 || y < 0 || x >= CRAFTAX_N || y >= CRAFTAX_N) continue;
                    if (craftax_cell_rows_get(w->glow_rows, x, y)) glow += kernel[a + 1][b + 1];
                }
            light = light + glow;
        }
        light_map[i][j] = craftax_clip_f32(light, 0.0f, 1.0f);
        uint8_t item = ITEM_NONE;
        if (cfg->ladder_down && i == down[0] && j == down[1]) item = ITEM_LADDER_DOWN;
        if (cfg->ladder_up && i == up[0] && j == up[1]) item = ITEM_LADDER_UP;
        item_map[i][j] = item;
    }

    s->down_ladders[level][0] = down[0];
    s->down_ladders[level][1] = down[1];
    s->up_ladders[level][0] = up[0];
    s->up_ladders[level][1] = up[1];
}

static inline CRAFTAX_HD int32_t craftax_sign_i32(int32_t x) { return (x > 0) - (x < 0); }

/* generate_dungeon for one config; writes level `level` of the state. Upstream draws on a
 * map padded by 10 (rooms may reach past the edge) and keeps its 48 x 48 middle; here the
 * rooms and corridors are drawn on the middle itself, and what falls outside is left out:
 * the padding starts as 0 (no wall, so no corridor turns it into path) and is never read back.
 * Lanes (common.h): the rooms and corridors (a short sequential scan) are drawn by lane 0;
 * the per-cell passes are shared. */
#define CRAFTAX_DUNGEON_PAD 10
static inline CRAFTAX_HD int craftax_dungeon_inside(int32_t px, int32_t py) {
    return px >= CRAFTAX_DUNGEON_PAD && py >= CRAFTAX_DUNGEON_PAD && px < CRAFTAX_DUNGEON_PAD + CRAFTAX_N &&
           py < CRAFTAX_DUNGEON_PAD + CRAFTAX_N;
}
/* A write to padded cell (px, py) of map m (lane 0). */
static inline CRAFTAX_HD void craftax_dungeon_put(uint8_t m[CRAFTAX_N][CRAFTAX_N], int32_t px, int32_t py, uint8_t v) {
    if (craftax_dungeon_inside(px, py)) m[px - CRAFTAX_DUNGEON_PAD][py - CRAFTAX_DUNGEON_PAD] = v;
}
static inline CRAFTAX_HD int craftax_dungeon_is_wall(uint8_t m[CRAFTAX_N][CRAFTAX_N], int32_t px, int32_t py) {
    return craftax_dungeon_inside(px, py) && m[px - CRAFTAX_DUNGEON_PAD][py - CRAFTAX_DUNGEON_PAD] == BLOCK_WALL;
}

static inline CRAFTAX_HD void craftax_generate_dungeon(CraftaxKey rng, const CraftaxDungeonConfig *cfg,
                                                       CraftaxState *s, int level, CraftaxWorldGenScratch *w,
                                                       int lane, int lanes) {
    enum { NUM_ROOMS = 8, MIN_ROOM = 5, MAX_ROOM = 10, CHUNK = 16, CHUNKS_PER_SIDE = 3 };
    const int P = CRAFTAX_N + 2 * CRAFTAX_DUNGEON_PAD;
    uint8_t(*pmap)[CRAFTAX_N] = w->u.dungeon.map;
    uint8_t(*pitems)[CRAFTAX_N] = w->u.dungeon.items;
    CraftaxKey sub, sub2;

    {
        CraftaxKey keys[3];
        for (int i = 0; i < 3; i++) keys[i] = craftax_split_at(rng, (uint32_t)i);
        rng = keys[0];
        sub = keys[2];
    }
    int32_t room_sizes[NUM_ROOMS][2];
    {
        CraftaxKey k1, k2;
        craftax_split2(sub, &k1, &k2);
        for (int r = 0; r < NUM_ROOMS; r++)
            for (int c = 0; c < 2; c++)
                room_sizes[r][c] = craftax_randint_from_keys(k1, k2, (uint32_t)(r * 2 + c), MIN_ROOM, MAX_ROOM);
    }

    craftax_lanes_sync(lanes); /* the previous floor's lanes are done with the scratch */
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        pmap[i][j] = BLOCK_WALL;
        pitems[i][j] = ITEM_NONE;
    }
    craftax_cell_rows_clear(w->choice.rows, lane, lanes);
    craftax_lanes_sync(lanes);

    /* Rooms: a scan carrying the occupancy of the 3x3 chunks and a key. */
    int32_t room_pos[NUM_ROOMS][2];
    float occupancy[9];
    for (int i = 0; i < 9; i++) occupancy[i] = 1.0f;
    craftax_split2(rng, &rng, &sub);
    CraftaxKey room_rng = sub;
    craftax_split2(rng, &rng, &sub); /* (the corridors' key, split here for all lanes) */
    CraftaxKey path_rng = sub;
    /* Rooms and corridors: every lane runs the scans (the same keys give every lane the same
     * rooms and sinks) and the lanes share each room's and each corridor leg's cells (rather
     * than lane 0 drawing them all while 31 lanes wait).
     * Rooms go in turn (a later room's cells cover an earlier room's chest or fountain);
     * corridors only turn walls into paths, a leg's cells are distinct, and the legs go in turn
     * too (a leg reads the walls the earlier ones left). */
    for (int r = 0; r < NUM_ROOMS; r++) {
        float cumsum[9];
        craftax_split2(room_rng, &room_rng, &sub);
        const int32_t chunk = craftax_choice_p(sub, occupancy, 9, cumsum);
        occupancy[chunk] = 0.0f;
        craftax_split2(room_rng, &room_rng, &sub);
        int32_t px = (chunk % CHUNKS_PER_SIDE) * CHUNK + MAX_ROOM + craftax_randint(sub, 0, 0, CHUNK - MIN_ROOM);
        int32_t py = (chunk / CHUNKS_PER_SIDE) * CHUNK + MAX_ROOM + craftax_randint(sub, 1, 0, CHUNK - MIN_ROOM);
        room_pos[r][0] = px;
        room_pos[r][1] = py;
        const int32_t width = room_sizes[r][1];
        craftax_lanes_sync(lanes); /* the previous room's chest and fountain */
        CRAFTAX_FOR_LANE(c, room_sizes[r][0] * width, lane, lanes)
            craftax_dungeon_put(pmap, px + c / width, py + c % width, BLOCK_PATH);
        craftax_lanes_sync(lanes);
        const int32_t ex = px + room_sizes[r][0] - 1, ey = py + room_sizes[r][1] - 1;
        craftax_split2(room_rng, &room_rng, &sub);
        CraftaxKey keys[3];
        for (int i = 0; i < 3; i++) keys[i] = craftax_split_at(room_rng, (uint32_t)i);
        room_rng = keys[0];
        if (lane == 0) {
            craftax_dungeon_put(pitems, px, py, ITEM_TORCH);
            craftax_dungeon_put(pitems, ex, py, ITEM_TORCH);
            craftax_dungeon_put(pitems, px, ey, ITEM_TORCH);
            craftax_dungeon_put(pitems, ex, ey, ITEM_TORCH);
            CraftaxKey k1, k2;
            craftax_split2(sub, &k1, &k2);
            const int32_t cx = craftax_randint_from_keys(k1, k2, 0, 1, room_sizes[r][0] - 1);
            const int32_t cy = craftax_randint_from_keys(k1, k2, 1, 1, room_sizes[r][1] - 1);
            craftax_dungeon_put(pmap, px + cx, py + cy, BLOCK_CHEST);
            craftax_split2(keys[1], &k1, &k2);
            const int32_t fx = craftax_randint_from_keys(k1, k2, 0, 1, room_sizes[r][0] - 1);
            const int32_t fy = craftax_randint_from_keys(k1, k2, 1, 1, room_sizes[r][1] - 1);
            const int has_fountain = craftax_uniform(keys[2], 0) > 0.5f;
            if (has_fountain) craftax_dungeon_put(pmap, px + fx, py + fy, cfg->fountain_block);
        }
    }

    /* Corridors: from each room to a room already joined (the last room starts joined). */
    float included[NUM_ROOMS];
    for (int i = 0; i < NUM_ROOMS; i++) included[i] = i == NUM_ROOMS - 1 ? 1.0f : 0.0f;
    for (int r = 0; r < NUM_ROOMS; r++) {
        float cumsum[NUM_ROOMS];
        const int32_t sx = room_pos[r][0], sy = room_pos[r][1];
        craftax_split2(path_rng, &path_rng, &sub);
        const int32_t sink = craftax_choice_p(sub, included, NUM_ROOMS, cumsum);
        const int32_t tx = room_pos[sink][0], ty = room_pos[sink][1];

        const int32_t hd = ty - sy, hsign = craftax_sign_i32(hd);
        craftax_lanes_sync(lanes); /* the rooms' last single writes, the previous leg */
        CRAFTAX_FOR_LANE(j, P, lane, lanes) {
            const int32_t k = (j - sy) * hsign;
            if (hsign != 0 && k >= 0 && k <= (hd < 0 ? -hd : hd) && craftax_dungeon_is_wall(pmap, sx, j))
                craftax_dungeon_put(pmap, sx, j, BLOCK_PATH);
        }
        const int32_t vd = tx - sx, vsign = craftax_sign_i32(vd);
        craftax_lanes_sync(lanes);
        CRAFTAX_FOR_LANE(i, P, lane, lanes) {
            const int32_t k = (i - sx) * vsign;
            if (vsign != 0 && k >= 0 && k <= (vd < 0 ? -vd : vd) && craftax_dungeon_is_wall(pmap, i, ty))
                craftax_dungeon_put(pmap, i, ty, BLOCK_PATH);
        }
        /* Quirk: the carry becomes the second half of this split. */
        craftax_split2(path_rng, &sub2, &path_rng);
        included[r] = 1.0f;
    }

    craftax_lanes_sync(lanes);
    if (lane == 0) craftax_dungeon_put(pmap, room_pos[0][0] + 2, room_pos[0][1] + 2, cfg->special_block);
    craftax_lanes_sync(lanes);

    /* Walls next to a corridor or room (plus-shaped neighbourhood) stay walls, sometimes
     * mossy; walls with no open neighbour become darkness; one path in ten without an
     * item becomes the floor's rare block. */
    uint8_t(*map)[CRAFTAX_N] = s->map[level];
    uint8_t(*item_map)[CRAFTAX_N] = s->item_map[level];
    float(*light_map)[CRAFTAX_N] = s->light_map[level];
    craftax_split2(rng, &rng, &sub);
    {
        const float rare_cumsum[2] = {0.9f, 0.9f + 0.1f};
        CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
            /* The draw is made only where it can matter (see the tree field of the smooth floors). */
            const uint32_t cell = (uint32_t)(i * CRAFTAX_N + j);
            const uint8_t block = pmap[i][j];
            int open = block != BLOCK_WALL;
            if (i > 0) open |= pmap[i - 1][j] != BLOCK_WALL;
            if (i < CRAFTAX_N - 1) open |= pmap[i + 1][j] != BLOCK_WALL;
            if (j > 0) open |= pmap[i][j - 1] != BLOCK_WALL;
            if (j < CRAFTAX_N - 1) open |= pmap[i][j + 1] != BLOCK_WALL;
            const int wall = block == BLOCK_WALL, bare_path = block == BLOCK_PATH && pitems[i][j] == ITEM_NONE;
            const int rare = open && (wall || bare_path) && craftax_choice_from_cumsum(sub, cell, rare_cumsum, 2) == 1;
            uint8_t out;
            if (!open)
                out = BLOCK_DARKNESS;
            else if (wall)
                out = rare ? BLOCK_WALL_MOSS : BLOCK_WALL;
            else if (bare_path && rare)
                out = cfg->rare_path_replacement_block;
            else
                out = block;
            map[i][j] = out;
            item_map[i][j] = pitems[i][j];
            light_map[i][j] = 1.0f;
            craftax_cell_rows_mark(w->choice.rows, (int)cell, out == BLOCK_PATH, lane, lanes);
        }
    }
    craftax_lanes_sync(lanes);

    int32_t down[2], up[2];
    craftax_split2(rng, &rng, &sub);
    craftax_cell_choice_normalised(sub, &w->choice, craftax_cell_choice_count(&w->choice), lane, lanes, down);
    if (lane == 0) item_map[down[0]][down[1]] = ITEM_LADDER_DOWN;
    craftax_split2(rng, &rng, &sub);
    craftax_cell_choice_counts(sub, &w->choice, lane, lanes, up);
    if (lane == 0) item_map[up[0]][up[1]] = ITEM_LADDER_UP;

    s->down_ladders[level][0] = down[0];
    s->down_ladders[level][1] = down[1];
    s->up_ladders[level][0] = up[0];
    s->up_ladders[level][1] = up[1];
}

static inline CRAFTAX_HD void craftax_clear_mobs3(CraftaxMobs3 *m) {
    memset(m, 0, sizeof(*m));
    for (int i = 0; i < 3; i++) m->health[i] = 1.0f;
}
static inline CRAFTAX_HD void craftax_clear_mobs2(CraftaxMobs2 *m) {
    memset(m, 0, sizeof(*m));
    for (int i = 0; i < 2; i++) m->health[i] = 1.0f;
}

/* generate_world(rng, params, static_params). Lanes (common.h): the floors are shared; the
 * rest of the state is set by lane 0 (the caller syncs before reading the state). */
/* generate_world's nine floors are independent: each reads its own key and writes only its
 * own level of map, item_map and light_map and its ladders. So the CUDA build can generate
 * them on nine warps at once; the C build and one warp run them in order. Floors 0-5 are the
 * smooth ones (CRAFTAX_SMOOTH_LEVEL), 6-8 the dungeons (CRAFTAX_DUNGEON_LEVEL). */
#define CRAFTAX_WORLD_FLOORS 9
static inline CRAFTAX_HD void craftax_world_floor_keys(CraftaxKey rng, CraftaxKey floors[CRAFTAX_WORLD_FLOORS],
                                                       CraftaxKey *rest) {
    CraftaxKey keys[7];
    for (int i = 0; i < 7; i++) keys[i] = craftax_split_at(rng, (uint32_t)i);
    for (int k = 0; k < 6; k++) floors[k] = keys[k + 1];
    rng = keys[0];
    for (int i = 0; i < 4; i++) keys[i] = craftax_split_at(rng, (uint32_t)i);
    for (int k = 0; k < 3; k++) floors[6 + k] = keys[k + 1];
    *rest = keys[0];
}
/* The level that generation floor `floor` (0-8, the order above) makes, and back. */
static inline CRAFTAX_HD int32_t craftax_world_floor_level(int floor) {
    return floor < 6 ? CRAFTAX_SMOOTH_LEVEL[floor] : CRAFTAX_DUNGEON_LEVEL[floor - 6];
}
static inline CRAFTAX_HD int craftax_world_level_floor(int32_t level) {
    for (int floor = 0; floor < CRAFTAX_WORLD_FLOORS; floor++)
        if (craftax_world_floor_level(floor) == level) return floor;
    return -1;
}
static inline CRAFTAX_HD void craftax_generate_world_floor_lanes(CraftaxKey key, int floor, const CraftaxParams *params,
                                                                 CraftaxState *s, CraftaxWorldGenScratch *w, int lane,
                                                                 int lanes) {
    if (floor < 6)
        craftax_generate_smoothworld(key, &CRAFTAX_SMOOTHGEN_CONFIGS[floor], params, s, CRAFTAX_SMOOTH_LEVEL[floor], w,
                                     lane, lanes);
    else
        craftax_generate_dungeon(key, &CRAFTAX_DUNGEON_CONFIGS[floor - 6], s, CRAFTAX_DUNGEON_LEVEL[floor - 6], w, lane,
                                 lanes);
}
/* What generate_world does after the floors, from the key craftax_world_floor_keys left. */
static inline CRAFTAX_HD void craftax_generate_world_rest_lanes(CraftaxKey rng, const CraftaxParams *params,
                                                                CraftaxState *s, int lane, int lanes) {
    craftax_lanes_zero(s->mob_map, sizeof(s->mob_map), lane, lanes);
    if (lane != 0) return;
    memset(s->chests_opened, 0, sizeof(s->chests_opened));
    for (int l = 0; l < CRAFTAX_NUM_LEVELS; l++) s->monsters_killed[l] = l == 0 ? 10 : 0; /* first ladder open */

    s->player_position[0] = CRAFTAX_N / 2;
    s->player_position[1] = CRAFTAX_N / 2;
    s->player_level = 0;
    s->player_direction = ACTION_UP;
    s->player_health = 9.0f;
    s->player_food = s->player_drink = s->player_energy = s->player_mana = 9;
    s->is_sleeping = s->is_resting = 0;
    s->player_recover = s->player_hunger = s->player_thirst = s->player_fatigue = s->player_recover_mana = 0.0f;
    s->player_xp = 0;
    s->player_dexterity = s->player_strength = s->player_intelligence = 1;

    {
        const int god = params->god_mode != 0;
        CraftaxInventory *inv = &s->inventory;
        const int32_t many = god ? 99 : 0;
        inv->wood = inv->stone = inv->coal = inv->iron = inv->diamond = inv->sapling = many;
        inv->arrows = inv->torches = inv->ruby = inv->sapphire = inv->books = many;
        inv->pickaxe = inv->sword = god ? 4 : 0;
        inv->bow = god ? 1 : 0;
        for (int i = 0; i < 6; i++) inv->potions[i] = many;
        for (int i = 0; i < 4; i++) inv->armour[i] = god ? 2 : 0;
    }

    for (int l = 0; l < CRAFTAX_NUM_LEVELS; l++) {
        craftax_clear_mobs3(&s->mobs[l].melee_mobs);
        craftax_clear_mobs3(&s->mobs[l].passive_mobs);
        craftax_clear_mobs2(&s->mobs[l].ranged_mobs);
        craftax_clear_mobs3(&s->mobs[l].mob_projectiles);
        craftax_clear_mobs3(&s->mobs[l].player_projectiles);
        for (int i = 0; i < 3; i++)
            for (int c = 0; c < 2; c++) {
                s->mobs[l].mob_projectile_directions[i][c] = 1;
                s->mobs[l].player_projectile_directions[i][c] = 1;
            }
    }
    memset(s->growing_plants_positions, 0, sizeof(s->growing_plants_positions));
    memset(s->growing_plants_age, 0, sizeof(s->growing_plants_age));
    memset(s->growing_plants_mask, 0, sizeof(s->growing_plants_mask));

    CraftaxKey sub;
    craftax_split2(rng, &rng, &sub);
    craftax_permutation(sub, 6, s->potion_mapping);

    s->learned_spells[0] = s->learned_spells[1] = 0;
    s->sword_enchantment = s->bow_enchantment = 0;
    for (int i = 0; i < 4; i++) s->armour_enchantments[i] = 0;
    s->boss_progress = 0;
    s->boss_timesteps_to_spawn_this_round = CRAFTAX_BOSS_FIGHT_SPAWN_TURNS;
    memset(s->achievements, 0, sizeof(s->achievements));
    s->light_level = craftax_light_level(0, params->day_length);

    craftax_split2(rng, &rng, &sub);
    s->state_rng[0] = sub.k[0];
    s->state_rng[1] = sub.k[1];
    s->timestep = 0;
    s->floors_pending = 0; /* every floor generated (the CUDA build's lazy resets set it after) */
    s->floors_world_key[0] = s->floors_world_key[1] = 0;
}

static inline CRAFTAX_HD void craftax_generate_world_lanes(CraftaxKey rng, const CraftaxParams *params,
                                                           CraftaxState *s, CraftaxWorldGenScratch *w, int lane,
                                                           int lanes) {
    CraftaxKey floors[CRAFTAX_WORLD_FLOORS], rest;
    craftax_world_floor_keys(rng, floors, &rest);
    for (int f = 0; f < CRAFTAX_WORLD_FLOORS; f++)
        craftax_generate_world_floor_lanes(floors[f], f, params, s, w, lane, lanes);
    craftax_generate_world_rest_lanes(rest, params, s, lane, lanes);
}

static inline CRAFTAX_HD void craftax_generate_world(CraftaxKey rng, const CraftaxParams *params, CraftaxState *s,
                                                     CraftaxWorldGenScratch *w) {
    craftax_generate_world_lanes(rng, params, s, w, 0, 1);
}

/* CraftaxSymbolicEnv.reset_env: one more split before generate_world. With lanes, the
 * state is complete for every lane on return. */
static inline CRAFTAX_HD CraftaxKey craftax_reset_world_key(CraftaxKey key) {
    CraftaxKey rng, sub;
    craftax_split2(key, &rng, &sub);
    return sub;
}
static inline CRAFTAX_HD void craftax_reset_env_lanes(CraftaxKey key, const CraftaxParams *params, CraftaxState *s,
                                                      CraftaxWorldGenScratch *w, int lane, int lanes) {
    craftax_generate_world_lanes(craftax_reset_world_key(key), params, s, w, lane, lanes);
    craftax_lanes_sync(lanes);
}
static inline CRAFTAX_HD void craftax_reset_env(CraftaxKey key, const CraftaxParams *params, CraftaxState *s,
                                                CraftaxWorldGenScratch *w) {
    craftax_reset_env_lanes(key, params, s, w, 0, 1);
}

#endif
