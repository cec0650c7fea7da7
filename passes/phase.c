/* phase.c — strided sums split by phase: the sub-pixel decomposition of
 * a transposed convolution.
 *
 * Before/after: a verified program computing the same values.  A sum whose
 * terms count only where an output index i and one of its reduction
 * indices k meet a congruence,
 *     y[n, c, i] = sum(ci, k < 3: where((i + 1 - k) % 2 == 0,
 *                                        x?[n, ci, (i + 1 - k)/2] * w[ci, c, k], 0.0))
 * (a transposed convolution of stride 2), evaluates three terms per ci
 * where one or two count, and which ones count depends on i mod 2 alone.
 * With i = 2*io + q, the k that count are k0(q) + 2*t, so the sum becomes
 * one where-free contraction per phase q, over exactly its taps:
 *     y.ph[n, c, io]  = sum(ci: x[n, ci, io] * w[ci, c, 1])              q = 0
 *     y.ph1[n, c, io] = sum(ci, kt < 2: x?[n, ci, io - kt + 1] * w[ci, c, 2*kt])
 *     y[n, c, i]      = where(i % 2 == 0, y.ph[n, c, i/2], y.ph1[n, c, i/2])
 * GEMMs (the convolution family), not a loop per output element over terms
 * that are mostly zero.  Each congruence (i + a*k + c) mod m == r of the
 * where's conjunction whose i and k appear in no other one is split (a
 * 2-D transposed convolution of stride 2: four phases); the other
 * conjuncts stay, a constant one decided.
 *
 * In general, with i of coefficient +-1 (its sign taken into a, c, r) and
 * c' = c - r: g = gcd(a, m), m' = m / g.  Terms count only for i = -c'
 * (mod g), and there for k = k0 (mod m'), k0 = beta*M mod m' with
 * M = (i + c')/g and beta = -(a/g)^-1 mod m'.  So i = m*io + r0 + g*q
 * (r0 = -c' mod g, q < m' the phase) and k = k0(q) + m'*t, t below the
 * phase's count of taps; the congruence then holds identically (its
 * normal form folds to 0, checked, else nothing changes), and the
 * phases' loads at i/m are kept where (i - r0) mod g == 0, 0 elsewhere.
 * A congruence without k (a = 0 mod m: a dilation the stride divides)
 * keeps one phase; a phase without taps is 0, no statement.
 *
 * Rows past the output (m*io + ... >= the extent of i) are computed and
 * never read: a load that mentions io reads 0 outside its tensor (padded)
 * unless proven inside.  A range test beside the congruence (`(o - k)/2
 * >= 0`, gather's) that is exactly a dimension of a load factor of the
 * product becomes that load padded: the same values, but for an infinite
 * or NaN other factor, which then gives NaN where the test gave 0.  At most PH_MAX_PHASES statements per sum; only
 * sums (a max's where-false terms count) of plain statements are split. */
#include <string.h>

#include "passes.h"
#include "ir/subst.h"

/* At most PH_MAX_PHASES statements per sum; moduli, coefficients and
 * offsets past PH_MAX_MOD (and PH_MAX_MOD^2) are left alone (their
 * arithmetic would approach int64's range). */
enum { PH_MAX_CONJ = 16, PH_MAX_PHASES = 64 };
#define PH_MAX_MOD ((int64_t)1 << 20)

/* One congruence split: its indices, numbers, and the new ids. */
typedef struct {
  int i, k;                  /* free index; reduction index (-1: none) */
  int conj;                  /* its position among the conjuncts */
  int64_t m, g, mp, r0, beta, c0, taps;
  int io, t;                 /* ids in a phase's statement (t: when k >= 0) */
} ph_split;

static int64_t gcd64(int64_t x, int64_t y) {
  while (y) {
    int64_t r = x % y;
    x = y;
    y = r;
  }
  return x;
}

static int64_t mod64(int64_t x, int64_t m) { return (x % m + m) % m; }

/* The inverse of x modulo m (gcd 1, m >= 2). */
static int64_t inverse(int64_t x, int64_t m) {
  for (int64_t y = 1; y < m; y++)
    if (x * y % m == 1) return y;
  return 0;
}

