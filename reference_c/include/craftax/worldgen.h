/* craftax/worldgen.h: world generation of all nine floors.
 * Upstream: craftax/craftax/world_gen/world_gen.py (generate_world, generate_smoothworld,
 * generate_dungeon) and envs/craftax_symbolic_env.py (reset_env). RNG keys are split
 * in upstream's order; each function below names the upstream lines it follows.
 */
#ifndef CRAFTAX_WORLDGEN_H
#define CRAFTAX_WORLDGEN_H

#include "noise.h"
#include "state.h"

#define CRAFTAX_N CRAFTAX_MAP_SIZE
#define CRAFTAX_CELLS (CRAFTAX_MAP_SIZE * CRAFTAX_MAP_SIZE)

/* Working memory of one smooth floor: large enough that the CUDA build keeps it out of
 * registers, so callers pass it in. */
typedef struct {
    float water[CRAFTAX_N][CRAFTAX_N];
    float mountain[CRAFTAX_N][CRAFTAX_N];
    float path_x[CRAFTAX_N][CRAFTAX_N];
    float tree_noise[CRAFTAX_N][CRAFTAX_N];
    float p[CRAFTAX_CELLS];
    float cumsum[CRAFTAX_CELLS];
    uint8_t mask_a[CRAFTAX_CELLS];
    uint8_t mask_b[CRAFTAX_CELLS];
    uint8_t dungeon_map[CRAFTAX_MAP_SIZE + 20][CRAFTAX_MAP_SIZE + 20];   /* padded by 10 */
    uint8_t dungeon_items[CRAFTAX_MAP_SIZE + 20][CRAFTAX_MAP_SIZE + 20];
    float grad_x[CRAFTAX_NOISE_GRADS], grad_y[CRAFTAX_NOISE_GRADS]; /* shared by the lanes (common.h) */
    float block_prefix[256];
} CraftaxWorldGenScratch;

/* jax.random.choice(key, arange(2304), p=mask) with a 0/1 mask: the cumulative sum of a
 * 0/1 vector is a count, exact in any order, so no blocked scan is needed. */
static inline CRAFTAX_HD int32_t craftax_choice_mask_lanes(CraftaxKey key, const uint8_t *mask, int n, float *cumsum,
                                                          int lane, int lanes) {
    craftax_lanes_sync(lanes);
    int32_t count = 0;
    for (int base = 0; base < n; base += lanes) { /* a round of `lanes` cells: a prefix count */
        const int i = base + lane;
        int32_t round_total;
        const int32_t prefix = craftax_lanes_prefix_count(i < n && mask[i], lane, lanes, &round_total);
        if (i < n) cumsum[i] = (float)(count + prefix);
        count += round_total;
    }
    craftax_lanes_sync(lanes);
    return craftax_choice_from_cumsum(key, 0, cumsum, n);
}
static inline CRAFTAX_HD int32_t craftax_choice_mask(CraftaxKey key, const uint8_t *mask, int n, float *cumsum) {
    return craftax_choice_mask_lanes(key, mask, n, cumsum, 0, 1);
}

/* jax.random.choice(key, arange(2304), p=mask / mask.sum()) with float probabilities:
 * the blocked cumulative sum decides the last bits, as in XLA. Empty masks give 0/0 = NaN
 * probabilities and index 0, like upstream. */
static inline CRAFTAX_HD int32_t craftax_choice_normalised_mask_lanes(CraftaxKey key, const uint8_t *mask, int n,
                                                                      float *p, float *cumsum, float *block_prefix,
                                                                      int lane, int lanes) {
    craftax_lanes_sync(lanes);
    int32_t count = 0;
    CRAFTAX_FOR_LANE(i, n, lane, lanes) count += mask[i] ? 1 : 0;
    count = craftax_lanes_sum_i32(count, lanes);
    const float total = (float)count;
    CRAFTAX_FOR_LANE(i, n, lane, lanes) p[i] = (mask[i] ? 1.0f : 0.0f) / total;
    craftax_lanes_sync(lanes);
    craftax_cumsum_f32_lanes(p, n, cumsum, block_prefix, lane, lanes);
    craftax_lanes_sync(lanes);
    return craftax_choice_from_cumsum(key, 0, cumsum, n);
}

