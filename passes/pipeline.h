/* pipeline.h — the front half of the compiler as one function.
 *
 * Before: spec text.  After: a verified, bounds-checked, simplified IR
 * program in the given arena, or NULL with diagnostics. */
#ifndef KBC_PIPELINE_H
#define KBC_PIPELINE_H

#include "ir/ir.h"

typedef struct {
  /* When set, the IR is appended after lowering and after each pass that
   * matches: NULL or "all" = every pass, else one pass name. */
  kbc_buf *dump;
  const char *dump_after;
  /* When given, the program is specialized: these var axes become
   * constants of these values before any pass runs (ir_lower). */
  const ir_axis_value *fixed;
  int n_fixed;
  /* When set, the pipeline stops after this step (a name of ir_passes):
   * "check-bounds" gives the program as the spec states it, verified and
   * bounds-checked but not transformed — the reference the transforming
   * passes are checked against (kernel_emu). */
  const char *stop_after;
  /* The passes that run only when asked (ir_pass.gate bits): what code
   * generation wants (cg_pipeline_gates), 0 for none. */
  unsigned gates;
} ir_pipeline_opts;

/* Gated passes: rowsum runs where codegen recomputes the attention
 * backward's scores-sized tensors (KBC_ATTN_RECOMPUTE): alone, its new
 * contraction measured slower than the row sum it replaces; rowsum-reuse,
 * which adds none, by default (KBC_ROWSUM); absorb under KBC_ABSORB=1;
 * operands under KBC_GEMM_XFORM=1. */
enum { IR_GATE_ROWSUM = 1, IR_GATE_ROWSUM_REUSE = 2, IR_GATE_ABSORB = 4, IR_GATE_OPERANDS = 8 };

ir_program *ir_pipeline_run(kbc_arena *a, kbc_diag *d, const char *source, const char *default_name,
                            const ir_pipeline_opts *opts);

/* The pipeline's steps in order, lowering first, ended by a NULL name;
 * their names and one-line help serve --after and --help. */
typedef struct {
  const char *name;
  const char *help;
  int (*run)(ir_program *, kbc_diag *); /* NULL for lowering */
  unsigned gate; /* 0: always; else runs only where ir_pipeline_opts.gates has this bit */
} ir_pass;
extern const ir_pass ir_passes[];
/* The step called name, or NULL. */
const ir_pass *ir_pass_find(const char *name);

#endif
