/* lower_tensor.c — whole-tensor expressions and def calls.
 *
 * Before: the right side of `y = expr` (no indices on the left).  After: a
 * view of the tensor holding the value: a name or slice is a view without
 * new statements; a library call (softmax, layernorm, linear) or a def call
 * expands into statements; an expression holding a reduction is index
 * notation with no free indices, one statement `tmp = ...` of rank 0
 * (lw_scalar_value); any other expression is elementwise over operands of
 * one shape (rank-0 operands broadcast) and becomes one statement
 * `tmp[i0, i1, ...] = ...`. */
#include <string.h>

#include "lower_impl.h"

static int shape_equal(const lw_view *a, const lw_view *b) {
  if (lw_view_rank(a) != lw_view_rank(b)) return 0;
  for (int i = 0; i < lw_view_rank(a); i++)
    if (!sym_equal(lw_view_dim(a, i), lw_view_dim(b, i))) return 0;
  return 1;
}

const char *lw_shape_str(lower *L, const lw_view *v) {
  kbc_buf b = {0};
  kbc_buf_putc(&b, '[');
  for (int i = 0; i < lw_view_rank(v); i++) {
    if (i) kbc_buf_puts(&b, ", ");
    sym_print(lw_view_dim(v, i), &b);
  }
  kbc_buf_putc(&b, ']');
  const char *s = kbc_arena_strdup(L->a, kbc_buf_str(&b));
  kbc_buf_free(&b);
  return s;
}

/* ---- names and slices --------------------------------------------------- */

static int name_view(lower *L, const ast_expr *e, const char *name, lw_view *out) {
  lw_name *n = lw_lookup(L, name);
  if (n && n->kind == LW_NAME_TENSOR) {
    *out = n->view;
    return lw_check_assigned(L, n->view.tensor, name, e->loc);
  }
  if (!n)
    kbc_error(L->d, e->loc, "unknown tensor '%s'%s", name, lw_did_you_mean(L, name, LW_TENSORS, NULL, 0));
  else if (n->kind == LW_NAME_AXIS)
    kbc_error(L->d, e->loc, "'%s' is an axis, not a tensor", name);
  else if (n->kind == LW_NAME_INT)
    kbc_error(L->d, e->loc, "'%s' is not a tensor here: it is an integer (a loop variable or an integer def argument)",
              name);
  else if (n->kind == LW_NAME_DEF)
    kbc_error(L->d, e->loc, "'%s' is a def, not a tensor; call it: %s(...)", name, name);
  return 0;
}

static int slice_view(lower *L, const ast_expr *e, lw_view *out) {
  lw_view base;
  if (!name_view(L, e, e->u.access.name, &base)) return 0;
  int n = e->u.access.n_idx, rank = lw_view_rank(&base);
  if (e->u.access.padded) {
    kbc_error(L->d, e->loc, "a zero-padded access needs index notation");
    return 0;
  }
  if (n > rank) {
    kbc_error(L->d, e->u.access.name_loc, "'%s' has rank %d but is indexed with %d indices", e->u.access.name,
              rank, n);
    return 0;
  }
  out->tensor = base.tensor;
  out->n_fixed = base.n_fixed + n;
  out->fixed = KBC_NEW_ARRAY(L->a, sym *, out->n_fixed);
  for (int i = 0; i < base.n_fixed; i++) out->fixed[i] = base.fixed[i];
  for (int i = 0; i < n; i++) {
    const ast_expr *x = e->u.access.idx[i];
    sym *s = lw_int_expr(L, x, NULL, "a slice index");
    if (!s) return 0;
    int64_t c;
    sym *dim = lw_view_dim(&base, i);
    if (sym_is_const(s, &c) && (c < 0 || (sym_is_const(dim, NULL) && !sym_prove_lt(L->a, L->p->facts, s, dim)))) {
      kbc_error(L->d, x->loc, "slice index %lld is out of bounds for dimension %d of '%s' (size %s)", (long long)c,
                i, e->u.access.name, sym_str(L->a, dim));
      return 0;
    }
    out->fixed[base.n_fixed + i] = s;
  }
  return 1;
}

/* ---- elementwise expressions -------------------------------------------- */

