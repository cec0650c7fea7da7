/* library.c — built-in functions.
 *
 * Scalar functions (exp, relu, gelu, where, max(a, b), ...) map to IR ops
 * and work both in index notation and elementwise on whole tensors.
 * Tensor functions expand into index-notation statements, named after the
 * statement that calls them (y = softmax(x) makes y.max, y.exp, y.sum, y):
 *   softmax(x, axis=k)          exp(x - max) / sum(exp(x - max)) along axis k
 *                               (default: the last axis; negative k counts
 *                               from the end)
 *   layernorm(x, w, b, eps)     over the last axis, biased variance, as
 *                               torch.nn.LayerNorm: (x - mean) * rsqrt(var +
 *                               eps) * w + b; eps defaults to 1e-5
 *   linear(x, w[, b])           y[..., o] = sum(k: x[..., k] * w[o, k]) + b[o]
 *                               (torch.nn.functional.linear)
 * After expansion the IR holds only plain statements; nothing downstream
 * knows these names. */
#include <string.h>

#include "lower_impl.h"

static const lw_library_fn library[]; /* below, after the expansions */
enum { N_LIBRARY = 3 };

static const struct {
  const char *name;
  int arity;
  ir_op op;
} scalar_fns[] = {
    {"exp", 1, IR_OP_EXP},         {"log", 1, IR_OP_LOG},   {"sqrt", 1, IR_OP_SQRT}, {"rsqrt", 1, IR_OP_RSQRT},
    {"tanh", 1, IR_OP_TANH},       {"erf", 1, IR_OP_ERF},   {"abs", 1, IR_OP_ABS},   {"relu", 1, IR_OP_RELU},
    {"sigmoid", 1, IR_OP_SIGMOID}, {"gelu", 1, IR_OP_GELU}, {"max", 2, IR_OP_MAX},   {"min", 2, IR_OP_MIN},
    {"pow", 2, IR_OP_POW},         {"where", 3, IR_OP_WHERE}, {"log1p", 1, IR_OP_LOG1P}, {"expm1", 1, IR_OP_EXPM1},
    {"softplus", 1, IR_OP_SOFTPLUS}, {"silu", 1, IR_OP_SILU},
};

void lw_suggest_functions(kbc_suggest *s) {
  for (size_t i = 0; i < sizeof scalar_fns / sizeof scalar_fns[0]; i++) kbc_suggest_add(s, scalar_fns[i].name);
  for (size_t i = 0; i < N_LIBRARY; i++) kbc_suggest_add(s, library[i].name);
  for (int i = 0; i < IR_RED_COUNT; i++) kbc_suggest_add(s, ir_red_name[i]);
}

int lw_scalar_fn_arity(const char *name, ir_op *op) {
  for (size_t i = 0; i < sizeof scalar_fns / sizeof scalar_fns[0]; i++)
    if (!strcmp(scalar_fns[i].name, name)) {
      if (op) *op = scalar_fns[i].op;
      return scalar_fns[i].arity;
    }
  return -1;
}

/* ---- argument handling --------------------------------------------------- */

typedef struct {
  const ast_expr *pos[4]; /* tensor arguments */
  int n_pos;
  const ast_expr *kw[4];  /* keyword arguments, by position in kw_names */
} args_t;

/* Positional arguments fill the max_pos tensor slots, then the keyword
 * slots in order; keyword arguments fill their own slot. */
