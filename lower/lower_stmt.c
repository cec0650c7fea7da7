/* lower_stmt.c — index-notation statements.
 *
 * Before: an AST statement `t[i, j] = expr` or `t[f(i), g(j)] += expr`, or
 * a whole-tensor right side holding a reduction (`loss = sum(i: l[i]) / n`,
 * lowered by lw_scalar_value as a statement with no free indices).
 * After: one IR statement appended to the program, with every index
 * variable classified (free, scatter, reduction) and its range inferred:
 * from the target's declared shape, else from the dimensions it indexes
 * directly (`x[.., i, ..]`), else from a compound index `a*i + rest` into a
 * dimension of size D (i < (D - 1 - max(rest))/a + 1).  Bounds are proven
 * afterwards by ir_check_bounds. */
#include <stdint.h>
#include <string.h>

#include "lower_impl.h"

/* ---- the statement under construction ---------------------------------- */

int lw_stmt_add_index(lower *L, lw_stmt *st, const char *name, ir_idx_kind kind, sym *extent, kbc_loc loc) {
  kbc_loc *l = KBC_NEW(L->a, kbc_loc);
  *l = loc;
  kbc_vec_push(L->a, &st->names, (void *)name);
  kbc_vec_push(L->a, &st->kinds, (void *)(intptr_t)kind);
  kbc_vec_push(L->a, &st->extents, extent);
  kbc_vec_push(L->a, &st->locs, l);
  return st->names.len - 1;
}

static ir_idx_kind kind_of(const lw_stmt *st, int id) { return (ir_idx_kind)(intptr_t)st->kinds.items[id]; }

/* Iterated indices are always visible; reduction indices only in their body. */
int lw_stmt_find_index(lw_stmt *st, const char *name) {
  for (int k = st->n_scope - 1; k >= 0; k--)
    if (!strcmp(KBC_VEC_AT(st->names, const char, st->scope_ids[k]), name)) return st->scope_ids[k];
  for (int i = 0; i < st->names.len; i++)
    if (kind_of(st, i) != IR_IDX_REDUCE && !strcmp(KBC_VEC_AT(st->names, const char, i), name)) return i;
  return -1;
}

void lw_emit(lower *L, ir_stmt *s) {
  s->id = L->p->stmts.len;
  kbc_vec_push(L->a, &L->p->stmts, s);
}

ir_expr *lw_view_load(lower *L, const lw_view *v, sym **idx, int padded, kbc_loc loc) {
  int rank = v->tensor->rank;
  sym **full = KBC_NEW_ARRAY(L->a, sym *, rank > 0 ? rank : 1);
  for (int i = 0; i < v->n_fixed; i++) full[i] = v->fixed[i];
  for (int i = v->n_fixed; i < rank; i++) full[i] = idx[i - v->n_fixed];
  return ir_load(L->a, v->tensor, full, padded, loc);
}

/* ---- range inference ---------------------------------------------------- */

/* A load indexed by `id` alone in some dimension: a plain load first; a
 * zero-padded one (x?[b, i - 1]) only when there is no plain one. */
static const ir_expr *direct_use(const lw_stmt *st, int id, int *dim) {
  for (int padded = 0; padded <= 1; padded++)
    for (int k = 0; k < st->loads.len; k++) {
      const ir_expr *e = KBC_VEC_AT(st->loads, ir_expr, k);
      if (e->u.load.padded != padded) continue;
      for (int d = 0; d < e->u.load.tensor->rank; d++) {
        int j;
        if (sym_is_index(e->u.load.idx[d], &j) && j == id) {
          *dim = d;
          return e;
        }
      }
    }
  return NULL;
}

/* Extent of `id` from the compound indices a*id + rest into dimensions of
 * size D, once every other index in rest has a range: the largest extent
 * that keeps every such access in bounds (the least of the candidates).
 * Returns NULL when no access is ready or the candidates cannot be ordered
 * (*ambiguous set). */
