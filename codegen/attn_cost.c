/* attn_cost.c — whether the fused attention family pays for a chain.
 *
 * Before: an attention chain found by cg_find_attention (attn_impl.h).
 * After cg_attn_pays(): 1 where one fused kernel is estimated no slower than
 * the chain's statements as kernels of their own (the rows family, the
 * scores and probabilities in memory), else 0 — then cg_make_groups plans
 * the chain's statements as any others.
 *
 * The fused kernel is a block per (batch point, row tile of 64 rows); each
 * block sweeps the columns a tile of 64 at a time, every step a chain of
 * dependent phases (load, scores, row statistics, accumulate) whatever the
 * tile's fill.  Its time: the larger of its sweep (the waves of blocks the
 * GPU holds, times the column tiles, ATTN_STEP_S each) and its padded tile
 * work on the tensor cores.  The chain as kernels: ATTN_LAUNCH_S a
 * statement, the scores-sized tensors written and read once each, and its
 * arithmetic, at rates the rows family reaches (not the peaks).
 *
 * The constants are fitted, not guessed: on the H200 (2026-12-03, fp32),
 * the 150 differential-fuzzer specs of seeds 1-1,499 holding one attention
 * chain, timed fused and with the family off (KBC_NO_ATTN=1), back to
 * back: always fused loses a geomean 1.21x against the better of the two
 * (worst 9.4x: seed 1199), never fused 1.11x (worst 12.5x: a ViT
 * attention, X/4, 63 us fused, 788 us apart), this model 1.07x (worst
 * 2.15x).  A step is worth some five launches: heads of 3x3 scores (seed
 * 236, 5,329 blocks) 104 us fused against 29 us apart; 131 rows in 3
 * blocks sweeping 3 column tiles (seed 911) 25 us against 9; CViT's 2x2
 * heads in 40 blocks, one step, 160 us for the model fused against 166. */
#include <math.h>

#include "attn_impl.h"

/* The model's constants (seconds, per second; fitted on the H200). */
#define ATTN_STEP_S 5e-6      /* a block's step over one column tile */
#define ATTN_LAUNCH_S 1e-6    /* a statement of the chain as a kernel */
#define ATTN_MMA_FLOPS 300e12 /* TF32 mma.sync; 3xTF32 takes three */
#define ATTN_FFMA_FLOPS 20e12 /* the rows family's arithmetic */
#define ATTN_BYTES_S 1e12     /* the rows family's traffic */
enum { ATTN_TILE = 64, ATTN_BLOCKS_PER_SM = 2 };

static double up(double x, double m) { return ceil(x / m) * m; }

int cg_attn_pays(const cg_attention *ch, const cg_target *t) {
  const cg_contraction *c = &ch->c1;
  double batch = cg_extent_estimate(ch->S, c->bat, c->n_b), rows = cg_extent_estimate(ch->S, c->m, c->n_m);
  double cols = cg_extent_estimate(ch->S, c->n, c->n_n), d = cg_extent_estimate(ch->S, c->k, c->n_k), n2 = 1;
  for (int i = 0; i < ch->n_n2; i++) n2 *= cg_attn_n2_estimate(ch, i);
  double blocks = batch * ceil(rows / ATTN_TILE), col_tiles = ceil(cols / ATTN_TILE);
  double waves = ceil(blocks / (ATTN_BLOCKS_PER_SM * (t->sm_count > 0 ? t->sm_count : 1)));
  double padded = blocks * col_tiles * ATTN_TILE * ATTN_TILE * (up(d, 8) * (1 + ch->n_s2) + up(n2, 16)) * 2;
  double mma = t->precision == CG_PRECISION_TF32 ? 1 : 3;
  double fused = fmax(waves * col_tiles * ATTN_STEP_S, padded * mma / ATTN_MMA_FLOPS);
  double scores = batch * rows * cols;
  double apart = ch->count * ATTN_LAUNCH_S + scores * 4.0 * 2 * (ch->count - 1) / ATTN_BYTES_S +
                 scores * (d + n2) * 2 / ATTN_FFMA_FLOPS;
  return fused <= apart;
}