static int parse_args(lower *L, const ast_expr *e, int min_pos, int max_pos, const char *const *kw_names,
                      int n_kw, args_t *a) {
  memset(a, 0, sizeof *a);
  const char *fn = e->u.call.name;
  int n_positional = 0, seen_kw = 0;
  for (int i = 0; i < e->u.call.n_args; i++) {
    const ast_arg *g = &e->u.call.args[i];
    int slot;
    if (!g->key) {
      if (seen_kw) {
        kbc_error(L->d, g->loc, "positional argument after a keyword argument");
        return 0;
      }
      slot = n_positional++;
      if (slot >= max_pos + n_kw) {
        kbc_error(L->d, g->loc, "too many arguments to '%s'", fn);
        return 0;
      }
      if (slot < max_pos) {
        a->pos[a->n_pos++] = g->value;
        continue;
      }
      slot -= max_pos;
    } else {
      seen_kw = 1;
      slot = -1;
      for (int j = 0; j < n_kw; j++)
        if (!strcmp(kw_names[j], g->key)) slot = j;
      if (slot < 0) {
        kbc_error(L->d, g->loc, "'%s' has no argument named '%s'", fn, g->key);
        return 0;
      }
    }
    if (a->kw[slot]) {
      kbc_error(L->d, g->loc, "argument '%s' of '%s' is given twice", kw_names[slot], fn);
      return 0;
    }
    a->kw[slot] = g->value;
  }
  if (a->n_pos < min_pos) {
    kbc_error(L->d, e->u.call.name_loc, "'%s' needs at least %d tensor argument%s", fn, min_pos,
              min_pos == 1 ? "" : "s");
    return 0;
  }
  return 1;
}

static int float_arg(lower *L, const ast_expr *e, const char *fn, const char *what, double *out) {
  int neg = 0;
  if (e->kind == AST_E_UNARY && e->u.unary.op == AST_UN_NEG) {
    neg = 1;
    e = e->u.unary.operand;
  }
  if (e->kind != AST_E_NUM) {
    kbc_error(L->d, e->loc, "'%s' of '%s' must be a number", what, fn);
    return 0;
  }
  *out = neg ? -e->u.num.fval : e->u.num.fval;
  return 1;
}

/* ---- statement building --------------------------------------------------- */

typedef struct {
  lower *L;
  lw_stmt st;
  kbc_loc loc;
} builder;

static sym *add_free(builder *b, const char *name, sym *extent) {
  int id = lw_stmt_add_index(b->L, &b->st, name, IR_IDX_FREE, extent, b->loc);
  return sym_index(b->L->a, id, name);
}

static sym *add_reduce(builder *b, const char *name, sym *extent, int *id) {
  *id = lw_stmt_add_index(b->L, &b->st, name, IR_IDX_REDUCE, extent, b->loc);
  return sym_index(b->L->a, *id, name);
}

static ir_expr *load(builder *b, const lw_view *v, sym **idx) {
  return lw_view_load(b->L, v, idx, 0, b->loc);
}

static ir_tensor *temp(lower *L, const char *suffix, int rank, sym **shape, kbc_loc loc) {
  const char *base = suffix ? kbc_arena_printf(L->a, "%s.%s", L->hint ? L->hint : "t", suffix) : (L->hint ? L->hint : "t");
  return ir_tensor_add(L->p, lw_fresh_name(L, base), IR_ROLE_TEMP, IR_DT_F32, rank, shape, loc);
}

static int emit(builder *b, ir_tensor *out, sym **lhs, ir_expr *rhs) {
  ir_stmt *s = lw_stmt_finish(b->L, &b->st, out, lhs, 0, rhs, b->loc, b->L->text);
  if (!s) return 0;
  lw_emit(b->L, s);
  return 1;
}

static int tensor_arg(lower *L, const ast_expr *e, lw_view *v) { return lw_tensor_expr(L, e, v); }

static const char *index_name(lower *L, int i) { return kbc_arena_printf(L->a, "i%d", i); }

/* y[.., i_k, ..] over the view's shape with dimension `skip` left out (or none). */
static sym **shape_without(lower *L, const lw_view *v, int skip, int *rank) {
  int r = lw_view_rank(v), n = 0;
  sym **s = KBC_NEW_ARRAY(L->a, sym *, r > 0 ? r : 1);
  for (int i = 0; i < r; i++)
    if (i != skip) s[n++] = lw_view_dim(v, i);
  *rank = n;
  return s;
}

/* ---- softmax -------------------------------------------------------------- */