static sym *compound_extent(lower *L, lw_stmt *st, int id, int *ambiguous) {
  int n = st->names.len;
  sym **coeff = KBC_NEW_ARRAY(L->a, sym *, n), **lo = KBC_NEW_ARRAY(L->a, sym *, n),
      **hi = KBC_NEW_ARRAY(L->a, sym *, n);
  sym *best = NULL;
  for (int k = 0; k < st->loads.len; k++) {
    const ir_expr *e = KBC_VEC_AT(st->loads, ir_expr, k);
    if (e->u.load.padded) continue;
    for (int d = 0; d < e->u.load.tensor->rank; d++) {
      const sym *x = e->u.load.idx[d];
      sym *rest;
      int64_t a;
      if (!sym_mentions_index(x, id) || !sym_split_affine(L->a, x, n, coeff, &rest)) continue;
      if (!sym_is_const(coeff[id], &a) || a <= 0) continue;
      int ready = 1;
      for (int j = 0; j < n; j++) {
        sym *ext = KBC_VEC_AT(st->extents, sym, j);
        lo[j] = sym_const(L->a, 0);
        hi[j] = j == id || !sym_mentions_index(x, j) ? lo[j] : ext ? sym_sub(L->a, ext, sym_const(L->a, 1)) : NULL;
        if (!hi[j]) ready = 0;
      }
      if (!ready) return NULL; /* wait until every other index has a range */
      sym *other = sym_sub(L->a, x, sym_mul(L->a, coeff[id], sym_index(L->a, id, "")));
      sym *rlo, *rhi;
      if (!other || !sym_bounds(L->a, L->p->facts, other, n, lo, hi, &rlo, &rhi)) continue;
      if (!sym_prove_nonneg(L->a, L->p->facts, rlo)) continue;
      sym *room = sym_sub(L->a, sym_sub(L->a, e->u.load.tensor->shape[d], sym_const(L->a, 1)), rhi);
      sym *ext = sym_add(L->a, sym_div(L->a, room, a), sym_const(L->a, 1));
      if (!ext) continue;
      if (!best || sym_prove_le(L->a, L->p->facts, ext, best)) best = ext;
      else if (!sym_prove_le(L->a, L->p->facts, best, ext)) *ambiguous = 1;
    }
  }
  return *ambiguous ? NULL : best;
}

static int infer_extents(lower *L, lw_stmt *st) {
  int n = st->names.len, ok = 1;
  for (int id = 0; id < n; id++) {
    if (st->extents.items[id]) continue;
    int d, d2;
    const ir_expr *e = direct_use(st, id, &d);
    if (!e) continue;
    sym *ext = e->u.load.tensor->shape[d];
    st->extents.items[id] = ext;
    /* Every other direct use of the same kind must agree (a padded load
     * may be read past its end, so it need not agree with a plain one). */
    for (int k = 0; k < st->loads.len; k++) {
      const ir_expr *f = KBC_VEC_AT(st->loads, ir_expr, k);
      if (f->u.load.padded != e->u.load.padded) continue;
      for (d2 = 0; d2 < f->u.load.tensor->rank; d2++) {
        int j;
        if (!sym_is_index(f->u.load.idx[d2], &j) || j != id) continue;
        if (!sym_equal(f->u.load.tensor->shape[d2], ext)) {
          kbc_error(L->d, f->loc, "index '%s' ranges over %s in '%s' (dimension %d) but over %s in '%s' (dimension %d)",
                    KBC_VEC_AT(st->names, const char, id), sym_str(L->a, ext), e->u.load.tensor->name, d,
                    sym_str(L->a, f->u.load.tensor->shape[d2]), f->u.load.tensor->name, d2);
          ok = 0;
        }
      }
    }
  }
  /* Iterated indices may take the largest range that keeps compound
   * accesses in bounds (a valid convolution: z + dz < d gives z < d - 2);
   * a reduction index never does: its range must be stated or direct. */
  int ambiguous = 0;
  for (int progress = 1; progress && ok && !ambiguous;) {
    progress = 0;
    for (int id = 0; id < n && !ambiguous; id++) {
      if (st->extents.items[id] || kind_of(st, id) == IR_IDX_REDUCE) continue;
      sym *ext = compound_extent(L, st, id, &ambiguous);
      if (ext) {
        st->extents.items[id] = ext;
        progress = 1;
      }
    }
  }
  for (int id = 0; id < n && ok; id++) {
    if (st->extents.items[id]) continue;
    const char *name = KBC_VEC_AT(st->names, const char, id);
    kbc_loc loc = *KBC_VEC_AT(st->locs, kbc_loc, id);
    if (kind_of(st, id) == IR_IDX_REDUCE)
      kbc_error(L->d, loc,
                "cannot infer the range of reduction index '%s': it does not index a tensor dimension directly; "
                "state it, as in sum(%s < N: ...)", name, name);
    else
      kbc_error(L->d, loc,
                "cannot infer the range of index '%s': it does not index a tensor dimension directly%s; "
                "declare the target's shape (tensor NAME f32[...])",
                name, ambiguous ? " and its compound uses give unordered bounds" : "");
    ok = 0;
  }
  return ok;
}

