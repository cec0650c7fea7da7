/* interp.c — the CPU reference interpreter; see interp.h.
 *
 * Before: a verified program, a binding, every input in data[] as
 * row-major doubles.  After ir_interp() succeeds: every output and
 * temporary in data[] (malloc'ed here), computed statement by statement in
 * double.  On failure: an error reported, no non-input buffer left behind.
 *
 * Each statement is compiled for the binding (interp_compile.c) and run:
 * an odometer over its free/scatter indices, row-major; at each point the
 * right side is evaluated by a walk over the plan's node array, reductions
 * looping over their indices and combining from the identity.  Loads read
 * at tracked affine offsets that the loops keep current; a sum over one
 * flat load or a product of two runs as a strided dot-product loop.  A load
 * not proven inside its tensor is checked on every read: a padded one reads
 * 0 outside, any other is reported as an internal error and never
 * performed. */
#include <stdlib.h>
#include <string.h>

#include "interp_impl.h"

typedef struct {
  const interp_plan *pl;
  const interp_node *node;
  const interp_var *var;
  const double **data; /* by access number */
  int64_t *tv;         /* tracked values, current */
  int64_t *idx;        /* index values, current */
  const int64_t *axes;
  kbc_diag *d;
  int err;
} run;

/* ---- errors ------------------------------------------------------------- */

/* Appends " at i=3, k=7" for the statement's indices now. */
static void put_point(kbc_buf *m, const run *r) {
  const ir_stmt *s = r->pl->s;
  for (int v = 0; v < s->n_index; v++)
    kbc_buf_printf(m, "%s%s=%lld", v ? ", " : " at ", s->index[v].name ? s->index[v].name : "?",
                   (long long)r->idx[v]);
}

static void report(run *r, const char *what) {
  if (r->err++) return;
  kbc_buf m = {0};
  const ir_stmt *s = r->pl->s;
  kbc_buf_printf(&m, "interpreter: statement '%s' (writing '%s'): %s", s->text ? s->text : "?",
                 s->out->name, what);
  put_point(&m, r);
  kbc_internal(r->d, s->loc, "%s", kbc_buf_str(&m));
  kbc_buf_free(&m);
}

static void out_of_bounds(run *r, const interp_access *ac, int dim, int64_t v, int evaluated) {
  if (r->err) return;
  kbc_buf m = {0};
  kbc_buf_printf(&m, "%s %s[", ac == &r->pl->acc[r->pl->lhs] ? "store to" : "load of", ac->t->name);
  for (int d = 0; d < ac->rank; d++) {
    if (d) kbc_buf_puts(&m, ", ");
    sym_print(ac->idx[d], &m);
  }
  if (evaluated)
    kbc_buf_printf(&m, "] outside the tensor: dimension %d is %lld, not in [0, %lld)", dim,
                   (long long)v, (long long)ac->shape[dim]);
  else
    kbc_buf_printf(&m, "]: dimension %d overflows 64-bit integers", dim);
  report(r, kbc_buf_str(&m));
  kbc_buf_free(&m);
}

/* ---- evaluation ---------------------------------------------------------- */

/* The flat offset of access k at the current point, checking every
 * dimension; -1 when outside the tensor (reported unless padded). */
static int64_t dims_offset(run *r, int k) {
  const interp_access *ac = &r->pl->acc[k];
  int64_t off = 0;
  for (int d = 0; d < ac->rank; d++) {
    int64_t v;
    int evaluated = 1;
    if (ac->dim_tv[d] >= 0)
      v = r->tv[ac->dim_tv[d]];
    else
      evaluated = sym_eval(ac->idx[d], r->axes, r->idx, &v);
    if (!evaluated || v < 0 || v >= ac->shape[d]) {
      if (!ac->padded) out_of_bounds(r, ac, d, v, evaluated);
      return -1;
    }
    off += v * ac->stride[d];
  }
  return off;
}

/* Steps the odometer over vars[0..n) (the last fastest), moving the
 * tracked values along; returns 0 after the last point, with every one of
 * these indices back at 0. */
static int advance(run *r, const int *vars, int n) {
  for (int k = n - 1; k >= 0; k--) {
    int v = vars[k];
    const interp_var *iv = &r->var[v];
    if (r->idx[v] + 1 < iv->ext) {
      r->idx[v]++;
      for (int u = 0; u < iv->n_upd; u++) r->tv[iv->upd[u].tv] += iv->upd[u].step;
      return 1;
    }
    r->idx[v] = 0;
    for (int u = 0; u < iv->n_upd; u++) r->tv[iv->upd[u].tv] -= iv->upd[u].wrap;
  }
  return 0;
}

static int any_empty(const run *r, const interp_reduce *rd) {
  for (int i = 0; i < rd->n_vars; i++)
    if (r->var[rd->vars[i]].ext < 1) return 1;
  return 0;
}

static double eval(run *r, int n);

