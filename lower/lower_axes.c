/* lower_axes.c — integer expressions: axes, shapes, loop bounds, asserts
 * and the index expressions of statements, lowered to syms.
 *
 * Before: AST expressions.  After: syms over var axes (and, inside a
 * statement, its index variables), or a located error.  Axes may be
 * declared in any order; lw_resolve_axes evaluates them depth-first and
 * reports cycles. */
#include <string.h>

#include "lower_impl.h"

enum { MAX_AXES = 4096 };

static const char *kind_of(const lw_name *n) {
  switch (n->kind) {
  case LW_NAME_TENSOR: return "a tensor";
  case LW_NAME_DEF: return "a def";
  default: return "a name";
  }
}

sym *lw_int_expr(lower *L, const ast_expr *e, lw_stmt *st, const char *what) {
  switch (e->kind) {
  case AST_E_NUM:
    if (!e->u.num.is_int) {
      kbc_error(L->d, e->loc, "%s must be an integer expression, but '%s' is not an integer", what, e->u.num.text);
      return NULL;
    }
    return sym_const(L->a, e->u.num.ival);
  case AST_E_NAME: {
    const char *name = e->u.name.name;
    if (st) {
      int id = lw_stmt_find_index(st, name);
      if (id >= 0) return sym_index(L->a, id, KBC_VEC_AT(st->names, const char, id));
    }
    lw_name *n = lw_lookup(L, name);
    if (!n) {
      kbc_error(L->d, e->loc, "unknown name '%s' in %s%s", name, what,
                lw_did_you_mean(L, name, (1u << LW_NAME_AXIS) | (1u << LW_NAME_INT), st, 0));
      return NULL;
    }
    switch (n->kind) {
    case LW_NAME_AXIS:
      if (!n->axis->size) return NULL; /* its own definition failed */
      return n->axis->size;
    case LW_NAME_INT:
      return n->value;
    case LW_NAME_POISON:
      return NULL;
    default:
      kbc_error(L->d, e->loc, "'%s' is %s, but %s must be an integer expression", name, kind_of(n), what);
      return NULL;
    }
  }
  case AST_E_UNARY: {
    if (e->u.unary.op != AST_UN_NEG) break;
    sym *x = lw_int_expr(L, e->u.unary.operand, st, what);
    if (!x) return NULL;
    sym *r = sym_neg(L->a, x);
    if (!r) kbc_error(L->d, e->loc, "integer overflow in %s", what);
    return r;
  }
  case AST_E_BINARY: {
    ast_binop op = e->u.binary.op;
    if (op > AST_BIN_MOD) break;
    sym *x = lw_int_expr(L, e->u.binary.lhs, st, what);
    if (!x) return NULL;
    sym *y = lw_int_expr(L, e->u.binary.rhs, st, what);
    if (!y) return NULL;
    sym *r = NULL;
    int64_t c;
    switch (op) {
    case AST_BIN_ADD: r = sym_add(L->a, x, y); break;
    case AST_BIN_SUB: r = sym_sub(L->a, x, y); break;
    case AST_BIN_MUL:
      if (sym_has_index(x) && sym_has_index(y)) {
        kbc_error(L->d, e->loc, "product of two index expressions in %s: index expressions must be quasi-affine",
                  what);
        return NULL;
      }
      r = sym_mul(L->a, x, y);
      break;
    default: /* DIV, MOD */
      if (!sym_is_const(y, &c)) {
        kbc_error(L->d, e->u.binary.rhs->loc,
                  "'%s' by a non-constant in %s: only division by a constant keeps an expression quasi-affine",
                  ast_binop_text[op], what);
        return NULL;
      }
      if (c == 0) {
        kbc_error(L->d, e->u.binary.rhs->loc, "division by zero in %s", what);
        return NULL;
      }
      if (c < 0) {
        kbc_error(L->d, e->u.binary.rhs->loc, "'%s' by a negative number (%lld) in %s", ast_binop_text[op],
                  (long long)c, what);
        return NULL;
      }
      r = op == AST_BIN_DIV ? sym_div(L->a, x, c) : sym_mod(L->a, x, c);
      break;
    }
    if (!r) kbc_error(L->d, e->loc, "integer overflow in %s", what);
    return r;
  }
  case AST_E_ACCESS:
    kbc_error(L->d, e->loc, "tensor access '%s[...]' in %s, which must be an integer expression", e->u.access.name,
              what);
    return NULL;
  case AST_E_CALL:
    kbc_error(L->d, e->loc, "call of '%s' in %s, which must be an integer expression", e->u.call.name, what);
    return NULL;
  }
  kbc_error(L->d, e->loc, "%s must be an integer expression (+ - * / %% of integers, axes and indices)", what);
  return NULL;
}

