/* interp.c — the CPU reference interpreter; see interp.h.
 *
 * Before: a verified program, a binding, every input in data[] as
 * row-major doubles.  After ir_interp() succeeds: every output and
 * temporary in data[] (malloc'ed here), computed statement by statement in
 * double.  On failure: an error reported, no non-input buffer left behind.
 *
 * Each statement is compiled for the binding (interp_compile.c) and run.
 * Point by point, eval() walks the plan's node array at one point of the
 * indices: an odometer over the free/scatter indices (row-major), each
 * reduction looping over its own indices and combining from the identity.
 * Loads read at tracked affine offsets that the loops keep current, plus
 * cached values of non-affine index syms (recomputed only when an index
 * they mention moves).  To amortize the walk, veval() evaluates a node for
 * a run of up to INTERP_VW consecutive values of one index at once: a
 * reduction's innermost index, or the innermost outer index j when loads
 * stride better along j (reductions then combine elementwise).  Three
 * special forms: a sum over one flat load or a product of two (DOT) is a
 * strided loop; a DOT that strides badly runs row by row along j; indices
 * that walk memory contiguously are merged into one loop.  None of this
 * changes the order in which any reduction combines its terms, so every
 * form gives bit-identical results.  A load not proven inside its tensor
 * is checked on every read: a padded one reads 0 outside, any other is
 * reported as an internal error and never performed.  A large statement
 * runs on several threads (run_parallel), each element still computed by
 * one of them in the same order. */

/* Bit-identical forms need a * b + c rounded twice everywhere: no FMA
 * contraction (which -march=native would allow). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interp_impl.h"
#include "support/env.h"

typedef struct {
  const interp_plan *pl;
  const interp_node *node;
  const interp_var *var;
  const double **data; /* by access number */
  int64_t *tv;         /* tracked values, current */
  int64_t *idx;        /* index values, current */
  int64_t *slot;       /* slot values, valid where slot_state is SLOT_VALID */
  unsigned char *slot_state;
  const int64_t *axes;
  double *vbuf; /* INTERP_VW doubles per node: vector results */
  kbc_diag *d;
  int err;
} run;

enum { SLOT_DIRTY, SLOT_VALID, SLOT_OVERFLOW };

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

/* Recomputes slot k.  0 when it overflows, and for a proven slot also
 * when the value leaves the proven range (then reported: the bounds proof
 * was wrong, and no read may use it). */
static int slot_refresh(run *r, int k) {
  const interp_slot *sl = &r->pl->slot[k];
  int64_t sum = 0, v;
  r->slot_state[k] = SLOT_OVERFLOW;
  for (int i = 0; i < sl->n; i++)
    if (!sym_eval(sl->syms[i], r->axes, r->idx, &v) || __builtin_mul_overflow(v, sl->scale[i], &v) ||
        __builtin_add_overflow(sum, v, &sum)) {
      if (sl->proven) report(r, "a proven-in-bounds index expression overflows");
      return 0;
    }
  if (sl->proven && (sum < sl->lo || sum > sl->hi)) {
    report(r, "an index expression left the range its bounds proof gave");
    return 0;
  }
  r->slot[k] = sum;
  r->slot_state[k] = SLOT_VALID;
  return 1;
}

static inline int slot_get(run *r, int k, int64_t *out) {
  if (r->slot_state[k] != SLOT_VALID && (r->slot_state[k] == SLOT_OVERFLOW || !slot_refresh(r, k)))
    return 0;
  *out = r->slot[k];
  return 1;
}

/* The flat offset of access k at the current point, checking every
 * dimension; -1 when outside the tensor (reported unless padded). */