static int conjuncts(ir_expr *c, ir_expr **out, int n) {
  if (c->op == IR_OP_AND) {
    n = conjuncts(c->arg[0], out, n);
    return n < 0 ? n : conjuncts(c->arg[1], out, n);
  }
  if (n >= PH_MAX_CONJ) return -1;
  out[n] = c;
  return n + 1;
}

/* The difference of the two sides of `a == b` over index values, or NULL. */
static sym *eq_sides(kbc_arena *a, const ir_expr *e) {
  if (e->op != IR_OP_EQ || e->arg[0]->op != IR_OP_INDEX || e->arg[1]->op != IR_OP_INDEX) return NULL;
  return sym_sub(a, e->arg[0]->u.index, e->arg[1]->u.index);
}

/* Whether conjunct e is a congruence of one free index of s (+-1) and at
 * most one reduction index of r (constant extent) that `taken` does not
 * hold; if so, sp gets its numbers. */
static int match(kbc_arena *a, const ir_stmt *s, const ir_expr *r, const ir_expr *e, const unsigned char *taken,
                 ph_split *sp) {
  sym *d = eq_sides(a, e);
  const sym *arg;
  int64_t m, gamma, delta, c, co;
  if (!d || !sym_as_mod(d, &arg, &m, &gamma, &delta) || m < 2 || m > PH_MAX_MOD || -delta % gamma) return 0;
  int64_t rho = -delta / gamma;
  if (rho < 0 || rho >= m) return 0; /* never true: not ours */
  int n = s->n_index;
  sym **coeff = KBC_NEW_ARRAY(a, sym *, n + 1), *rest;
  if (!sym_split_affine(a, arg, n, coeff, &rest) || !sym_is_const(rest, &c) || c > PH_MAX_MOD * PH_MAX_MOD ||
      c < -PH_MAX_MOD * PH_MAX_MOD)
    return 0;
  int i = -1, k = -1;
  int64_t ci = 0, ak = 0;
  for (int id = 0; id < n; id++) {
    if (!coeff[id]) continue;
    if (!sym_is_const(coeff[id], &co)) return 0;
    if (!co) continue;
    if (co > PH_MAX_MOD || co < -PH_MAX_MOD) return 0;
    if (s->index[id].kind == IR_IDX_FREE && (co == 1 || co == -1) && i < 0) {
      i = id;
      ci = co;
      continue;
    }
    int mine = 0;
    for (int v = 0; v < r->u.reduce.n_vars; v++) mine |= r->u.reduce.vars[v] == id;
    if (!mine || k >= 0 || taken[id] || !sym_is_const(s->index[id].extent, &sp->taps)) return 0;
    k = id;
    ak = co;
  }
  if (i < 0 || taken[i]) return 0;
  if (ci < 0) { /* (-i + ..) mod m == rho  <=>  (i - ..) mod m == -rho mod m */
    ak = -ak;
    c = -c;
    rho = mod64(-rho, m);
  }
  int64_t cp = c - rho, amod = mod64(ak, m);
  sp->i = i;
  sp->m = m;
  if (k < 0 || !amod) {
    sp->k = -1;
    sp->g = m;
    sp->mp = 1;
    sp->beta = 0;
  } else {
    sp->k = k;
    sp->g = gcd64(amod, m);
    sp->mp = m / sp->g;
    if (sp->mp > PH_MAX_PHASES) return 0; /* more phases than statements allowed */
    sp->beta = mod64(-inverse(mod64(ak / sp->g, sp->mp), sp->mp), sp->mp);
  }
  sp->r0 = mod64(-cp, sp->g);
  sp->c0 = (sp->r0 + cp) / sp->g;
  return 1;
}

static int mentions_any(const ir_expr *e, const unsigned char *mark, int n) {
  for (int id = 0; id < n; id++)
    if (mark[id] && ir_expr_mentions_index(e, id)) return 1;
  return 0;
}

/* Whether index expression x of statement t, over the new indices, stays
 * in [0, size): proven by bounds, or, for one over the small phase and tap
 * indices only (`small`, constant extents) and constant size, by trying
 * every value. */