static int expand_softmax(lower *L, const ast_expr *e, lw_view *out) {
  static const char *const kws[] = {"axis"};
  args_t a;
  if (!parse_args(L, e, 1, 1, kws, 1, &a)) return 0;
  lw_view x;
  if (!tensor_arg(L, a.pos[0], &x)) return 0;
  int r = lw_view_rank(&x);
  int64_t axis = r - 1;
  if (a.kw[0]) {
    sym *s = lw_int_expr(L, a.kw[0], NULL, "the axis of softmax");
    if (!s) return 0;
    if (!sym_is_const(s, &axis)) {
      kbc_error(L->d, a.kw[0]->loc, "softmax axis must be a constant in [%d, %d] for a rank-%d tensor", -r, r - 1, r);
      return 0;
    }
    if (axis < -r || axis >= r || r == 0) {
      kbc_error(L->d, a.kw[0]->loc, "softmax axis %lld is out of range for a rank-%d tensor (valid: %d to %d)",
                (long long)axis, r, -r, r - 1);
      return 0;
    }
    if (axis < 0) axis += r;
  }
  if (r == 0) {
    kbc_error(L->d, e->loc, "softmax of a rank-0 tensor");
    return 0;
  }
  int rr;
  sym **red_shape = shape_without(L, &x, (int)axis, &rr);
  sym **full = shape_without(L, &x, -1, &r);
  ir_tensor *mx = temp(L, "max", rr, red_shape, e->loc), *ex = temp(L, "exp", r, full, e->loc),
            *sm = temp(L, "sum", rr, red_shape, e->loc), *y = temp(L, NULL, r, full, e->loc);
  /* max and sum along the axis */
  for (int pass = 0; pass < 2; pass++) {
    builder b = {.L = L, .loc = e->loc};
    sym **xi = KBC_NEW_ARRAY(L->a, sym *, r), **oi = KBC_NEW_ARRAY(L->a, sym *, rr > 0 ? rr : 1);
    int n = 0, kid;
    for (int i = 0; i < r; i++)
      if (i != axis) xi[i] = oi[n++] = add_free(&b, index_name(L, i), lw_view_dim(&x, i));
    xi[axis] = add_reduce(&b, "k", lw_view_dim(&x, (int)axis), &kid);
    lw_view src = pass == 0 ? x : (lw_view){.tensor = ex};
    ir_expr *body = load(&b, &src, xi);
    ir_expr *red = ir_reduce(L->a, pass == 0 ? IR_RED_MAX : IR_RED_SUM, 1, &kid, body, e->loc);
    if (!emit(&b, pass == 0 ? mx : sm, oi, red)) return 0;
    if (pass == 1) break;
    /* exp(x - max) */
    builder c = {.L = L, .loc = e->loc};
    sym **ci = KBC_NEW_ARRAY(L->a, sym *, r), **cm = KBC_NEW_ARRAY(L->a, sym *, rr > 0 ? rr : 1);
    n = 0;
    for (int i = 0; i < r; i++) {
      ci[i] = add_free(&c, index_name(L, i), lw_view_dim(&x, i));
      if (i != axis) cm[n++] = ci[i];
    }
    lw_view mv = {.tensor = mx};
    ir_expr *d = ir_binary(L->a, IR_OP_SUB, load(&c, &x, ci), load(&c, &mv, cm), e->loc);
    if (!emit(&c, ex, ci, ir_unary(L->a, IR_OP_EXP, d, e->loc))) return 0;
  }
  /* exp / sum */
  builder b = {.L = L, .loc = e->loc};
  sym **yi = KBC_NEW_ARRAY(L->a, sym *, r), **si = KBC_NEW_ARRAY(L->a, sym *, rr > 0 ? rr : 1);
  int n = 0;
  for (int i = 0; i < r; i++) {
    yi[i] = add_free(&b, index_name(L, i), lw_view_dim(&x, i));
    if (i != axis) si[n++] = yi[i];
  }
  lw_view ev = {.tensor = ex}, sv = {.tensor = sm};
  if (!emit(&b, y, yi, ir_binary(L->a, IR_OP_DIV, load(&b, &ev, yi), load(&b, &sv, si), e->loc))) return 0;
  *out = (lw_view){.tensor = y};
  return 1;
}