/* Start index of jax.lax.dynamic_(update_)slice along a dimension of `size` for a window
 * of `window`: negative starts wrap once, then the start is clamped into [0, size-window]. */
static inline CRAFTAX_HD int32_t craftax_dynamic_slice_start(int32_t start, int32_t size, int32_t window) {
    if (start < 0) start += size;
    return craftax_min_i32(craftax_max_i32(start, 0), size - window);
}

/* water = noise + proximity - 1, as the map kernel computes it from the Perlin blend L:
 * fma(L, sqrt2, -min) (noise.h), then the normalising multiply fused with the + proximity. */
static inline CRAFTAX_HD float craftax_water_field(float blend, float min, float inv_range, float proximity) {
    return fmaf(fmaf(blend, CRAFTAX_SQRT2_F, -min), inv_range, proximity) - 1.0f;
}

/* mountain = noise + 0.05 + proximity - 1, as every kernel that reads it computes it: the
 * normalising multiply fused with the + 0.05, then the unfused + proximity and - 1. */
static inline CRAFTAX_HD float craftax_mountain_field(float blend, float min, float inv_range, float proximity) {
    return fmaf(fmaf(blend, CRAFTAX_SQRT2_F, -min), inv_range, 0.05f) + proximity - 1.0f;
}

/* generate_smoothworld for one config; writes level `level` of the state. */
/* Lanes (common.h): per-cell passes are shared cell by cell (c = lane, lane + lanes, ...);
 * single writes (a chosen cell, the spawn) are made by every lane with the same value and
 * followed by a sync before anything else writes that cell. */