/* Whether e is a tensor-valued leaf (lowered to a view of its own). */
static int is_leaf(lower *L, const ast_expr *e) {
  if (e->kind == AST_E_NAME || e->kind == AST_E_ACCESS) return 1;
  if (e->kind != AST_E_CALL) return 0;
  return lw_scalar_fn_arity(e->u.call.name, NULL) < 0; /* library, def, or unknown */
}

/* Pass 1: lower leaves to views (in order).  An integer expression
 * (literals, axes, loop variables and integer def arguments, + - * / % of
 * them) is a value as in index notation, no leaf. */
static int collect_leaves(lower *L, const ast_expr *e, kbc_vec *views) {
  if (e->kind == AST_E_NUM || lw_is_int_expr(L, e, NULL)) return 1;
  if (is_leaf(L, e)) {
    lw_view *v = KBC_NEW(L->a, lw_view);
    if (!lw_tensor_expr(L, e, v)) return 0;
    kbc_vec_push(L->a, views, v);
    return 1;
  }
  switch (e->kind) {
  case AST_E_UNARY:
    return collect_leaves(L, e->u.unary.operand, views);
  case AST_E_BINARY:
    return collect_leaves(L, e->u.binary.lhs, views) && collect_leaves(L, e->u.binary.rhs, views);
  case AST_E_CALL:
    if (e->u.call.is_reduction) { /* sum, prod, max and min made the expression a scalar statement */
      kbc_error(L->d, e->u.call.name_loc, "'%s(...: ...)' is not a reduction; reductions are sum, prod, max and min%s",
                e->u.call.name, lw_did_you_mean_reduction(L, e->u.call.name));
      return 0;
    }
    for (int i = 0; i < e->u.call.n_args; i++) {
      if (e->u.call.args[i].key) {
        kbc_error(L->d, e->u.call.args[i].loc, "'%s' takes no keyword arguments", e->u.call.name);
        return 0;
      }
      if (!collect_leaves(L, e->u.call.args[i].value, views)) return 0;
    }
    return 1;
  default:
    return 1;
  }
}

typedef struct {
  kbc_vec *views;
  int next;
  sym **idx; /* the statement's free indices */
  int rank;
  lw_stmt *st;
} ew_ctx;

static const ir_op ew_binop[AST_BIN_COUNT] = {
    [AST_BIN_ADD] = IR_OP_ADD, [AST_BIN_SUB] = IR_OP_SUB, [AST_BIN_MUL] = IR_OP_MUL, [AST_BIN_DIV] = IR_OP_DIV,
    [AST_BIN_EQ] = IR_OP_EQ,   [AST_BIN_NE] = IR_OP_NE,   [AST_BIN_LT] = IR_OP_LT,  [AST_BIN_LE] = IR_OP_LE,
    [AST_BIN_GT] = IR_OP_GT,   [AST_BIN_GE] = IR_OP_GE,   [AST_BIN_AND] = IR_OP_AND, [AST_BIN_OR] = IR_OP_OR,
};

/* Pass 2: the scalar expression at one point, leaves read at the free
 * indices, integer expressions integer arithmetic (index notation's rule:
 * `/` between integers is floor division). */
