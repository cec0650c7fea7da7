/* bind.c — binding var axes to values, and inferring them from input
 * shapes; see bind.h.
 *
 * Before: a checked program (axes, asserts, tensor shapes are syms over the
 * var axes).  After ir_bind(): an ir_binding with every var, tensor shape and
 * element count evaluated, or errors (no location) that name the axis,
 * assert or tensor at fault and the var values involved.  After
 * ir_infer_vars(): every var set from the caller's input shapes (or preset),
 * every input's rank and shape checked, or errors naming the tensor, the
 * dimension and the axis. */
#include "bind.h"

#include <stdlib.h>
#include <string.h>

static const kbc_loc no_loc = {0, 0};

/* 2^40: the most elements a tensor may have. */
#define MAX_NUMEL ((int64_t)1 << 40)

/* ---- helpers ------------------------------------------------------------ */

/* Whether x (a sym over axes only) mentions var axis id: replacing the
 * axis by an index variable leaves an index variable behind. */
static int mentions_axis(kbc_arena *a, const sym *x, int id) {
  if (!x || !sym_has_axis(x)) return 0;
  sym *y = sym_subst_axis(a, x, id, sym_index(a, 0, "_"));
  return !y || sym_has_index(y);
}

static const char *var_name(const ir_program *p, int id) {
  const ir_axis *ax = IR_VAR(p, id);
  return ax && ax->name ? ax->name : "?";
}

/* Appends " for v1=3, v2=5" naming the vars that x or y mention (nothing
 * when they mention none). */
static void put_var_values(kbc_buf *b, kbc_arena *a, const ir_program *p, const sym *x,
                           const sym *y, const int64_t *vars) {
  int n = 0;
  for (int i = 0; i < p->vars.len; i++) {
    if (!mentions_axis(a, x, i) && !mentions_axis(a, y, i)) continue;
    kbc_buf_printf(b, "%s%s=%lld", n++ ? ", " : " for ", var_name(p, i), (long long)vars[i]);
  }
}

static int cmp_holds(ir_cmp op, int64_t x, int64_t y) {
  switch (op) {
  case IR_CMP_EQ: return x == y;
  case IR_CMP_NE: return x != y;
  case IR_CMP_LT: return x < y;
  case IR_CMP_LE: return x <= y;
  case IR_CMP_GT: return x > y;
  case IR_CMP_GE: return x >= y;
  }
  return 0;
}

/* "f32[a, b*2]" */
static void put_shape(kbc_buf *b, const ir_tensor *t) {
  kbc_buf_printf(b, "%s[", ir_dtype_name[t->dtype]);
  for (int i = 0; i < t->rank; i++) {
    if (i) kbc_buf_puts(b, ", ");
    sym_print(t->shape[i], b);
  }
  kbc_buf_putc(b, ']');
}

/* ---- ir_bind ------------------------------------------------------------ */

static int bind_axes(const ir_program *p, kbc_arena *a, const int64_t *vars, kbc_diag *d) {
  int ok = 1;
  for (int i = 0; i < p->vars.len; i++)
    if (vars[i] < 1) {
      kbc_error(d, no_loc, "axis %s is %lld; sizes must be positive", var_name(p, i),
                (long long)vars[i]);
      ok = 0;
    }
  if (!ok) return 0;
  for (int i = 0; i < p->axes.len; i++) {
    const ir_axis *ax = IR_AXIS(p, i);
    if (ax->kind == IR_AXIS_VAR) continue;
    int64_t v;
    kbc_buf m = {0};
    kbc_buf_printf(&m, "axis %s", ax->name);
    if (ax->kind == IR_AXIS_DERIVED) {
      kbc_buf_puts(&m, " = ");
      sym_print(ax->size, &m);
    }
    if (!sym_eval(ax->size, vars, NULL, &v)) {
      kbc_buf_puts(&m, " overflows 64-bit integers");
      put_var_values(&m, a, p, ax->size, NULL, vars);
      kbc_error(d, no_loc, "%s", kbc_buf_str(&m));
      ok = 0;
    } else if (v < 1) {
      kbc_buf_printf(&m, " is %lld", (long long)v);
      put_var_values(&m, a, p, ax->size, NULL, vars);
      kbc_error(d, no_loc, "%s; sizes must be positive", kbc_buf_str(&m));
      ok = 0;
    }
    kbc_buf_free(&m);
  }
  return ok;
}

