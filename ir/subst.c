/* subst.c — see subst.h. */
#include "subst.h"

/* Index ids are first moved past every id in use, then replaced. */
enum { PARKED = 1 << 20 };

sym *ir_sym_subst(kbc_arena *a, const sym *x, int n_old, sym *const *by) {
  sym *r = (sym *)x;
  if (!by) return r;
  for (int id = 0; id < n_old && r; id++)
    if (sym_mentions_index(r, id)) r = sym_subst_index(a, r, id, sym_index(a, PARKED + id, "?"));
  for (int id = 0; id < n_old && r; id++)
    if (sym_mentions_index(r, PARKED + id)) r = sym_subst_index(a, r, PARKED + id, by[id]);
  return r;
}

ir_expr *ir_expr_subst(kbc_arena *a, const ir_expr *e, int n_old, sym *const *by, const int *red_map) {
  ir_expr *c = KBC_NEW(a, ir_expr);
  *c = *e;
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (!(c->arg[i] = ir_expr_subst(a, e->arg[i], n_old, by, red_map))) return NULL;
  switch (e->op) {
  case IR_OP_LOAD: {
    int rank = e->u.load.tensor->rank;
    c->u.load.idx = KBC_NEW_ARRAY(a, sym *, rank > 0 ? rank : 1);
    for (int i = 0; i < rank; i++)
      if (!(c->u.load.idx[i] = ir_sym_subst(a, e->u.load.idx[i], n_old, by))) return NULL;
    break;
  }
  case IR_OP_INDEX:
    if (!(c->u.index = ir_sym_subst(a, e->u.index, n_old, by))) return NULL;
    break;
  case IR_OP_REDUCE:
    c->u.reduce.vars = KBC_NEW_ARRAY(a, int, e->u.reduce.n_vars);
    for (int i = 0; i < e->u.reduce.n_vars; i++)
      c->u.reduce.vars[i] = red_map ? red_map[e->u.reduce.vars[i]] : e->u.reduce.vars[i];
    break;
  default:
    break;
  }
  return c;
}

void ir_mark_reduce_vars(const ir_expr *e, unsigned char *mark) {
  if (e->op == IR_OP_REDUCE)
    for (int i = 0; i < e->u.reduce.n_vars; i++) mark[e->u.reduce.vars[i]] = 1;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) ir_mark_reduce_vars(e->arg[i], mark);
}

/* Renumbers s's indices to keep only `keep` ones, in order. */
static void renumber(kbc_arena *a, ir_stmt *s, const unsigned char *keep) {
  int n = s->n_index, m = 0;
  int *red_map = KBC_NEW_ARRAY(a, int, n + 1);
  sym **by = KBC_NEW_ARRAY(a, sym *, n + 1);
  ir_index *idx = KBC_NEW_ARRAY(a, ir_index, n + 1);
  for (int i = 0; i < n; i++) {
    red_map[i] = -1;
    if (!keep[i]) continue;
    idx[m] = s->index[i];
    by[i] = sym_index(a, m, s->index[i].name);
    if (s->index[i].kind == IR_IDX_REDUCE) red_map[i] = m;
    m++;
  }
  s->rhs = ir_expr_subst(a, s->rhs, n, by, red_map);
  for (int d = 0; d < s->out->rank; d++) s->lhs[d] = ir_sym_subst(a, s->lhs[d], n, by);
  s->index = idx;
  s->n_index = m;
}

void ir_stmt_drop_stale_indices(kbc_arena *a, ir_stmt *s) {
  unsigned char *keep = KBC_NEW_ARRAY(a, unsigned char, s->n_index + 1);
  ir_mark_reduce_vars(s->rhs, keep);
  for (int k = 0; k < s->n_index; k++) keep[k] |= s->index[k].kind != IR_IDX_REDUCE;
  renumber(a, s, keep);
}

int ir_expr_mentions_index(const ir_expr *e, int id) {
  if (e->op == IR_OP_LOAD)
    for (int d = 0; d < e->u.load.tensor->rank; d++)
      if (sym_mentions_index(e->u.load.idx[d], id)) return 1;
  if (e->op == IR_OP_INDEX && sym_mentions_index(e->u.index, id)) return 1;
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (ir_expr_mentions_index(e->arg[i], id)) return 1;
  return 0;
}

int ir_expr_reads(const ir_expr *e, const ir_tensor *t) {
  if (e->op == IR_OP_LOAD && e->u.load.tensor == t) return 1;
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (ir_expr_reads(e->arg[i], t)) return 1;
  return 0;
}