static double reduce(run *r, const interp_node *x) {
  const interp_reduce *rd = &r->pl->red[x->b];
  double acc = ir_red_identity(rd->op);
  if (any_empty(r, rd)) return acc;
  switch (rd->op) {
  case IR_RED_SUM:
    do acc += eval(r, x->a);
    while (advance(r, rd->vars, rd->n_vars));
    break;
  case IR_RED_PROD:
    do acc *= eval(r, x->a);
    while (advance(r, rd->vars, rd->n_vars));
    break;
  default:
    do acc = interp_combine(rd->op, acc, eval(r, x->a));
    while (advance(r, rd->vars, rd->n_vars));
    break;
  }
  return acc;
}

/* sum over a flat load, or a product of two: strided loops over the
 * innermost index, the odometer over the others. */
static double dot(run *r, const interp_node *x) {
  const interp_reduce *rd = &r->pl->red[x->b];
  if (any_empty(r, rd)) return 0.0;
  int64_t ext = r->var[rd->vars[rd->n_vars - 1]].ext;
  const double *pa = r->data[rd->acc[0]];
  int64_t sa = rd->step[0];
  double acc = 0.0;
  if (rd->n_loads == 1) {
    do {
      const double *a = pa + r->tv[rd->tv[0]];
      for (int64_t k = 0; k < ext; k++, a += sa) acc += *a;
    } while (advance(r, rd->vars, rd->n_vars - 1));
    return acc;
  }
  const double *pb = r->data[rd->acc[1]];
  int64_t sb = rd->step[1];
  do {
    const double *a = pa + r->tv[rd->tv[0]], *b = pb + r->tv[rd->tv[1]];
    for (int64_t k = 0; k < ext; k++, a += sa, b += sb) acc += *a * *b;
  } while (advance(r, rd->vars, rd->n_vars - 1));
  return acc;
}

static double index_sym(run *r, int k) {
  int64_t v;
  if (!sym_eval(r->pl->syms[k], r->axes, r->idx, &v)) {
    report(r, "an index expression overflows 64-bit integers");
    return 0.0;
  }
  return (double)v;
}

static double eval(run *r, int n) {
  const interp_node *x = &r->node[n];
  switch (x->op) {
  case IR_OP_CONST: return x->value;
  case INODE_LOAD_FLAT: return r->data[x->a][r->tv[x->b]];
  case INODE_LOAD_DIMS: {
    int64_t off = dims_offset(r, x->a);
    return off < 0 ? 0.0 : r->data[x->a][off];
  }
  case INODE_INDEX_TV: return (double)r->tv[x->a];
  case INODE_INDEX_SYM: return index_sym(r, x->a);
  case INODE_DOT: return dot(r, x);
  case IR_OP_REDUCE: return reduce(r, x);
  case IR_OP_WHERE: return eval(r, x->a) != 0.0 ? eval(r, x->b) : eval(r, x->c);
  case IR_OP_AND: return eval(r, x->a) != 0.0 && eval(r, x->b) != 0.0;
  case IR_OP_OR: return eval(r, x->a) != 0.0 || eval(r, x->b) != 0.0;
  case IR_OP_ADD: return eval(r, x->a) + eval(r, x->b);
  case IR_OP_SUB: return eval(r, x->a) - eval(r, x->b);
  case IR_OP_MUL: return eval(r, x->a) * eval(r, x->b);
  case IR_OP_DIV: return eval(r, x->a) / eval(r, x->b);
  default: break;
  }
  if (ir_op_info[x->op].arity == 1) return interp_unary(x->op, eval(r, x->a));
  double a = eval(r, x->a);
  return interp_binary(x->op, a, eval(r, x->b));
}

/* ---- statements ---------------------------------------------------------- */

/* Row mode (see interp_plan): for each point of the outer indices but the
 * last (j), the DOT's terms go into sum[0..ext_j), then each element is
 * finished and stored.  0 when the row buffer cannot be allocated. */
static int run_rows(run *r, double *dst) {
  const interp_plan *pl = r->pl;
  const interp_node *root = &pl->node[pl->root], *x = &pl->node[pl->row_dot];
  const interp_reduce *rd = &pl->red[x->b];
  int j = pl->outer[pl->n_outer - 1];
  int64_t ext = r->var[j].ext;
  const interp_access *lhs = &pl->acc[pl->lhs];
  if (ext > ((int64_t)1 << 24) || lhs->mode != INTERP_ACC_FLAT) return 0;
  double *restrict sum = malloc(sizeof(double) * (size_t)ext);
  if (!sum) return 0;
  const double *pa = r->data[rd->acc[0]], *pb = rd->n_loads > 1 ? r->data[rd->acc[1]] : NULL;
  int64_t sa = pl->row_step[0], sb = pl->row_step[1];
  int empty = any_empty(r, rd);
  do {
    for (int64_t k = 0; k < ext; k++) sum[k] = 0.0;
    if (!empty) do {
        const double *a = pa + r->tv[rd->tv[0]];
        if (pb) {
          const double *restrict b = pb + r->tv[rd->tv[1]];
          if (sa == 0 && sb == 1)
            for (int64_t k = 0; k < ext; k++) sum[k] += *a * b[k];
          else if (sa == 1 && sb == 0)
            for (int64_t k = 0; k < ext; k++) sum[k] += a[k] * *b;
          else
            for (int64_t k = 0; k < ext; k++) sum[k] += a[k * sa] * b[k * sb];
        } else {
          for (int64_t k = 0; k < ext; k++) sum[k] += a[k * sa];
        }
      } while (advance(r, rd->vars, rd->n_vars));
    int64_t k = 0;
    do {
      double v = sum[k++];
      if (pl->row_dot != pl->root) {
        double o = eval(r, root->a == pl->row_dot ? root->b : root->a);
        v = root->a == pl->row_dot ? interp_binary(root->op, v, o) : interp_binary(root->op, o, v);
      }
      dst[r->tv[lhs->flat]] = v;
    } while (advance(r, &j, 1));
  } while (!r->err && advance(r, pl->outer, pl->n_outer - 1));
  free(sum);
  return 1;
}