static int in_bounds(kbc_arena *a, const ir_program *p, const ir_stmt *t, const sym *x, const sym *size,
                     const unsigned char *small) {
  sym **lo, **hi, *blo, *bhi;
  ir_index_ranges(a, t, &lo, &hi);
  if (ir_index_in_bounds(a, p->facts, x, t->n_index, lo, hi, size, &blo, &bhi) == 1) return 1;
  int64_t sz, ext[PH_MAX_CONJ * 2], v[PH_MAX_CONJ * 2] = {0};
  int ids[PH_MAX_CONJ * 2], nv = 0;
  if (sym_has_axis(x) || !sym_is_const(size, &sz)) return 0;
  for (int id = 0; id < t->n_index; id++) {
    if (!sym_mentions_index(x, id)) continue;
    if (!small[id] || nv == PH_MAX_CONJ * 2 || !sym_is_const(t->index[id].extent, &ext[nv])) return 0;
    ids[nv++] = id;
  }
  int64_t *vals = KBC_NEW_ARRAY(a, int64_t, t->n_index + 1), r;
  for (int64_t count = 0; count < 4096; count++) {
    for (int j = 0; j < nv; j++) vals[ids[j]] = v[j];
    if (!sym_eval(x, NULL, vals, &r) || r < 0 || r >= sz) return 0;
    int j = 0;
    while (j < nv && ++v[j] == ext[j]) v[j++] = 0;
    if (j == nv) return 1;
  }
  return 0;
}

/* Every load of e that mentions a new index reads 0 outside its tensor
 * unless it is proven inside (a padded x?[io - t + 1] of the spec may be
 * x[io] in a phase). */
static void pad_loads(kbc_arena *a, const ir_program *p, const ir_stmt *t, ir_expr *e, const unsigned char *fresh,
                      const unsigned char *small) {
  if (e->op == IR_OP_LOAD && mentions_any(e, fresh, t->n_index)) {
    int inside = 1;
    for (int d = 0; d < e->u.load.tensor->rank && inside; d++)
      inside = in_bounds(a, p, t, e->u.load.idx[d], e->u.load.tensor->shape[d], small);
    e->u.load.padded = !inside;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) pad_loads(a, p, t, e->arg[i], fresh, small);
}

/* base, or base2, base3, ...: a name none of s's indices and none of the
 * new statement's first m has. */
static const char *fresh_name(kbc_arena *a, const ir_stmt *s, const ir_index *ix, int m, const char *base) {
  const char *name = base;
  for (int k = 2;; k++) {
    name = ir_index_fresh_name(a, s->index, s->n_index, name);
    int taken = 0;
    for (int i = 0; i < m && !taken; i++) taken = !strcmp(ix[i].name, name);
    if (!taken) return name;
    name = kbc_arena_printf(a, "%s%d", base, k);
  }
}

typedef struct {
  ir_program *p;
  ir_stmt *s;
  int at; /* s's position */
} phaser;

static sym *idx(kbc_arena *a, int id, const ir_index *ix) { return sym_index(a, id, ix[id].name); }

/* A comparison of two constant index values: 1 true, 0 false; -1 when
 * it is not one. */
static int const_compare(const ir_expr *e) {
  int64_t x, y;
  if (ir_op_info[e->op].arity != 2 || e->arg[0]->op != IR_OP_INDEX || e->arg[1]->op != IR_OP_INDEX ||
      !sym_is_const(e->arg[0]->u.index, &x) || !sym_is_const(e->arg[1]->u.index, &y))
    return -1;
  switch (e->op) {
  case IR_OP_EQ: return x == y;
  case IR_OP_NE: return x != y;
  case IR_OP_LT: return x < y;
  case IR_OP_LE: return x <= y;
  case IR_OP_GT: return x > y;
  case IR_OP_GE: return x >= y;
  default: return -1;
  }
}

/* The load factor of product e that reads 0 exactly where range test c
 * fails: c is `x >= 0` or `x < size`, and the load has x in a dimension
 * (of that size) — or NULL.  Reading it padded is then the test, so a
 * scatter's solved range (passes/gather.c) leaves a plain product. */
static ir_expr *test_as_padding(const ir_expr *e, const ir_expr *c) {
  if (e->op == IR_OP_MUL) {
    ir_expr *l = test_as_padding(e->arg[0], c);
    return l ? l : test_as_padding(e->arg[1], c);
  }
  if (e->op != IR_OP_LOAD || (c->op != IR_OP_GE && c->op != IR_OP_LT) || c->arg[0]->op != IR_OP_INDEX ||
      c->arg[1]->op != IR_OP_INDEX)
    return NULL;
  int64_t z;
  if (c->op == IR_OP_GE && (!sym_is_const(c->arg[1]->u.index, &z) || z)) return NULL;
  for (int d = 0; d < e->u.load.tensor->rank; d++)
    if (sym_equal(e->u.load.idx[d], c->arg[0]->u.index) &&
        (c->op == IR_OP_GE || sym_equal(e->u.load.tensor->shape[d], c->arg[1]->u.index)))
      return (ir_expr *)e;
  return NULL;
}

