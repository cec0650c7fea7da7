/* rowsum.c — a row's sum of a contraction times another tensor, summed
 * through the contraction's other operand instead.
 *
 * Before: a verified program after hoist (a reduction inside a larger
 * statement has its own statement).  After: a statement
 *
 *   x[R] = sum(J: a[R, J] * p[R, J])     with   a[R, J] = sum(N: g(R, N) * v(J, N))
 *
 * (R the statement's free indices, J the columns summed, a written once
 * by a plain contraction whose one factor reads no column and the other
 * leaves out some row) becomes
 *
 *   x.o[R, N] = sum(J: p[R, J] * v(J, N))       (a new statement, as early as its reads allow)
 *   x[R]      = sum(N: g(R, N) * x.o[R, N])
 *
 * (x.o an earlier statement's tensor where one computes the same, its
 * indices renamed: SAM-HQ's o), the same value in exact arithmetic (both are the sum over J and N of
 * g p v).  The softmax's backward as users write it, sum(j: dp[i, j] *
 * p[i, j]) with dp = go . v^T, so becomes sum(c: go[i, c] * (p . v)[i,
 * c]) — FlashAttention's rowsum(dO * O) — and no longer reads a tensor of
 * both rows and columns besides p: what lets the attention family keep
 * dp on chip (docs/FUSED_ATTENTION.md, "The backward").  Only where N is
 * at most J (estimated; the new tensor is no larger than a) and at most
 * 256 (a head's width, not a projection's).
 *
 * Two passes: rowsum-reuse (by default) only where an earlier statement
 * already computes x.o — then the rewrite drops a read of a scores-sized
 * tensor and adds nothing (SAM-HQ 64x64 b4 0.947x, H100 2026-12-05); rowsum
 * (under KBC_ATTN_RECOMPUTE, or KBC_ROWSUM=2) adds x.o where none does,
 * a contraction that alone measured slower than the row sum it replaces. */
#include "ir/cost.h"
#include "ir/subst.h"
#include "passes.h"

enum { ROWSUM_MAX_N = 256 };

/* The statement writing t (once, plainly, not +=) before position `before`,
 * or -1. */
static int sole_writer(const ir_program *p, const ir_tensor *t, int before) {
  int w = -1;
  for (int j = 0; j < p->stmts.len; j++)
    if (IR_STMT(p, j)->out == t) {
      if (w >= 0 || j >= before || IR_STMT(p, j)->accumulate) return -1;
      w = j;
    }
  return w;
}

/* Whether e mentions a free index of s whose mapped kind (through to[]:
 * 1 a row, 2 a column) is `kind`. */
static int mentions_kind(const ir_stmt *s, const ir_expr *e, const int *to, int kind) {
  for (int id = 0; id < s->n_index; id++)
    if (s->index[id].kind == IR_IDX_FREE && to[id] == kind && ir_expr_mentions_index(e, id)) return 1;
  return 0;
}


/* Whether e leaves out some free index of s mapped to a row. */
static int misses_row(const ir_stmt *s, const ir_expr *e, const int *to) {
  for (int id = 0; id < s->n_index; id++)
    if (s->index[id].kind == IR_IDX_FREE && to[id] == 1 && !ir_expr_mentions_index(e, id)) return 1;
  return 0;
}

static double extent_of(const ir_stmt *s, const unsigned char *in) {
  double e = 1;
  for (int id = 0; id < s->n_index; id++)
    if (in[id]) e *= ir_estimate(s->index[id].extent);
  return e;
}

/* Where the new statement may go: after every writer (before x) of what its
 * right-hand side reads. */
static int earliest(const ir_program *p, const ir_expr *rhs, int x) {
  int at = 0;
  for (int j = 0; j < x; j++)
    if (ir_expr_reads(rhs, IR_STMT(p, j)->out)) at = j + 1;
  return at;
}

/* Position-wise correspondences of O's indices to Y's from the loads of
 * the same tensor among the two bodies' top factors (where both read a
 * plain index; ir_expr_same checks the rest). */
static void correspond(const ir_expr *x, const ir_expr *y, int *map) {
  const ir_expr *xf[2] = {x->arg[0], x->arg[1]}, *yf[2] = {y->arg[0], y->arg[1]};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      if (xf[i]->op != IR_OP_LOAD || yf[j]->op != IR_OP_LOAD || xf[i]->u.load.tensor != yf[j]->u.load.tensor) continue;
      for (int d = 0; d < xf[i]->u.load.tensor->rank; d++) {
        int xi, yi;
        if (sym_is_index(xf[i]->u.load.idx[d], &xi) && sym_is_index(yf[j]->u.load.idx[d], &yi) && map[xi] < 0)
          map[xi] = yi;
      }
    }
}