int lw_is_int_expr(lower *L, const ast_expr *e, lw_stmt *st) {
  switch (e->kind) {
  case AST_E_NUM:
    return e->u.num.is_int;
  case AST_E_NAME: {
    if (st && lw_stmt_find_index(st, e->u.name.name) >= 0) return 1;
    lw_name *n = lw_lookup(L, e->u.name.name);
    return n && (n->kind == LW_NAME_AXIS || n->kind == LW_NAME_INT);
  }
  case AST_E_UNARY:
    return e->u.unary.op == AST_UN_NEG && lw_is_int_expr(L, e->u.unary.operand, st);
  case AST_E_BINARY:
    return e->u.binary.op <= AST_BIN_MOD && lw_is_int_expr(L, e->u.binary.lhs, st) &&
           lw_is_int_expr(L, e->u.binary.rhs, st);
  default:
    return 0;
  }
}

/* ---- axes --------------------------------------------------------------- */

typedef struct {
  const ast_item **items; /* by axis number (declaration order) */
  ir_axis **axes;
  int *state;             /* 0 unvisited, 1 in progress, 2 done */
  int n;
  int *stack, depth;      /* the axes in progress, outermost first */
} axis_table;

static int find_axis(const axis_table *t, const char *name) {
  for (int i = 0; i < t->n; i++)
    if (!strcmp(t->items[i]->u.axis.name, name)) return i;
  return -1;
}

static int resolve(lower *L, axis_table *t, int i);

/* Axis j, in progress, is used again: "a -> b -> a" from j's place on the stack. */
static void report_cycle(lower *L, const axis_table *t, int j, kbc_loc loc) {
  const char *name = t->items[j]->u.axis.name;
  if (t->stack[t->depth - 1] == j) {
    kbc_error(L->d, loc, "axis '%s' is defined in terms of itself", name);
    return;
  }
  kbc_buf b = {0};
  int k = t->depth - 1;
  while (k > 0 && t->stack[k] != j) k--;
  for (; k < t->depth; k++) kbc_buf_printf(&b, "'%s' -> ", t->items[t->stack[k]]->u.axis.name);
  kbc_buf_printf(&b, "'%s'", name);
  kbc_error(L->d, loc, "axes are defined in a cycle: %s; one of them must be var or const", kbc_buf_str(&b));
  kbc_buf_free(&b);
}

/* Resolves every axis named inside e before e itself is evaluated. */
static int resolve_deps(lower *L, axis_table *t, const ast_expr *e) {
  switch (e->kind) {
  case AST_E_NAME: {
    int j = find_axis(t, e->u.name.name);
    if (j < 0) return 1; /* lw_int_expr reports unknown names */
    if (t->state[j] == 1) {
      report_cycle(L, t, j, e->loc);
      return 0;
    }
    return resolve(L, t, j);
  }
  case AST_E_UNARY:
    return resolve_deps(L, t, e->u.unary.operand);
  case AST_E_BINARY:
    return resolve_deps(L, t, e->u.binary.lhs) && resolve_deps(L, t, e->u.binary.rhs);
  default:
    return 1;
  }
}

/* The value a specialization gives the var axis called name, or NULL. */
static const ir_axis_value *fixed_value(const lower *L, const char *name) {
  for (int i = 0; i < L->n_fixed; i++)
    if (!strcmp(L->fixed[i].name, name)) return &L->fixed[i];
  return NULL;
}