/* The statement of one phase combination: the free indices ix[0..n_free)
 * (a split i as io), then r's reduction indices (a split k as t, its taps
 * those of the phase: k = k0 + m'*t < K exactly); NULL when a phase has
 * no taps (its sum is 0) or the congruences do not fold. */
static ir_stmt *phase_stmt(phaser *P, ir_expr *r, ph_split *sp, int ns, const int *qv, ir_index *ix, int n_free,
                           sym **by_free, int *empty) {
  kbc_arena *a = P->p->arena;
  ir_stmt *s = P->s;
  int n = s->n_index, m = n_free;
  ir_index *tix = KBC_NEW_ARRAY(a, ir_index, n_free + n + 1);
  memcpy(tix, ix, sizeof *ix * (size_t)n_free);
  sym **by = KBC_NEW_ARRAY(a, sym *, n + 1);
  memcpy(by, by_free, sizeof *by * (size_t)n);
  int *red_map = KBC_NEW_ARRAY(a, int, n + 1);
  unsigned char *mine = KBC_NEW_ARRAY(a, unsigned char, n + 1);
  ir_mark_reduce_vars(r, mine);
  int64_t k0[PH_MAX_CONJ];
  *empty = 0;
  for (int id = 0; id < n; id++) {
    red_map[id] = -1;
    if (!mine[id]) continue;
    tix[m] = s->index[id];
    int one = 0; /* a split k of one tap: k0, no index */
    for (int j = 0; j < ns; j++) {
      if (sp[j].k != id) continue;
      k0[j] = mod64(sp[j].beta * (qv[j] + sp[j].c0), sp[j].mp);
      int64_t taps = sp[j].taps > k0[j] ? (sp[j].taps - k0[j] + sp[j].mp - 1) / sp[j].mp : 0;
      if (!taps) *empty = 1;
      tix[m].name = fresh_name(a, s, tix, m, kbc_arena_printf(a, "%st", s->index[id].name));
      tix[m].extent = sym_const(a, taps);
      sp[j].t = taps == 1 ? -1 : m;
      one = taps == 1;
    }
    if (one) continue;
    red_map[id] = m;
    by[id] = idx(a, m, tix);
    m++;
  }
  if (*empty) return NULL;
  /* i = m*io + r0 + g*q and k = k0(q) + m'*t, q the phase's constant. */
  for (int j = 0; j < ns; j++) {
    by[sp[j].i] = sym_add(a, sym_scale(a, idx(a, sp[j].io, tix), sp[j].m), sym_const(a, sp[j].r0 + sp[j].g * qv[j]));
    if (sp[j].k >= 0)
      by[sp[j].k] = sp[j].t < 0 ? sym_const(a, k0[j])
                                : sym_add(a, sym_const(a, k0[j]), sym_scale(a, idx(a, sp[j].t, tix), sp[j].mp));
    if (!by[sp[j].i] || (sp[j].k >= 0 && !by[sp[j].k])) return NULL;
  }
  ir_expr *nr = ir_expr_subst(a, r, n, by, red_map);
  if (!nr) return NULL;
  /* The split congruences now hold identically; the rest stay. */
  ir_expr *conj[PH_MAX_CONJ], *cond = NULL;
  int nc = conjuncts(nr->arg[0]->arg[0], conj, 0);
  for (int j = 0; j < nc; j++) {
    int is_split = 0;
    for (int q = 0; q < ns; q++) is_split |= sp[q].conj == j;
    if (is_split) {
      sym *d = eq_sides(a, conj[j]);
      int64_t v;
      if (!d || !sym_is_const(d, &v) || v) return NULL;
      continue;
    }
    int truth = const_compare(conj[j]);
    if (truth == 1) continue; /* `k != 1` at k = 0 */
    if (truth == 0) {         /* at k = 1: the phase sums nothing */
      *empty = 1;
      return NULL;
    }
    ir_expr *pad = test_as_padding(nr->arg[0]->arg[1], conj[j]);
    if (pad) {
      pad->u.load.padded = 1;
      continue;
    }
    cond = cond ? ir_binary(a, IR_OP_AND, cond, conj[j], conj[j]->loc) : conj[j];
  }
  ir_expr *w = nr->arg[0];
  nr->arg[0] = cond ? ir_where(a, cond, w->arg[1], w->arg[2], w->loc) : w->arg[1];
  int nv = 0; /* the reduced variables left (a k of one tap is gone) */
  for (int v = 0; v < nr->u.reduce.n_vars; v++)
    if (nr->u.reduce.vars[v] >= 0) nr->u.reduce.vars[nv++] = nr->u.reduce.vars[v];
  nr->u.reduce.n_vars = nv;
  ir_stmt *t = KBC_NEW(a, ir_stmt);
  t->loc = s->loc;
  t->text = s->text;
  t->index = tix;
  t->n_index = m;
  t->rhs = nv ? nr : nr->arg[0];
  unsigned char *fresh = KBC_NEW_ARRAY(a, unsigned char, m + 1), *small = KBC_NEW_ARRAY(a, unsigned char, m + 1);
  for (int j = 0; j < ns; j++) {
    fresh[sp[j].io] = 1;
    if (sp[j].k >= 0 && sp[j].t >= 0) fresh[sp[j].t] = small[sp[j].t] = 1;
  }
  pad_loads(a, P->p, t, t->rhs, fresh, small);
  return t;
}

