/* vec_loop.c — a team's loop along one contiguous index, a float4 a thread
 * per step.
 *
 * Before: a rows kernel about to emit a loop of a team over one index j of
 * E->s, from 0 to its extent: a reduction split across the team (its terms
 * accumulated into a variable) or a statement's inner elements strided
 * across it (each stored).  After cg_vec_loop(): where every load along j
 * (and the store) steps by one element, the loop as two loops — over the
 * part of j where all those rows are 16-byte aligned, four elements per
 * step through float4 loads (and one float4 store); then a scalar loop
 * over the rest (at most three elements at either end; the whole of j
 * when the rows' addresses differ modulo 16 bytes) — and 1; else nothing
 * emitted and 0.
 *
 * Why: a row of odd length (an L2 norm over 65,535 columns) has a
 * different alignment in every row, so the kernel-wide float4 test of the
 * pointwise path never holds; read a float at a time, the L2 norm ran at
 * 2.15 TB/s, with the row's alignment peeled off at 3.89 (H200, docs/
 * ARCHITECTURE.md "Float4 rows"). */
#include <string.h>

#include "cg_impl.h"
#include "ir/subst.h"

enum { VEC_MIN_EXTENT = 16, VEC_MAX_ROWS = 8 };

typedef struct {
  const ir_expr *load[CG_MAX_HOISTED]; /* the loads along j, each of one row */
  int row_of[CG_MAX_HOISTED];
  int n_load;
  const ir_tensor *tensor[VEC_MAX_ROWS];
  const char *base[VEC_MAX_ROWS]; /* the row's offset with j at 0 (C text) */
  int n_row;
  int refuse;
} vec_rows;

/* The loads of e along index j into R; any such load that is not one
 * float per step (padded, strided, of a tensor the kernel also writes, in
 * a nested reduction) refuses the loop. */
static void collect(cg_emit *E, const ir_expr *e, int j, vec_rows *R, const cg_expr_ctx *x) {
  for (int i = 0; i < E->n_hoisted; i++)
    if (E->hoisted[i] == e && !E->hoisted_recip[i]) return;
  if (e->op == IR_OP_REDUCE) {
    R->refuse = 1;
    return;
  }
  if (e->op != IR_OP_LOAD) {
    for (int i = 0; i < ir_op_info[e->op].arity; i++) collect(E, e->arg[i], j, R, x);
    return;
  }
  if (!ir_expr_mentions_index(e, j)) return;
  const ir_tensor *t = e->u.load.tensor;
  if (cg_value_of(x, t)) { /* a value, not a row in memory */
    R->refuse = 1;
    return;
  }
  sym *base = e->u.load.padded || (E->written && E->written[t->id] == 1) ? NULL : cg_contiguous_base(E, e, 1, &j);
  if (!base || R->n_load == CG_MAX_HOISTED) {
    R->refuse = 1;
    return;
  }
  const char *text = cg_sym(E, base);
  int r = 0;
  while (r < R->n_row && !(R->tensor[r] == t && !strcmp(R->base[r], text))) r++;
  if (r == R->n_row) {
    if (r == VEC_MAX_ROWS) {
      R->refuse = 1;
      return;
    }
    R->tensor[r] = t;
    R->base[r] = text;
    R->n_row++;
  }
  R->row_of[R->n_load] = r;
  R->load[R->n_load++] = e;
}

/* The loads of R given as `elem` of each row until E->n_hoisted is restored. */
static void substitute(cg_emit *E, const vec_rows *R, const char *const *elem) {
  for (int i = 0; i < R->n_load; i++) cg_substitute(E, R->load[i], elem[R->row_of[i]]);
}

/* One element's value, accumulated (NULL returned) or returned for the
 * store. */
static const char *element(cg_emit *E, const cg_vec_body *b, const cg_expr_ctx *x) {
  const char *v = cg_float_value(E, b->value, cg_expr_in(E, b->value, x));
  if (!b->acc) return v;
  cg_acc_add(E, b->acc, 1, &v);
  return NULL;
}