/* Every specialized axis names a var axis, once, with a size of at least 1. */
static int check_fixed(lower *L, const axis_table *t) {
  int ok = 1;
  kbc_loc where = t->n ? t->items[0]->loc : (kbc_loc){1, 1};
  for (int i = 0; i < L->n_fixed; i++) {
    const ir_axis_value *f = &L->fixed[i];
    int found = -1;
    for (int j = 0; j < t->n; j++)
      if (!strcmp(t->axes[j]->name, f->name)) found = j;
    if (found < 0 || !t->axes[found]->fixed) {
      kbc_error(L->d, where, "cannot specialize '%s': it is not a var axis of the spec", f->name);
      ok = 0;
    } else if (fixed_value(L, f->name) != f) {
      kbc_error(L->d, where, "axis '%s' is specialized twice", f->name);
      ok = 0;
    } else if (f->value < 1) {
      kbc_error(L->d, where, "cannot specialize axis '%s' to %lld; sizes must be positive", f->name,
                (long long)f->value);
      ok = 0;
    }
  }
  return ok;
}

static int resolve(lower *L, axis_table *t, int i) {
  if (t->state[i] == 2) return t->axes[i]->size != NULL;
  const ast_item *it = t->items[i];
  ir_axis *ax = t->axes[i];
  t->state[i] = 1;
  t->stack[t->depth++] = i;
  int ok = 1;
  if (it->u.axis.kind != AST_AXIS_VAR) {
    const char *what = kbc_arena_printf(L->a, "the size of axis '%s'", ax->name);
    ok = resolve_deps(L, t, it->u.axis.value);
    if (ok) ax->size = lw_int_expr(L, it->u.axis.value, NULL, what);
    ok = ok && ax->size;
    int64_t c;
    if (ok && it->u.axis.kind == AST_AXIS_CONST && !sym_is_const(ax->size, NULL)) {
      kbc_error(L->d, it->u.axis.value->loc,
                "axis '%s' is declared const, but its size depends on var axes; write 'axis %s = ...' for a "
                "derived axis", ax->name, ax->name);
      ok = 0;
    }
    if (ok && sym_is_const(ax->size, &c) && c < 1) {
      kbc_error(L->d, it->u.axis.value->loc, "axis '%s' has size %lld; sizes must be positive", ax->name,
                (long long)c);
      ok = 0;
    }
    if (ok && !sym_is_const(ax->size, NULL) && sym_prove_nonneg(L->a, L->p->facts, sym_neg(L->a, ax->size))) {
      kbc_error(L->d, it->u.axis.value->loc, "axis '%s' is never positive for any value of its var axes",
                ax->name);
      ok = 0;
    }
    if (!ok) ax->size = NULL;
  }
  t->depth--;
  t->state[i] = 2;
  return ok;
}

int lw_resolve_axes(lower *L, const ast_block *top) {
  axis_table t = {0};
  int n = 0;
  for (int i = 0; i < top->n; i++) n += top->items[i]->kind == AST_I_AXIS;
  if (n > MAX_AXES) {
    kbc_error(L->d, top->items[0]->loc, "the spec declares %d axes; at most %d are allowed", n, MAX_AXES);
    return 0;
  }
  t.items = KBC_NEW_ARRAY(L->a, const ast_item *, n + 1);
  t.axes = KBC_NEW_ARRAY(L->a, ir_axis *, n + 1);
  t.state = KBC_NEW_ARRAY(L->a, int, n + 1);
  t.stack = KBC_NEW_ARRAY(L->a, int, n + 1);
  int ok = 1;
  for (int i = 0; i < top->n; i++) {
    const ast_item *it = top->items[i];
    if (it->kind != AST_I_AXIS) continue;
    if (find_axis(&t, it->u.axis.name) >= 0) {
      kbc_error(L->d, it->u.axis.name_loc, "axis '%s' is already declared", it->u.axis.name);
      ok = 0;
      continue;
    }
    ir_axis *ax = KBC_NEW(L->a, ir_axis);
    ax->name = it->u.axis.name;
    ax->loc = it->u.axis.name_loc;
    ax->kind = it->u.axis.kind == AST_AXIS_VAR ? IR_AXIS_VAR
               : it->u.axis.kind == AST_AXIS_CONST ? IR_AXIS_CONST : IR_AXIS_DERIVED;
    ax->var_id = -1;
    const ir_axis_value *fix = ax->kind == IR_AXIS_VAR ? fixed_value(L, ax->name) : NULL;
    if (fix) { /* specialized: the var axis is the constant it is bound to */
      ax->kind = IR_AXIS_CONST;
      ax->fixed = 1;
      ax->size = sym_const(L->a, fix->value);
    } else if (ax->kind == IR_AXIS_VAR) {
      ax->var_id = L->p->vars.len;
      ax->size = sym_axis(L->a, ax->var_id, ax->name);
      kbc_vec_push(L->a, &L->p->vars, ax);
    }
    t.items[t.n] = it;
    t.axes[t.n++] = ax;
    kbc_vec_push(L->a, &L->p->axes, ax);
    lw_name *nm = lw_bind(L, L->global, ax->name, LW_NAME_AXIS);
    nm->axis = ax;
  }
  ok = check_fixed(L, &t) && ok;
  for (int i = 0; i < t.n; i++) ok = resolve(L, &t, i) && ok;
  if (!ok) return 0;
  /* Every axis is at least 1 in any valid binding. */
  for (int i = 0; i < t.n; i++)
    if (t.axes[i]->kind == IR_AXIS_DERIVED)
      sym_facts_assume_nonneg(L->p->facts, sym_sub(L->a, t.axes[i]->size, sym_const(L->a, 1)));
  return 1;
}

