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
/* The sums at the top of e, reached through arithmetic only (not through
 * where() or other reductions): appended to out[n..max), the new count
 * returned; and the one of them whose reduced extent (estimated) is the
 * largest, the first of equals, or NULL. */
int ir_top_sums(const ir_expr *e, const ir_expr **out, int n, int max);
const ir_expr *ir_main_sum(const ir_stmt *s, const ir_expr *e);

#endif
