/* pipeline.c — parse, lower, then the IR passes in order, verifying the IR
 * after each one and optionally printing it (`kbc compile --emit ir`). */
#include <string.h>

#include "frontend/ast.h"
#include "lower/lower.h"
#include "passes.h"
#include "pipeline.h"

/* The one list of passes: their order, names and help (`kbc compile
 * --help`, `--after`).  Lowering is the first entry; it makes the program
 * the others transform. */
const ir_pass ir_passes[] = {
    {"lower", "AST to IR: names, axes, defs, loops, library functions, index ranges", NULL, 0},
    {"check-bounds", "every access and scatter target proven in bounds", ir_check_bounds, 0},
    {"simplify", "constants folded, trivial arithmetic removed, copies forwarded", ir_simplify, 0},
    {"factor", "a scatter's indices absent from its target summed first", ir_factor, 0},
    {"gather", "scatter-accumulates solved into deterministic gathers", ir_gather, 0},
    {"phase", "strided sums split by the output's phase: a transposed convolution's where((i + c - k) % s == 0) terms never evaluated", ir_phase, 0},
    {"inline", "elementwise temporaries substituted into their readers", ir_inline, 0},
    {"distribute", "sums of linear functions of contractions reassociated: a factor summed once, not once per value of an index it does not use", ir_distribute, 0},
    {"hoist", "reductions moved out of statements with more free indices; long reductions of few outputs split in two", ir_hoist, 0},
    {"rowsum-reuse", "rowsum where an earlier statement computes the contraction's other sum already (SAM-HQ's sum(dp * p) becomes sum(go * o)); off under KBC_ROWSUM=0", ir_rowsum_reuse, IR_GATE_ROWSUM_REUSE},
    {"rowsum", "a row's sum of a contraction times another tensor summed through the contraction's other operand: the softmax backward's sum(dp * p) becomes sum(go * (p . v)), p . v a new statement where none computes it; under KBC_ATTN_RECOMPUTE=1 or KBC_ROWSUM=2", ir_rowsum, IR_GATE_ROWSUM},
    {"absorb", "again after rowsum: a contraction read only by one elementwise statement, at its own point, computed in it (SAM-HQ's dp in ds = p * (dp - ds.red)); under KBC_ABSORB=1", ir_absorb, IR_GATE_ABSORB},
    {"operands", "after rowsum: an elementwise temporary of one load of all its indices and of smaller loads, read outside reductions or as a contraction's factor, inlined into its readers and never stored (SAM-HQ's p = exp(s - mx) / p.red, read by o and dv through their A operand's function); under KBC_GEMM_XFORM=1", ir_inline_operands, IR_GATE_OPERANDS},
    {"dce", "statements and temporaries no output depends on dropped", ir_dce, 0},
    {NULL, NULL, NULL, 0},
};

const ir_pass *ir_pass_find(const char *name) {
  for (const ir_pass *q = ir_passes; q->name; q++)
    if (!strcmp(q->name, name)) return q;
  return NULL;
}

static void dump(const ir_pipeline_opts *o, const ir_program *p, const char *after) {
  if (!o || !o->dump) return;
  if (o->dump_after && strcmp(o->dump_after, "all") && strcmp(o->dump_after, after)) return;
  kbc_buf_printf(o->dump, "# ---- IR after %s ----\n", after);
  ir_print(p, o->dump);
}

ir_program *ir_pipeline_run(kbc_arena *a, kbc_diag *d, const char *source, const char *default_name,
                            const ir_pipeline_opts *opts) {
  ast_program *ast = ast_parse(a, d, source);
  if (!ast) return NULL;
  ir_program *p = ir_lower(a, d, ast, default_name, opts ? opts->fixed : NULL, opts ? opts->n_fixed : 0);
  if (!p || !ir_verify(p, d, "lower")) return NULL;
  dump(opts, p, "lower");
  const char *stop = opts ? opts->stop_after : NULL;
  if (stop && !strcmp(stop, "lower")) return p;
  for (const ir_pass *q = ir_passes + 1; q->name; q++) {
    int gated = q->gate && !(opts && (opts->gates & q->gate));
    if (!gated && (!q->run(p, d) || kbc_diag_errors(d))) return NULL;
    if (!ir_verify(p, d, q->name)) return NULL;
    dump(opts, p, q->name);
    if (stop && !strcmp(stop, q->name)) break;
  }
  return p;
}