ir_stmt *lw_stmt_finish(lower *L, lw_stmt *st, ir_tensor *out, sym **lhs, int accumulate, ir_expr *rhs,
                        kbc_loc loc, const char *text) {
  if (!infer_extents(L, st)) return NULL;
  ir_stmt *s = KBC_NEW(L->a, ir_stmt);
  s->loc = loc;
  s->text = text;
  s->out = out;
  s->accumulate = accumulate;
  s->lhs = lhs;
  s->rhs = rhs;
  s->n_index = st->names.len;
  s->index = KBC_NEW_ARRAY(L->a, ir_index, s->n_index > 0 ? s->n_index : 1);
  for (int i = 0; i < s->n_index; i++) {
    s->index[i].name = KBC_VEC_AT(st->names, const char, i);
    s->index[i].kind = kind_of(st, i);
    s->index[i].extent = KBC_VEC_AT(st->extents, sym, i);
  }
  return s;
}

/* ---- value expressions -------------------------------------------------- */

static ir_expr *value(lower *L, lw_stmt *st, const ast_expr *e);

static int is_reduction_name(const char *name) {
  for (int i = 0; i < IR_RED_COUNT; i++)
    if (!strcmp(name, ir_red_name[i])) return 1;
  return 0;
}

static int is_index_name_ok(lower *L, lw_stmt *st, const char *name, kbc_loc loc, const char *role) {
  lw_name *n = lw_lookup(L, name);
  if (n && n->kind != LW_NAME_POISON) {
    kbc_error(L->d, loc, "'%s' is already %s and cannot be used as %s",
              name, n->kind == LW_NAME_AXIS ? "an axis" : n->kind == LW_NAME_INT ? "a loop variable or integer"
                    : n->kind == LW_NAME_DEF ? "a def" : "a tensor", role);
    return 0;
  }
  if (lw_stmt_find_index(st, name) >= 0) {
    kbc_error(L->d, loc, "index '%s' is already in use in this statement", name);
    return 0;
  }
  return 1;
}

static ir_expr *reduction(lower *L, lw_stmt *st, const ast_expr *e) {
  int op = -1;
  for (int i = 0; i < IR_RED_COUNT; i++)
    if (!strcmp(e->u.call.name, ir_red_name[i])) op = i;
  if (op < 0) {
    kbc_error(L->d, e->u.call.name_loc, "'%s(...: ...)' is not a reduction; reductions are sum, prod, max and min%s",
              e->u.call.name, lw_did_you_mean_reduction(L, e->u.call.name));
    return NULL;
  }
  int n = e->u.call.n_args;
  if (n == 0 || st->n_scope + n > 64) {
    kbc_error(L->d, e->loc, n ? "too many nested reduction indices" : "a reduction needs at least one index");
    return NULL;
  }
  int *ids = KBC_NEW_ARRAY(L->a, int, n);
  int base = st->n_scope;
  for (int i = 0; i < n; i++) {
    const ast_arg *a = &e->u.call.args[i];
    const ast_expr *v = a->value, *bound = NULL;
    if (v->kind == AST_E_BINARY && v->u.binary.op == AST_BIN_LT) {
      bound = v->u.binary.rhs;
      v = v->u.binary.lhs;
    }
    if (a->key || v->kind != AST_E_NAME) {
      kbc_error(L->d, a->loc, "reduction indices must be plain names or 'name < size', as in sum(i, j < n: ...)");
      st->n_scope = base;
      return NULL;
    }
    const char *name = v->u.name.name;
    sym *extent = NULL;
    if (!is_index_name_ok(L, st, name, a->loc, "a reduction index") ||
        (bound && !(extent = lw_int_expr(L, bound, NULL, "the range of a reduction index")))) {
      st->n_scope = base;
      return NULL;
    }
    int64_t c;
    if (extent && ((sym_is_const(extent, &c) && c < 1) ||
                   (!sym_is_const(extent, NULL) && sym_prove_nonneg(L->a, L->p->facts, sym_neg(L->a, extent))))) {
      kbc_error(L->d, bound->loc, "reduction index '%s' would range over %s values; a range must be positive", name,
                sym_str(L->a, extent));
      st->n_scope = base;
      return NULL;
    }
    ids[i] = lw_stmt_add_index(L, st, name, IR_IDX_REDUCE, extent, v->loc);
    st->scope_ids[st->n_scope++] = ids[i];
  }
  ir_expr *body = value(L, st, e->u.call.body);
  st->n_scope = base;
  if (!body) return NULL;
  if (body->type == IR_TY_BOOL) {
    kbc_error(L->d, e->u.call.body->loc, "cannot %s a condition", ir_red_name[op]);
    return NULL;
  }
  return ir_reduce(L->a, (ir_red)op, n, ids, body, e->loc); /* op indexes ir_red_name */
}

