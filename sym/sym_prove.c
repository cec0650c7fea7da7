/* sym_prove.c — facts about the var axes, the non-negativity prover and
 * interval bounds over index variables.
 *
 * Before: syms built by sym.c.  Facts mentioning index variables are
 * ignored.  After: sym_prove_nonneg returns 1 only when p >= 0 holds for
 * every integer binding of the axes with every axis >= 1 that satisfies the
 * facts (sound, not complete).
 *
 * The prover rewrites p, exactly, into a polynomial over fresh variables
 * x_i, each with an integer lower bound and maybe an upper bound that every
 * binding of the axes respects.  Treating the x_i as independent is a
 * relaxation, so a proof over the boxes is a proof for p:
 *   1. zero facts: an atom A with k*A + c == 0 becomes -c/k; an axis v with
 *      (v + k) mod c == r becomes c*w + r - k for a fresh axis w;
 *   2. an axis v seen as floor((m*v + k)/c) or (m*v + k) mod c becomes
 *      L*q + r - k, L the lcm of those c, r in [0, L-1] (renormalizing turns
 *      floor((v + k)/c) into q plus atoms over r alone; the lower bound of
 *      v is kept exact by proving two cases, see make_split); any other axis
 *      becomes a variable with its bounds: >= 1, tightened by facts
 *      k*v + c >= 0 (either sign of k);
 *   3. remaining div/mod atoms become variables bounded by interval
 *      arithmetic on their arguments (a mod whose argument lies in [0, c-1]
 *      becomes its argument); variables with lo == hi become constants;
 *   4. every variable is shifted to start at 0; in terms with a negative
 *      coefficient each bounded variable is replaced by its upper bound
 *      (the other factors are >= 0); p >= 0 when no coefficient is then
 *      negative.
 * When that fails, the same is tried on p - f for each fact f >= 0 (and on
 * p - z, p + z for each fact z == 0). */
#include "sym_impl.h"

struct sym_facts {
  kbc_arena *a;
  kbc_vec nonneg; /* sym *: p >= 0 */
  kbc_vec zero;   /* sym *: p == 0 */
};

sym_facts *sym_facts_create(kbc_arena *a) {
  sym_facts *f = KBC_NEW(a, sym_facts);
  f->a = a;
  return f;
}

void sym_facts_assume_nonneg(sym_facts *f, const sym *p) {
  if (f && p && !sym_has_index(p)) kbc_vec_push(f->a, &f->nonneg, (void *)p);
}

void sym_facts_assume_zero(sym_facts *f, const sym *p) {
  if (f && p && !sym_has_index(p)) kbc_vec_push(f->a, &f->zero, (void *)p);
}

static int n_facts(const sym_facts *f, bool zero) {
  return !f ? 0 : zero ? f->zero.len : f->nonneg.len;
}

static const sym *fact(const sym_facts *f, bool zero, int i) {
  return zero ? KBC_VEC_AT(f->zero, sym, i) : KBC_VEC_AT(f->nonneg, sym, i);
}

/* ---- small helpers ----------------------------------------------------- */

typedef struct {
  int64_t lo, hi;
  bool has_lo, has_hi;
} range;

static const range UNKNOWN = {0, 0, false, false};

static int64_t ceildiv(int64_t x, int64_t c) { /* c > 0 */
  int64_t q = x / c;
  return (x % c != 0 && x > 0) ? q + 1 : q;
}

/* Matches x == k*A + c for one atom A (k != 0). */
static bool one_atom(const sym *x, const sym_atom **t, int64_t *k, int64_t *c) {
  int64_t c0 = 0;
  if (x->n == 2 && x->t[1].n == 0) c0 = x->t[1].coeff;
  else if (x->n != 1) return false;
  if (x->t[0].n != 1) return false;
  *t = x->t[0].f[0];
  *k = x->t[0].coeff;
  *c = c0;
  return true;
}

/* Matches a div/mod argument v + k for an axis v. */
static bool axis_plus(const sym *x, const sym_atom **v, int64_t *k) {
  int64_t m;
  return one_atom(x, v, &m, k) && m == 1 && (*v)->kind == SYM_ATOM_AXIS;
}