/* ---- layernorm ------------------------------------------------------------ */

/* A vector of size n (`why`: where n comes from), or reports. */
static int check_vector(lower *L, const ast_expr *e, const lw_view *v, sym *n, const char *what, const char *why) {
  if (lw_view_rank(v) != 1 || !sym_equal(lw_view_dim(v, 0), n)) {
    kbc_error(L->d, e->loc, "%s must be a vector of size %s (%s), but it has shape %s", what, sym_str(L->a, n), why,
              lw_shape_str(L, v));
    return 0;
  }
  return 1;
}

static int expand_layernorm(lower *L, const ast_expr *e, lw_view *out) {
  static const char *const kws[] = {"eps"};
  args_t a;
  if (!parse_args(L, e, 3, 3, kws, 1, &a)) return 0;
  lw_view x, w, bias;
  if (!tensor_arg(L, a.pos[0], &x) || !tensor_arg(L, a.pos[1], &w) || !tensor_arg(L, a.pos[2], &bias)) return 0;
  double eps = 1e-5;
  if (a.kw[0] && !float_arg(L, a.kw[0], "layernorm", "eps", &eps)) return 0;
  int r = lw_view_rank(&x);
  if (r == 0) {
    kbc_error(L->d, e->loc, "layernorm of a rank-0 tensor");
    return 0;
  }
  sym *n = lw_view_dim(&x, r - 1);
  if (!check_vector(L, a.pos[1], &w, n, "the layernorm weight", "the input's last axis") ||
      !check_vector(L, a.pos[2], &bias, n, "the layernorm bias", "the input's last axis"))
    return 0;
  int rr;
  sym **rows = shape_without(L, &x, r - 1, &rr), **full = shape_without(L, &x, -1, &r);
  ir_tensor *mean = temp(L, "mean", rr, rows, e->loc), *var = temp(L, "var", rr, rows, e->loc),
            *y = temp(L, NULL, r, full, e->loc);
  lw_view mv = {.tensor = mean}, vv = {.tensor = var};
  for (int pass = 0; pass < 2; pass++) {
    builder b = {.L = L, .loc = e->loc};
    sym **xi = KBC_NEW_ARRAY(L->a, sym *, r), **ri = KBC_NEW_ARRAY(L->a, sym *, rr > 0 ? rr : 1);
    for (int i = 0; i < rr; i++) xi[i] = ri[i] = add_free(&b, index_name(L, i), rows[i]);
    int kid;
    xi[r - 1] = add_reduce(&b, "k", n, &kid);
    ir_expr *body = load(&b, &x, xi);
    if (pass == 1) {
      ir_expr *d = ir_binary(L->a, IR_OP_SUB, body, load(&b, &mv, ri), e->loc);
      ir_expr *d2 = ir_binary(L->a, IR_OP_SUB, load(&b, &x, xi), load(&b, &mv, ri), e->loc);
      body = ir_binary(L->a, IR_OP_MUL, d, d2, e->loc);
    }
    ir_expr *s = ir_reduce(L->a, IR_RED_SUM, 1, &kid, body, e->loc);
    ir_expr *avg = ir_binary(L->a, IR_OP_DIV, s, ir_index_expr(L->a, n, e->loc), e->loc);
    if (!emit(&b, pass == 0 ? mean : var, ri, avg)) return 0;
  }
  builder b = {.L = L, .loc = e->loc};
  sym **yi = KBC_NEW_ARRAY(L->a, sym *, r);
  for (int i = 0; i < r; i++) yi[i] = add_free(&b, index_name(L, i), full[i]);
  sym **last = &yi[r - 1];
  ir_expr *centered = ir_binary(L->a, IR_OP_SUB, load(&b, &x, yi), load(&b, &mv, yi), e->loc);
  ir_expr *inv = ir_unary(L->a, IR_OP_RSQRT,
                          ir_binary(L->a, IR_OP_ADD, load(&b, &vv, yi), ir_const(L->a, eps, e->loc), e->loc), e->loc);
  ir_expr *v = ir_binary(L->a, IR_OP_MUL, ir_binary(L->a, IR_OP_MUL, centered, inv, e->loc), load(&b, &w, last), e->loc);
  v = ir_binary(L->a, IR_OP_ADD, v, load(&b, &bias, last), e->loc);
  if (!emit(&b, y, yi, v)) return 0;
  *out = (lw_view){.tensor = y};
  return 1;
}