static ir_expr *ew_build(lower *L, ew_ctx *c, const ast_expr *e) {
  if (e->kind != AST_E_NUM && lw_is_int_expr(L, e, NULL)) {
    sym *s = lw_int_expr(L, e, NULL, "an integer expression");
    return s ? ir_index_expr(L->a, s, e->loc) : NULL;
  }
  if (e->kind == AST_E_NUM) return ir_const(L->a, e->u.num.fval, e->loc);
  if (is_leaf(L, e)) {
    lw_view *v = KBC_VEC_AT(*c->views, lw_view, c->next++);
    ir_expr *ld = lw_view_load(L, v, lw_view_rank(v) ? c->idx : NULL, 0, e->loc);
    kbc_vec_push(L->a, &c->st->loads, ld);
    return ld;
  }
  if (e->kind == AST_E_UNARY) {
    ir_expr *x = ew_build(L, c, e->u.unary.operand);
    if (!x) return NULL;
    int is_not = e->u.unary.op == AST_UN_NOT;
    if (is_not != (x->type == IR_TY_BOOL)) {
      kbc_error(L->d, e->loc, is_not ? "'!' needs a condition" : "cannot negate a condition");
      return NULL;
    }
    return ir_unary(L->a, e->u.unary.op == AST_UN_NOT ? IR_OP_NOT : IR_OP_NEG, x, e->loc);
  }
  if (e->kind == AST_E_BINARY) {
    ir_expr *x = ew_build(L, c, e->u.binary.lhs);
    ir_expr *y = x ? ew_build(L, c, e->u.binary.rhs) : NULL;
    if (!y) return NULL;
    ast_binop op = e->u.binary.op;
    int logical = op == AST_BIN_AND || op == AST_BIN_OR;
    if (op == AST_BIN_MOD) {
      kbc_error(L->d, e->loc, "'%%' is not defined for tensor values (only for integer indices and axes)");
      return NULL;
    }
    if (logical != (x->type == IR_TY_BOOL) || logical != (y->type == IR_TY_BOOL)) {
      kbc_error(L->d, e->loc,
                logical ? "'%s' needs conditions on both sides"
                        : "'%s' of a condition; compare values, then combine conditions with && and ||",
                ast_binop_text[op]);
      return NULL;
    }
    return ir_binary(L->a, ew_binop[op], x, y, e->loc);
  }
  /* A scalar function call. */
  ir_op op = IR_OP_EXP;
  int arity = lw_scalar_fn_arity(e->u.call.name, &op);
  if (e->u.call.n_args != arity) {
    int red = op == IR_OP_MAX || op == IR_OP_MIN;
    kbc_error(L->d, e->u.call.name_loc, "'%s' takes %d argument%s, not %d%s", e->u.call.name, arity,
              arity == 1 ? "" : "s", e->u.call.n_args,
              red ? kbc_arena_printf(L->a, "; to reduce along an axis use index notation, as in y[i] = %s(j: x[i, j])",
                                     e->u.call.name)
                  : "");
    return NULL;
  }
  ir_expr *a[3] = {0};
  for (int i = 0; i < arity; i++)
    if (!(a[i] = ew_build(L, c, e->u.call.args[i].value))) return NULL;
  if (op == IR_OP_WHERE) {
    if (a[0]->type != IR_TY_BOOL || a[1]->type == IR_TY_BOOL || a[2]->type == IR_TY_BOOL) {
      kbc_error(L->d, e->loc, "where(cond, a, b) needs a condition and two values");
      return NULL;
    }
    return ir_where(L->a, a[0], a[1], a[2], e->loc);
  }
  for (int i = 0; i < arity; i++)
    if (a[i]->type == IR_TY_BOOL) {
      kbc_error(L->d, e->loc, "'%s' of a condition", e->u.call.name);
      return NULL;
    }
  return arity == 1 ? ir_unary(L->a, op, a[0], e->loc) : ir_binary(L->a, op, a[0], a[1], e->loc);
}

static int elementwise(lower *L, const ast_expr *e, lw_view *out) {
  kbc_vec views = {0};
  if (!collect_leaves(L, e, &views)) return 0;
  const lw_view *shape = NULL;
  for (int i = 0; i < views.len; i++) {
    const lw_view *v = KBC_VEC_AT(views, lw_view, i);
    if (lw_view_rank(v) == 0) continue;
    if (!shape) shape = v;
    else if (!shape_equal(shape, v)) {
      kbc_error(L->d, e->loc,
                "elementwise operands have different shapes: %s and %s (only rank-0 operands broadcast)",
                lw_shape_str(L, shape), lw_shape_str(L, v));
      return 0;
    }
  }
  int rank = shape ? lw_view_rank(shape) : 0;
  lw_stmt st = {0};
  sym **idx = KBC_NEW_ARRAY(L->a, sym *, rank > 0 ? rank : 1);
  for (int i = 0; i < rank; i++) {
    const char *nm = kbc_arena_printf(L->a, "i%d", i);
    idx[i] = sym_index(L->a, lw_stmt_add_index(L, &st, nm, IR_IDX_FREE, lw_view_dim(shape, i), e->loc), nm);
  }
  ew_ctx c = {.views = &views, .idx = idx, .rank = rank, .st = &st};
  ir_expr *rhs = ew_build(L, &c, e);
  if (!rhs) return 0;
  if (rhs->type == IR_TY_BOOL) {
    kbc_error(L->d, e->loc, "a tensor statement must compute values, not conditions (use where(cond, a, b))");
    return 0;
  }
  sym **shp = KBC_NEW_ARRAY(L->a, sym *, rank > 0 ? rank : 1);
  for (int i = 0; i < rank; i++) shp[i] = lw_view_dim(shape, i);
  ir_tensor *t = ir_tensor_add(L->p, lw_fresh_name(L, L->hint ? L->hint : "t"), IR_ROLE_TEMP, IR_DT_F32, rank, shp,
                               e->loc);
  ir_stmt *s = lw_stmt_finish(L, &st, t, idx, 0, rhs, e->loc, L->text);
  if (!s) return 0;
  lw_emit(L, s);
  *out = (lw_view){.tensor = t};
  return 1;
}