/* The assert's text as written when the program kept it, else rebuilt
 * from its syms. */
static void put_assert(kbc_buf *b, const ir_assert *as) {
  if (as->text && strpbrk(as->text, "=<>!")) {
    if (strncmp(as->text, "assert ", 7) != 0) kbc_buf_puts(b, "assert ");
    kbc_buf_puts(b, as->text);
    return;
  }
  kbc_buf_puts(b, "assert ");
  sym_print(as->lhs, b);
  kbc_buf_printf(b, " %s ", ir_cmp_text[as->op]);
  sym_print(as->rhs, b);
}

static int bind_asserts(const ir_program *p, kbc_arena *a, const int64_t *vars, kbc_diag *d) {
  int ok = 1;
  for (int i = 0; i < p->asserts.len; i++) {
    const ir_assert *as = KBC_VEC_AT(p->asserts, ir_assert, i);
    int64_t x, y;
    int evaluated = sym_eval(as->lhs, vars, NULL, &x) && sym_eval(as->rhs, vars, NULL, &y);
    if (evaluated && cmp_holds(as->op, x, y)) continue;
    kbc_buf m = {0};
    put_assert(&m, as);
    kbc_buf_puts(&m, evaluated ? " fails" : " overflows 64-bit integers");
    put_var_values(&m, a, p, as->lhs, as->rhs, vars);
    kbc_error(d, no_loc, "%s", kbc_buf_str(&m));
    kbc_buf_free(&m);
    ok = 0;
  }
  return ok;
}

static int bind_tensor(const ir_program *p, kbc_arena *a, const ir_tensor *t, const int64_t *vars,
                       int64_t *shape, int64_t *numel, kbc_diag *d) {
  int64_t n = 1;
  int overflow = 0;
  for (int i = 0; i < t->rank; i++) {
    int evaluated = sym_eval(t->shape[i], vars, NULL, &shape[i]);
    if (!evaluated || shape[i] < 1) {
      kbc_buf m = {0};
      kbc_buf_printf(&m, "tensor '%s': dimension %d (", t->name, i);
      sym_print(t->shape[i], &m);
      if (evaluated)
        kbc_buf_printf(&m, ") is %lld", (long long)shape[i]);
      else
        kbc_buf_puts(&m, ") overflows 64-bit integers");
      put_var_values(&m, a, p, t->shape[i], NULL, vars);
      kbc_error(d, no_loc, "%s%s", kbc_buf_str(&m), evaluated ? "; sizes must be positive" : "");
      kbc_buf_free(&m);
      return 0;
    }
    if (__builtin_mul_overflow(n, shape[i], &n)) overflow = 1;
  }
  if (overflow || n > MAX_NUMEL) {
    kbc_buf m = {0};
    kbc_buf_printf(&m, "tensor '%s' ", t->name);
    put_shape(&m, t);
    if (overflow)
      kbc_buf_puts(&m, " has more elements than 64-bit integers count");
    else
      kbc_buf_printf(&m, " has %lld elements", (long long)n);
    for (int i = 0; i < t->rank; i++) {
      kbc_buf_printf(&m, "%s%lld", i ? " x " : " (", (long long)shape[i]);
      if (i == t->rank - 1) kbc_buf_putc(&m, ')');
    }
    kbc_error(d, no_loc, "%s; the limit is 2^40", kbc_buf_str(&m));
    kbc_buf_free(&m);
    return 0;
  }
  *numel = n;
  return 1;
}

