/* craftax/cell_choice.h: jax.random.choice over the 48 x 48 map cells from a 0/1 mask held
 * as bits, for spawn_mobs (step_world.h) and world generation (worldgen.h).
 *
 * Upstream draws a cell with choice(key, arange(2304), p=...) over 2304-float arrays: p, its
 * blocked cumulative sum (rng.h: craftax_cumsum_f32) and a binary search. With a 0/1 mask
 * every value of that cumulative sum follows from counts of set bits, so the arrays are never
 * built: searchsorted evaluates the sum where it looks, with upstream's probe sequence (the
 * float sums are not monotone to the last ulp across blocks). Bit-identical to the arrays
 * (spawn_mobs and world generation use it).
 */
#ifndef CRAFTAX_CELL_CHOICE_H
#define CRAFTAX_CELL_CHOICE_H

#include "common.h"
#include "constants.h"
#include "rng.h"

#define CRAFTAX_CELLS (CRAFTAX_MAP_SIZE * CRAFTAX_MAP_SIZE)
#define CRAFTAX_CELL_BLOCKS (CRAFTAX_CELLS / 16)

typedef struct {
    uint64_t rows[CRAFTAX_MAP_SIZE]; /* bit y of rows[x]: cell (x, y) is in the mask */
    float t[17];
    float block_scan[CRAFTAX_CELL_BLOCKS];
    float block_prefix[16]; /* craftax_cumsum_f32_lanes' second level (9 blocks of 16) */
    int32_t row_prefix[CRAFTAX_MAP_SIZE]; /* set bits in the rows before each row */
} CraftaxCellChoice;

/* Masks as rows of bits (bit y of rows[x]: cell (x, y)), cleared, then filled by a per-cell
 * pass: cell `cell` joins where `flag` is set. On a GPU warp (32 lanes) all lanes call
 * craftax_cell_rows_mark together for the cells cell0 + lane of CRAFTAX_FOR_CELLS (cell0 a
 * multiple of 32, so at most two rows) and lane 0 stores the ballot. */
static inline CRAFTAX_HD void craftax_cell_rows_clear(uint64_t *rows, int lane, int lanes) {
    CRAFTAX_FOR_LANE(x, CRAFTAX_MAP_SIZE, lane, lanes) rows[x] = 0;
}
static inline CRAFTAX_HD void craftax_cell_rows_mark(uint64_t *rows, int cell, int flag, int lane, int lanes) {
#ifdef __CUDA_ARCH__
    if (lanes == CRAFTAX_WARP_LANES) {
        const uint64_t word = __ballot_sync(0xffffffffu, flag);
        if (lane == 0) {
            const int x = cell / CRAFTAX_MAP_SIZE, y = cell % CRAFTAX_MAP_SIZE;
            const uint64_t row_bits = ((uint64_t)1 << CRAFTAX_MAP_SIZE) - 1;
            rows[x] |= (word << y) & row_bits;
            if (y + 32 > CRAFTAX_MAP_SIZE) rows[x + 1] |= word >> (CRAFTAX_MAP_SIZE - y);
        }
        return;
    }
#endif
    (void)lane;
    (void)lanes;
    if (flag) rows[cell / CRAFTAX_MAP_SIZE] |= (uint64_t)1 << (cell % CRAFTAX_MAP_SIZE);
}
static inline CRAFTAX_HD int craftax_cell_rows_get(const uint64_t *rows, int x, int y) {
    return (int)((rows[x] >> y) & 1u);
}
/* Sets or clears cell (x, y) (one lane). */
static inline CRAFTAX_HD void craftax_cell_rows_set(uint64_t *rows, int x, int y, int flag) {
    const uint64_t bit = (uint64_t)1 << y;
    rows[x] = flag ? rows[x] | bit : rows[x] & ~bit;
}

static inline CRAFTAX_HD int32_t craftax_cell_choice_row_count(const CraftaxCellChoice *c, int x) {
    return craftax_popc32((uint32_t)c->rows[x]) + craftax_popc32((uint32_t)(c->rows[x] >> 32));
}
static inline CRAFTAX_HD int32_t craftax_cell_choice_count(const CraftaxCellChoice *c) {
    int32_t count = 0;
    for (int x = 0; x < CRAFTAX_MAP_SIZE; x++) count += craftax_cell_choice_row_count(c, x);
    return count;
}

static inline CRAFTAX_HD uint32_t craftax_cell_choice_block_bits(const CraftaxCellChoice *c, int b) {
    return (uint32_t)(c->rows[b / 3] >> (16 * (b % 3))) & 0xFFFFu;
}

/* craftax_choice_from_cumsum (rng.h) over value(j) = the cumulative sum at cell j, given by
 * VALUE_AT(j); the chosen cell into out[0..1]. */