/* ---- asserts ------------------------------------------------------------ */

static int lower_cond(lower *L, const ast_item *it, const ast_expr *e) {
  if (e->kind == AST_E_BINARY && e->u.binary.op == AST_BIN_AND)
    return lower_cond(L, it, e->u.binary.lhs) && lower_cond(L, it, e->u.binary.rhs);
  if (e->kind != AST_E_BINARY || e->u.binary.op < AST_BIN_EQ || e->u.binary.op > AST_BIN_GE) {
    kbc_error(L->d, e->loc, "an assert must compare axis expressions (==, !=, <, <=, >, >=), joined by &&");
    return 0;
  }
  sym *x = lw_int_expr(L, e->u.binary.lhs, NULL, "an assert");
  sym *y = x ? lw_int_expr(L, e->u.binary.rhs, NULL, "an assert") : NULL;
  if (!y) return 0;
  ir_assert *as = KBC_NEW(L->a, ir_assert);
  as->lhs = x;
  as->rhs = y;
  /* the comparisons are listed in the same order in ast.h and ir.h */
#define X(id, text) _Static_assert(AST_BIN_##id - AST_BIN_EQ == (int)IR_CMP_##id, "comparison order: " #id);
  IR_CMPS(X)
#undef X
  as->op = (ir_cmp)(e->u.binary.op - AST_BIN_EQ);
  as->loc = e->loc;
  as->text = it->u.assert_.cond == e ? "assert" : "assert (part)";
  kbc_vec_push(L->a, &L->p->asserts, as);
  sym *diff = sym_sub(L->a, x, y), *one = sym_const(L->a, 1);
  int64_t c;
  if (diff && sym_is_const(diff, &c)) {
    static const int holds[6][3] = {/* <0, ==0, >0 */ {0, 1, 0}, {1, 0, 1}, {1, 0, 0},
                                    {1, 1, 0}, {0, 0, 1}, {0, 1, 1}};
    if (!holds[as->op][c < 0 ? 0 : c == 0 ? 1 : 2]) {
      kbc_error(L->d, e->loc, "this assert is always false");
      return 0;
    }
  }
  switch (as->op) {
  case IR_CMP_EQ: sym_facts_assume_zero(L->p->facts, diff); break;
  case IR_CMP_GE: sym_facts_assume_nonneg(L->p->facts, diff); break;
  case IR_CMP_GT: sym_facts_assume_nonneg(L->p->facts, sym_sub(L->a, diff, one)); break;
  case IR_CMP_LE: sym_facts_assume_nonneg(L->p->facts, sym_neg(L->a, diff)); break;
  case IR_CMP_LT: sym_facts_assume_nonneg(L->p->facts, sym_sub(L->a, sym_neg(L->a, diff), one)); break;
  case IR_CMP_NE: break;
  }
  return 1;
}

int lw_lower_assert(lower *L, const ast_item *it) { return lower_cond(L, it, it->u.assert_.cond); }