/* An earlier statement (before `before`) computing what O computes, its
 * indices renamed: its position, with map[O id] = its id; -1 where none. */
static int same_statement(const ir_program *p, const ir_stmt *O, int before, int *map) {
  kbc_arena *a = p->arena;
  for (int j = 0; j < before; j++) {
    const ir_stmt *Y = IR_STMT(p, j);
    if (Y->accumulate || Y->out->rank != O->out->rank || Y->n_index != O->n_index || Y->rhs->op != IR_OP_REDUCE ||
        Y->rhs->u.reduce.op != IR_RED_SUM || Y->rhs->arg[0]->op != IR_OP_MUL || sole_writer(p, Y->out, before) != j)
      continue;
    for (int id = 0; id < O->n_index; id++) map[id] = -1;
    correspond(O->rhs->arg[0], Y->rhs->arg[0], map);
    int ok = 1, *red = KBC_NEW_ARRAY(a, int, O->n_index + 1);
    unsigned char *hit = KBC_NEW_ARRAY(a, unsigned char, Y->n_index + 1);
    sym **by = KBC_NEW_ARRAY(a, sym *, O->n_index + 1);
    for (int id = 0; id < O->n_index && ok; id++) {
      int y = map[id];
      ok = y >= 0 && !hit[y] && Y->index[y].kind == O->index[id].kind &&
           sym_equal(Y->index[y].extent, O->index[id].extent);
      if (!ok) break;
      hit[y] = 1;
      by[id] = sym_index(a, y, Y->index[y].name);
      red[id] = O->index[id].kind == IR_IDX_REDUCE ? y : -1;
    }
    if (!ok) continue;
    for (int d = 0; d < O->out->rank && ok; d++) { /* every lhs index of Y is the image of one of O's */
      int y;
      ok = sym_is_index(Y->lhs[d], &y) && hit[y] && Y->index[y].kind == IR_IDX_FREE;
    }
    if (ok && ir_expr_same(a, Y, ir_expr_subst(a, O->rhs, O->n_index, by, red), Y->rhs)) return j;
  }
  return -1;
}

/* The form found in statement X: its sum over J of a load of a (A's
 * tensor) times P, A's sum over N of g times v. */
typedef struct {
  ir_stmt *X;
  const ir_expr *r;   /* X's sum */
  const ir_stmt *A;
  const ir_expr *P, *g, *v;
  int *xof;           /* by A's index: the X index its lhs position stands for, or -1 */
  unsigned char *inn; /* by A's index: one of N */
} rowsum_form;

/* Whether statement xi has the form (into *f). */
static int find_form(ir_program *p, int xi, rowsum_form *f) {
  kbc_arena *a = p->arena;
  ir_stmt *X = IR_STMT(p, xi);
  const ir_expr *r = X->rhs;
  if (X->accumulate || r->op != IR_OP_REDUCE || r->u.reduce.op != IR_RED_SUM || r->arg[0]->op != IR_OP_MUL ||
      r->arg[0]->type != IR_TY_FLOAT || ir_expr_has_reduce(r->arg[0]))
    return 0;
  for (int side = 0; side < 2; side++) {
    const ir_expr *L = r->arg[0]->arg[side], *P = r->arg[0]->arg[1 - side];
    int lid[64];
    if (L->op != IR_OP_LOAD || L->u.load.tensor->rank > 64 || L->u.load.tensor->role != IR_ROLE_TEMP ||
        !ir_load_plain(L, lid))
      continue;
    int sa = sole_writer(p, L->u.load.tensor, xi);
    if (sa < 0) continue;
    const ir_stmt *A = IR_STMT(p, sa);
    const ir_expr *ar = A->rhs;
    if (ar->op != IR_OP_REDUCE || ar->u.reduce.op != IR_RED_SUM || ar->arg[0]->op != IR_OP_MUL ||
        ar->arg[0]->type != IR_TY_FLOAT || ir_expr_has_reduce(ar->arg[0]))
      continue;
    /* A's free index d (its lhs position) stands for X's index lid[d]: a
     * row (X free) or a column (X's summed J); every J once */
    int *to = KBC_NEW_ARRAY(a, int, A->n_index + 1), *xof = KBC_NEW_ARRAY(a, int, A->n_index + 1), ok = 1;
    unsigned char *inj = KBC_NEW_ARRAY(a, unsigned char, X->n_index + 1);
    for (int id = 0; id < A->n_index; id++) xof[id] = -1;
    for (int d = 0; d < A->out->rank && ok; d++) {
      int aid;
      if (!sym_is_index(A->lhs[d], &aid) || A->index[aid].kind != IR_IDX_FREE) ok = 0;
      else {
        xof[aid] = lid[d];
        int jv = 0;
        for (int k = 0; k < r->u.reduce.n_vars; k++) jv |= r->u.reduce.vars[k] == lid[d];
        if (!jv && X->index[lid[d]].kind != IR_IDX_FREE) ok = 0;
        to[aid] = jv ? 2 : 1;
        if (jv) inj[lid[d]] = 1;
      }
    }
    for (int k = 0; k < r->u.reduce.n_vars && ok; k++) ok = inj[r->u.reduce.vars[k]];
    if (!ok) continue;
    /* g reads no column (the identity needs no more); v leaves out some
     * row (a batch index it may share: not a tensor as large as a) */
    const ir_expr *g = ar->arg[0]->arg[0], *v = ar->arg[0]->arg[1];
    if (mentions_kind(A, g, to, 2) || !misses_row(A, v, to)) {
      const ir_expr *t = g;
      g = v, v = t;
    }
    if (mentions_kind(A, g, to, 2) || !misses_row(A, v, to) || ir_expr_reads(P, X->out)) continue;
    unsigned char *inn = KBC_NEW_ARRAY(a, unsigned char, A->n_index + 1);
    for (int k = 0; k < ar->u.reduce.n_vars; k++) inn[ar->u.reduce.vars[k]] = 1;
    double n_est = extent_of(A, inn), j_est = extent_of(X, inj);
    if (n_est > j_est || n_est > ROWSUM_MAX_N) continue;
    *f = (rowsum_form){.X = X, .r = r, .A = A, .P = P, .g = g, .v = v, .xof = xof, .inn = inn};
    return 1;
  }
  return 0;
}