/* Matches the zero fact k*A + c == 0 with A = -c/k an integer. */
static bool zero_value(const sym *z, const sym_atom **t, int64_t *value) {
  int64_t k, c;
  if (!one_atom(z, t, &k, &c) || c == INT64_MIN || c % k != 0) return false;
  *value = -(c / k);
  return true;
}

static int max_axis_id(const sym *x) {
  int m = -1;
  for (int i = 0; i < x->n; i++)
    for (int j = 0; j < x->t[i].n; j++) {
      const sym_atom *t = x->t[i].f[j];
      int id = t->kind == SYM_ATOM_AXIS ? t->id : t->kind == SYM_ATOM_INDEX ? -1 : max_axis_id(t->arg);
      if (id > m) m = id;
    }
  return m;
}

static int64_t lcm_or(int64_t l, int64_t c, int64_t fallback) {
  int64_t g = l, r = c, t, out;
  while (r) t = g % r, g = r, r = t;
  return __builtin_mul_overflow(l / g, c, &out) ? fallback : out;
}

/* ---- the prover's state ------------------------------------------------ */

typedef struct {
  const sym_atom *key; /* an axis (compared by id) or a div/mod atom */
  const sym *value;
} memo;

typedef struct {
  const sym_atom *axis; /* rewritten as l*q + r - k */
  int64_t l, k;
  bool has_k;
} split;

typedef struct {
  kbc_arena *a;
  const sym_facts *f;
  range *var; /* index variable i is the prover's variable i */
  int nvar, capvar;
  range *fresh; /* fresh axes w of step 1: ids fresh0, fresh0 + 1, ... */
  int fresh0, nfresh, capfresh;
  memo *memo; /* atom -> its replacement, for the current step */
  int nmemo, capmemo;
  split *sp;
  int nsp, capsp;
  unsigned cases; /* which case of each split with two (see make_split) */
  int ncases;     /* splits with two cases so far */
  int enumerate;  /* second attempt: the residues r of small splits enumerated */
  unsigned combo; /* which residues (mixed radix, see make_split) */
  unsigned ncombos; /* residue combinations so far (the product of the l) */
} prover;

#define GROW(a, arr, n, cap)                                                              \
  do {                                                                                    \
    if ((n) == (cap)) {                                                                   \
      int c2_ = (cap) ? 2 * (cap) : 8;                                                    \
      (arr) = kbc_arena_grow((a), (arr), sizeof *(arr) * (size_t)(cap),                   \
                             sizeof *(arr) * (size_t)c2_);                                \
      (cap) = c2_;                                                                        \
    }                                                                                     \
  } while (0)

static const sym *new_var(prover *pr, range r) {
  GROW(pr->a, pr->var, pr->nvar, pr->capvar);
  pr->var[pr->nvar] = r;
  return sym_index(pr->a, pr->nvar++, "x");
}

static const sym *remember(prover *pr, const sym_atom *key, const sym *value) {
  GROW(pr->a, pr->memo, pr->nmemo, pr->capmemo);
  pr->memo[pr->nmemo++] = (memo){key, value};
  return value;
}

static const sym *recall(const prover *pr, const sym_atom *key) {
  for (int i = 0; i < pr->nmemo; i++)
    if (sym_atom_cmp(pr->memo[i].key, key) == 0) return pr->memo[i].value;
  return NULL;
}

/* Bounds of an axis: >= 1, tightened by the facts k*v + c >= 0 (or == 0). */
static range axis_range(const prover *pr, int id) {
  if (id >= pr->fresh0 && id < pr->fresh0 + pr->nfresh) return pr->fresh[id - pr->fresh0];
  range r = {1, 0, true, false};
  for (int z = 0; z <= 1; z++)
    for (int i = 0; i < n_facts(pr->f, z); i++) {
      const sym_atom *t;
      int64_t k, c;
      if (!one_atom(fact(pr->f, z, i), &t, &k, &c) || t->kind != SYM_ATOM_AXIS || t->id != id ||
          k == INT64_MIN || c == INT64_MIN)
        continue;
      if (k > 0 || z) { /* v >= ceil(-c/k) */
        int64_t lo = k > 0 ? ceildiv(-c, k) : ceildiv(c, -k);
        if (lo > r.lo) r.lo = lo;
      }
      if (k < 0 || z) { /* v <= floor(-c/k) */
        int64_t hi = k < 0 ? sym_floordiv(c, -k) : sym_floordiv(-c, k);
        if (!r.has_hi || hi < r.hi) r.hi = hi, r.has_hi = true;
      }
    }
  return r;
}