/* ---- defs --------------------------------------------------------------- */

/* The defs being expanded are recorded in each def scope as hidden names
 * "\x01NAME" (no identifier holds a \x01), numbered by depth in `version`,
 * so a def that calls itself, directly or through others, is found before
 * it expands.  Returns the innermost def scope around L->scope, or NULL. */
static lw_scope *def_scope(lower *L) {
  for (lw_scope *s = L->scope; s; s = s->parent)
    if (s->is_def) return s;
  return NULL;
}

static int is_hidden(const lw_name *n) { return n->name[0] == '\x01'; }

/* Reports when `def` is being expanded already: "f -> g -> f". */
static int check_recursion(lower *L, const ast_expr *e, const ast_item *def) {
  lw_scope *s = def_scope(L);
  const lw_name *self = NULL;
  for (const lw_name *n = s ? s->names : NULL; n; n = n->next)
    if (is_hidden(n) && !strcmp(n->name + 1, def->u.def.name)) self = n;
  if (!self) return 1;
  kbc_buf b = {0};
  for (int depth = self->version;; depth++) {
    const lw_name *at = NULL;
    for (const lw_name *n = s->names; n; n = n->next)
      if (is_hidden(n) && n->version == depth) at = n;
    if (!at) break;
    kbc_buf_printf(&b, "'%s' -> ", at->name + 1);
  }
  kbc_buf_printf(&b, "'%s'", def->u.def.name);
  kbc_error(L->d, e->u.call.name_loc, "def '%s' calls itself (%s); defs are expanded inline and cannot be recursive",
            def->u.def.name, kbc_buf_str(&b));
  kbc_buf_free(&b);
  return 0;
}

/* Records in the new def scope s the chain of the caller's, plus def. */
static void record_expansion(lower *L, lw_scope *s, const ast_item *def) {
  lw_scope *caller = def_scope(L);
  int depth = 0;
  for (const lw_name *n = caller ? caller->names : NULL; n; n = n->next)
    if (is_hidden(n)) {
      lw_name *c = lw_bind(L, s, n->name, LW_NAME_DEF);
      c->def = n->def;
      c->version = n->version;
      if (n->version >= depth) depth = n->version + 1;
    }
  lw_name *me = lw_bind(L, s, kbc_arena_printf(L->a, "\x01%s", def->u.def.name), LW_NAME_DEF);
  me->def = def;
  me->version = depth;
}