/* The new statement, sum(J: P * v), its indices X's free ones, then N
 * (free; its lhs, in that order: *rank of them), then X's J; not yet
 * given a tensor. */
static ir_stmt *inner_sum(kbc_arena *a, const rowsum_form *f, int *rank) {
  const ir_stmt *X = f->X, *A = f->A;
  const ir_expr *r = f->r;
  int nx = X->n_index, na = A->n_index, m = 0;
  ir_stmt *O = KBC_NEW(a, ir_stmt);
  O->loc = X->loc;
  O->text = X->text;
  O->index = KBC_NEW_ARRAY(a, ir_index, nx + na + 1);
  sym **xby = KBC_NEW_ARRAY(a, sym *, nx + 1), **aby = KBC_NEW_ARRAY(a, sym *, na + 1);
  int *xred = KBC_NEW_ARRAY(a, int, nx + 1), *ared = KBC_NEW_ARRAY(a, int, na + 1);
  for (int id = 0; id < nx; id++) xred[id] = -1;
  for (int id = 0; id < na; id++) ared[id] = -1;
  for (int id = 0; id < nx; id++)
    if (X->index[id].kind == IR_IDX_FREE) {
      O->index[m] = X->index[id];
      xby[id] = sym_index(a, m++, X->index[id].name);
    }
  for (int id = 0; id < na; id++)
    if (f->inn[id]) {
      O->index[m] = A->index[id];
      O->index[m].kind = IR_IDX_FREE;
      O->index[m].name = ir_index_fresh_name(a, O->index, m, A->index[id].name);
      aby[id] = sym_index(a, m, O->index[m].name);
      m++;
    }
  *rank = m;
  int *jv = KBC_NEW_ARRAY(a, int, r->u.reduce.n_vars + 1);
  for (int k = 0; k < r->u.reduce.n_vars; k++) {
    int id = r->u.reduce.vars[k];
    O->index[m] = X->index[id];
    O->index[m].name = ir_index_fresh_name(a, O->index, m, X->index[id].name);
    xby[id] = sym_index(a, m, O->index[m].name);
    xred[id] = m;
    jv[k] = m++;
  }
  O->n_index = m;
  for (int id = 0; id < na; id++) /* A's free indices: X's, then O's */
    if (f->xof[id] >= 0) aby[id] = xby[f->xof[id]];
  for (int id = 0; id < nx; id++) /* X's other reduction indices (none in P or v) */
    if (!xby[id]) xby[id] = sym_index(a, id, X->index[id].name);
  ir_expr *body = ir_binary(a, IR_OP_MUL, ir_expr_subst(a, f->P, nx, xby, xred), ir_expr_subst(a, f->v, na, aby, ared),
                            X->loc);
  O->rhs = ir_reduce(a, IR_RED_SUM, r->u.reduce.n_vars, jv, body, X->loc);
  O->lhs = KBC_NEW_ARRAY(a, sym *, *rank + 1);
  for (int k = 0; k < *rank; k++) O->lhs[k] = sym_index(a, k, O->index[k].name);
  return O;
}

