/* cost.c — see cost.h. */
#include "cost.h"

static double extent(const ir_stmt *s, const ir_binding *b, int id) {
  int64_t v;
  return sym_eval(s->index[id].extent, b->vars, NULL, &v) && v > 0 ? (double)v : 0;
}

static double expr_cost(const ir_stmt *s, const ir_binding *b, const ir_expr *e) {
  switch (e->op) {
  case IR_OP_CONST: case IR_OP_LOAD: case IR_OP_INDEX:
    return 0;
  case IR_OP_REDUCE: {
    double n = 1;
    for (int i = 0; i < e->u.reduce.n_vars; i++) n *= extent(s, b, e->u.reduce.vars[i]);
    return n * (expr_cost(s, b, e->arg[0]) + 1);
  }
  case IR_OP_WHERE:
    return expr_cost(s, b, e->arg[0]) + expr_cost(s, b, e->arg[1]) + expr_cost(s, b, e->arg[2]);
  default: {
    double c = e->type == IR_TY_FLOAT ? 1 : 0;
    for (int i = 0; i < ir_op_info[e->op].arity; i++) c += expr_cost(s, b, e->arg[i]);
    return c;
  }
  }
}

ir_cost ir_program_cost(const ir_program *p, const ir_binding *b) {
  ir_cost c = {0, 0};
  for (int i = 0; i < p->stmts.len; i++) {
    const ir_stmt *s = IR_STMT(p, i);
    double points = 1;
    for (int id = 0; id < s->n_index; id++)
      if (s->index[id].kind != IR_IDX_REDUCE) points *= extent(s, b, id);
    c.flops += points * expr_cost(s, b, s->rhs);
  }
  for (int i = 0; i < p->tensors.len; i++)
    if (IR_TENSOR(p, i)->role != IR_ROLE_TEMP) c.bytes += 4.0 * (double)b->numel[i];
  return c;
}

const int64_t *ir_estimate_axes(void) {
  static int64_t axes[4096];
  if (!axes[0])
    for (int i = 0; i < 4096; i++) axes[i] = IR_EST_VAR;
  return axes;
}

double ir_estimate(const sym *x) {
  int64_t v;
  return x && sym_eval(x, ir_estimate_axes(), NULL, &v) ? (double)v : 1e18;
}

double ir_reduce_terms(const ir_stmt *s, const ir_expr *r) {
  double n = 1;
  for (int i = 0; i < r->u.reduce.n_vars; i++) n *= ir_estimate(s->index[r->u.reduce.vars[i]].extent);
  return n;
}

int ir_top_reductions(const ir_expr *e, const ir_expr **out, int n, int max, int through_where) {
  if (e->op == IR_OP_REDUCE) {
    if (n < max) out[n++] = e;
    return n;
  }
  if (e->op == IR_OP_WHERE && !through_where) return n;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n = ir_top_reductions(e->arg[i], out, n, max, through_where);
  return n;
}

static const ir_expr *largest_sum(const ir_stmt *s, const ir_expr *e, double *best_size) {
  if (e->op == IR_OP_REDUCE) {
    if (e->u.reduce.op != IR_RED_SUM) return NULL;
    double size = ir_reduce_terms(s, e);
    if (size <= *best_size) return NULL;
    *best_size = size;
    return e;
  }
  if (e->op == IR_OP_WHERE) return NULL;
  const ir_expr *best = NULL;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) {
    const ir_expr *r = largest_sum(s, e->arg[i], best_size);
    if (r) best = r;
  }
  return best;
}

const ir_expr *ir_main_sum(const ir_stmt *s, const ir_expr *e) {
  double size = 0;
  return largest_sum(s, e, &size);
}

int ir_top_sums(const ir_expr *e, const ir_expr **out, int n, int max) {
  if (e->op == IR_OP_REDUCE) {
    if (e->u.reduce.op == IR_RED_SUM && n < max) out[n++] = e;
    return n;
  }
  if (e->op == IR_OP_WHERE) return n;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n = ir_top_sums(e->arg[i], out, n, max);
  return n;
}

sym *ir_flat_offset(kbc_arena *a, const ir_tensor *t, sym *const *idx) {
  if (t->rank == 0) return sym_const(a, 0);
  sym *off = idx[0];
  for (int d = 1; d < t->rank; d++) off = sym_add(a, sym_mul(a, off, t->shape[d]), idx[d]);
  return off;
}

int ir_load_unit_step(kbc_arena *a, const ir_stmt *s, const ir_expr *load, int id) {
  const int64_t *axes = ir_estimate_axes();
  sym *off = ir_flat_offset(a, load->u.load.tensor, load->u.load.idx);
  int64_t *idx = KBC_NEW_ARRAY(a, int64_t, s->n_index + 1), base, moved;
  if (!off || !sym_eval(off, axes, idx, &base)) return 0;
  idx[id] = 1;
  return sym_eval(off, axes, idx, &moved) && (moved - base == 1 || moved - base == -1);
}

int ir_reads_contiguously(kbc_arena *a, const ir_stmt *s, const ir_expr *e, int id) {
  if (e->op == IR_OP_LOAD) return ir_load_unit_step(a, s, e, id);
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (ir_reads_contiguously(a, s, e->arg[i], id)) return 1;
  return 0;
}
