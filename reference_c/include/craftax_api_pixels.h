/* craftax_api_pixels.h: the pixel observations of the C API (craftax/pixels.h and
 * craftax_classic/pixels.h): the texture atlas's layout, a renderer at any block size, and the
 * pixel envs Craftax-Pixels-v1 and Craftax-Classic-Pixels-v1.
 *
 * cffi reads this file as cdef (pycraftax/_build.py strips the preprocessor lines), so below
 * the includes it holds plain declarations and integer #defines only. Functions return 0 (or
 * a size) or a negative CRAFTAX_ERR_* code (craftax_api.h).
 *
 * The atlas is float32, craftax_pixels_atlas_size(game, block) floats: every texture section
 * (craftax_pixels_section) in C order at its offset, as pycraftax/textures.py prepares them
 * from upstream's images. The pixel envs' calls are the symbolic envs' (craftax_api.h,
 * craftax_api_step.h, craftax_api_classic.h) with an atlas of the agent's block size as their
 * last argument; their obs are float32 [N, height, width, 3], upstream's pixels / 255.
 */
#ifndef CRAFTAX_API_PIXELS_H
#define CRAFTAX_API_PIXELS_H

#include <stddef.h>
#include <stdint.h>

#include "craftax/params.h"
#include "craftax_api_classic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* `game` of the calls below */
#define CRAFTAX_PIXELS_GAME_FULL 0
#define CRAFTAX_PIXELS_GAME_CLASSIC 1
/* the block sizes of the pixel envs (upstream's BLOCK_PIXEL_SIZE_AGENT) and of upstream's play window */
#define CRAFTAX_PIXELS_AGENT_BLOCK 10
#define CRAFTAX_CLASSIC_PIXELS_AGENT_BLOCK 7
#define CRAFTAX_PIXELS_HUMAN_BLOCK 64
#define CRAFTAX_PIXELS_MIN_BLOCK 6
#define CRAFTAX_PIXELS_MAX_BLOCK 256

typedef struct {
    const char *name; /* upstream's texture name (load_all_textures_given_size) */
    uint32_t offset;  /* in floats from the start of the atlas */
    int32_t count, rows, cols, channels;
} CraftaxPixelSection;

int craftax_pixels_num_sections(int32_t game);
/* Section `index` of `game`'s atlas at block_size pixels a cell. */
int craftax_pixels_section(int32_t game, int32_t block_size, int32_t index, CraftaxPixelSection *out);
/* Floats of the atlas. */
int64_t craftax_pixels_atlas_size(int32_t game, int32_t block_size);
/* The picture's height and width in pixels: (view + inventory rows) x view cols cells. */
int craftax_pixels_picture_shape(int32_t game, int32_t block_size, int32_t *height, int32_t *width);
/* render_craftax_pixels of each state (CraftaxState or CraftaxClassicState bytes, by game)
 * into out float32 [N, height, width, 3]: upstream's 0..255 values, or times 1/255 as the
 * pixel envs' obs where `scaled`. */
int craftax_pixels_render(int32_t game, const void *states, int64_t num_envs, const float *atlas, int32_t block_size,
                          int32_t scaled, float *out);

/* Craftax-Pixels-v1: obs float32 [N, 130, 110, 3]. */
int craftax_pixels_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs, const CraftaxParams *params,
                                   float *obs, const float *atlas);
int craftax_pixels_observe(const void *states, int64_t num_envs, float *obs, const float *atlas);
int craftax_pixels_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                  const CraftaxParams *params, float *obs, float *rewards, uint8_t *dones,
                                  const float *atlas);
int craftax_pixels_step_autoreset(void *states, const int32_t *actions, const uint32_t *keys, int64_t num_envs,
                                  const CraftaxParams *params, float *obs, float *final_obs, float *rewards,
                                  uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                  uint8_t *final_achievements, const float *atlas);
int craftax_pixels_step_optimistic(void *states, const int32_t *actions, const uint32_t *key, int64_t num_envs,
                                   int32_t reset_ratio, const CraftaxParams *params, float *obs, float *final_obs,
                                   float *rewards, uint8_t *dones, uint8_t *terminated, uint8_t *truncated,
                                   uint8_t *final_achievements, int32_t *reset_worlds, const float *atlas);

/* Craftax-Classic-Pixels-v1: obs float32 [N, 63, 63, 3]. */
int craftax_classic_pixels_reset_with_keys(void *states, const uint32_t *keys, int64_t num_envs,
                                           const CraftaxClassicParams *params, float *obs, const float *atlas);
int craftax_classic_pixels_observe(const void *states, int64_t num_envs, float *obs, const float *atlas);
int craftax_classic_pixels_step_with_keys(void *states, const int32_t *actions, const uint32_t *keys,
                                          int64_t num_envs, const CraftaxClassicParams *params, float *obs,
                                          float *rewards, uint8_t *dones, const float *atlas);
int craftax_classic_pixels_step_autoreset(void *states, const int32_t *actions, const uint32_t *keys,
                                          int64_t num_envs, const CraftaxClassicParams *params, float *obs,
                                          float *final_obs, float *rewards, uint8_t *dones, uint8_t *terminated,
                                          uint8_t *truncated, uint8_t *final_achievements, const float *atlas);
int craftax_classic_pixels_step_optimistic(void *states, const int32_t *actions, const uint32_t *key,
                                           int64_t num_envs, int32_t reset_ratio, const CraftaxClassicParams *params,
                                           float *obs, float *final_obs, float *rewards, uint8_t *dones,
                                           uint8_t *terminated, uint8_t *truncated, uint8_t *final_achievements,
                                           int32_t *reset_worlds, const float *atlas);

#ifdef __cplusplus
}
#endif

#endif