static ir_expr *call(lower *L, lw_stmt *st, const ast_expr *e) {
  const char *name = e->u.call.name;
  if (e->u.call.is_reduction) return reduction(L, st, e);
  for (int i = 0; i < e->u.call.n_args; i++)
    if (e->u.call.args[i].key) {
      kbc_error(L->d, e->u.call.args[i].loc, "'%s' takes no keyword arguments here", name);
      return NULL;
    }
  ir_op op;
  int arity = lw_scalar_fn_arity(name, &op);
  if (arity < 0) {
    lw_name *n = lw_lookup(L, name);
    if (lw_library_find(name) || (n && n->kind == LW_NAME_DEF))
      kbc_error(L->d, e->u.call.name_loc,
                "'%s' works on whole tensors: use it in a statement of its own, e.g. y = %s(...)", name, name);
    else if (n && n->kind == LW_NAME_TENSOR)
      kbc_error(L->d, e->u.call.name_loc, "'%s' is a tensor; index it with brackets: %s[...]", name, name);
    else {
      if (is_reduction_name(name))
        kbc_error(L->d, e->u.call.name_loc, "'%s' is a reduction: name its indices before a ':', as in %s(j: x[i, j])%s",
                  name, name, strcmp(name, "max") && strcmp(name, "min") ? "" : kbc_arena_printf(
                      L->a, ", or write %s(a, b) of two values", name));
      else
        kbc_error(L->d, e->u.call.name_loc, "unknown function '%s'%s", name, lw_did_you_mean(L, name, 0, NULL, 1));
    }
    return NULL;
  }
  if (e->u.call.n_args != arity) {
    kbc_error(L->d, e->u.call.name_loc, "'%s' takes %d argument%s, not %d", name, arity, arity == 1 ? "" : "s",
              e->u.call.n_args);
    return NULL;
  }
  ir_expr *args[3];
  for (int i = 0; i < arity; i++)
    if (!(args[i] = value(L, st, e->u.call.args[i].value))) return NULL;
  if (op == IR_OP_WHERE) {
    if (args[0]->type != IR_TY_BOOL) {
      kbc_error(L->d, e->u.call.args[0].value->loc, "the first argument of where() must be a condition");
      return NULL;
    }
    if (args[1]->type == IR_TY_BOOL || args[2]->type == IR_TY_BOOL) {
      kbc_error(L->d, e->loc, "where() chooses between values, not conditions");
      return NULL;
    }
    return ir_where(L->a, args[0], args[1], args[2], e->loc);
  }
  for (int i = 0; i < arity; i++)
    if (args[i]->type == IR_TY_BOOL) {
      kbc_error(L->d, e->u.call.args[i].value->loc, "'%s' of a condition", name);
      return NULL;
    }
  return arity == 1 ? ir_unary(L->a, op, args[0], e->loc) : ir_binary(L->a, op, args[0], args[1], e->loc);
}

