/* passes.h — the IR passes, in pipeline order (see pipeline.c).
 *
 * Each pass takes a verified program and leaves a verified program, or
 * reports errors to the diag and returns 0.  Lowering, which makes the
 * program, is lower/lower.h. */
#ifndef KBC_PASSES_H
#define KBC_PASSES_H

#include "ir/ir.h"

/* Proves every access and scatter target in bounds for all var values. */
int ir_check_bounds(ir_program *p, kbc_diag *d);
/* Folds constants and trivial arithmetic; forwards copies into outputs. */
int ir_simplify(ir_program *p, kbc_diag *d);
/* simplify.c's rule for reductions over variables their body never
 * mentions, alone: for passes that make such reductions (inline). */
void ir_drop_unused_reduce_vars(ir_program *p);
/* A scatter's indices absent from its target summed first, into a temporary. */
int ir_factor(ir_program *p, kbc_diag *d);
/* Scatter-accumulate statements solved into deterministic gathers. */
int ir_gather(ir_program *p, kbc_diag *d);
/* Sums kept only where an output index and a reduction index meet a
 * congruence (a transposed convolution's stride) split by the output
 * index's phase into where-free contractions. */
int ir_phase(ir_program *p, kbc_diag *d);
/* Elementwise temporaries substituted into their readers. */
int ir_inline(ir_program *p, kbc_diag *d);
/* inline.c's epilogue rule alone (a reduction into the one elementwise
 * statement that reads it, at its own point), again after the rowsum
 * passes, whose rewrites can leave a contraction that one reader. */
int ir_absorb(ir_program *p, kbc_diag *d);
/* An elementwise temporary of one load of all its indices and loads of
 * fewer, inlined into every reader that reads it outside reductions or as
 * a contraction's factor (inline.c; under KBC_GEMM_XFORM). */
int ir_inline_operands(ir_program *p, kbc_diag *d);
/* Sums of linear functions of contractions reassociated so that a factor
 * is summed once (sum(h: sum(k: x[b,k] * w[h,k])) = sum(k: x[b,k] *
 * sum(h: w[h,k]))). */
int ir_distribute(ir_program *p, kbc_diag *d);
/* Reductions independent of some free indices moved into statements of
 * their own; a long reduction of few outputs split in two (rfactor). */
int ir_hoist(ir_program *p, kbc_diag *d);
/* A row's sum of a contraction times another tensor, sum(J: a[R, J] *
 * p[R, J]) with a = sum(N: g(R, N) * v(J, N)), taken as sum(N: g(R, N) *
 * sum(J: p[R, J] * v(J, N))) through a new statement, where N is narrow. */
int ir_rowsum(ir_program *p, kbc_diag *d);
int ir_rowsum_reuse(ir_program *p, kbc_diag *d);
/* Drops statements and temporaries that no output depends on. */
int ir_dce(ir_program *p, kbc_diag *d);

#endif
