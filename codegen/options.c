/* options.c — code generation's switches from the environment.
 *
 * Before: any environment.  After cg_options_from_env(): the cg_options
 * it asks for, each variable read once through support/env.h (so with
 * that one rule for booleans and numbers).  Called only by the code that
 * makes a target (the runtime's rt_exec_target, the kernel emulator, unit
 * tests); code generation itself never reads the environment. */
#include "options.h"

#include "passes/pipeline.h"
#include "support/buf.h"
#include "support/env.h"

cg_options cg_options_default(void) {
  return (cg_options){.unroll = CG_UNROLL_DEFAULT, .attn_pipe = 1, .fp32_mma = -1, .gemm_vec = 1, .gemm_wgmma = 1, .rows_cost = 1, .rows_online = 1, .rows_welford = 1, .gemm_fold = 1, .gemm_win = 1, .gemm_win_pipe = 1, .gemm_win_ring = 1, .idx32 = 1};
}

cg_options cg_options_from_env(void) {
  cg_options o = cg_options_default();
  o.no_gemm = kbc_env_flag("KBC_NO_GEMM", 0);
  o.gemm_always = kbc_env_flag("KBC_GEMM_ALWAYS", 0);
  o.no_fuse = kbc_env_flag("KBC_NO_FUSE", 0);
  o.no_attn = kbc_env_flag("KBC_NO_ATTN", 0);
  o.attn_always = kbc_env_flag("KBC_ATTN_ALWAYS", 0);
  o.no_vec = kbc_env_flag("KBC_NO_VEC", 0);
  o.max_team = kbc_env_int("KBC_MAX_TEAM", 1, CG_MAX_TEAM_LIMIT, 0);
  o.unroll = kbc_env_int("KBC_UNROLL", 1, CG_UNROLL_MAX, CG_UNROLL_DEFAULT);
  o.fp32_mma = kbc_env_flag("KBC_FP32_MMA", -1);
  o.attn_ffma = kbc_env_flag("KBC_ATTN_FFMA", 0);
  o.attn_pipe = kbc_env_flag("KBC_ATTN_PIPE", 1);
  o.attn_recompute = kbc_env_flag("KBC_ATTN_RECOMPUTE", 0);
  o.attn_min_blocks = kbc_env_int("KBC_ATTN_MIN_BLOCKS", 0, 4, 0);
  o.rows_parts = kbc_env_flag("KBC_ROWS_PARTS", 0);
  o.stream_split = kbc_env_flag("KBC_STREAM_SPLIT", 0);
  o.rows_cost = kbc_env_flag("KBC_ROWS_COST", 1);
  o.rows_online = kbc_env_int("KBC_ROWS_ONLINE", 0, 2, 1); /* 2: wherever they pair, paying or not */
  o.rows_welford = kbc_env_int("KBC_ROWS_WELFORD", 0, 2, 1); /* 1: where it would pay; 2: wherever */
  o.gemm_min_blocks = kbc_env_int("KBC_GEMM_MIN_BLOCKS", 0, 4, 0); /* 0: the plan's; 1: no bound */
  o.gemm_stages = kbc_env_int("KBC_GEMM_STAGES", 0, 4, 0); /* 0: the plan's; 1 reads as 2 */
  o.gemm_vec = kbc_env_flag("KBC_GEMM_VEC", 1);
  o.gemm_wgmma = kbc_env_int("KBC_GEMM_WGMMA", 0, 3, 1); /* 2, 3: wherever eligible (testing) */
  o.gemm_ktab = kbc_env_flag("KBC_GEMM_KTAB", 0);
  o.gemm_fold = kbc_env_int("KBC_GEMM_FOLD", 0, 2, 1); /* 2: wherever it matches (testing) */
  o.gemm_win = kbc_env_int("KBC_GEMM_WIN", 0, 2, 1); /* 2: wherever it fits (testing) */
  o.gemm_win_pipe = kbc_env_flag("KBC_GEMM_WIN_PIPE", 1);
  o.gemm_win_ring = kbc_env_flag("KBC_GEMM_WIN_RING", 1);
  o.gemm_tail = kbc_env_flag("KBC_GEMM_TAIL", 0);
  o.idx32 = kbc_env_flag("KBC_IDX32", 1);
  return o;
}