static int expand_def(lower *L, const ast_expr *e, const ast_item *def, lw_view *out) {
  if (e->u.call.is_reduction) {
    kbc_error(L->d, e->loc, "'%s' is a def, not a reduction", def->u.def.name);
    return 0;
  }
  int n = def->u.def.n_params;
  if (e->u.call.n_args != n) {
    kbc_error(L->d, e->u.call.name_loc, "'%s' takes %d argument%s, not %d", def->u.def.name, n, n == 1 ? "" : "s",
              e->u.call.n_args);
    return 0;
  }
  if (!check_recursion(L, e, def)) return 0;
  if (L->def_depth >= LW_MAX_DEF_DEPTH) {
    kbc_error(L->d, e->loc, "defs expand more than %d levels deep (is '%s' recursive?)", LW_MAX_DEF_DEPTH,
              def->u.def.name);
    return 0;
  }
  /* Arguments are evaluated in the caller's scope. */
  lw_name *args = KBC_NEW_ARRAY(L->a, lw_name, n > 0 ? n : 1);
  for (int i = 0; i < n; i++) {
    const ast_arg *a = &e->u.call.args[i];
    if (a->key) {
      kbc_error(L->d, a->loc, "'%s' takes no keyword arguments", def->u.def.name);
      return 0;
    }
    args[i].name = def->u.def.params[i];
    if (lw_is_int_expr(L, a->value, NULL)) {
      args[i].kind = LW_NAME_INT;
      if (!(args[i].value = lw_int_expr(L, a->value, NULL, "a def argument"))) return 0;
    } else {
      args[i].kind = LW_NAME_TENSOR;
      if (!lw_tensor_expr(L, a->value, &args[i].view)) return 0;
    }
  }
  const char *outer_prefix = L->scope->prefix ? L->scope->prefix : "";
  lw_scope s = {.parent = L->global, .is_def = 1,
                .prefix = kbc_arena_printf(L->a, "%s%s%d.", outer_prefix, def->u.def.name, L->n_generated++)};
  record_expansion(L, &s, def);
  for (int i = 0; i < n; i++) {
    lw_name *b = lw_bind(L, &s, args[i].name, args[i].kind);
    b->value = args[i].value;
    b->view = args[i].view;
  }
  lw_scope *saved = L->scope;
  const char *saved_hint = L->hint, *saved_text = L->text;
  L->scope = &s;
  L->def_depth++;
  int ok = lw_lower_block(L, &def->u.def.body);
  if (ok) {
    L->hint = "ret";
    L->text = saved_text;
    ok = lw_tensor_expr(L, def->u.def.ret, out);
  }
  L->def_depth--;
  L->scope = saved;
  L->hint = saved_hint;
  L->text = saved_text;
  if (!ok) kbc_note(L->d, e->loc, "in the expansion of '%s' called here", def->u.def.name);
  return ok;
}

int lw_tensor_expr(lower *L, const ast_expr *e, lw_view *out) {
  if (lw_has_reduction(e)) return lw_scalar_value(L, e, out);
  switch (e->kind) {
  case AST_E_NAME: /* an axis or a loop variable: a rank-0 value */
    return lw_is_int_expr(L, e, NULL) ? elementwise(L, e, out) : name_view(L, e, e->u.name.name, out);
  case AST_E_ACCESS:
    return slice_view(L, e, out);
  case AST_E_CALL: {
    const lw_library_fn *f = lw_library_find(e->u.call.name);
    if (f) {
      if (e->u.call.is_reduction) {
        kbc_error(L->d, e->loc, "'%s' is not a reduction; it takes whole tensors, as in y = %s(x, ...)",
                  e->u.call.name, e->u.call.name);
        return 0;
      }
      return f->expand(L, e, out);
    }
    lw_name *n = lw_lookup(L, e->u.call.name);
    if (n && n->kind == LW_NAME_DEF) return expand_def(L, e, n->def, out);
    if (lw_scalar_fn_arity(e->u.call.name, NULL) < 0) {
      if (n && n->kind == LW_NAME_POISON) return 0;
      if (!strcmp(e->u.call.name, "sum") || !strcmp(e->u.call.name, "prod"))
        kbc_error(L->d, e->u.call.name_loc,
                  "a reduction names its indices before a ':': %s(i: x[i]) reduces to a scalar, "
                  "y[i] = %s(j: x[i, j]) along an axis",
                  e->u.call.name, e->u.call.name);
      else if (n && n->kind == LW_NAME_TENSOR)
        kbc_error(L->d, e->u.call.name_loc, "'%s' is a tensor, not a function; index it with brackets: %s[...]",
                  e->u.call.name, e->u.call.name);
      else
        kbc_error(L->d, e->u.call.name_loc, "unknown function '%s'%s", e->u.call.name,
                  lw_did_you_mean(L, e->u.call.name, 0, NULL, 1));
      return 0;
    }
    return elementwise(L, e, out);
  }
  default:
    return elementwise(L, e, out);
  }
}