/* ---- step 1: zero facts ------------------------------------------------ */

/* The zero fact (v + k) mod c == r gives v = c*w + r - k for a fresh axis
 * w = floor((v + k)/c), so w >= ceil((lo_v + k - r)/c). */
static void add_congruence(prover *pr, const sym *z) {
  const sym_atom *t, *v;
  int64_t r, k, base, lo, hi;
  if (!zero_value(z, &t, &r) || t->kind != SYM_ATOM_MOD || r < 0 || r >= t->c ||
      !axis_plus(t->arg, &v, &k) || recall(pr, v) || __builtin_sub_overflow(k, r, &base))
    return;
  range rv = axis_range(pr, v->id), rw = UNKNOWN;
  if (__builtin_add_overflow(rv.lo, base, &lo)) return;
  rw.lo = ceildiv(lo, t->c), rw.has_lo = true;
  if (rv.has_hi && !__builtin_add_overflow(rv.hi, base, &hi))
    rw.hi = sym_floordiv(hi, t->c), rw.has_hi = true;
  GROW(pr->a, pr->fresh, pr->nfresh, pr->capfresh);
  pr->fresh[pr->nfresh] = rw;
  sym *w = sym_axis(pr->a, pr->fresh0 + pr->nfresh++, "w");
  remember(pr, v, sym_sub(pr->a, sym_scale(pr->a, w, t->c), sym_const(pr->a, base)));
}

static int zero_fn(void *ctx, const sym_atom *t, const sym **out) {
  prover *pr = ctx;
  if ((*out = recall(pr, t))) return 1;
  for (int i = 0; i < n_facts(pr->f, true); i++) {
    const sym_atom *z;
    int64_t value;
    if (zero_value(fact(pr->f, true, i), &z, &value) && sym_atom_cmp(z, t) == 0) {
      *out = sym_const(pr->a, value);
      return 1;
    }
  }
  return 0;
}

/* ---- step 2: axes ------------------------------------------------------ */

/* Axis v appears as floor((m*v + k)/c) or (m*v + k) mod c: v is rewritten
 * with l = lcm of those c; k is taken from the first such atom with m == 1,
 * so that floor((v + k)/c) becomes exactly q. */
static void note_split(prover *pr, const sym_atom *v, int64_t m, int64_t k, int64_t c) {
  for (int i = 0; i < pr->nsp; i++) {
    split *s = &pr->sp[i];
    if (s->axis->id != v->id) continue;
    s->l = lcm_or(s->l, c, s->l);
    if (!s->has_k && m == 1) s->k = k, s->has_k = true;
    return;
  }
  GROW(pr->a, pr->sp, pr->nsp, pr->capsp);
  pr->sp[pr->nsp++] = (split){v, c, m == 1 ? k : 0, m == 1};
}

static void collect_splits(prover *pr, const sym *x) {
  for (int i = 0; i < x->n; i++)
    for (int j = 0; j < x->t[i].n; j++) {
      const sym_atom *t = x->t[i].f[j], *v;
      int64_t m, k;
      if (t->kind != SYM_ATOM_DIV && t->kind != SYM_ATOM_MOD) continue;
      if (one_atom(t->arg, &v, &m, &k) && v->kind == SYM_ATOM_AXIS) note_split(pr, v, m, k, t->c);
      collect_splits(pr, t->arg);
    }
}

/* v = l*q + r - k with q = floor((v + k)/l), r = (v + k) mod l.  From
 * v >= lo: l*q + r >= lo + k = l*q0 + r0.  When r0 > 0 that is not a box,
 * so up to MAX_CASES such splits are proven in two cases each, chosen by
 * the bits of pr->cases: q = q0 with r in [r0, l-1], or q >= q0 + 1; beyond
 * that, the box q >= q0 (a relaxation) is used. */