static int run_stmt(const interp_plan *pl, kbc_arena *a, const ir_binding *b, double **data,
                    kbc_diag *d) {
  const ir_stmt *s = pl->s;
  int id = s->out->id;
  size_t bytes = sizeof(double) * (size_t)b->numel[id];
  double *dst = data[id];
  if (pl->reads_out) { /* the right side reads the target: write a copy */
    if (!(dst = s->accumulate ? malloc(bytes) : calloc(1, bytes))) {
      kbc_error(d, s->loc, "interpreter: out of memory for a copy of '%s'", s->out->name);
      return 0;
    }
    if (s->accumulate) memcpy(dst, data[id], bytes);
  }
  run r = {.pl = pl, .node = pl->node, .var = pl->var, .axes = b->vars, .d = d};
  r.tv = KBC_NEW_ARRAY(a, int64_t, pl->n_tv + 1);
  if (pl->n_tv) memcpy(r.tv, pl->tv0, sizeof(int64_t) * (size_t)pl->n_tv);
  r.idx = KBC_NEW_ARRAY(a, int64_t, pl->n_index + 1);
  r.data = KBC_NEW_ARRAY(a, const double *, pl->n_acc + 1);
  for (int i = 0; i < pl->n_acc; i++) r.data[i] = data[pl->acc[i].t->id];
  if (!pl->empty && (pl->row_dot < 0 || !run_rows(&r, dst))) {
    const interp_access *lhs = &pl->acc[pl->lhs];
    do {
      double v = eval(&r, pl->root);
      int64_t off = lhs->mode == INTERP_ACC_FLAT ? r.tv[lhs->flat] : dims_offset(&r, pl->lhs);
      if (r.err || off < 0) break;
      if (s->accumulate)
        dst[off] += v;
      else
        dst[off] = v;
    } while (advance(&r, pl->outer, pl->n_outer));
  }
  if (pl->reads_out) {
    free(data[id]);
    data[id] = dst;
  }
  return !r.err;
}

/* ---- program ------------------------------------------------------------- */

int ir_interp(const ir_program *p, const ir_binding *b, double **data, kbc_diag *d) {
  const kbc_loc no_loc = {0, 0};
  if (b->n_tensors != p->tensors.len || b->n_vars != p->vars.len) {
    kbc_internal(d, no_loc, "interpreter: the binding is for another program");
    return 0;
  }
  int64_t total = 0;
  int ok = 1;
  for (int i = 0; i < p->tensors.len; i++) {
    const ir_tensor *t = IR_TENSOR(p, i);
    if (t->role == IR_ROLE_INPUT) {
      if (!data[i]) {
        kbc_error(d, no_loc, "interpreter: no data for input '%s'", t->name);
        ok = 0;
      }
      continue;
    }
    data[i] = NULL;
    total += b->numel[i] * (int64_t)sizeof(double); /* numel <= 2^40 each */
  }
  if (!ok) return 0;
  if (total > IR_INTERP_MAX_BYTES) {
    kbc_error(d, no_loc,
              "interpreter: outputs and temporaries need %.1f GiB, more than its limit of %.0f GiB",
              (double)total / (1 << 30), (double)IR_INTERP_MAX_BYTES / (1 << 30));
    return 0;
  }
  for (int i = 0; i < p->tensors.len && ok; i++) {
    const ir_tensor *t = IR_TENSOR(p, i);
    if (t->role == IR_ROLE_INPUT) continue;
    if (!(data[i] = calloc((size_t)b->numel[i], sizeof(double)))) {
      kbc_error(d, no_loc, "interpreter: out of memory allocating '%s' (%lld elements)", t->name,
                (long long)b->numel[i]);
      ok = 0;
    }
  }
  kbc_arena *a = kbc_arena_create();
  for (int i = 0; i < p->stmts.len && ok; i++) {
    interp_plan pl;
    ok = interp_compile(a, p, b, IR_STMT(p, i), &pl, d) && run_stmt(&pl, a, b, data, d);
  }
  kbc_arena_destroy(a);
  if (!ok) ir_interp_release(p, data);
  return ok;
}

void ir_interp_release(const ir_program *p, double **data) {
  for (int i = 0; i < p->tensors.len; i++)
    if (IR_TENSOR(p, i)->role != IR_ROLE_INPUT) {
      free(data[i]);
      data[i] = NULL;
    }
}