/* ---- linear --------------------------------------------------------------- */

static int expand_linear(lower *L, const ast_expr *e, lw_view *out) {
  args_t a;
  if (!parse_args(L, e, 2, 3, NULL, 0, &a)) return 0;
  lw_view x, w, bias = {0};
  if (!tensor_arg(L, a.pos[0], &x) || !tensor_arg(L, a.pos[1], &w)) return 0;
  if (a.n_pos == 3 && !tensor_arg(L, a.pos[2], &bias)) return 0;
  int r = lw_view_rank(&x);
  if (r == 0 || lw_view_rank(&w) != 2) {
    kbc_error(L->d, e->loc, "linear(x, w, b) needs x of rank >= 1 and a rank-2 weight w[out, in]");
    return 0;
  }
  sym *k = lw_view_dim(&x, r - 1), *n = lw_view_dim(&w, 0);
  if (!sym_equal(k, lw_view_dim(&w, 1))) {
    kbc_error(L->d, a.pos[1]->loc, "linear: x has %s input features but the weight expects %s", sym_str(L->a, k),
              sym_str(L->a, lw_view_dim(&w, 1)));
    return 0;
  }
  if (bias.tensor && !check_vector(L, a.pos[2], &bias, n, "the bias of linear", "the weight's first axis")) return 0;
  sym **shape = KBC_NEW_ARRAY(L->a, sym *, r);
  for (int i = 0; i < r - 1; i++) shape[i] = lw_view_dim(&x, i);
  shape[r - 1] = n;
  ir_tensor *y = temp(L, NULL, r, shape, e->loc);
  builder b = {.L = L, .loc = e->loc};
  sym **yi = KBC_NEW_ARRAY(L->a, sym *, r), **xi = KBC_NEW_ARRAY(L->a, sym *, r), *wi[2];
  for (int i = 0; i < r; i++) yi[i] = add_free(&b, i == r - 1 ? "o" : index_name(L, i), shape[i]);
  for (int i = 0; i < r - 1; i++) xi[i] = yi[i];
  int kid;
  xi[r - 1] = add_reduce(&b, "k", k, &kid);
  wi[0] = yi[r - 1];
  wi[1] = xi[r - 1];
  ir_expr *prod = ir_binary(L->a, IR_OP_MUL, load(&b, &x, xi), load(&b, &w, wi), e->loc);
  ir_expr *v = ir_reduce(L->a, IR_RED_SUM, 1, &kid, prod, e->loc);
  if (bias.tensor) v = ir_binary(L->a, IR_OP_ADD, v, load(&b, &bias, &yi[r - 1]), e->loc);
  if (!emit(&b, y, yi, v)) return 0;
  *out = (lw_view){.tensor = y};
  return 1;
}

static const lw_library_fn library[N_LIBRARY] = {
    {"softmax", expand_softmax},
    {"layernorm", expand_layernorm},
    {"linear", expand_linear},
};

const lw_library_fn *lw_library_find(const char *name) {
  for (size_t i = 0; i < sizeof library / sizeof library[0]; i++)
    if (!strcmp(library[i].name, name)) return &library[i];
  return NULL;
}