enum { MAX_CASES = 4 };
/* On a second attempt (prove_core), the residue of a split with l at most
 * MAX_RESIDUES is enumerated, while the combinations stay within
 * MAX_COMBOS. */
enum { MAX_RESIDUES = 16, MAX_COMBOS = 64 };

static void make_split(prover *pr, const split *s) {
  range rv = axis_range(pr, s->axis->id), rq = UNKNOWN, rr = {0, s->l - 1, true, true};
  int64_t lo, hi;
  if (__builtin_add_overflow(rv.lo, s->k, &lo)) return;
  rq.lo = sym_floordiv(lo, s->l), rq.has_lo = true;
  if (rv.has_hi && !__builtin_add_overflow(rv.hi, s->k, &hi))
    rq.hi = sym_floordiv(hi, s->l), rq.has_hi = true;
  int64_t r0 = sym_floormod(lo, s->l);
  kbc_arena *a = pr->a;
  if (pr->enumerate && s->l <= MAX_RESIDUES && pr->ncombos * (unsigned)s->l <= MAX_COMBOS) {
    /* r a constant of each case, so that atoms left over r alone
     * (floor((r + 2)/4) beside floor(r/2), from floor((v + 2)/4) and
     * floor(v/2)) are exact: v >= lo is q >= q0 + (r < r0) */
    int64_t r = (int64_t)(pr->combo / pr->ncombos % (unsigned)s->l);
    pr->ncombos *= (unsigned)s->l;
    if (r < r0) rq.lo++;
    if (rq.has_hi) rq.hi = sym_floordiv(hi - r, s->l); /* v <= hi: l*q + r <= hi + k */
    if (rq.has_hi && rq.hi < rq.lo) rq.hi = rq.lo;     /* no such v: any value proves it */
    const sym *q = new_var(pr, rq);
    remember(pr, s->axis, sym_add(a, sym_scale(a, q, s->l), sym_const(a, r - s->k)));
    return;
  }
  if (r0 > 0 && pr->ncases < MAX_CASES) {
    if ((pr->cases >> pr->ncases++) & 1) rq.lo++;
    else rq.hi = rq.lo, rq.has_hi = true, rr.lo = r0;
  }
  const sym *q = new_var(pr, rq), *r = new_var(pr, rr);
  remember(pr, s->axis, sym_add(a, sym_scale(a, q, s->l), sym_sub(a, r, sym_const(a, s->k))));
}

static int axis_fn(void *ctx, const sym_atom *t, const sym **out) {
  prover *pr = ctx;
  if (t->kind != SYM_ATOM_AXIS) return 0;
  if (!(*out = recall(pr, t))) *out = remember(pr, t, new_var(pr, axis_range(pr, t->id)));
  return 1;
}

/* ---- step 3: div and mod atoms ----------------------------------------- */

static range sym_range(const prover *pr, const sym *x);

static bool in_residues(range r, int64_t c) {
  return r.has_lo && r.lo >= 0 && r.has_hi && r.hi < c;
}

static range atom_range(const prover *pr, const sym_atom *t) {
  switch (t->kind) {
  case SYM_ATOM_INDEX:
    return pr->var[t->id];
  case SYM_ATOM_DIV: {
    range r = sym_range(pr, t->arg);
    r.lo = sym_floordiv(r.lo, t->c), r.hi = sym_floordiv(r.hi, t->c);
    return r;
  }
  case SYM_ATOM_MOD: {
    range r = sym_range(pr, t->arg);
    return in_residues(r, t->c) ? r : (range){0, t->c - 1, true, true};
  }
  default:
    return UNKNOWN;
  }
}

/* Range of a product of factors that are all >= 0. */
static range product_range(const prover *pr, const sym_term *t) {
  range p = {1, 1, true, true};
  for (int j = 0; j < t->n; j++) {
    range r = atom_range(pr, t->f[j]);
    if (!r.has_lo || r.lo < 0) return UNKNOWN;
    if (r.has_hi && r.hi == 0) return (range){0, 0, true, true};
    if (__builtin_mul_overflow(p.lo, r.lo, &p.lo)) p.lo = 0; /* still a lower bound */
    if (!r.has_hi || __builtin_mul_overflow(p.hi, r.hi, &p.hi)) p.has_hi = false;
  }
  return p;
}