static inline CRAFTAX_HD void craftax_generate_smoothworld(CraftaxKey rng, const CraftaxSmoothGenConfig *cfg,
                                                           const CraftaxParams *params, CraftaxState *s, int level,
                                                           CraftaxWorldGenScratch *w, int lane, int lanes) {
    uint8_t(*map)[CRAFTAX_N] = s->map[level];
    uint8_t(*item_map)[CRAFTAX_N] = s->item_map[level];
    float(*light_map)[CRAFTAX_N] = s->light_map[level];
    const int centre = CRAFTAX_N / 2;
    CraftaxKey sub;

    /* The lava glow's kernel blends mountain and tree noise its own way (noise.h); `p` and
     * `cumsum` are free until the ores, so they hold those two fields meanwhile. */
    const int glows = cfg->lava == BLOCK_LAVA;
    float(*mountain_glow)[CRAFTAX_N] = glows ? (float(*)[CRAFTAX_N])w->p : 0;
    float(*tree_glow)[CRAFTAX_N] = glows ? (float(*)[CRAFTAX_N])w->cumsum : 0;

    float water_min, water_inv_range, mountain_min, mountain_inv_range;
    craftax_split2(rng, &rng, &sub);
    craftax_lanes_sync(lanes); /* the previous floor's lanes are done with the scratch */
    craftax_fractal_noise_parts_lanes(sub, 3, 3, params->has_angles[0] ? params->angles_water : 0, w->water, 0,
                                      &water_min, &water_inv_range, w->grad_x, w->grad_y, lane, lanes);
    craftax_split2(rng, &rng, &sub); /* unused by upstream */
    craftax_split2(rng, &rng, &sub);
    craftax_fractal_noise_parts_lanes(sub, 3, 3, params->has_angles[1] ? params->angles_mountain : 0, w->mountain,
                                      mountain_glow, &mountain_min, &mountain_inv_range, w->grad_x, w->grad_y, lane,
                                      lanes);
    craftax_split2(rng, &rng, &sub);
    craftax_fractal_noise_lanes(sub, 6, 24, params->has_angles[2] ? params->angles_path : 0, w->path_x, 0, w->grad_x,
                                w->grad_y, lane, lanes);
    craftax_split2(rng, &rng, &sub); /* unused by upstream */
    craftax_split2(rng, &rng, &sub);
    craftax_fractal_noise_lanes(sub, 12, 12, params->has_angles[3] ? params->angles_tree : 0, w->tree_noise, tree_glow,
                                w->grad_x, w->grad_y, lane, lanes);
    /* The tree field draws from the carry key itself, which is then split again. */
    const CraftaxKey tree_key = rng;

    /* `proximity / strength` by a config constant: XLA folds the division into a multiply by
     * the float reciprocal (0.2f, 1/17f, 0.1f), which rounds differently near the centre. */
    const float water_inv_strength = 1.0f / (float)cfg->water_strength;
    const float mountain_inv_strength = 1.0f / (float)cfg->mountain_strength;
    /* Branch-free pass (vectorises): the water and mountain fields, and the lava glow mask. */
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        {
            const int32_t dx = i - centre, dy = j - centre;
            const float proximity = sqrtf((float)(dx * dx + dy * dy));
            const float prox_water = craftax_clip_f32(proximity * water_inv_strength, 0.0f, cfg->water_max);
            const float prox_mountain = craftax_clip_f32(proximity * mountain_inv_strength, 0.0f, cfg->mountain_max);
            w->water[i][j] = craftax_water_field(w->water[i][j], water_min, water_inv_range, prox_water);
            w->mountain[i][j] =
                craftax_mountain_field(w->mountain[i][j], mountain_min, mountain_inv_range, prox_mountain);
            if (glows) {
                const float mountain = craftax_mountain_field(mountain_glow[i][j], mountain_min, mountain_inv_range,
                                                              prox_mountain);
                w->mask_a[i * CRAFTAX_N + j] = (uint8_t)(mountain > 0.85f && tree_glow[i][j] > 0.7f);
            }
        }
    }
    /* The map kernel (broadcast_select_fusion): one value of each field serves all its tests. */
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        {
            const float water = w->water[i][j], mountain = w->mountain[i][j];
            uint8_t block = water > cfg->water_threshold ? cfg->sea_block : cfg->default_block;
            if (water > cfg->sand_threshold && block != cfg->sea_block) block = cfg->coast_block;
            if (mountain > 0.7f) block = cfg->mountain_block;
            if (mountain > 0.7f && w->path_x[i][j] > 0.8f) block = cfg->path_block;
            if (mountain > 0.7f && w->path_x[j][i] > 0.8f) block = cfg->path_block;
            if (mountain > 0.85f && water > 0.4f) block = cfg->inner_mountain_block;
            /* Each uniform element is a pure function of (key, index) under partitionable
             * threefry, so it is drawn only for cells whose outcome depends on it. Every
             * threshold is positive, so a cell below the perlin threshold (value 0) never
             * becomes a tree. */
            if (block == cfg->tree_requirement_block && w->tree_noise[i][j] > cfg->tree_threshold_perlin &&
                craftax_uniform(tree_key, (uint32_t)(i * CRAFTAX_N + j)) > cfg->tree_threshold_uniform)
                block = cfg->tree;
            map[i][j] = block;
        }
    }

    /* Ores: a scan over five (requirement, ore, chance) triples, keys chained. */
    craftax_split2(rng, &rng, &sub);
    CraftaxKey ore_carry = sub;
    for (int ore = 0; ore < 5; ore++) {
        CraftaxKey ore_key;
        craftax_split2(ore_carry, &ore_carry, &ore_key);
        if (!(cfg->ore_chances[ore] > 0.0f)) continue; /* uniform < 0 never holds */
        /* uniform(ore_key, (48, 48)) element c is a pure function of (key, c). A GPU warp
         * draws it only for the cells that hold the requirement block (as the tree field
         * does); a CPU draws the whole field in one loop that it vectorises, which is faster
         * than a draw per qualifying cell there. Same bits either way. */
        uint8_t *cells = &map[0][0];
#ifdef __CUDA_ARCH__
        CRAFTAX_FOR_LANE(c, CRAFTAX_CELLS, lane, lanes)
            if (cells[c] == cfg->ore_requirement_blocks[ore] &&
                craftax_uniform(ore_key, (uint32_t)c) < cfg->ore_chances[ore])
                cells[c] = cfg->ores[ore];
#else
        craftax_uniform_field(ore_key, CRAFTAX_CELLS, w->p);
        for (int c = 0; c < CRAFTAX_CELLS; c++)
            if (cells[c] == cfg->ore_requirement_blocks[ore] && w->p[c] < cfg->ore_chances[ore])
                cells[c] = cfg->ores[ore];
#endif
    }

    uint8_t *flat = &map[0][0];
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        if (w->mountain[i][j] > 0.85f && w->tree_noise[i][j] > 0.7f) map[i][j] = cfg->lava;
    }
    uint8_t *cell_mask = w->mask_b;

    /* always_diamond: one STONE cell (chosen even when the flag is off) becomes DIAMOND. */
    CRAFTAX_FOR_LANE(c, CRAFTAX_CELLS, lane, lanes) cell_mask[c] = flat[c] == BLOCK_STONE;
    craftax_split2(rng, &rng, &sub);
    {
        const int32_t idx = craftax_choice_normalised_mask_lanes(sub, cell_mask, CRAFTAX_CELLS, w->p, w->cumsum,
                                                                 w->block_prefix, lane, lanes);
        const int adding_diamond = cfg->default_block == BLOCK_GRASS && params->always_diamond;
        map[idx / CRAFTAX_N][idx % CRAFTAX_N] = adding_diamond ? BLOCK_DIAMOND : BLOCK_STONE;
    }
    craftax_lanes_sync(lanes);

    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        {
            light_map[i][j] = cfg->default_light;
            item_map[i][j] = ITEM_NONE;
        }
    }
    map[centre][centre] = cfg->player_spawn;
    craftax_lanes_sync(lanes);

    CRAFTAX_FOR_LANE(c, CRAFTAX_CELLS, lane, lanes) cell_mask[c] = flat[c] == cfg->valid_ladder;
    craftax_split2(rng, &rng, &sub);
    const int32_t down = craftax_choice_mask_lanes(sub, cell_mask, CRAFTAX_CELLS, w->cumsum, lane, lanes);
    craftax_split2(rng, &rng, &sub);
    const int32_t up = craftax_choice_mask_lanes(sub, cell_mask, CRAFTAX_CELLS, w->cumsum, lane, lanes);
    const int32_t down_x = down / CRAFTAX_N, down_y = down % CRAFTAX_N;
    const int32_t up_x = up / CRAFTAX_N, up_y = up % CRAFTAX_N;
    if (cfg->ladder_down) item_map[down_x][down_y] = ITEM_LADDER_DOWN;

    /* The torch-shaped halo around the up ladder. JAX's dynamic_update_slice first wraps a
     * negative start once (+48), then clamps it so the 9x9 patch lies inside the map: a
     * ladder in rows/columns 0-3 gets its halo at the far edge (start 39). */
    {
        const int32_t x0 = craftax_dynamic_slice_start(up_x - 4, CRAFTAX_N, 9);
        const int32_t y0 = craftax_dynamic_slice_start(up_y - 4, CRAFTAX_N, 9);
        const float dl = cfg->default_light;
        CRAFTAX_FOR_LANE(ab, 9 * 9, lane, lanes) {
            const int a = ab / 9, b = ab % 9;
            light_map[x0 + a][y0 + b] = CRAFTAX_TORCH_LIGHT_MAP[a][b] * (1.0f - dl) + dl;
        }
    }
    craftax_lanes_sync(lanes);

    /* Lava glows: light += convolve2d_same(lava, [[.2,.7,.2],[.7,1,.7],[.2,.7,.2]]), with
     * the glow kernel's own lava mask (mask_a, above), which can differ from the lava tiles. */
    if (glows) {
        const uint8_t *lava_mask = w->mask_a;
        const float kernel[3][3] = {{0.2f, 0.7f, 0.2f}, {0.7f, 1.0f, 0.7f}, {0.2f, 0.7f, 0.2f}};
        CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
            {
                float glow = 0.0f;
                for (int a = -1; a <= 1; a++)
                    for (int b = -1; b <= 1; b++) {
                        const int x = i + a, y = j + b;
                        if (x < 0 || y < 0 || x >= CRAFTAX_N || y >= CRAFTAX_N) continue;
                        if (lava_mask[x * CRAFTAX_N + y]) glow += kernel[a + 1][b + 1];
                    }
                light_map[i][j] = craftax_clip_f32(light_map[i][j] + glow, 0.0f, 1.0f);
            }
        }
    } else {
        CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
            light_map[i][j] = craftax_clip_f32(light_map[i][j], 0.0f, 1.0f);
        }
    }

    if (cfg->ladder_up) item_map[up_x][up_y] = ITEM_LADDER_UP;

    s->down_ladders[level][0] = down_x;
    s->down_ladders[level][1] = down_y;
    s->up_ladders[level][0] = up_x;
    s->up_ladders[level][1] = up_y;
}