int ir_bind(const ir_program *p, kbc_arena *a, const int64_t *vars, ir_binding *out, kbc_diag *d) {
  memset(out, 0, sizeof *out);
  if (p->vars.len > 0 && !vars) {
    kbc_internal(d, no_loc, "ir_bind: no values for the %d var axes", p->vars.len);
    return 0;
  }
  if (!bind_axes(p, a, vars, d)) return 0;
  if (!bind_asserts(p, a, vars, d)) return 0;
  out->n_vars = p->vars.len;
  out->vars = KBC_NEW_ARRAY(a, int64_t, p->vars.len > 0 ? p->vars.len : 1);
  if (p->vars.len > 0) memcpy(out->vars, vars, sizeof(int64_t) * (size_t)p->vars.len);
  out->n_tensors = p->tensors.len;
  out->shape = KBC_NEW_ARRAY(a, int64_t *, p->tensors.len > 0 ? p->tensors.len : 1);
  out->numel = KBC_NEW_ARRAY(a, int64_t, p->tensors.len > 0 ? p->tensors.len : 1);
  int ok = 1;
  for (int i = 0; i < p->tensors.len; i++) {
    const ir_tensor *t = IR_TENSOR(p, i);
    out->shape[i] = KBC_NEW_ARRAY(a, int64_t, t->rank > 0 ? t->rank : 1);
    if (t->rank > IR_BIND_MAX_RANK) {
      kbc_error(d, no_loc, "tensor '%s' has rank %d; at most %d dimensions are supported", t->name,
                t->rank, IR_BIND_MAX_RANK);
      ok = 0;
      continue;
    }
    ok = bind_tensor(p, a, t, vars, out->shape[i], &out->numel[i], d) && ok;
  }
  return ok;
}

/* ---- ir_binding_fits_i32 ------------------------------------------------ */

enum { I32_ROOM = 1 << 30 };

/* Whether every partial sum of the row-major offset of t[idx] stays below
 * I32_ROOM with the statement's indices anywhere in their ranges, each
 * dimension's index bounded term by term (sym_bound).  The rows a tile
 * computes past the end reach at most one tile or outer stride further:
 * within the factor 2 between I32_ROOM and 2^31. */
static int access_fits(const ir_binding *b, const ir_tensor *t, sym *const *idx, const int64_t *imax) {
  int64_t stride = 1, total = 0;
  for (int d = t->rank - 1; d >= 0; d--) {
    int64_t v;
    if (!sym_bound(idx[d], b->vars, imax, &v) || v >= I32_ROOM) return 0;
    if (__builtin_mul_overflow(v, stride, &v) || __builtin_add_overflow(total, v, &total) || total >= I32_ROOM)
      return 0;
    stride *= b->shape[t->id][d];
  }
  return 1;
}