unsigned cg_pipeline_gates_from_env(void) { return cg_options_from_env().attn_recompute ? IR_GATE_ROWSUM : 0; }

void cg_options_describe(const cg_options *o, kbc_buf *out) {
  cg_options d = cg_options_default();
  if (o->no_gemm != d.no_gemm) kbc_buf_puts(out, ", KBC_NO_GEMM");
  if (o->gemm_always != d.gemm_always) kbc_buf_puts(out, ", KBC_GEMM_ALWAYS");
  if (o->no_fuse != d.no_fuse) kbc_buf_puts(out, ", KBC_NO_FUSE");
  if (o->no_attn != d.no_attn) kbc_buf_puts(out, ", KBC_NO_ATTN");
  if (o->attn_always != d.attn_always) kbc_buf_puts(out, ", KBC_ATTN_ALWAYS");
  if (o->no_vec != d.no_vec) kbc_buf_puts(out, ", KBC_NO_VEC");
  if (o->max_team != d.max_team) kbc_buf_printf(out, ", KBC_MAX_TEAM=%d", o->max_team);
  if (o->unroll != d.unroll) kbc_buf_printf(out, ", KBC_UNROLL=%d", o->unroll);
  if (o->fp32_mma != d.fp32_mma) kbc_buf_printf(out, ", KBC_FP32_MMA=%d", o->fp32_mma);
  if (o->attn_ffma != d.attn_ffma) kbc_buf_puts(out, ", KBC_ATTN_FFMA");
  if (o->attn_pipe != d.attn_pipe) kbc_buf_puts(out, ", KBC_ATTN_PIPE=0");
  if (o->attn_recompute != d.attn_recompute) kbc_buf_printf(out, ", KBC_ATTN_RECOMPUTE=%d", o->attn_recompute);
  if (o->attn_min_blocks != d.attn_min_blocks) kbc_buf_printf(out, ", KBC_ATTN_MIN_BLOCKS=%d", o->attn_min_blocks);
  if (o->rows_parts != d.rows_parts) kbc_buf_puts(out, ", KBC_ROWS_PARTS");
  if (o->stream_split != d.stream_split) kbc_buf_puts(out, ", KBC_STREAM_SPLIT");
  if (o->rows_cost != d.rows_cost) kbc_buf_puts(out, ", KBC_ROWS_COST=0");
  if (o->rows_online != d.rows_online) kbc_buf_printf(out, ", KBC_ROWS_ONLINE=%d", o->rows_online);
  if (o->rows_welford != d.rows_welford) kbc_buf_printf(out, ", KBC_ROWS_WELFORD=%d", o->rows_welford);
  if (o->gemm_min_blocks != d.gemm_min_blocks) kbc_buf_printf(out, ", KBC_GEMM_MIN_BLOCKS=%d", o->gemm_min_blocks);
  if (o->gemm_stages != d.gemm_stages) kbc_buf_printf(out, ", KBC_GEMM_STAGES=%d", o->gemm_stages);
  if (o->gemm_vec != d.gemm_vec) kbc_buf_puts(out, ", KBC_GEMM_VEC=0");
  if (o->gemm_wgmma != d.gemm_wgmma) kbc_buf_printf(out, ", KBC_GEMM_WGMMA=%d", o->gemm_wgmma);
  if (o->gemm_ktab != d.gemm_ktab) kbc_buf_puts(out, ", KBC_GEMM_KTAB");
  if (o->gemm_fold != d.gemm_fold) kbc_buf_printf(out, ", KBC_GEMM_FOLD=%d", o->gemm_fold);
  if (o->gemm_win != d.gemm_win) kbc_buf_printf(out, ", KBC_GEMM_WIN=%d", o->gemm_win);
  if (o->gemm_win_pipe != d.gemm_win_pipe) kbc_buf_puts(out, ", KBC_GEMM_WIN_PIPE=0");
  if (o->gemm_win_ring != d.gemm_win_ring) kbc_buf_puts(out, ", KBC_GEMM_WIN_RING=0");
  if (o->gemm_tail != d.gemm_tail) kbc_buf_puts(out, ", KBC_GEMM_TAIL");
  if (o->idx32 != d.idx32) kbc_buf_puts(out, ", KBC_IDX32=0");
}