static range term_range(const prover *pr, const sym_term *t) {
  range p = product_range(pr, t), r = UNKNOWN;
  int64_t k = t->coeff;
  if (!p.has_lo) return UNKNOWN;
  if (k > 0) {
    r.has_lo = true;
    if (__builtin_mul_overflow(k, p.lo, &r.lo)) r.lo = 0;
    r.has_hi = p.has_hi && !__builtin_mul_overflow(k, p.hi, &r.hi);
  } else {
    r.has_hi = true;
    if (__builtin_mul_overflow(k, p.lo, &r.hi)) r.hi = 0;
    r.has_lo = p.has_hi && !__builtin_mul_overflow(k, p.hi, &r.lo);
  }
  return r;
}

static range sym_range(const prover *pr, const sym *x) {
  range s = {0, 0, true, true};
  for (int i = 0; i < x->n; i++) {
    range r = term_range(pr, &x->t[i]);
    s.has_lo = s.has_lo && r.has_lo && !__builtin_add_overflow(s.lo, r.lo, &s.lo);
    s.has_hi = s.has_hi && r.has_hi && !__builtin_add_overflow(s.hi, r.hi, &s.hi);
  }
  return s;
}

static int atom_fn(void *ctx, const sym_atom *t, const sym **out) {
  prover *pr = ctx;
  if (t->kind == SYM_ATOM_INDEX) {
    range r = pr->var[t->id];
    if (!r.has_hi || r.lo != r.hi) return 0;
    *out = sym_const(pr->a, r.lo);
    return 1;
  }
  *out = NULL; /* axes are gone after step 2 */
  if (t->kind == SYM_ATOM_AXIS || (*out = recall(pr, t))) return 1;
  range r = atom_range(pr, t);
  if (t->kind == SYM_ATOM_MOD && in_residues(sym_range(pr, t->arg), t->c))
    *out = sym_map_atoms(pr->a, t->arg, atom_fn, pr);
  else if (r.has_lo && r.has_hi && r.lo == r.hi)
    *out = sym_const(pr->a, r.lo);
  else if (r.has_lo)
    *out = new_var(pr, r);
  if (*out) remember(pr, t, *out);
  return 1;
}

/* ---- step 4: shift and check ------------------------------------------- */

static int shift_fn(void *ctx, const sym_atom *t, const sym **out) {
  prover *pr = ctx;
  *out = NULL;
  if (t->kind == SYM_ATOM_INDEX)
    *out = sym_add(pr->a, sym_of_atom(pr->a, t), sym_const(pr->a, pr->var[t->id].lo));
  return 1;
}

/* p over variables x_i in [0, hi_i - lo_i] (or [0, inf)): with each bounded
 * x_i of a negative term at its maximum, is every coefficient >= 0? */
static bool nonneg_on_box(const prover *pr, const sym *p) {
  sym_builder b = {.a = pr->a};
  for (int i = 0; i < p->n; i++) {
    const sym_term *t = &p->t[i];
    int64_t k = t->coeff, width;
    const sym_atom **f = KBC_NEW_ARRAY(pr->a, const sym_atom *, t->n + 1);
    int m = 0;
    for (int j = 0; j < t->n; j++) {
      range r = pr->var[t->f[j]->id];
      if (k > 0 || !r.has_hi) f[m++] = t->f[j];
      else if (__builtin_sub_overflow(r.hi, r.lo, &width) || __builtin_mul_overflow(k, width, &k))
        return false;
    }
    sym_builder_term(&b, k, m, f);
  }
  const sym *q = sym_builder_finish(&b);
  for (int i = 0; q && i < q->n; i++)
    if (q->t[i].coeff < 0) return false;
  return q != NULL;
}

/* One case of the proof (see make_split); *ncases tells how many splits
 * had two cases. */