/* Every load's address and every integer value in e. */
static int expr_fits(const ir_binding *b, const ir_expr *e, const int64_t *imax) {
  if (!e) return 1;
  if (e->op == IR_OP_LOAD) return access_fits(b, e->u.load.tensor, e->u.load.idx, imax);
  if (e->op == IR_OP_INDEX) {
    int64_t v;
    return sym_bound(e->u.index, b->vars, imax, &v) && v < I32_ROOM;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (!expr_fits(b, e->arg[i], imax)) return 0;
  return 1;
}

/* Statement s under binding b: its free (or scatter) and reduction spaces
 * below I32_ROOM, and every address and integer value it forms. */
static int stmt_fits(const ir_stmt *s, const ir_binding *b, int64_t *imax) {
  int64_t space[2] = {1, 1}; /* free, reduction */
  for (int j = 0; j < s->n_index; j++) {
    int64_t e;
    if (!sym_eval(s->index[j].extent, b->vars, NULL, &e) || e < 1 || e >= I32_ROOM) return 0;
    int64_t *n = &space[s->index[j].kind == IR_IDX_REDUCE];
    *n *= e;
    if (*n >= I32_ROOM) return 0;
    imax[j] = e - 1;
  }
  return access_fits(b, s->out, s->lhs, imax) && expr_fits(b, s->rhs, imax);
}

int ir_binding_fits_i32(const ir_program *p, const ir_binding *b) {
  for (int i = 0; i < b->n_vars; i++)
    if (b->vars[i] >= I32_ROOM) return 0;
  for (int i = 0; i < b->n_tensors; i++)
    if (b->numel[i] >= I32_ROOM) return 0;
  int ok = 1;
  for (int i = 0; ok && i < p->stmts.len; i++) {
    const ir_stmt *s = IR_STMT(p, i);
    int64_t *imax = calloc((size_t)s->n_index + 1, sizeof *imax);
    ok = imax && stmt_fits(s, b, imax);
    free(imax);
  }
  return ok;
}

/* ---- ir_infer_vars ------------------------------------------------------ */

typedef enum { SRC_UNKNOWN, SRC_PRESET, SRC_INPUT, SRC_FAILED } var_source;

typedef struct {
  const ir_program *p;
  kbc_arena *a; /* scratch */
  kbc_diag *d;
  int64_t *vars;
  var_source *src;
  const char **from; /* SRC_INPUT: the input that bound it */
  const ir_shape_arg **arg_of; /* by tensor id: the caller's shape, NULL if none/unusable */
  int ok;
} inferer;

/* The one var of x (over axes) not yet known, or -1 when none; -2 when
 * several (or one that failed). */
static int unknown_var(const inferer *in, const sym *x) {
  int found = -1;
  for (int v = 0; v < in->p->vars.len; v++) {
    if (in->src[v] != SRC_UNKNOWN && in->src[v] != SRC_FAILED) continue;
    if (!mentions_axis(in->a, x, v)) continue;
    if (in->src[v] == SRC_FAILED || found != -1) return -2;
    found = v;
  }
  return found;
}

/* The named axis whose size is x, preferring var and const axes. */
static const ir_axis *axis_named_by(const ir_program *p, const sym *x) {
  const ir_axis *best = NULL;
  for (int i = 0; i < p->axes.len; i++) {
    const ir_axis *ax = IR_AXIS(p, i);
    if (!sym_equal(ax->size, x)) continue;
    if (ax->kind != IR_AXIS_DERIVED) return ax;
    if (!best) best = ax;
  }
  return best;
}

/* Appends how the spec spells dimension x: "axis rel = 2*h - 1", "axis d", or "2*h - 1". */
static void put_dim_expr(kbc_buf *m, const ir_program *p, const sym *x) {
  const ir_axis *ax = axis_named_by(p, x);
  if (ax) kbc_buf_printf(m, "axis %s", ax->name);
  if (ax && ax->kind == IR_AXIS_DERIVED) kbc_buf_puts(m, " = ");
  if (!ax || ax->kind == IR_AXIS_DERIVED) sym_print(x, m);
}

/* Tries to bind the one unknown var of dimension `dim` (size `size`) of
 * input t.  `direct` accepts only a dimension that is exactly the var.
 * Returns 1 when a var was bound. */
static int infer_from_dim(inferer *in, const ir_tensor *t, int dim, int64_t size, int direct) {
  const sym *x = t->shape[dim];
  int v = unknown_var(in, x);
  if (v < 0) return 0;
  kbc_arena *a = in->a;
  sym *with_index = sym_subst_axis(a, x, v, sym_index(a, 0, var_name(in->p, v)));
  sym *coeff[1], *rest;
  if (!with_index || !sym_split_affine(a, with_index, 1, coeff, &rest)) return 0;
  int64_t k, b;
  if (!sym_eval(coeff[0], in->vars, NULL, &k) || !sym_eval(rest, in->vars, NULL, &b) || k == 0)
    return 0;
  if (direct && (k != 1 || b != 0 || sym_has_axis(rest))) return 0;
  int64_t num;
  kbc_buf m = {0};
  if (__builtin_sub_overflow(size, b, &num) || (k == -1 && num == INT64_MIN) || num % k != 0) {
    put_dim_expr(&m, in->p, x);
    kbc_error(in->d, no_loc, "input '%s': dimension %d has size %lld, but %s is never %lld",
              t->name, dim, (long long)size, kbc_buf_str(&m), (long long)size);
    in->src[v] = SRC_FAILED;
    in->ok = 0;
    kbc_buf_free(&m);
    return 0;
  }
  int64_t val = num / k;
  if (val < 1) {
    put_dim_expr(&m, in->p, x);
    kbc_error(in->d, no_loc,
              "input '%s': dimension %d has size %lld, which as %s gives %s = %lld; sizes must "
              "be positive",
              t->name, dim, (long long)size, kbc_buf_str(&m), var_name(in->p, v), (long long)val);
    in->src[v] = SRC_FAILED;
    in->ok = 0;
    kbc_buf_free(&m);
    return 0;
  }
  in->vars[v] = val;
  in->src[v] = SRC_INPUT;
  in->from[v] = t->name;
  return 1;
}

/* One pass over every usable input dimension; returns whether any var was bound. */
static int infer_pass(inferer *in, int direct) {
  int progress = 0;
  for (int i = 0; i < in->p->tensors.len; i++) {
    const ir_tensor *t = IR_TENSOR(in->p, i);
    const ir_shape_arg *arg = in->arg_of[i];
    if (!arg) continue;
    for (int k = 0; k < t->rank; k++) progress |= infer_from_dim(in, t, k, arg->shape[k], direct);
  }
  return progress;
}

/* Appends where var v's value came from: "from input 'y'" or "set with --set v=3". */
static void put_source(kbc_buf *m, const inferer *in, int v) {
  if (in->src[v] == SRC_PRESET)
    kbc_buf_printf(m, "set with --set %s=%lld", var_name(in->p, v), (long long)in->vars[v]);
  else
    kbc_buf_printf(m, "from input '%s'", in->from[v] ? in->from[v] : "?");
}

static void check_dim(inferer *in, const ir_tensor *t, int dim, int64_t size) {
  const sym *x = t->shape[dim];
  for (int v = 0; v < in->p->vars.len; v++)
    if ((in->src[v] == SRC_UNKNOWN || in->src[v] == SRC_FAILED) && mentions_axis(in->a, x, v))
      return; /* already reported */
  int64_t want;
  if (!sym_eval(x, in->vars, NULL, &want)) want = -1;
  if (want == size) return;
  kbc_buf m = {0};
  kbc_buf_printf(&m, "input '%s': dimension %d has size %lld, but ", t->name, dim, (long long)size);
  const ir_axis *ax = axis_named_by(in->p, x);
  int var = ax && ax->kind == IR_AXIS_VAR ? ax->var_id : -1;
  if (var >= 0) {
    kbc_buf_printf(&m, "axis %s is %lld (", ax->name, (long long)want);
    put_source(&m, in, var);
    kbc_buf_putc(&m, ')');
  } else {
    put_dim_expr(&m, in->p, x);
    kbc_buf_printf(&m, " is %lld", (long long)want);
    int n = 0;
    for (int v = 0; v < in->p->vars.len; v++) {
      if (!mentions_axis(in->a, x, v)) continue;
      kbc_buf_printf(&m, "%s%s=%lld (", n++ ? ", " : " for ", var_name(in->p, v),
                     (long long)in->vars[v]);
      put_source(&m, in, v);
      kbc_buf_putc(&m, ')');
    }
  }
  kbc_error(in->d, no_loc, "%s", kbc_buf_str(&m));
  kbc_buf_free(&m);
  in->ok = 0;
}

/* Matches the caller's shapes to the program's inputs by name; reports
 * unexpected, repeated and missing inputs, wrong ranks and sizes < 1. */
static void match_args(inferer *in, const ir_shape_arg *args, int n_args) {
  const ir_program *p = in->p;
  for (int i = 0; i < n_args; i++) {
    const char *name = args[i].name ? args[i].name : "";
    ir_tensor *t = ir_tensor_find(p, name);
    if (!t || t->role != IR_ROLE_INPUT) {
      if (t)
        kbc_error(in->d, no_loc, "unexpected input '%s': it is an %s of the kernel, not an input",
                  name, t->role == IR_ROLE_OUTPUT ? "output" : "intermediate tensor");
      else
        kbc_error(in->d, no_loc, "unexpected input '%s'", name);
      in->ok = 0;
      continue;
    }
    if (in->arg_of[t->id]) {
      kbc_error(in->d, no_loc, "input '%s' is given twice", name);
      in->ok = 0;
      continue;
    }
    in->arg_of[t->id] = &args[i];
  }
  for (int i = 0; i < p->tensors.len; i++) {
    const ir_tensor *t = IR_TENSOR(p, i);
    if (t->role != IR_ROLE_INPUT) continue;
    const ir_shape_arg *arg = in->arg_of[i];
    if (!arg) {
      kbc_error(in->d, no_loc, "missing input '%s'", t->name);
      in->ok = 0;
      continue;
    }
    if (arg->rank != t->rank || (arg->rank > 0 && !arg->shape)) {
      kbc_buf m = {0};
      put_shape(&m, t);
      kbc_error(in->d, no_loc, "input '%s' has rank %d, but the kernel declares it %s (rank %d)",
                t->name, arg->rank, kbc_buf_str(&m), t->rank);
      kbc_buf_free(&m);
      in->arg_of[i] = NULL;
      in->ok = 0;
      continue;
    }
    for (int k = 0; k < t->rank; k++)
      if (arg->shape[k] < 1) {
        kbc_error(in->d, no_loc, "input '%s': dimension %d has size %lld; sizes must be positive",
                  t->name, k, (long long)arg->shape[k]);
        in->arg_of[i] = NULL;
        in->ok = 0;
        break;
      }
  }
}

int ir_infer_vars(const ir_program *p, const ir_shape_arg *args, int n_args, int64_t *vars,
                  kbc_diag *d) {
  int nv = p->vars.len, nt = p->tensors.len;
  kbc_arena *a = kbc_arena_create();
  inferer in = {.p = p, .a = a, .d = d, .vars = vars, .ok = 1};
  in.src = KBC_NEW_ARRAY(a, var_source, nv > 0 ? nv : 1);
  in.from = KBC_NEW_ARRAY(a, const char *, nv > 0 ? nv : 1);
  in.arg_of = KBC_NEW_ARRAY(a, const ir_shape_arg *, nt > 0 ? nt : 1);
  for (int v = 0; v < nv; v++) {
    if (vars[v] >= 1) {
      in.src[v] = SRC_PRESET;
    } else if (vars[v] < 0) {
      kbc_error(d, no_loc, "axis %s is set to %lld; sizes must be positive", var_name(p, v),
                (long long)vars[v]);
      in.src[v] = SRC_FAILED;
      in.ok = 0;
    }
  }
  match_args(&in, args, n_args);
  /* Dimensions that are exactly one var first (they name the clearest
   * source), then affine ones, to a fixed point. */
  infer_pass(&in, 1);
  while (infer_pass(&in, 0)) {
  }
  for (int v = 0; v < nv; v++)
    if (in.src[v] == SRC_UNKNOWN) {
      kbc_error(d, no_loc,
                "cannot infer axis '%s': no input shape determines it; set it with --set %s=N",
                var_name(p, v), var_name(p, v));
      in.ok = 0;
    }
  for (int i = 0; i < nt; i++) {
    const ir_tensor *t = IR_TENSOR(p, i);
    if (!in.arg_of[i]) continue;
    for (int k = 0; k < t->rank; k++) check_dim(&in, t, k, in.arg_of[i]->shape[k]);
  }
  /* On failure only the preset values remain, so the caller may retry. */
  for (int v = 0; v < nv; v++)
    if (in.src[v] != SRC_PRESET && (!in.ok || in.src[v] != SRC_INPUT)) vars[v] = 0;
  kbc_arena_destroy(a);
  return in.ok;
}