static int64_t dims_offset(run *r, int k) {
  const interp_access *ac = &r->pl->acc[k];
  int64_t off = 0;
  for (int d = 0; d < ac->rank; d++) {
    int64_t v = 0;
    int evaluated = 1;
    if (ac->dim_tv[d] >= 0)
      v = r->tv[ac->dim_tv[d]];
    else
      evaluated = slot_get(r, ac->dim_slot[d], &v);
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
    for (int u = 0; u < iv->n_dirty; u++) r->slot_state[iv->dirty[u]] = SLOT_DIRTY;
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

/* Moves index v by delta (staying inside [0, ext)). */
static void move(run *r, int v, int64_t delta) {
  const interp_var *iv = &r->var[v];
  r->idx[v] += delta;
  for (int u = 0; u < iv->n_upd; u++) r->tv[iv->upd[u].tv] += iv->upd[u].step * delta;
  for (int u = 0; u < iv->n_dirty; u++) r->slot_state[iv->dirty[u]] = SLOT_DIRTY;
}

static int any_empty(const run *r, const interp_reduce *rd) {
  for (int i = 0; i < rd->n_vars; i++)
    if (r->var[rd->vars[i]].ext < 1) return 1;
  return 0;
}

static double eval(run *r, int n);

static double vroot_reduce(run *r, const interp_node *x);

static double reduce(run *r, const interp_node *x) {
  if (x->flags & INODE_VROOT) return vroot_reduce(r, x);
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

/* The data of load i of a DOT, moved by its slot (constant during the DOT). */
static const double *dot_data(run *r, const interp_reduce *rd, int i) {
  int64_t s = 0;
  if (rd->slot[i] >= 0 && !slot_get(r, rd->slot[i], &s)) return NULL;
  return r->data[rd->acc[i]] + s;
}

/* sum over a flat load, or a product of two: strided loops over the
 * innermost index, the odometer over the others. */
static double dot(run *r, const interp_node *x) {
  const interp_reduce *rd = &r->pl->red[x->b];
  if (any_empty(r, rd)) return 0.0;
  int64_t ext = r->var[rd->vars[rd->n_vars - 1]].ext;
  const double *pa = dot_data(r, rd, 0), *pb = rd->n_loads > 1 ? dot_data(r, rd, 1) : NULL;
  if (!pa || (rd->n_loads > 1 && !pb)) return 0.0;
  int64_t sa = rd->step[0];
  double acc = 0.0;
  if (rd->n_loads == 1) {
    do {
      int64_t oa = r->tv[rd->tv[0]];
      for (int64_t k = 0; k < ext; k++, oa += sa) acc += pa[oa];
    } while (advance(r, rd->vars, rd->n_vars - 1));
    return acc;
  }
  int64_t sb = rd->step[1];
  do {
    int64_t oa = r->tv[rd->tv[0]], ob = r->tv[rd->tv[1]];
    for (int64_t k = 0; k < ext; k++, oa += sa, ob += sb) acc += pa[oa] * pb[ob];
  } while (advance(r, rd->vars, rd->n_vars - 1));
  return acc;
}

static double index_slot(run *r, int k) {
  int64_t v;
  if (!slot_get(r, k, &v)) {
    report(r, "an index expression overflows 64-bit integers");
    return 0.0;
  }
  return (double)v;
}

static double load_mixed(run *r, const interp_node *x) {
  int64_t s;
  return slot_get(r, x->c, &s) ? r->data[x->a][r->tv[x->b] + s] : 0.0;
}

static double eval(run *r, int n) {
  const interp_node *x = &r->node[n];
  switch (x->op) {
  case IR_OP_CONST: return x->value;
  case INODE_LOAD_FLAT: return r->data[x->a][r->tv[x->b]];
  case INODE_LOAD_MIXED: return load_mixed(r, x);
  case INODE_LOAD_DIMS: {
    int64_t off = dims_offset(r, x->a);
    return off < 0 ? 0.0 : r->data[x->a][off];
  }
  case INODE_INDEX_TV: return (double)r->tv[x->a];
  case INODE_INDEX_SLOT: return index_slot(r, x->a);
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

/* ---- vectorized evaluation ----------------------------------------------- */

/* veval(r, n, w) evaluates node n for the w (<= INTERP_VW) consecutive
 * values of index x->v starting at its current value, everything else
 * fixed, and returns the w results (in the node's buffer, or straight from
 * a tensor).  Every node gives the same value per point as eval(); the
 * order in which each reduction combines its terms is unchanged. */
static const double *veval(run *r, int n, int w);

/* Point by point, moving x->v along and back. */
static const double *pointwise(run *r, int n, int w, double *out) {
  int v = r->node[n].v;
  for (int p = 0;; p++) {
    out[p] = eval(r, n);
    if (p + 1 == w) break;
    move(r, v, 1);
  }
  if (w > 1) move(r, v, -(w - 1));
  return out;
}

static const double *gather(const double *base, int64_t step, int w, double *out) {
  if (step == 1) return base;
  for (int p = 0; p < w; p++) out[p] = base[p * step];
  return out;
}

/* A reduction inside a vector context: each point's reduction, combined
 * elementwise over the vector. */
static const double *vreduce(run *r, const interp_node *x, int w, double *out) {
  const interp_reduce *rd = &r->pl->red[x->b];
  double id = ir_red_identity(rd->op);
  for (int p = 0; p < w; p++) out[p] = id;
  if (any_empty(r, rd)) return out;
  do {
    const double *b = veval(r, x->a, w);
    switch (rd->op) {
    case IR_RED_SUM: for (int p = 0; p < w; p++) out[p] += b[p]; break;
    case IR_RED_PROD: for (int p = 0; p < w; p++) out[p] *= b[p]; break;
    default: for (int p = 0; p < w; p++) out[p] = interp_combine(rd->op, out[p], b[p]); break;
    }
  } while (advance(r, rd->vars, rd->n_vars));
  return out;
}

static const double *vbinary(int op, const double *a, const double *b, int w, double *out) {
  switch (op) {
  case IR_OP_ADD: for (int p = 0; p < w; p++) out[p] = a[p] + b[p]; break;
  case IR_OP_SUB: for (int p = 0; p < w; p++) out[p] = a[p] - b[p]; break;
  case IR_OP_MUL: for (int p = 0; p < w; p++) out[p] = a[p] * b[p]; break;
  case IR_OP_DIV: for (int p = 0; p < w; p++) out[p] = a[p] / b[p]; break;
  default: for (int p = 0; p < w; p++) out[p] = interp_binary(op, a[p], b[p]); break;
  }
  return out;
}

static const double *veval(run *r, int n, int w) {
  const interp_node *x = &r->node[n];
  double *out = r->vbuf + (size_t)n * INTERP_VW;
  if (x->flags & INODE_UNIFORM) {
    double v = eval(r, n);
    for (int p = 0; p < w; p++) out[p] = v;
    return out;
  }
  if (x->flags & INODE_POINTWISE) return pointwise(r, n, w, out);
  switch (x->op) {
  case IR_OP_CONST: return out; /* filled by run_stmt */
  case INODE_LOAD_FLAT: return gather(r->data[x->a] + r->tv[x->b], x->vstep, w, out);
  case INODE_LOAD_MIXED: {
    int64_t s;
    if (slot_get(r, x->c, &s)) return gather(r->data[x->a] + r->tv[x->b] + s, x->vstep, w, out);
    for (int p = 0; p < w; p++) out[p] = 0.0;
    return out;
  }
  case INODE_INDEX_TV:
    for (int p = 0; p < w; p++) out[p] = (double)(r->tv[x->a] + p * x->vstep);
    return out;
  case IR_OP_REDUCE: return vreduce(r, x, w, out);
  case IR_OP_WHERE: {
    if (r->node[x->a].flags & INODE_UNIFORM) return veval(r, eval(r, x->a) != 0.0 ? x->b : x->c, w);
    const double *c = veval(r, x->a, w), *a = veval(r, x->b, w), *b = veval(r, x->c, w);
    for (int p = 0; p < w; p++) out[p] = c[p] != 0.0 ? a[p] : b[p];
    return out;
  }
  case IR_OP_AND: case IR_OP_OR:
    if (r->node[x->a].flags & INODE_UNIFORM) {
      int c = eval(r, x->a) != 0.0;
      if (c == (x->op == IR_OP_OR)) {
        for (int p = 0; p < w; p++) out[p] = c;
        return out;
      }
      const double *b = veval(r, x->b, w);
      for (int p = 0; p < w; p++) out[p] = b[p] != 0.0;
      return out;
    }
    break;
  default: break;
  }
  const double *a = veval(r, x->a, w);
  if (ir_op_info[x->op].arity == 1) {
    for (int p = 0; p < w; p++) out[p] = interp_unary(x->op, a[p]);
    return out;
  }
  return vbinary(x->op, a, veval(r, x->b, w), w, out);
}

/* A reduction outside any vector context: its innermost index in runs of
 * INTERP_VW, the others by the odometer, combining in order. */
static double vroot_reduce(run *r, const interp_node *x) {
  const interp_reduce *rd = &r->pl->red[x->b];
  double acc = ir_red_identity(rd->op);
  if (any_empty(r, rd)) return acc;
  int v = rd->vars[rd->n_vars - 1];
  int64_t ext = r->var[v].ext;
  do {
    int64_t pos = 0;
    for (;;) {
      int w = ext - pos < INTERP_VW ? (int)(ext - pos) : INTERP_VW;
      const double *b = veval(r, x->a, w);
      switch (rd->op) {
      case IR_RED_SUM: for (int p = 0; p < w; p++) acc += b[p]; break;
      case IR_RED_PROD: for (int p = 0; p < w; p++) acc *= b[p]; break;
      default: for (int p = 0; p < w; p++) acc = interp_combine(rd->op, acc, b[p]); break;
      }
      if (pos + w >= ext) break;
      move(r, v, w);
      pos += w;
    }
    if (pos) move(r, v, -pos);
  } while (advance(r, rd->vars, rd->n_vars - 1));
  return acc;
}

/* ---- statements ---------------------------------------------------------- */

/* A statement without reductions, vectorized along its innermost outer
 * index j (see plan_vectors). */
static void run_vec_top(run *r, double *dst) {
  const interp_plan *pl = r->pl;
  const interp_access *lhs = &pl->acc[pl->lhs];
  int j = pl->outer[pl->n_outer - 1], accumulate = pl->s->accumulate;
  int64_t ext = r->var[j].ext, step = pl->lhs_vstep;
  do {
    int64_t pos = 0;
    for (;;) {
      int w = ext - pos < INTERP_VW ? (int)(ext - pos) : INTERP_VW;
      const double *val = veval(r, pl->root, w);
      int64_t off = r->tv[lhs->flat], part = 0;
      if (lhs->slot >= 0 && !slot_get(r, lhs->slot, &part)) return;
      double *o = dst + off + part;
      if (accumulate)
        for (int p = 0; p < w; p++) o[p * step] += val[p];
      else
        for (int p = 0; p < w; p++) o[p * step] = val[p];
      if (pos + w >= ext) break;
      move(r, j, w);
      pos += w;
    }
    if (pos) move(r, j, -pos);
  } while (!r->err && advance(r, pl->outer, pl->n_outer - 1));
}

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
  if (ext > ((int64_t)1 << 24) || lhs->mode != INTERP_ACC_FLAT || lhs->slot >= 0) return 0;
  double *restrict sum = malloc(sizeof(double) * (size_t)ext);
  if (!sum) return 0;
  int64_t sa = pl->row_step[0], sb = pl->row_step[1];
  int empty = any_empty(r, rd);
  do {
    const double *pa = dot_data(r, rd, 0), *pb = rd->n_loads > 1 ? dot_data(r, rd, 1) : NULL;
    if (!pa || (rd->n_loads > 1 && !pb)) break;
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

/* Point by point: the odometer over the outer indices. */
static void run_points(run *r, double *dst) {
  const interp_plan *pl = r->pl;
  const interp_access *lhs = &pl->acc[pl->lhs];
  do {
    double v = eval(r, pl->root);
    int64_t off, part = 0;
    if (lhs->mode == INTERP_ACC_DIMS) {
      off = dims_offset(r, pl->lhs);
    } else {
      off = r->tv[lhs->flat];
      if (lhs->slot >= 0 && slot_get(r, lhs->slot, &part)) off += part;
    }
    if (r->err || off < 0) return;
    if (pl->s->accumulate)
      dst[off] += v;
    else
      dst[off] = v;
  } while (advance(r, pl->outer, pl->n_outer));
}

/* The statement's points from the run's current position on: vectorized
 * along j, row by row, or point by point (interp_plan). */
static void run_body(run *r, double *dst) {
  const interp_plan *pl = r->pl;
  if (pl->vec_top)
    run_vec_top(r, dst);
  else if (pl->row_dot < 0 || !run_rows(r, dst))
    run_points(r, dst);
}

/* A run's state for plan pl (every index at 0; var: the extents), its
 * arrays malloc'ed (run_free).  0 when out of memory. */
static int run_init(run *r, const interp_plan *pl, const interp_var *var, const ir_binding *b, double **data,
                    kbc_diag *d) {
  *r = (run){.pl = pl, .node = pl->node, .var = var, .axes = b->vars, .d = d};
  r->tv = calloc((size_t)pl->n_tv + 1, sizeof *r->tv);
  r->idx = calloc((size_t)pl->n_index + 1, sizeof *r->idx);
  r->data = calloc((size_t)pl->n_acc + 1, sizeof *r->data);
  r->slot = calloc((size_t)pl->n_slots + 1, sizeof *r->slot);
  r->slot_state = calloc((size_t)pl->n_slots + 1, 1); /* all SLOT_DIRTY */
  if (pl->uses_vec) r->vbuf = malloc(sizeof(double) * INTERP_VW * (size_t)pl->n_nodes);
  if (!r->tv || !r->idx || !r->data || !r->slot || !r->slot_state || (pl->uses_vec && !r->vbuf)) return 0;
  if (pl->n_tv) memcpy(r->tv, pl->tv0, sizeof(int64_t) * (size_t)pl->n_tv);
  for (int i = 0; i < pl->n_acc; i++) r->data[i] = data[pl->acc[i].t->id];
  for (int n = 0; r->vbuf && n < pl->n_nodes; n++)
    if (pl->node[n].op == IR_OP_CONST && pl->node[n].v >= 0)
      for (int p = 0; p < INTERP_VW; p++) r->vbuf[(size_t)n * INTERP_VW + p] = pl->node[n].value;
  return 1;
}

static void run_free(run *r) {
  free(r->tv);
  free(r->idx);
  free(r->data);
  free(r->slot);
  free(r->slot_state);
  free(r->vbuf);
}

/* ---- statements on several threads ---------------------------------------- */

/* A statement of at least INTERP_PAR_WORK terms (the product of all its
 * index extents) runs on up to KBC_INTERP_THREADS threads (default: the
 * processors online, at most INTERP_MAX_THREADS), each over a contiguous
 * range of its outermost outer index.  Every element is still computed by
 * one thread, its reductions combining their terms in the same order, so
 * the results are bit-identical to one thread's (outer indices of one
 * value before it skipped: a batch of 1).  Not for a `+=` statement
 * (two points may add into one element), nor where the outermost index is
 * the one a vectorized or row form runs along.  A part that meets an error
 * (an internal one: a load the bounds proof missed) makes the statement
 * run again on one thread, which reports the same first error as always. */
enum { INTERP_PAR_WORK = 1 << 22, INTERP_MAX_THREADS = 16 };

typedef struct {
  run r;
  int index;       /* the index cut into parts (run_parallel's o0) */
  interp_var *var; /* the plan's, that index's extent cut at the part's end */
  int64_t lo;      /* the part's first value of that index */
  double *dst;
  kbc_diag *d;
} interp_part;

static void *part_main(void *arg) {
  interp_part *pt = arg;
  move(&pt->r, pt->index, pt->lo);
  run_body(&pt->r, pt->dst);
  return NULL;
}

static int interp_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  int def = n < 1 ? 1 : n > INTERP_MAX_THREADS ? INTERP_MAX_THREADS : (int)n;
  return kbc_env_int("KBC_INTERP_THREADS", 1, 64, def);
}

/* Runs pl on several threads where it pays: 1 when done (r.err set on an
 * error in any part), 0 to run it on one. */
static int run_parallel(const interp_plan *pl, const ir_binding *b, double **data, double *dst, int *failed) {
  if (pl->empty || pl->s->accumulate || pl->n_outer < 1) return 0;
  /* the outermost index with more than one value (those before it have
   * one: cutting it cuts the statement's points in order) */
  int d0 = 0;
  while (d0 + 1 < pl->n_outer && pl->var[pl->outer[d0]].ext == 1) d0++;
  int o0 = pl->outer[d0];
  if ((pl->vec_top || pl->row_dot >= 0) && d0 == pl->n_outer - 1) return 0; /* the index they run along */
  double work = 1;
  for (int v = 0; v < pl->n_index; v++) work *= (double)(pl->var[v].ext > 0 ? pl->var[v].ext : 1);
  int64_t ext = pl->var[o0].ext;
  int nt = interp_threads();
  if (nt > ext) nt = (int)ext;
  if (work < INTERP_PAR_WORK || nt < 2 || !interp_vectorize) return 0;
  interp_part *pt = calloc((size_t)nt, sizeof *pt);
  pthread_t *th = calloc((size_t)nt, sizeof *th);
  int ok = pt && th, started = 0;
  for (int i = 0; ok && i < nt; i++) {
    int64_t lo = ext * i / nt, hi = ext * (i + 1) / nt;
    pt[i].var = malloc(sizeof(interp_var) * (size_t)(pl->n_index + 1));
    pt[i].d = kbc_diag_create("interpreter", NULL);
    if (!pt[i].var || !pt[i].d) {
      ok = 0;
      break;
    }
    memcpy(pt[i].var, pl->var, sizeof(interp_var) * (size_t)pl->n_index);
    pt[i].var[o0].ext = hi;
    pt[i].index = o0;
    pt[i].lo = lo;
    pt[i].dst = dst;
    ok = run_init(&pt[i].r, pl, pt[i].var, b, data, pt[i].d);
  }
  for (int i = 0; ok && i < nt; i++, started++)
    if (pthread_create(&th[i], NULL, part_main, &pt[i])) break;
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  int done = ok && started == nt;
  if (!done && started) { /* some parts ran: the rest now, here */
    for (int i = started; i < nt; i++) part_main(&pt[i]);
    done = 1;
  }
  for (int i = 0; done && i < nt; i++) *failed |= pt[i].r.err != 0;
  for (int i = 0; pt && i < nt; i++) {
    run_free(&pt[i].r);
    free(pt[i].var);
    if (pt[i].d) kbc_diag_destroy(pt[i].d);
  }
  free(pt);
  free(th);
  return done;
}

static int run_stmt(const interp_plan *pl, const ir_binding *b, double **data, kbc_diag *d) {
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
  int failed = 0, err = 0;
  if (!run_parallel(pl, b, data, dst, &failed) || failed) { /* one thread (again, for its first error) */
    run r;
    if (!run_init(&r, pl, pl->var, b, data, d)) {
      kbc_error(d, s->loc, "interpreter: out of memory for the state of '%s'", s->out->name);
      err = 1;
    } else if (!pl->empty) {
      run_body(&r, dst);
      err = r.err;
    }
    run_free(&r);
  }
  if (pl->reads_out) {
    free(data[id]);
    data[id] = dst;
  }
  return !err;
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
    ok = interp_compile(a, p, b, IR_STMT(p, i), &pl, d) && run_stmt(&pl, b, data, d);
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