/* ---- assignment of a whole tensor --------------------------------------- */

/* "y[i, j]" for a rank-2 y: an example left side for messages. */
static const char *index_example(lower *L, const char *name, int rank) {
  static const char *const letters[] = {"i", "j", "k", "l"};
  kbc_buf b = {0};
  kbc_buf_printf(&b, "%s[", name);
  for (int i = 0; i < rank; i++) {
    if (i < 4) kbc_buf_printf(&b, "%s%s", i ? ", " : "", letters[i]);
    else kbc_buf_printf(&b, ", i%d", i);
  }
  kbc_buf_putc(&b, ']');
  const char *r = kbc_arena_strdup(L->a, kbc_buf_str(&b));
  kbc_buf_free(&b);
  return r;
}

static int copy_into(lower *L, const ast_item *it, ir_tensor *t, const lw_view *v) {
  lw_view dst = {.tensor = t};
  if (!shape_equal(&dst, v) && lw_view_rank(v) == 0 && lw_has_reduction(it->u.stmt.rhs)) {
    kbc_error(L->d, it->u.stmt.rhs->loc,
              "'%s' has shape %s but the right side is a scalar: its reductions reduce over every index they name "
              "and leave none free; to compute '%s' element by element, name its indices: %s = ...",
              it->u.stmt.name, lw_shape_str(L, &dst), it->u.stmt.name, index_example(L, it->u.stmt.name, t->rank));
    return 0;
  }
  if (!shape_equal(&dst, v)) {
    kbc_error(L->d, it->u.stmt.rhs->loc, "'%s' has shape %s but the value has shape %s%s", it->u.stmt.name,
              lw_shape_str(L, &dst), lw_shape_str(L, v),
              lw_view_rank(v) == 0 ? kbc_arena_printf(L->a, "; to set every element to one value use index notation: %s = ...",
                                                      index_example(L, it->u.stmt.name, t->rank))
                                   : "");
    return 0;
  }
  lw_stmt st = {0};
  sym **idx = KBC_NEW_ARRAY(L->a, sym *, t->rank > 0 ? t->rank : 1);
  for (int i = 0; i < t->rank; i++) {
    const char *nm = kbc_arena_printf(L->a, "i%d", i);
    idx[i] = sym_index(L->a, lw_stmt_add_index(L, &st, nm, IR_IDX_FREE, t->shape[i], it->loc), nm);
  }
  ir_expr *rhs = lw_view_load(L, v, idx, 0, it->u.stmt.rhs->loc);
  ir_stmt *s = lw_stmt_finish(L, &st, t, idx, 0, rhs, it->loc, it->u.stmt.text);
  if (!s) return 0;
  lw_emit(L, s);
  return 1;
}

int lw_assign_view(lower *L, const ast_item *it, const lw_view *v) {
  const char *name = it->u.stmt.name;
  lw_name *n = lw_lookup(L, name);
  if (!lw_assignable(L, n, name, it->u.stmt.name_loc)) return 0;
  if (n) {
    ir_tensor *t = n->view.tensor;
    if (lw_caller_owns(L, n, it->u.stmt.name_loc)) return 0;
    if (t->role == IR_ROLE_INPUT && n->view.n_fixed == 0 && !strcmp(t->name, name)) {
      kbc_error(L->d, it->u.stmt.name_loc, "cannot assign to input '%s'", name);
      return 0;
    }
    int written = lw_writer(L, t) != NULL;
    if (t->role == IR_ROLE_OUTPUT) {
      if (written) {
        kbc_error(L->d, it->u.stmt.name_loc, "output '%s' is assigned twice", name);
        return 0;
      }
      return copy_into(L, it, t, v);
    }
    if (t->declared && t->role == IR_ROLE_TEMP && !written && n->view.n_fixed == 0) return copy_into(L, it, t, v);
    n->view = *v; /* rebind: the name now denotes the value */
    return 1;
  }
  lw_name *b = lw_bind(L, L->scope, name, LW_NAME_TENSOR);
  b->view = *v;
  return 1;
}