/* The value at split j onwards of the phase combination with digits
 * qv[0..j): where(q_j(i) == 0, ..., where(q_j(i) == 1, ..., ...)). */
static ir_expr *select_phase(kbc_arena *a, const ir_stmt *s, const ph_split *sp, int ns, int j, int *qv,
                             ir_expr *const *leaf, kbc_loc loc) {
  if (j == ns) {
    int c = 0;
    for (int q = 0; q < ns; q++) c = c * (int)sp[q].mp + qv[q];
    return leaf[c];
  }
  qv[j] = (int)sp[j].mp - 1;
  ir_expr *e = select_phase(a, s, sp, ns, j + 1, qv, leaf, loc);
  sym *q = sym_div(a, sym_mod(a, idx(a, sp[j].i, s->index), sp[j].m), sp[j].g);
  for (int v = (int)sp[j].mp - 2; v >= 0; v--) {
    qv[j] = v;
    ir_expr *then = select_phase(a, s, sp, ns, j + 1, qv, leaf, loc);
    if (then->op == IR_OP_CONST && e->op == IR_OP_CONST && then->u.value == e->u.value) continue; /* phases of no taps */
    ir_expr *eq = ir_binary(a, IR_OP_EQ, ir_index_expr(a, q, loc), ir_index_expr(a, sym_const(a, v), loc), loc);
    e = ir_where(a, eq, then, e, loc);
  }
  return e;
}

/* Splits sum r (at *slot in s) if its where() holds congruences to split;
 * returns whether it did. */