#define CRAFTAX_DUNGEON_PAD 10
#define CRAFTAX_DUNGEON_P (CRAFTAX_N + 2 * CRAFTAX_DUNGEON_PAD)

static inline CRAFTAX_HD int32_t craftax_sign_i32(int32_t x) { return (x > 0) - (x < 0); }

/* generate_dungeon for one config; writes level `level` of the state. */
/* Lanes (common.h): the rooms and corridors (a short sequential scan) are drawn by lane 0;
 * the per-cell passes are shared. */
static inline CRAFTAX_HD void craftax_generate_dungeon(CraftaxKey rng, const CraftaxDungeonConfig *cfg,
                                                       CraftaxState *s, int level, CraftaxWorldGenScratch *w,
                                                       int lane, int lanes) {
    enum { NUM_ROOMS = 8, MIN_ROOM = 5, MAX_ROOM = 10, CHUNK = 16, CHUNKS_PER_SIDE = 3 };
    const int P = CRAFTAX_DUNGEON_P, pad = CRAFTAX_DUNGEON_PAD;
    uint8_t(*pmap)[CRAFTAX_DUNGEON_P] = w->dungeon_map;
    uint8_t(*pitems)[CRAFTAX_DUNGEON_P] = w->dungeon_items;
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
    CRAFTAX_FOR_LANE(ij, P * P, lane, lanes) {
        const int i = ij / P, j = ij % P;
        {
            const int inside = i >= pad && j >= pad && i < pad + CRAFTAX_N && j < pad + CRAFTAX_N;
            pmap[i][j] = inside ? BLOCK_WALL : 0;
            pitems[i][j] = ITEM_NONE;
        }
    }
    craftax_lanes_sync(lanes);

    /* Rooms: a scan carrying the occupancy of the 3x3 chunks and a key. */
    int32_t room_pos[NUM_ROOMS][2];
    float occupancy[9];
    for (int i = 0; i < 9; i++) occupancy[i] = 1.0f;
    craftax_split2(rng, &rng, &sub);
    CraftaxKey room_rng = sub;
    craftax_split2(rng, &rng, &sub); /* (the corridors' key, split here for all lanes) */
    CraftaxKey path_rng = sub;
    if (lane == 0) { /* rooms and corridors: lane 0 */
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
        for (int a = 0; a < MAX_ROOM; a++)
            for (int b = 0; b < MAX_ROOM; b++)
                if (a < room_sizes[r][0] && b < room_sizes[r][1]) pmap[px + a][py + b] = BLOCK_PATH;
        const int32_t ex = px + room_sizes[r][0] - 1, ey = py + room_sizes[r][1] - 1;
        pitems[px][py] = ITEM_TORCH;
        pitems[ex][py] = ITEM_TORCH;
        pitems[px][ey] = ITEM_TORCH;
        pitems[ex][ey] = ITEM_TORCH;

        craftax_split2(room_rng, &room_rng, &sub);
        {
            CraftaxKey k1, k2;
            craftax_split2(sub, &k1, &k2);
            const int32_t cx = craftax_randint_from_keys(k1, k2, 0, 1, room_sizes[r][0] - 1);
            const int32_t cy = craftax_randint_from_keys(k1, k2, 1, 1, room_sizes[r][1] - 1);
            pmap[px + cx][py + cy] = BLOCK_CHEST;
        }
        {
            CraftaxKey keys[3];
            for (int i = 0; i < 3; i++) keys[i] = craftax_split_at(room_rng, (uint32_t)i);
            room_rng = keys[0];
            CraftaxKey k1, k2;
            craftax_split2(keys[1], &k1, &k2);
            const int32_t fx = craftax_randint_from_keys(k1, k2, 0, 1, room_sizes[r][0] - 1);
            const int32_t fy = craftax_randint_from_keys(k1, k2, 1, 1, room_sizes[r][1] - 1);
            const int has_fountain = craftax_uniform(keys[2], 0) > 0.5f;
            if (has_fountain) pmap[px + fx][py + fy] = cfg->fountain_block;
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
        for (int j = 0; j < P; j++) {
            const int32_t k = (j - sy) * hsign;
            if (hsign != 0 && k >= 0 && k <= (hd < 0 ? -hd : hd) && pmap[sx][j] == BLOCK_WALL)
                pmap[sx][j] = BLOCK_PATH;
        }
        const int32_t vd = tx - sx, vsign = craftax_sign_i32(vd);
        for (int i = 0; i < P; i++) {
            const int32_t k = (i - sx) * vsign;
            if (vsign != 0 && k >= 0 && k <= (vd < 0 ? -vd : vd) && pmap[i][ty] == BLOCK_WALL)
                pmap[i][ty] = BLOCK_PATH;
        }
        /* Quirk: the carry becomes the second half of this split. */
        craftax_split2(path_rng, &sub2, &path_rng);
        included[r] = 1.0f;
    }

    pmap[room_pos[0][0] + 2][room_pos[0][1] + 2] = cfg->special_block;
    } /* lane 0 */
    craftax_lanes_sync(lanes);

    uint8_t(*map)[CRAFTAX_N] = s->map[level];
    uint8_t(*item_map)[CRAFTAX_N] = s->item_map[level];
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        {
            map[i][j] = pmap[i + pad][j + pad];
            item_map[i][j] = pitems[i + pad][j + pad];
        }
    }
    craftax_lanes_sync(lanes);

    /* Walls next to a corridor or room (plus-shaped neighbourhood) stay walls, sometimes
     * mossy; walls with no open neighbour become darkness; one path in ten without an
     * item becomes the floor's rare block. */
    uint8_t *adjacent = w->mask_a;
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        {
            int open = map[i][j] != BLOCK_WALL;
            if (i > 0) open |= map[i - 1][j] != BLOCK_WALL;
            if (i < CRAFTAX_N - 1) open |= map[i + 1][j] != BLOCK_WALL;
            if (j > 0) open |= map[i][j - 1] != BLOCK_WALL;
            if (j < CRAFTAX_N - 1) open |= map[i][j + 1] != BLOCK_WALL;
            adjacent[i * CRAFTAX_N + j] = (uint8_t)open;
        }
    }
    craftax_lanes_sync(lanes);
    craftax_split2(rng, &rng, &sub);
    {
        const float rare_cumsum[2] = {0.9f, 0.9f + 0.1f};
        CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
            {
                /* The draw is made only where it can matter (see the tree field above). */
                const uint32_t cell = (uint32_t)(i * CRAFTAX_N + j);
                const uint8_t block = map[i][j];
                uint8_t out;
                if (!adjacent[cell])
                    out = BLOCK_DARKNESS;
                else if (block == BLOCK_WALL)
                    out = craftax_choice_from_cumsum(sub, cell, rare_cumsum, 2) == 1 ? BLOCK_WALL_MOSS : BLOCK_WALL;
                else if (block == BLOCK_PATH && item_map[i][j] == ITEM_NONE &&
                         craftax_choice_from_cumsum(sub, cell, rare_cumsum, 2) == 1)
                    out = cfg->rare_path_replacement_block;
                else
                    out = block;
                map[i][j] = out;
            }
        }
    }

    float(*light_map)[CRAFTAX_N] = s->light_map[level];
    CRAFTAX_FOR_CELLS(i, j, lane, lanes) {
        light_map[i][j] = 1.0f;
    }

    uint8_t *path_mask = w->mask_b;
    CRAFTAX_FOR_LANE(c, CRAFTAX_CELLS, lane, lanes) path_mask[c] = (&map[0][0])[c] == BLOCK_PATH;
    craftax_split2(rng, &rng, &sub);
    const int32_t down = craftax_choice_normalised_mask_lanes(sub, path_mask, CRAFTAX_CELLS, w->p, w->cumsum,
                                                              w->block_prefix, lane, lanes);
    item_map[down / CRAFTAX_N][down % CRAFTAX_N] = ITEM_LADDER_DOWN;
    craftax_split2(rng, &rng, &sub);
    const int32_t up = craftax_choice_mask_lanes(sub, path_mask, CRAFTAX_CELLS, w->cumsum, lane, lanes);
    item_map[up / CRAFTAX_N][up % CRAFTAX_N] = ITEM_LADDER_UP;

    s->down_ladders[level][0] = down / CRAFTAX_N;
    s->down_ladders[level][1] = down % CRAFTAX_N;
    s->up_ladders[level][0] = up / CRAFTAX_N;
    s->up_ladders[level][1] = up % CRAFTAX_N;
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