static ir_expr *access(lower *L, lw_stmt *st, const ast_expr *e) {
  const char *name = e->u.access.name;
  lw_name *n = lw_lookup(L, name);
  if (!n || n->kind != LW_NAME_TENSOR) {
    if (n && n->kind == LW_NAME_POISON) return NULL;
    if (lw_stmt_find_index(st, name) >= 0)
      kbc_error(L->d, e->u.access.name_loc, "'%s' is an index, not a tensor", name);
    else if (n)
      kbc_error(L->d, e->u.access.name_loc, "'%s' is not a tensor", name);
    else
      kbc_error(L->d, e->u.access.name_loc, "unknown tensor '%s'%s", name, lw_did_you_mean(L, name, LW_TENSORS, NULL, 0));
    return NULL;
  }
  int rank = lw_view_rank(&n->view);
  if (e->u.access.n_idx != rank) {
    kbc_error(L->d, e->u.access.name_loc, "'%s' has rank %d but is indexed with %d ind%s", name, rank,
              e->u.access.n_idx, e->u.access.n_idx == 1 ? "ex" : "ices");
    return NULL;
  }
  if (!lw_check_assigned(L, n->view.tensor, name, e->u.access.name_loc)) return NULL;
  sym **idx = KBC_NEW_ARRAY(L->a, sym *, rank > 0 ? rank : 1);
  const char *what = kbc_arena_printf(L->a, "an index of '%s'", name);
  for (int i = 0; i < rank; i++)
    if (!(idx[i] = lw_int_expr(L, e->u.access.idx[i], st, what))) return NULL;
  ir_expr *ld = lw_view_load(L, &n->view, idx, e->u.access.padded, e->loc);
  kbc_vec_push(L->a, &st->loads, ld);
  return ld;
}

static ir_expr *name_value(lower *L, lw_stmt *st, const ast_expr *e) {
  lw_name *n = lw_lookup(L, e->u.name.name);
  if (n && n->kind == LW_NAME_POISON) return NULL;
  if (n && n->kind == LW_NAME_TENSOR) {
    if (lw_view_rank(&n->view) == 0) {
      if (!lw_check_assigned(L, n->view.tensor, e->u.name.name, e->loc)) return NULL;
      ir_expr *ld = lw_view_load(L, &n->view, NULL, 0, e->loc);
      kbc_vec_push(L->a, &st->loads, ld);
      return ld;
    }
    if (st->scalar)
      kbc_error(L->d, e->loc,
                "tensor '%s' (rank %d) needs indices here: with a reduction on the right and no indices on the "
                "left, the statement computes a scalar (index notation with no free indices); index '%s' inside a "
                "reduction, or give the left side indices",
                e->u.name.name, lw_view_rank(&n->view), e->u.name.name);
    else
      kbc_error(L->d, e->loc, "tensor '%s' needs indices here: %s[...]", e->u.name.name, e->u.name.name);
    return NULL;
  }
  if (n && n->kind == LW_NAME_DEF) {
    kbc_error(L->d, e->loc, "'%s' is a def; call it in a statement of its own", e->u.name.name);
    return NULL;
  }
  kbc_error(L->d, e->loc, "unknown name '%s'%s", e->u.name.name, lw_did_you_mean(L, e->u.name.name, LW_VALUES, st, 0));
  return NULL;
}

static const ir_op binop_ir[AST_BIN_COUNT] = {
    [AST_BIN_ADD] = IR_OP_ADD, [AST_BIN_SUB] = IR_OP_SUB, [AST_BIN_MUL] = IR_OP_MUL, [AST_BIN_DIV] = IR_OP_DIV,
    [AST_BIN_EQ] = IR_OP_EQ,   [AST_BIN_NE] = IR_OP_NE,   [AST_BIN_LT] = IR_OP_LT,  [AST_BIN_LE] = IR_OP_LE,
    [AST_BIN_GT] = IR_OP_GT,   [AST_BIN_GE] = IR_OP_GE,   [AST_BIN_AND] = IR_OP_AND, [AST_BIN_OR] = IR_OP_OR,
};