int ir_expr_holds(const ir_expr *e, const ir_expr *x) {
  if (e == x) return 1;
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (ir_expr_holds(e->arg[i], x)) return 1;
  return 0;
}

int ir_expr_has_reduce(const ir_expr *e) {
  if (e->op == IR_OP_REDUCE) return 1;
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (ir_expr_has_reduce(e->arg[i])) return 1;
  return 0;
}

int ir_expr_count_reduce(const ir_expr *e) {
  int n = e->op == IR_OP_REDUCE;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n += ir_expr_count_reduce(e->arg[i]);
  return n;
}

void ir_expr_mark_loads(const ir_expr *e, unsigned char *read) {
  if (e->op == IR_OP_LOAD) read[e->u.load.tensor->id] = 1;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) ir_expr_mark_loads(e->arg[i], read);
}

int ir_load_plain(const ir_expr *e, int *ids) {
  if (e->op != IR_OP_LOAD || e->u.load.padded) return 0;
  for (int d = 0; d < e->u.load.tensor->rank; d++) {
    int id, other;
    if (!sym_is_index(e->u.load.idx[d], &id)) return 0;
    for (int k = 0; k < d; k++)
      if (sym_is_index(e->u.load.idx[k], &other) && other == id) return 0;
    if (ids) ids[d] = id;
  }
  return 1;
}

/* by[id]: what y's index id stands for in x (itself outside reductions). */
static int same(kbc_arena *a, const ir_stmt *s, const ir_expr *x, const ir_expr *y, sym **by) {
  if (x->op != y->op || x->type != y->type) return 0;
  int n = s->n_index;
  switch (x->op) {
  case IR_OP_CONST:
    if (x->u.value != y->u.value) return 0;
    break;
  case IR_OP_INDEX:
    if (!sym_equal(x->u.index, ir_sym_subst(a, y->u.index, n, by))) return 0;
    break;
  case IR_OP_LOAD:
    if (x->u.load.tensor != y->u.load.tensor || x->u.load.padded != y->u.load.padded) return 0;
    for (int d = 0; d < x->u.load.tensor->rank; d++)
      if (!sym_equal(x->u.load.idx[d], ir_sym_subst(a, y->u.load.idx[d], n, by))) return 0;
    break;
  case IR_OP_REDUCE:
    if (x->u.reduce.op != y->u.reduce.op || x->u.reduce.n_vars != y->u.reduce.n_vars) return 0;
    for (int i = 0; i < x->u.reduce.n_vars; i++) {
      int xv = x->u.reduce.vars[i], yv = y->u.reduce.vars[i];
      if (!sym_equal(s->index[xv].extent, s->index[yv].extent)) return 0;
      by[yv] = sym_index(a, xv, s->index[xv].name);
    }
    break;
  default:
    break;
  }
  for (int i = 0; i < ir_op_info[x->op].arity; i++)
    if (!same(a, s, x->arg[i], y->arg[i], by)) return 0;
  return 1;
}

int ir_expr_same(kbc_arena *a, const ir_stmt *s, const ir_expr *x, const ir_expr *y) {
  if (x == y) return 1;
  sym **by = KBC_NEW_ARRAY(a, sym *, s->n_index + 1);
  for (int id = 0; id < s->n_index; id++) by[id] = sym_index(a, id, s->index[id].name);
  return same(a, s, x, y, by);
}

void ir_index_ranges(kbc_arena *a, const ir_stmt *s, sym ***lo, sym ***hi) {
  *lo = KBC_NEW_ARRAY(a, sym *, s->n_index > 0 ? s->n_index : 1);
  *hi = KBC_NEW_ARRAY(a, sym *, s->n_index > 0 ? s->n_index : 1);
  for (int j = 0; j < s->n_index; j++) {
    (*lo)[j] = sym_const(a, 0);
    (*hi)[j] = sym_sub(a, s->index[j].extent, sym_const(a, 1));
  }
}

int ir_index_in_bounds(kbc_arena *a, const sym_facts *f, const sym *x, int n, sym *const *lo, sym *const *hi,
                       const sym *size, sym **blo, sym **bhi) {
  if (!sym_bounds(a, f, x, n, lo, hi, blo, bhi)) return -1;
  return sym_prove_nonneg(a, f, *blo) && sym_prove_lt(a, f, *bhi, size);
}

int ir_expr_size(const ir_expr *e) {
  int n = 1;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n += ir_expr_size(e->arg[i]);
  return n;
}