#define CRAFTAX_CELL_SEARCH(key, VALUE_AT, out)                                                 \
    do {                                                                                         \
        const float r_ = VALUE_AT(CRAFTAX_CELLS - 1) * (1.0f - craftax_uniform((key), 0));      \
        uint32_t high_;                                                                          \
        CRAFTAX_SEARCHSORTED_LEFT(CRAFTAX_CELLS, r_, VALUE_AT, high_);                           \
        const int32_t idx_ = (int32_t)high_ < CRAFTAX_CELLS ? (int32_t)high_ : CRAFTAX_CELLS - 1; \
        (out)[0] = idx_ / CRAFTAX_MAP_SIZE;                                                      \
        (out)[1] = idx_ % CRAFTAX_MAP_SIZE;                                                      \
    } while (0)

/* choice(key, arange(2304), p=mask / mask.sum()): every p[j] is 0 or q = 1/count, so inside a
 * block of 16 cells (a map row is three blocks) the blocked cumulative sum at j is
 * t[k] = (((0 + q) + q) + ...) with k the block's cells up to j (adding a 0 changes nothing);
 * the block totals t[k_b] go through the same second level, which is craftax_cumsum_f32 of
 * those 144 totals; and value(j) = t[k] (+ that scan at block b - 1 for j >= 16). */
static inline CRAFTAX_HD float craftax_cell_choice_cumsum_at(const CraftaxCellChoice *c, int j) {
    const int b = j >> 4;
    const float first = c->t[craftax_popc32(craftax_cell_choice_block_bits(c, b) & (0xFFFFu >> (15 - (j & 15))))];
    return j < 16 ? first : first + c->block_scan[b - 1];
}
/* The chosen cell (count: the mask's cells) into out, in every lane. An empty mask gives
 * upstream's 0/0 = NaN probabilities, whose search ends at index 0. Lanes share the block
 * totals and their scan; each runs the same search. Ends synced. */
static inline CRAFTAX_HD void craftax_cell_choice_normalised(CraftaxKey key, CraftaxCellChoice *c, int32_t count,
                                                             int lane, int lanes, int32_t out[2]) {
    if (count == 0) {
        out[0] = out[1] = 0;
        craftax_lanes_sync(lanes);
        return;
    }
    const float q = (float)1 / (float)count; /* p[j] = (float)mask[j] / total */
    if (lane == 0) {
        c->t[0] = 0.0f;
        for (int k = 1; k <= 16; k++) c->t[k] = c->t[k - 1] + q;
    }
    craftax_lanes_sync(lanes);
    CRAFTAX_FOR_LANE(b, CRAFTAX_CELL_BLOCKS, lane, lanes) c->block_scan[b] = c->t[craftax_popc32(craftax_cell_choice_block_bits(c, b))];
    craftax_lanes_sync(lanes);
    /* in place: each index is read before it is written, by the lane that writes it */
    craftax_cumsum_f32_lanes(c->block_scan, CRAFTAX_CELL_BLOCKS, c->block_scan, c->block_prefix, lane, lanes);
    craftax_lanes_sync(lanes);
#define CRAFTAX_CELL_NORMALISED_AT(j) craftax_cell_choice_cumsum_at(c, (j))
    CRAFTAX_CELL_SEARCH(key, CRAFTAX_CELL_NORMALISED_AT, out);
#undef CRAFTAX_CELL_NORMALISED_AT
    craftax_lanes_sync(lanes); /* c is free again */
}

/* choice(key, arange(2304), p=mask) with the 0/1 mask itself as p: its cumulative sum is the
 * count of cells up to j, exact in any order (the empty mask: all zeros, index 0 too). Ends
 * synced. */
static inline CRAFTAX_HD float craftax_cell_choice_count_at(const CraftaxCellChoice *c, int j) {
    const int x = j / CRAFTAX_MAP_SIZE, y = j % CRAFTAX_MAP_SIZE;
    const uint64_t upto = c->rows[x] & ((((uint64_t)1) << (y + 1)) - 1);
    return (float)(c->row_prefix[x] + craftax_popc32((uint32_t)upto) + craftax_popc32((uint32_t)(upto >> 32)));
}
static inline CRAFTAX_HD void craftax_cell_choice_counts(CraftaxKey key, CraftaxCellChoice *c, int lane, int lanes,
                                                         int32_t out[2]) {
    if (lane == 0) {
        int32_t before = 0;
        for (int x = 0; x < CRAFTAX_MAP_SIZE; x++) {
            c->row_prefix[x] = before;
            before += craftax_cell_choice_row_count(c, x);
        }
    }
    craftax_lanes_sync(lanes);
#define CRAFTAX_CELL_COUNT_AT(j) craftax_cell_choice_count_at(c, (j))
    CRAFTAX_CELL_SEARCH(key, CRAFTAX_CELL_COUNT_AT, out);
#undef CRAFTAX_CELL_COUNT_AT
    craftax_lanes_sync(lanes);
}

#endif