static ir_expr *value(lower *L, lw_stmt *st, const ast_expr *e) {
  if (lw_is_int_expr(L, e, st)) {
    sym *s = lw_int_expr(L, e, st, "an integer expression");
    return s ? ir_index_expr(L->a, s, e->loc) : NULL;
  }
  switch (e->kind) {
  case AST_E_NUM:
    return ir_const(L->a, e->u.num.fval, e->loc);
  case AST_E_NAME:
    return name_value(L, st, e);
  case AST_E_ACCESS:
    return access(L, st, e);
  case AST_E_CALL:
    return call(L, st, e);
  case AST_E_UNARY: {
    ir_expr *x = value(L, st, e->u.unary.operand);
    if (!x) return NULL;
    int is_not = e->u.unary.op == AST_UN_NOT;
    if (is_not != (x->type == IR_TY_BOOL)) {
      kbc_error(L->d, e->loc, is_not ? "'!' needs a condition" : "cannot negate a condition");
      return NULL;
    }
    return ir_unary(L->a, is_not ? IR_OP_NOT : IR_OP_NEG, x, e->loc);
  }
  case AST_E_BINARY: {
    ast_binop op = e->u.binary.op;
    ir_expr *x = value(L, st, e->u.binary.lhs);
    ir_expr *y = x ? value(L, st, e->u.binary.rhs) : NULL;
    if (!y) return NULL;
    if (op == AST_BIN_MOD) {
      kbc_error(L->d, e->loc, "'%%' needs integer operands (indices, axes, integer literals)");
      return NULL;
    }
    int logical = op == AST_BIN_AND || op == AST_BIN_OR;
    if (logical != (x->type == IR_TY_BOOL) || logical != (y->type == IR_TY_BOOL)) {
      kbc_error(L->d, e->loc, logical ? "'%s' needs conditions on both sides" : "'%s' of a condition; compare values, then combine conditions with && and ||",
                ast_binop_text[op]);
      return NULL;
    }
    return ir_binary(L->a, binop_ir[op], x, y, e->loc);
  }
  }
  return NULL;
}

/* ---- statements --------------------------------------------------------- */

/* Adds every name used as an index but bound nowhere as a scatter index.
 * hidden[0..n_hidden) are reduction indices of enclosing reductions. */
static void collect_scatter(lower *L, lw_stmt *st, const ast_expr *e, int in_index, const char **hidden,
                            int n_hidden) {
  switch (e->kind) {
  case AST_E_NAME: {
    const char *name = e->u.name.name;
    for (int i = 0; i < n_hidden; i++)
      if (!strcmp(hidden[i], name)) return;
    /* Names in value position that resolve nowhere are reported when lowered. */
    if (in_index && !lw_lookup(L, name) && lw_stmt_find_index(st, name) < 0)
      lw_stmt_add_index(L, st, name, IR_IDX_SCATTER, NULL, e->loc);
    return;
  }
  case AST_E_ACCESS:
    for (int i = 0; i < e->u.access.n_idx; i++) collect_scatter(L, st, e->u.access.idx[i], 1, hidden, n_hidden);
    return;
  case AST_E_CALL: {
    int n = n_hidden;
    if (e->u.call.is_reduction)
      for (int i = 0; i < e->u.call.n_args && n < 64; i++) {
        const ast_expr *v = e->u.call.args[i].value;
        if (v->kind == AST_E_BINARY && v->u.binary.op == AST_BIN_LT) v = v->u.binary.lhs;
        if (v->kind == AST_E_NAME) hidden[n++] = v->u.name.name;
      }
    for (int i = 0; i < e->u.call.n_args && !e->u.call.is_reduction; i++)
      collect_scatter(L, st, e->u.call.args[i].value, in_index, hidden, n);
    if (e->u.call.body) collect_scatter(L, st, e->u.call.body, in_index, hidden, n);
    return;
  }
  case AST_E_UNARY:
    collect_scatter(L, st, e->u.unary.operand, in_index, hidden, n_hidden);
    return;
  case AST_E_BINARY:
    collect_scatter(L, st, e->u.binary.lhs, in_index, hidden, n_hidden);
    collect_scatter(L, st, e->u.binary.rhs, in_index, hidden, n_hidden);
    return;
  default:
    return;
  }
}

/* The tensor a statement writes, creating a new temporary (or a new version
 * of a rebound one) when needed.  *shape_known says the target's shape is
 * fixed (declared, or an output); else it comes from the free indices. */
