/* cost.h — the work a program does for a binding: floating-point
 * operations (each arithmetic op or math function of the IR counted once
 * per evaluation; a multiply-add in a sum is 2) and the fewest bytes it
 * must move (every input read once, every output written once); and
 * estimates of sizes before any binding. */
#ifndef KBC_COST_H
#define KBC_COST_H

#include "bind.h"

typedef struct {
  double flops;
  double bytes;
} ir_cost;

ir_cost ir_program_cost(const ir_program *p, const ir_binding *b);

/* For decisions made before a binding is known (passes, codegen): the
 * values of var axes taken as IR_EST_VAR each, and x evaluated there
 * (1e18 when it cannot be). */
enum { IR_EST_VAR = 64 };
const int64_t *ir_estimate_axes(void);
double ir_estimate(const sym *x);
/* The terms of reduction r of s: the product of its reduced extents,
 * estimated. */
double ir_reduce_terms(const ir_stmt *s, const ir_expr *r);
/* The reductions at the top of e, reached through arithmetic, and through
 * where() too when through_where, not into other reductions: appended to
 * out[n..max) in order, the new count returned.  The first through where()
 * is the one a team or the grid splits (codegen's cg_top_reduce); hoist
 * moves the others out. */
int ir_top_reductions(const ir_expr *e, const ir_expr **out, int n, int max, int through_where);
/* The sums at the top of e, reached through arithmetic only (not through
 * where() or other reductions): appended to out[n..max), the new count
 * returned; and the one of them whose reduced extent (estimated) is the
 * largest, the first of equals, or NULL. */
int ir_top_sums(const ir_expr *e, const ir_expr **out, int n, int max);
const ir_expr *ir_main_sum(const ir_stmt *s, const ir_expr *e);
/* The flat element offset of t[idx]; whether a load's offset moves by one
 * element when index `id` of s steps by one (every var axis at IR_EST_VAR,
 * the other indices at 0); and whether some load in e does. */
sym *ir_flat_offset(kbc_arena *a, const ir_tensor *t, sym *const *idx);
int ir_load_unit_step(kbc_arena *a, const ir_stmt *s, const ir_expr *load, int id);
int ir_reads_contiguously(kbc_arena *a, const ir_stmt *s, const ir_expr *e, int id);

#endif