static bool prove_case(kbc_arena *a, const sym_facts *f, const sym *p, unsigned cases, int *ncases,
                       int enumerate, unsigned combo, unsigned *ncombos) {
  prover pr = {.a = a, .f = f, .fresh0 = max_axis_id(p) + 1, .cases = cases, .enumerate = enumerate,
               .combo = combo, .ncombos = 1};
  for (int z = 0; z <= 1; z++)
    for (int i = 0; i < n_facts(f, z); i++) {
      int m = max_axis_id(fact(f, z, i)) + 1;
      if (m > pr.fresh0) pr.fresh0 = m;
    }
  for (int i = 0; i < n_facts(f, true); i++) add_congruence(&pr, fact(f, true, i));
  const sym *p1 = sym_map_atoms(a, p, zero_fn, &pr);
  if (!p1) return false;
  pr.nmemo = 0;
  collect_splits(&pr, p1);
  for (int i = 0; i < pr.nsp; i++) make_split(&pr, &pr.sp[i]);
  *ncases = pr.ncases;
  *ncombos = pr.ncombos;
  const sym *p2 = sym_map_atoms(a, p1, axis_fn, &pr);
  pr.nmemo = 0;
  const sym *p3 = sym_map_atoms(a, p2, atom_fn, &pr);
  const sym *p4 = sym_map_atoms(a, p3, shift_fn, &pr);
  return p4 && nonneg_on_box(&pr, p4);
}

/* Every case of one attempt (see make_split). */
static bool prove_cases(kbc_arena *a, const sym_facts *f, const sym *p, int enumerate) {
  int ncases = 0;
  unsigned cases = 0, combo = 0, ncombos = 1;
  do {
    combo = 0;
    do {
      if (!prove_case(a, f, p, cases, &ncases, enumerate, combo, &ncombos)) return false;
    } while (++combo < ncombos);
  } while (++cases < 1u << ncases);
  return true;
}

/* First with the residues as variables; failing that, with the small ones
 * enumerated (exact for atoms over a residue alone). */
static bool prove_core(kbc_arena *a, const sym_facts *f, const sym *p) {
  int64_t c;
  if (!p || sym_has_index(p)) return false;
  if (sym_is_const(p, &c)) return c >= 0;
  return prove_cases(a, f, p, 0) || prove_cases(a, f, p, 1);
}

/* ---- proofs ------------------------------------------------------------ */

int sym_prove_nonneg(kbc_arena *a, const sym_facts *f, const sym *p) {
  if (!p || sym_has_index(p)) return 0;
  if (prove_core(a, f, p)) return 1;
  for (int z = 0; z <= 1; z++)
    for (int i = 0; i < n_facts(f, z); i++) {
      const sym *g = fact(f, z, i);
      if (prove_core(a, f, sym_sub(a, p, g))) return 1;
      if (z && prove_core(a, f, sym_add(a, p, g))) return 1;
    }
  return 0;
}

int sym_prove_le(kbc_arena *a, const sym_facts *f, const sym *x, const sym *y) {
  return sym_prove_nonneg(a, f, sym_sub(a, y, x));
}

int sym_prove_lt(kbc_arena *a, const sym_facts *f, const sym *x, const sym *y) {
  return sym_prove_nonneg(a, f, sym_sub(a, sym_sub(a, y, x), sym_const(a, 1)));
}

int sym_prove_eq(kbc_arena *a, const sym_facts *f, const sym *x, const sym *y) {
  return sym_equal(x, y) || (sym_prove_le(a, f, x, y) && sym_prove_le(a, f, y, x));
}

/* ---- bounds over index variables --------------------------------------- */

typedef struct {
  kbc_arena *a;
  const sym_facts *f;
  int n;
  sym *const *lo, *const *hi;
} bounds_ctx;

static bool bounds(const bounds_ctx *b, const sym *x, sym **lo, sym **hi);

static bool atom_has_index(const sym_atom *t) {
  return t->kind == SYM_ATOM_INDEX || (t->kind != SYM_ATOM_AXIS && sym_has_index(t->arg));
}