int cg_vec_loop(cg_emit *E, int j, const char *lane, int step, const cg_vec_body *b, const cg_expr_ctx *x) {
  if (E->opt->no_vec) return 0;
  const sym *extent = E->s->index[j].extent;
  int64_t len;
  if (sym_is_const(extent, &len) && len < VEC_MIN_EXTENT) return 0;
  vec_rows R = {0};
  int store_row = -1;
  if (b->target) { /* the store's row first: row 0 */
    const ir_tensor *t = b->target->u.load.tensor;
    sym *base = cg_contiguous_base(E, b->target, 1, &j);
    if (!base || E->s->accumulate) return 0;
    R.tensor[0] = t;
    R.base[0] = cg_sym(E, base);
    R.n_row = 1;
    store_row = 0;
  }
  collect(E, b->value, j, &R, x);
  if (R.refuse || R.n_load == 0 || E->n_hoisted + R.n_load > CG_MAX_HOISTED) return 0;
  for (int i = 0; i < R.n_load && store_row == 0; i++)
    if (R.load[i]->u.load.tensor == R.tensor[0]) return 0; /* reads what it writes */

  const char *n = cg_fmt(E, "_n%d", E->tmp++), *hd = cg_fmt(E, "_hd%d", E->tmp++),
             *nv = cg_fmt(E, "_nv%d", E->tmp++), *jv = cg_fmt(E, "_jv%d", E->tmp++),
             *js = cg_fmt(E, "_js%d", E->tmp++);
  const char *row[VEC_MAX_ROWS];
  cg_line(E, "{ // along %s: float4 where every row below is 16-byte aligned, the rest a float at a time",
          E->idx[j]);
  E->indent++;
  const char *same = NULL;
  for (int r = 0; r < R.n_row; r++) {
    row[r] = cg_fmt(E, "_row%d", E->tmp++);
    cg_line(E, "%s *%s = %s + %s; // %s", r == store_row ? "float" : "const float", row[r],
            E->names->tensor[R.tensor[r]->id], R.base[r], R.tensor[r]->name);
    if (r > 0)
      same = cg_fmt(E, "%s%s((unsigned long long)%s ^ (unsigned long long)%s)", same ? same : "", same ? " | " : "",
                    row[0], row[r]);
  }
  cg_line(E, "const long long %s = %s;", n, cg_sym(E, extent));
  cg_line(E, "long long %s = %s, %s = 0; // elements a float at a time before the float4s; float4s", hd, n, nv);
  if (same) cg_line(E, "if (((%s) & 15) == 0) { // the rows alike modulo 16 bytes", same);
  else cg_line(E, "{");
  cg_line(E, "  %s = (long long)((0 - ((unsigned long long)%s >> 2)) & 3);", hd, row[0]);
  cg_line(E, "  if (%s > %s) %s = %s;", hd, n, hd, n);
  cg_line(E, "  %s = (%s - %s) / 4;", nv, n, hd);
  cg_line(E, "}");

  /* float4s, unrolled (opt.unroll) unless a thread takes at most one:
   * a constant row of len elements gives it ceil(len / 4 / step) float4s,
   * and a loop of one iteration unrolled only adds code and registers (a
   * layernorm over rows of 1,024 on 256 threads: 0.85x unrolled once,
   * side by side on the H200, 2026-12-04, docs/results/2026-12-04-tune-unroll.txt) */
  const char *v4[VEC_MAX_ROWS];
  int unroll = E->opt->unroll;
  if (sym_is_const(extent, &len) && (len / 4 + step - 1) / step <= 1) unroll = 1;
  cg_line(E, "#pragma unroll %d", unroll);
  cg_line(E, "for (long long %s = %s; %s < %s; %s += %d) {", jv, lane, jv, nv, jv, step);
  E->indent++;
  const char *at = cg_fmt(E, "_j%d", E->tmp++);
  cg_line(E, "const long long %s = %s + 4 * %s;", at, hd, jv);
  for (int r = 0; r < R.n_row; r++) {
    if (r == store_row) continue;
    v4[r] = cg_fmt(E, "_v%d", E->tmp++);
    cg_line(E, "const float4 %s = %s((const float4 *)(%s + %s));", v4[r], cg_ld4(E, R.tensor[r]), row[r], at);
  }
  if (store_row == 0) cg_line(E, "float4 _r;");
  static const char comp[4] = {'x', 'y', 'z', 'w'};
  /* the online pair and Welford's state take the four terms at once */
  int grouped = b->acc && (b->acc->online || b->acc->welford);
  const char *term[4];
  cg_vec_body one = *b;
  if (grouped) {
    for (int q = 0; q < 4; q++) term[q] = cg_fmt(E, "_t%d", E->tmp++);
    cg_line(E, "float %s, %s, %s, %s;", term[0], term[1], term[2], term[3]);
    one.acc = NULL;
  }
  for (int q = 0; q < 4; q++) {
    int saved = E->n_hoisted;
    const char *elem[VEC_MAX_ROWS];
    for (int r = 0; r < R.n_row; r++) elem[r] = r == store_row ? NULL : cg_fmt(E, "%s.%c", v4[r], comp[q]);
    substitute(E, &R, elem);
    int own_index = cg_mentions_unhoisted(E, b->value, &j, 1); /* the element's own j needed */
    if (own_index) {
      cg_line(E, "{");
      E->indent++;
      cg_line(E, "const long long %s = %s + %d;", E->idx[j], at, q);
    }
    const char *v = element(E, &one, x);
    E->n_hoisted = saved;
    if (grouped) cg_line(E, "%s = %s;", term[q], v);
    else if (v) cg_line(E, "_r.%c = %s;", comp[q], v);
    if (own_index) {
      E->indent--;
      cg_line(E, "}");
    }
  }
  if (grouped) cg_acc_add(E, b->acc, 4, term);
  if (store_row == 0) cg_line(E, "__stwb((float4 *)(%s + %s), _r);", row[0], at);
  E->indent--;
  cg_line(E, "}");

  /* the rest: the head, then the tail past the float4s */
  cg_line(E, "for (long long %s = %s; %s < %s - 4 * %s; %s += %d) {", js, lane, js, n, nv, js, step);
  E->indent++;
  cg_line(E, "const long long %s = %s < %s ? %s : %s + 4 * %s;", E->idx[j], js, hd, js, js, nv);
  const char *elem[VEC_MAX_ROWS];
  for (int r = 0; r < R.n_row; r++) elem[r] = cg_fmt(E, "%s[%s]", row[r], E->idx[j]);
  int saved = E->n_hoisted;
  substitute(E, &R, elem);
  const char *v = element(E, b, x);
  E->n_hoisted = saved;
  if (v) cg_line(E, "%s[%s] = %s;", row[0], E->idx[j], v);
  E->indent--;
  cg_line(E, "}");
  E->indent--;
  cg_line(E, "}");
  return 1;
}
