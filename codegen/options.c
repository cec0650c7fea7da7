/* options.c — code generation's switches from the environment.
 *
 * Before: any environment.  After cg_options_from_env(): the cg_options
 * it asks for, each variable read once through support/env.h (so with
 * that one rule for booleans and numbers).  Called only by the code that
 * makes a target (the runtime's rt_tune_options, the kernel emulator, unit
 * tests); code generation itself never reads the environment. */
#include "options.h"

#include "passes/pipeline.h"
#include "support/buf.h"
#include "support/env.h"

#include <string.h>

/* Every switch: its variable, its field of cg_options, its range (a range
 * of [0, 1] reads as a boolean: 1/yes/on/true, 0/no/off/false).  The
 * defaults are cg_options_default()'s. */
#define CG_OPTION_TABLE(X)                          \
  X("KBC_NO_GEMM", no_gemm, 0, 1)                   \
  X("KBC_GEMM_ALWAYS", gemm_always, 0, 1)           \
  X("KBC_NO_FUSE", no_fuse, 0, 1)                   \
  X("KBC_NO_ATTN", no_attn, 0, 1)                   \
  X("KBC_ATTN_ALWAYS", attn_always, 0, 1)           \
  X("KBC_NO_VEC", no_vec, 0, 1)                     \
  X("KBC_MAX_TEAM", max_team, 1, CG_MAX_TEAM_LIMIT) \
  X("KBC_UNROLL", unroll, 1, CG_UNROLL_MAX)         \
  X("KBC_POINT_UNROLL", point_unroll, 1, 8)         \
  X("KBC_FP32_MMA", fp32_mma, 0, 1)                 \
  X("KBC_ATTN_FFMA", attn_ffma, 0, 1)               \
  X("KBC_CONV_FFMA", conv_ffma, 0, 1)               \
  X("KBC_ATTN_PIPE", attn_pipe, 0, 1)               \
  X("KBC_ATTN_RECOMPUTE", attn_recompute, 0, 1)     \
  X("KBC_ROWSUM", rowsum, 0, 2)                     \
  X("KBC_ATTN_MIN_BLOCKS", attn_min_blocks, 0, 4)   \
  X("KBC_ROWS_PARTS", rows_parts, 0, 1)             \
  X("KBC_STREAM_SPLIT", stream_split, 0, 1)         \
  X("KBC_ROWS_COST", rows_cost, 0, 1)               \
  X("KBC_ROWS_ONLINE", rows_online, 0, 2)           \
  X("KBC_ROWS_WELFORD", rows_welford, 0, 2)         \
  X("KBC_ROWS_ACROSS", rows_across, 0, 2)           \
  X("KBC_ROWS_CACHE", rows_cache, 0, 1)             \
  X("KBC_GEMM_MIN_BLOCKS", gemm_min_blocks, 0, 4)   \
  X("KBC_GEMM_STAGES", gemm_stages, 0, 4)           \
  X("KBC_GEMM_VEC", gemm_vec, 0, 1)                 \
  X("KBC_GEMM_WGMMA", gemm_wgmma, 0, 3)             \
  X("KBC_GEMM_WGMMA_T", gemm_wgmma_t, 0, 2)         \
  X("KBC_GEMM_TR_VEC", gemm_tr_vec, 0, 1)           \
  X("KBC_GEMM_SPLIT", gemm_split, 0, 2)             \
  X("KBC_GEMM_SPLIT_MIN", gemm_split_min, 0, 64)    \
  X("KBC_GEMM_EDGE", gemm_edge, 0, 1)               \
  X("KBC_GEMM_KTAB", gemm_ktab, 0, 1)               \
  X("KBC_GEMM_FOLD", gemm_fold, 0, 2)               \
  X("KBC_GEMM_WIN", gemm_win, 0, 2)                 \
  X("KBC_GEMM_WIN_PIPE", gemm_win_pipe, 0, 1)       \
  X("KBC_GEMM_WIN_RING", gemm_win_ring, 0, 1)       \
  X("KBC_GEMM_WIN_BSPLIT", gemm_win_bsplit, 0, 1)   \
  X("KBC_GEMM_WIN_ASPLIT", gemm_win_asplit, 0, 1)   \
  X("KBC_GEMM_LOW_STAGE", gemm_low_stage, 0, 1)     \
  X("KBC_GEMM_STAGE_N", gemm_stage_n, 0, 2)         \
  X("KBC_GEMM_EP_VEC", gemm_ep_vec, 0, 1)           \
  X("KBC_GEMM_EP_PERIODIC", gemm_ep_periodic, 0, 1) \
  X("KBC_GEMM_OCC", gemm_occ, 0, 2)                 \
  X("KBC_GEMM_XPREFETCH", gemm_xprefetch, 0, 3)     \
  X("KBC_GEMM_AREG", gemm_areg, 0, 2)               \
  X("KBC_GEMM_XFORM", gemm_xform, 0, 1)             \
  X("KBC_ABSORB", absorb, 0, 1)                     \
  X("KBC_GEMM_TAIL", gemm_tail, 0, 2)               \
  X("KBC_GEMM_PREP", gemm_prep, 0, 2)               \
  X("KBC_GEMM_PACK", gemm_pack, 0, 2)               \
  X("KBC_GEMM_GATHER", gemm_gather, 0, 2)           \
  X("KBC_GEMM_SMALL", gemm_small, 0, 2)             \
  X("KBC_JOIN_LOSS", join_loss, 0, 100000)          \
  X("KBC_IDX32", idx32, 0, 1)                       \
  X("KBC_PERSIST", persist, 0, 2)                   \
  X("KBC_CLUSTER", cluster, 0, 2)                   \
  X("KBC_CLUSTER_SIZE", cluster_size, 0, 16)        \
  X("KBC_CLUSTER_SLOTS", cluster_slots, 0, 4)       \
  X("KBC_PDL", pdl, 0, 1)