/* Rewrites statement xi if it has the form (and, unless may_add, an
 * earlier statement computes x.o): 2 when it added a statement before it,
 * 1 when it reused one, 0 when it did nothing. */
static int rewrite(ir_program *p, int xi, int may_add) {
  kbc_arena *a = p->arena;
  rowsum_form f;
  if (!find_form(p, xi, &f)) return 0;
  ir_stmt *X = f.X;
  const ir_stmt *A = f.A;
  int rank, nx = X->n_index, na = A->n_index;
  ir_stmt *O = inner_sum(a, &f, &rank);
  int *ymap = KBC_NEW_ARRAY(a, int, O->n_index + 1);
  O->out = &(ir_tensor){.rank = rank};
  int y = same_statement(p, O, xi, ymap), added = y < 0;
  if (added && !may_add) return 0;
  const ir_tensor *ot;
  if (added) {
    ir_stmt_new_temp(p, O, kbc_arena_printf(a, "%s.o", X->out->name), rank);
    ir_stmt_insert(p, earliest(p, O->rhs, xi), O);
    ot = O->out;
  } else {
    ot = IR_STMT(p, y)->out; /* that statement's tensor, its lhs read through the renaming */
  }

  /* X: sum(N: g * x.o[R, N]), N new reduction indices of X */
  ir_index *xi2 = KBC_NEW_ARRAY(a, ir_index, nx + na + 1);
  for (int id = 0; id < nx; id++) xi2[id] = X->index[id];
  int mx = nx, *xn = KBC_NEW_ARRAY(a, int, na + 1), nn = 0;
  sym **gby = KBC_NEW_ARRAY(a, sym *, na + 1);
  int *gred = KBC_NEW_ARRAY(a, int, na + 1);
  for (int id = 0; id < na; id++) {
    gred[id] = -1;
    if (f.xof[id] >= 0) gby[id] = sym_index(a, f.xof[id], X->index[f.xof[id]].name);
    else if (f.inn[id]) {
      xi2[mx] = A->index[id];
      xi2[mx].kind = IR_IDX_REDUCE;
      xi2[mx].name = ir_index_fresh_name(a, xi2, mx, A->index[id].name);
      gby[id] = sym_index(a, mx, xi2[mx].name);
      gred[id] = mx;
      xn[nn++] = mx++;
    } else {
      gby[id] = sym_index(a, id, A->index[id].name); /* unused: g reads no other index */
    }
  }
  /* O's index k (its lhs position k) is X's oid[k] */
  sym **oid = KBC_NEW_ARRAY(a, sym *, rank + 1);
  int d = 0;
  for (int id = 0; id < nx; id++)
    if (X->index[id].kind == IR_IDX_FREE) oid[d++] = sym_index(a, id, X->index[id].name);
  for (int k = 0; k < nn; k++) oid[d++] = sym_index(a, xn[k], xi2[xn[k]].name);
  sym **ld = KBC_NEW_ARRAY(a, sym *, rank + 1);
  for (d = 0; d < rank; d++) {
    if (added) {
      ld[d] = oid[d];
      continue;
    }
    int yid = -1, k = 0;
    sym_is_index(IR_STMT(p, y)->lhs[d], &yid);
    while (ymap[k] != yid) k++; /* same_statement: every lhs index of Y is one of O's free ones */
    ld[d] = oid[k];
  }
  X->index = xi2;
  X->n_index = mx;
  ir_expr *nb =
      ir_binary(a, IR_OP_MUL, ir_expr_subst(a, f.g, na, gby, gred), ir_load(a, (ir_tensor *)ot, ld, 0, X->loc), X->loc);
  X->rhs = ir_reduce(a, IR_RED_SUM, nn, xn, nb, X->loc);
  ir_stmt_drop_stale_indices(a, X);
  return added ? 2 : 1;
}

static int run(ir_program *p, int may_add) {
  for (int i = 0; i < p->stmts.len; i++)
    if (rewrite(p, i, may_add) == 2) i++; /* the new statement went before it */
  for (int i = 0; i < p->stmts.len; i++) IR_STMT(p, i)->id = i;
  return 1;
}

int ir_rowsum(ir_program *p, kbc_diag *d) {
  (void)d;
  return run(p, 1);
}

int ir_rowsum_reuse(ir_program *p, kbc_diag *d) {
  (void)d;
  return run(p, 0);
}