static int split(phaser *P, ir_expr **slot) {
  kbc_arena *a = P->p->arena;
  ir_stmt *s = P->s;
  ir_expr *r = *slot, *body = r->arg[0];
  if (r->u.reduce.op != IR_RED_SUM || body->op != IR_OP_WHERE || body->arg[2]->op != IR_OP_CONST ||
      body->arg[2]->u.value != 0.0)
    return 0;
  ir_expr *conj[PH_MAX_CONJ];
  int nc = conjuncts(body->arg[0], conj, 0), n = s->n_index;
  if (nc < 0) return 0;
  unsigned char *taken = KBC_NEW_ARRAY(a, unsigned char, n + 1);
  ph_split sp[PH_MAX_CONJ];
  int ns = 0, combos = 1;
  for (int j = 0; j < nc; j++) {
    ph_split c = {0};
    if (!match(a, s, r, conj[j], taken, &c) || combos * c.mp > PH_MAX_PHASES) continue;
    c.conj = j;
    taken[c.i] = 1;
    if (c.k >= 0) taken[c.k] = 1;
    combos *= (int)c.mp;
    sp[ns++] = c;
  }
  if (!ns) return 0;
  /* The free indices r reads, a split one as io; s's ids map to them. */
  ir_index *ix = KBC_NEW_ARRAY(a, ir_index, n + 1);
  sym **by = KBC_NEW_ARRAY(a, sym *, n + 1);
  int n_free = 0;
  for (int id = 0; id < n; id++) {
    if (s->index[id].kind != IR_IDX_FREE || !ir_expr_mentions_index(r, id)) continue;
    ix[n_free] = s->index[id];
    by[id] = idx(a, n_free, ix);
    for (int j = 0; j < ns; j++) {
      if (sp[j].i != id) continue;
      sym *ext = sym_div(a, sym_add(a, s->index[id].extent, sym_const(a, sp[j].m - 1)), sp[j].m);
      if (!ext) return 0;
      ix[n_free] = (ir_index){fresh_name(a, s, ix, n_free, kbc_arena_printf(a, "%so", s->index[id].name)),
                              IR_IDX_FREE, ext};
      sp[j].io = n_free;
    }
    n_free++;
  }
  /* One statement per phase combination, built before any is added. */
  ir_stmt **ts = KBC_NEW_ARRAY(a, ir_stmt *, combos);
  int qv[PH_MAX_CONJ];
  for (int c = 0; c < combos; c++) {
    for (int j = ns - 1, rest = c; j >= 0; j--) {
      qv[j] = rest % (int)sp[j].mp;
      rest /= (int)sp[j].mp;
    }
    int empty;
    ts[c] = phase_stmt(P, r, sp, ns, qv, ix, n_free, by, &empty);
    if (!ts[c] && !empty) return 0;
  }
  /* r becomes the select over the phases' loads at (i/m, ...), kept where
   * (i - r0) mod g == 0. */
  sym **ld = KBC_NEW_ARRAY(a, sym *, n_free + 1);
  for (int id = 0; id < n; id++) {
    if (s->index[id].kind != IR_IDX_FREE || !ir_expr_mentions_index(r, id)) continue;
    sym *v = idx(a, id, s->index);
    for (int j = 0; j < ns; j++)
      if (sp[j].i == id) v = sym_div(a, v, sp[j].m);
    int d = 0;
    sym_is_index(by[id], &d); /* its position among the free indices */
    ld[d] = v;
  }
  ir_expr **leaf = KBC_NEW_ARRAY(a, ir_expr *, combos);
  for (int c = 0; c < combos; c++) {
    if (!ts[c]) {
      leaf[c] = ir_const(a, 0.0, r->loc);
      continue;
    }
    ir_stmt_new_temp(P->p, ts[c], kbc_arena_printf(a, "%s.ph", s->out->name), n_free); /* before s */
    ir_stmt_insert(P->p, P->at++, ts[c]);
    leaf[c] = ir_load(a, ts[c]->out, ld, 0, r->loc);
  }
  ir_expr *e = select_phase(a, s, sp, ns, 0, qv, leaf, r->loc), *keep = NULL;
  for (int j = 0; j < ns; j++) {
    if (sp[j].g == 1) continue;
    sym *v = sym_mod(a, sym_sub(a, idx(a, sp[j].i, s->index), sym_const(a, sp[j].r0)), sp[j].g);
    ir_expr *eq = ir_binary(a, IR_OP_EQ, ir_index_expr(a, v, r->loc), ir_index_expr(a, sym_const(a, 0), r->loc), r->loc);
    keep = keep ? ir_binary(a, IR_OP_AND, keep, eq, r->loc) : eq;
  }
  *slot = keep ? ir_where(a, keep, e, ir_const(a, 0.0, r->loc), r->loc) : e;
  return 1;
}

/* Splits the sums of e outside other reductions; returns how many. */
static int walk(phaser *P, ir_expr **slot) {
  ir_expr *e = *slot;
  if (e->op == IR_OP_REDUCE) return split(P, slot);
  int n = 0;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n += walk(P, &e->arg[i]);
  return n;
}

int ir_phase(ir_program *p, kbc_diag *d) {
  (void)d;
  for (int at = 0; at < p->stmts.len; at++) {
    ir_stmt *s = IR_STMT(p, at);
    if (s->accumulate) continue;
    phaser P = {p, s, at};
    if (walk(&P, &s->rhs)) ir_stmt_drop_stale_indices(p->arena, s);
    at = P.at;
  }
  return 1;
}