cg_options cg_options_default(void) {
  /* every switch not named: 0 (off) */
  return (cg_options){.unroll = CG_UNROLL_DEFAULT, .point_unroll = 1, .attn_pipe = 1,    .fp32_mma = -1,
                      .gemm_vec = 1,               .gemm_wgmma = 1,   .rows_cost = 1,    .rows_online = 1,
                      .rows_welford = 1,           .rows_across = 1,  .gemm_fold = 1,    .gemm_win = 1,
                      .gemm_win_pipe = 1,          .gemm_win_ring = 1, .gemm_tail = 1,   .idx32 = 1,
                      .gemm_split = 1,             .rowsum = 1,       .gemm_wgmma_t = 2, .gemm_prep = 1,
                      .gemm_pack = 1,              .gemm_gather = 1, .gemm_small = 1,  .join_loss = CG_JOIN_LOSS_STEPS,
                      .gemm_edge = 1,              .gemm_occ = 1,     .gemm_ep_periodic = 1,
                      .rows_cache = 1,             .gemm_tr_vec = 1,  .gemm_areg = 1};
}

/* Reads variable name (unset: *field kept). */
static void from_env(const char *name, int *field, int lo, int hi) {
  *field = lo == 0 && hi == 1 ? kbc_env_flag(name, *field) : kbc_env_int(name, lo, hi, *field);
}

cg_options cg_options_from_env_over(cg_options o) {
#define CG_OPTION_FROM_ENV(name, field, lo, hi) from_env(name, &o.field, lo, hi);
  CG_OPTION_TABLE(CG_OPTION_FROM_ENV)
#undef CG_OPTION_FROM_ENV
  return o;
}

cg_options cg_options_from_env(void) { return cg_options_from_env_over(cg_options_default()); }

/* Switch name's field of o and its range, or NULL. */
static int *find(cg_options *o, const char *name, int *lo, int *hi) {
#define CG_OPTION_FIND(n, field, l, h) \
  if (!strcmp(name, n)) return *lo = (l), *hi = (h), &o->field;
  CG_OPTION_TABLE(CG_OPTION_FIND)
#undef CG_OPTION_FIND
  return NULL;
}

/* Sets switch name to text v: 0, or -1 for an unknown name or a value out
 * of its range (err says which, with the range). */
static int set_one(cg_options *o, const char *name, const char *v, kbc_buf *err) {
  int lo, hi, on, *field = find(o, name, &lo, &hi);
  long long x;
  if (!field) {
    kbc_buf_printf(err, "unknown switch '%s'", name);
    return -1;
  }
  int flag = lo == 0 && hi == 1;
  if (flag && kbc_parse_flag(v, &on)) {
    x = on;
  } else if (flag || !kbc_parse_int(v, lo, hi, &x)) {
    if (flag) kbc_buf_printf(err, "%s takes 0 or 1, not '%s'", name, v);
    else kbc_buf_printf(err, "%s takes a number from %d to %d, not '%s'", name, lo, hi, v);
    return -1;
  }
  *field = (int)x;
  return 0;
}

int cg_options_apply(cg_options *o, const char *settings, kbc_buf *err) {
  const char *s = settings ? settings : "";
  char name[64], value[64];
  while (*s) {
    while (*s == ' ' || *s == ',' || *s == '\n' || *s == '\t') s++;
    if (!*s) break;
    size_t n = strcspn(s, "= ,\n\t");
    if (s[n] != '=' || n == 0 || n >= sizeof name) {
      kbc_buf_printf(err, "expected NAME=VALUE at '%.*s'", (int)strcspn(s, " ,\n\t"), s);
      return -1;
    }
    memcpy(name, s, n), name[n] = 0;
    s += n + 1;
    size_t m = strcspn(s, " ,\n\t");
    if (m >= sizeof value) {
      kbc_buf_printf(err, "%s: value too long", name);
      return -1;
    }
    memcpy(value, s, m), value[m] = 0;
    s += m;
    if (!strcmp(name, "KBC_ATTN_RECOMPUTE") || !strcmp(name, "KBC_ROWSUM") ||
        !strcmp(name, "KBC_GEMM_XFORM")) { /* IR pass gates too */
      kbc_buf_printf(err, "%s is read from the environment only (it gates an IR pass)", name);
      return -1;
    }
    if (set_one(o, name, value, err)) return -1;
  }
  return 0;
}

unsigned cg_pipeline_gates_from_env(void) {
  cg_options o = cg_options_from_env();
  return (o.attn_recompute || o.rowsum == 2 ? IR_GATE_ROWSUM : 0) | (o.rowsum ? IR_GATE_ROWSUM_REUSE : 0) |
         (o.absorb ? IR_GATE_ABSORB : 0) | (o.gemm_xform ? IR_GATE_OPERANDS : 0);
}

void cg_options_describe(const cg_options *o, kbc_buf *out) {
  cg_options d = cg_options_default();
#define CG_OPTION_DESCRIBE(n, field, lo, hi) \
  if (o->field != d.field) kbc_buf_printf(out, ", %s=%d", n, o->field);
  CG_OPTION_TABLE(CG_OPTION_DESCRIBE)
#undef CG_OPTION_DESCRIBE
}