static bool atom_bounds(const bounds_ctx *b, const sym_atom *t, sym **lo, sym **hi) {
  if (t->kind == SYM_ATOM_INDEX) {
    if (t->id < 0 || t->id >= b->n) return false;
    *lo = b->lo[t->id], *hi = b->hi[t->id];
    return *lo && *hi;
  }
  sym *xlo, *xhi;
  bool ok = bounds(b, t->arg, &xlo, &xhi);
  if (t->kind == SYM_ATOM_DIV) {
    *lo = sym_div(b->a, xlo, t->c), *hi = sym_div(b->a, xhi, t->c);
    return ok && *lo && *hi;
  }
  if (ok && sym_prove_nonneg(b->a, b->f, xlo) &&
      sym_prove_le(b->a, b->f, xhi, sym_const(b->a, t->c - 1))) {
    *lo = xlo, *hi = xhi;
  } else {
    *lo = sym_const(b->a, 0), *hi = sym_const(b->a, t->c - 1);
  }
  return true;
}

/* Adds the bounds of coeff * t, t the atom mentioning index variables and
 * coeff a sym over axes whose sign decides which end of t is which. */
static bool group_bounds(const bounds_ctx *b, const sym_atom *t, const sym *coeff,
                         sym_builder *lo, sym_builder *hi) {
  sym *tlo, *thi;
  if (!coeff || !atom_bounds(b, t, &tlo, &thi)) return false;
  if (!sym_prove_nonneg(b->a, b->f, coeff)) {
    if (!sym_prove_nonneg(b->a, b->f, sym_neg(b->a, coeff))) return false;
    sym *swap = tlo;
    tlo = thi, thi = swap;
  }
  sym_builder_add(lo, sym_mul(b->a, coeff, tlo), 1);
  sym_builder_add(hi, sym_mul(b->a, coeff, thi), 1);
  return true;
}

typedef struct {
  const sym_atom *t; /* a factor mentioning index variables */
  sym_builder coeff; /* the sum of the terms' other factors */
} group;

/* x = sum_g coeff_g * t_g + rest: the bounds of rest are itself, those of
 * each group come from the sign of coeff_g (grouping keeps (1 - h)*y tight
 * where bounding -h*y and y separately would not). */
static bool bounds(const bounds_ctx *b, const sym *x, sym **out_lo, sym **out_hi) {
  sym_builder lo = {.a = b->a}, hi = {.a = b->a};
  *out_lo = *out_hi = NULL;
  if (!x) return false;
  group *g = KBC_NEW_ARRAY(b->a, group, x->n);
  int ng = 0;
  for (int i = 0; i < x->n; i++) {
    const sym_term *t = &x->t[i];
    int at = -1;
    for (int j = 0; j < t->n; j++) {
      if (!atom_has_index(t->f[j])) continue;
      if (at >= 0) return false; /* a product of two index-dependent factors */
      at = j;
    }
    if (at < 0) {
      sym_builder_term(&lo, t->coeff, t->n, t->f);
      sym_builder_term(&hi, t->coeff, t->n, t->f);
      continue;
    }
    int k = 0;
    while (k < ng && sym_atom_cmp(g[k].t, t->f[at]) != 0) k++;
    if (k == ng) g[ng++] = (group){t->f[at], {.a = b->a}};
    const sym_atom **rest = KBC_NEW_ARRAY(b->a, const sym_atom *, t->n);
    for (int j = 0, m = 0; j < t->n; j++)
      if (j != at) rest[m++] = t->f[j];
    sym_builder_term(&g[k].coeff, t->coeff, t->n - 1, rest);
  }
  for (int k = 0; k < ng; k++)
    if (!group_bounds(b, g[k].t, sym_builder_finish(&g[k].coeff), &lo, &hi)) return false;
  *out_lo = sym_builder_finish(&lo);
  *out_hi = sym_builder_finish(&hi);
  return *out_lo && *out_hi;
}

int sym_bounds(kbc_arena *a, const sym_facts *f, const sym *x, int n_index, sym *const *lo,
               sym *const *hi, sym **out_lo, sym **out_hi) {
  bounds_ctx b = {a, f, n_index, lo, hi};
  sym *l, *h;
  if (!bounds(&b, x, &l, &h)) return 0;
  *out_lo = l, *out_hi = h;
  return 1;
}