static int target(lower *L, const ast_item *it, ir_tensor **out, lw_name **bind_as) {
  const char *name = it->u.stmt.name;
  lw_name *n = lw_lookup(L, name);
  *out = NULL;
  *bind_as = NULL;
  if (!lw_assignable(L, n, name, it->u.stmt.name_loc)) return 0;
  if (!n) {
    if (it->u.stmt.accumulate) {
      kbc_error(L->d, it->u.stmt.name_loc,
                "'%s' must be declared before '+=' accumulates into it (tensor %s f32[...])", name, name);
      return 0;
    }
    return 1; /* a new temporary, shaped by its free indices; bound once lowered */
  }
  ir_tensor *t = n->view.tensor;
  if (n->view.n_fixed > 0) {
    kbc_error(L->d, it->u.stmt.name_loc, "cannot assign to '%s': it is a slice of '%s'", name, t->name);
    return 0;
  }
  if (lw_caller_owns(L, n, it->u.stmt.name_loc)) return 0;
  if (t->role == IR_ROLE_INPUT) {
    kbc_error(L->d, it->u.stmt.name_loc, "cannot assign to input '%s'", name);
    return 0;
  }
  if (it->u.stmt.accumulate || !lw_writer(L, t)) {
    *out = t;
    return 1;
  }
  if (t->role == IR_ROLE_OUTPUT) {
    kbc_error(L->d, it->u.stmt.name_loc, "output '%s' is assigned twice; use '+=' to add to it", name);
    kbc_note(L->d, lw_writer(L, t)->loc, "'%s' is first assigned here", name);
    return 0;
  }
  *bind_as = n; /* rebinding a temporary: a new version */
  return 1;
}

static int lower_indexed(lower *L, const ast_item *it) {
  ir_tensor *t;
  lw_name *bind_as;
  if (!target(L, it, &t, &bind_as)) return 0;
  int n_idx = it->u.stmt.n_idx, acc = it->u.stmt.accumulate;
  if (t && t->rank != n_idx) {
    kbc_error(L->d, it->u.stmt.name_loc, "'%s' has rank %d but the left side has %d ind%s", it->u.stmt.name,
              t->rank, n_idx, n_idx == 1 ? "ex" : "ices");
    return 0;
  }
  lw_stmt st = {0};
  sym **lhs = KBC_NEW_ARRAY(L->a, sym *, n_idx > 0 ? n_idx : 1);
  if (!acc) {
    for (int i = 0; i < n_idx; i++) {
      const ast_expr *x = it->u.stmt.idx[i];
      if (x->kind != AST_E_NAME) {
        kbc_error(L->d, x->loc, "a left-side index must be a plain name; to scatter into computed positions use '+='");
        return 0;
      }
      if (!is_index_name_ok(L, &st, x->u.name.name, x->loc, "an index")) return 0;
      int id = lw_stmt_add_index(L, &st, x->u.name.name, IR_IDX_FREE, t ? t->shape[i] : NULL, x->loc);
      lhs[i] = sym_index(L->a, id, x->u.name.name);
    }
  } else {
    /* Every index name that nothing binds is iterated (scatter). */
    const char *hidden[64];
    for (int i = 0; i < n_idx; i++) collect_scatter(L, &st, it->u.stmt.idx[i], 1, hidden, 0);
    collect_scatter(L, &st, it->u.stmt.rhs, 0, hidden, 0);
    for (int i = 0; i < n_idx; i++)
      if (!(lhs[i] = lw_int_expr(L, it->u.stmt.idx[i], &st, "a left-side index"))) return 0;
  }
  ir_expr *rhs = value(L, &st, it->u.stmt.rhs);
  if (!rhs) return 0;
  if (rhs->type == IR_TY_BOOL) {
    kbc_error(L->d, it->u.stmt.rhs->loc, "a statement must assign a value, not a condition (use where(cond, a, b))");
    return 0;
  }
  if (acc) {
    /* The target's dimensions also bound the scatter indices used directly. */
    ir_expr *lhs_load = ir_load(L->a, t, lhs, 0, it->loc);
    kbc_vec_push(L->a, &st.loads, lhs_load);
  }
  ir_stmt *s = lw_stmt_finish(L, &st, t, lhs, acc, rhs, it->loc, it->u.stmt.text);
  if (!s) return 0;
  if (!t) {
    /* A new temporary (or a new version of a rebound one), shaped by its free indices. */
    sym **shape = KBC_NEW_ARRAY(L->a, sym *, n_idx > 0 ? n_idx : 1);
    for (int i = 0; i < n_idx; i++) shape[i] = s->index[i].extent;
    t = ir_tensor_add(L->p, lw_fresh_name(L, it->u.stmt.name), IR_ROLE_TEMP, IR_DT_F32, n_idx, shape,
                      it->u.stmt.name_loc);
    s->out = t;
  }
  if (!bind_as && t->role == IR_ROLE_TEMP && !lw_lookup(L, it->u.stmt.name))
    bind_as = lw_bind(L, L->scope, it->u.stmt.name, LW_NAME_TENSOR);
  if (bind_as) bind_as->view = (lw_view){.tensor = t};
  lw_emit(L, s);
  return 1;
}

int lw_lower_stmt(lower *L, const ast_item *it) {
  L->hint = it->u.stmt.name;
  L->text = it->u.stmt.text;
  if (it->u.stmt.has_idx) return lower_indexed(L, it);
  if (it->u.stmt.accumulate) {
    lw_name *n = lw_lookup(L, it->u.stmt.name);
    if (n && n->kind == LW_NAME_TENSOR && lw_view_rank(&n->view) == 0)
      kbc_error(L->d, it->u.stmt.name_loc,
                "'+=' needs an indexed left side, and '%s' has rank 0: add in one statement (%s = a + b), or "
                "rebind a temporary (acc = acc + ...)", it->u.stmt.name, it->u.stmt.name);
    else
      kbc_error(L->d, it->u.stmt.name_loc, "'+=' needs an indexed left side, e.g. %s[i, j] += ...", it->u.stmt.name);
    return 0;
  }
  lw_view v;
  if (!lw_tensor_expr(L, it->u.stmt.rhs, &v)) return 0;
  return lw_assign_view(L, it, &v);
}

/* ---- scalar statements -------------------------------------------------- */

int lw_has_reduction(const ast_expr *e) {
  switch (e->kind) {
  case AST_E_CALL:
    if (e->u.call.is_reduction) return is_reduction_name(e->u.call.name);
    if (lw_scalar_fn_arity(e->u.call.name, NULL) < 0) return 0; /* a library or def call: a whole tensor */
    for (int i = 0; i < e->u.call.n_args; i++)
      if (lw_has_reduction(e->u.call.args[i].value)) return 1;
    return 0;
  case AST_E_UNARY:
    return lw_has_reduction(e->u.unary.operand);
  case AST_E_BINARY:
    return lw_has_reduction(e->u.binary.lhs) || lw_has_reduction(e->u.binary.rhs);
  default:
    return 0;
  }
}

int lw_scalar_value(lower *L, const ast_expr *e, lw_view *out) {
  lw_stmt st = {.scalar = 1};
  /* An index that no reduction binds would be a free index, and there is
   * none: the first such name is reported. */
  const char *hidden[64];
  collect_scatter(L, &st, e, 0, hidden, 0);
  if (st.names.len) {
    const char *name = KBC_VEC_AT(st.names, const char, 0);
    kbc_error(L->d, *KBC_VEC_AT(st.locs, kbc_loc, 0),
              "index '%s' is bound by no reduction, and with no indices on the left the statement has no free "
              "index: reduce over it too, as in sum(%s, ...: ...), or give the left side indices",
              name, name);
    return 0;
  }
  ir_expr *rhs = value(L, &st, e);
  if (!rhs) return 0;
  if (rhs->type == IR_TY_BOOL) {
    kbc_error(L->d, e->loc, "a statement must assign a value, not a condition (use where(cond, a, b))");
    return 0;
  }
  sym **none = KBC_NEW_ARRAY(L->a, sym *, 1);
  ir_stmt *s = lw_stmt_finish(L, &st, NULL, none, 0, rhs, e->loc, L->text);
  if (!s) return 0;
  s->out = ir_tensor_add(L->p, lw_fresh_name(L, L->hint ? L->hint : "t"), IR_ROLE_TEMP, IR_DT_F32, 0, none, e->loc);
  lw_emit(L, s);
  *out = (lw_view){.tensor = s->out};
  return 1;
}
