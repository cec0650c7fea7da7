/* sym.c — normalized symbolic integer expressions: construction, inspection,
 * substitution, evaluation and printing (the prover is in sym_prove.c).
 *
 * Before: every non-NULL sym handed in was built here, hence normalized.
 * After: every sym returned is normalized, or NULL after an int64 overflow
 * or a NULL operand.  Normal form (see sym_impl.h for the layout): like
 * terms merged, zero terms dropped, terms and factors sorted; atoms compare
 * by kind, then id (axis, index) or argument and then c (div, mod).
 *
 * Rules for floor(X/c), c >= 2, applied by sym_div:
 *   floor((c*A + B + k)/c) = A + floor(k/c) + floor((B + k mod c)/c), where
 *     c*A holds the terms whose coefficients are multiples of c;
 *   floor((g*B + k)/c) = floor((B + floor(k/g))/(c/g)), g = gcd of c and B's
 *     coefficients;
 *   floor((floor(X/d) + k)/c) = floor((X + k*d)/(d*c)).
 * Rules for X mod c, applied by sym_mod:
 *   (c*A + B + k) mod c = (B + k mod c) mod c;
 *   (g*B + k) mod c = g*((B + floor(k/g)) mod (c/g)) + k mod g;
 *   ((X mod d) + k) mod c = (X + k) mod c when c divides d.
 * Rules in sums: k*c*floor(X/c) + k*(X mod c) = k*X;
 *   k*c*(floor(X/c) mod d) + k*(X mod c) = k*(X mod c*d).
 *
 * sym_print_c emits plain C `/` and `%` for floor(X/c) and X mod c only when
 * X is obviously non-negative: every coefficient of X is positive and every
 * atom of X is an axis (>= 1), an index (>= 0 in generated loops), a mod, or
 * a div of an obviously non-negative argument.  Otherwise it emits
 * kbc_floordiv(X, c) / kbc_floormod(X, c).  Every term starts with a
 * `long long` literal; axis and index names must name 64-bit integer
 * variables in the C context, so arithmetic is int64. */
#include "sym_impl.h"

#include <stdlib.h>

#define mul_ovf(x, y, r) __builtin_mul_overflow((x), (y), (r))
#define add_ovf(x, y, r) __builtin_add_overflow((x), (y), (r))

/* ---- order ------------------------------------------------------------- */

static int cmp_i64(int64_t x, int64_t y) { return (x > y) - (x < y); }

static int sym_cmp(const sym *x, const sym *y);

int sym_atom_cmp(const sym_atom *x, const sym_atom *y) {
  if (x == y) return 0;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->kind == SYM_ATOM_AXIS || x->kind == SYM_ATOM_INDEX) return cmp_i64(x->id, y->id);
  int r = sym_cmp(x->arg, y->arg);
  return r ? r : cmp_i64(x->c, y->c);
}

/* Monomials: higher degree first, then factor by factor. */
static int mono_cmp(const sym_term *x, const sym_term *y) {
  if (x->n != y->n) return x->n > y->n ? -1 : 1;
  for (int i = 0; i < x->n; i++) {
    int r = sym_atom_cmp(x->f[i], y->f[i]);
    if (r) return r;
  }
  return 0;
}

static int sym_cmp(const sym *x, const sym *y) {
  if (x->n != y->n) return x->n < y->n ? -1 : 1;
  for (int i = 0; i < x->n; i++) {
    int r = mono_cmp(&x->t[i], &y->t[i]);
    if (!r) r = cmp_i64(x->t[i].coeff, y->t[i].coeff);
    if (r) return r;
  }
  return 0;
}

static int term_qsort_cmp(const void *x, const void *y) { return mono_cmp(x, y); }

/* ---- building and normalizing ------------------------------------------ */

void sym_builder_term(sym_builder *b, int64_t coeff, int n, const sym_atom *const *f) {
  if (coeff == 0) return;
  if (b->n == b->cap) {
    int cap = b->cap ? 2 * b->cap : 8;
    b->t = kbc_arena_grow(b->a, b->t, sizeof *b->t * (size_t)b->cap, sizeof *b->t * (size_t)cap);
    b->cap = cap;
  }
  b->t[b->n++] = (sym_term){coeff, n, f};
}

void sym_builder_add(sym_builder *b, const sym *x, int64_t scale) {
  if (!x) {
    b->bad = true;
    return;
  }
  for (int i = 0; i < x->n; i++) {
    int64_t k;
    if (mul_ovf(x->t[i].coeff, scale, &k)) b->bad = true;
    else sym_builder_term(b, k, x->t[i].n, x->t[i].f);
  }
}

/* The term k*floor(X/c) that pairs with k/c*(X mod c) in s, if any. */
static const sym_term *div_partner(const sym *s, const sym_term *m) {
  int64_t want;
  if (mul_ovf(m->coeff, m->f[0]->c, &want)) return NULL;
  for (int i = 0; i < s->n; i++) {
    const sym_term *t = &s->t[i];
    if (t->n == 1 && t->coeff == want && t->f[0]->kind == SYM_ATOM_DIV &&
        t->f[0]->c == m->f[0]->c && sym_cmp(t->f[0]->arg, m->f[0]->arg) == 0)
      return t;
  }
  return NULL;
}

/* The term k*c*(floor(X/c) mod d) that pairs with k*(X mod c) in s, if
 * any (*d set). */
static const sym_term *mod_partner(const sym *s, const sym_term *m, int64_t *d) {
  int64_t want;
  if (mul_ovf(m->coeff, m->f[0]->c, &want)) return NULL;
  for (int i = 0; i < s->n; i++) {
    const sym_term *t = &s->t[i];
    if (t->n != 1 || t->coeff != want || t->f[0]->kind != SYM_ATOM_MOD) continue;
    const sym *in = t->f[0]->arg;
    if (in->n == 1 && in->t[0].coeff == 1 && in->t[0].n == 1 && in->t[0].f[0]->kind == SYM_ATOM_DIV &&
        in->t[0].f[0]->c == m->f[0]->c && sym_cmp(in->t[0].f[0]->arg, m->f[0]->arg) == 0 &&
        !mul_ovf(t->f[0]->c, m->f[0]->c, d))
      return t;
  }
  return NULL;
}

/* k*c*floor(X/c) + k*(X mod c) = k*X, and
 * k*c*(floor(X/c) mod d) + k*(X mod c) = k*(X mod c*d) — the digits of a
 * mixed-radix decomposition put back together. */
static sym *recombine(kbc_arena *a, sym *s) {
  for (int i = 0; s && i < s->n; i++) {
    const sym_term *m = &s->t[i];
    if (m->n != 1 || m->f[0]->kind != SYM_ATOM_MOD) continue;
    int64_t d = 0;
    const sym_term *p = div_partner(s, m);
    if (!p) p = mod_partner(s, m, &d);
    if (!p) continue;
    sym_builder b = {.a = a};
    for (int j = 0; j < s->n; j++)
      if (&s->t[j] != m && &s->t[j] != p) sym_builder_term(&b, s->t[j].coeff, s->t[j].n, s->t[j].f);
    sym_builder_add(&b, d ? sym_mod(a, m->f[0]->arg, d) : m->f[0]->arg, m->coeff);
    return recombine(a, sym_builder_finish(&b));
  }
  return s;
}

sym *sym_builder_finish(sym_builder *b) {
  if (b->bad) return NULL;
  if (b->n > 1) qsort(b->t, (size_t)b->n, sizeof *b->t, term_qsort_cmp);
  int n = 0;
  for (int i = 0; i < b->n; i++) {
    if (n > 0 && mono_cmp(&b->t[n - 1], &b->t[i]) == 0) {
      if (add_ovf(b->t[n - 1].coeff, b->t[i].coeff, &b->t[n - 1].coeff)) return NULL;
      continue;
    }
    if (n > 0 && b->t[n - 1].coeff == 0) n--;
    b->t[n++] = b->t[i];
  }
  if (n > 0 && b->t[n - 1].coeff == 0) n--;
  sym *s = KBC_NEW(b->a, sym);
  s->n = n;
  s->t = b->t;
  *b = (sym_builder){.a = b->a};
  return recombine(b->a, s);
}

/* ---- construction ------------------------------------------------------ */

sym *sym_const(kbc_arena *a, int64_t value) {
  sym_builder b = {.a = a};
  sym_builder_term(&b, value, 0, NULL);
  return sym_builder_finish(&b);
}

sym *sym_of_atom(kbc_arena *a, const sym_atom *t) {
  const sym_atom **f = KBC_NEW_ARRAY(a, const sym_atom *, 1);
  f[0] = t;
  sym_builder b = {.a = a};
  sym_builder_term(&b, 1, 1, f);
  return sym_builder_finish(&b);
}

static sym *variable(kbc_arena *a, sym_atom_kind kind, int id, const char *name) {
  sym_atom *t = KBC_NEW(a, sym_atom);
  t->kind = kind;
  t->id = id;
  t->name = name ? kbc_arena_strdup(a, name) : NULL;
  return sym_of_atom(a, t);
}

sym *sym_axis(kbc_arena *a, int id, const char *name) {
  return variable(a, SYM_ATOM_AXIS, id, name);
}

sym *sym_index(kbc_arena *a, int id, const char *name) {
  return variable(a, SYM_ATOM_INDEX, id, name);
}

sym *sym_add(kbc_arena *a, const sym *x, const sym *y) {
  sym_builder b = {.a = a};
  sym_builder_add(&b, x, 1);
  sym_builder_add(&b, y, 1);
  return sym_builder_finish(&b);
}

sym *sym_sub(kbc_arena *a, const sym *x, const sym *y) {
  sym_builder b = {.a = a};
  sym_builder_add(&b, x, 1);
  sym_builder_add(&b, y, -1);
  return sym_builder_finish(&b);
}

sym *sym_scale(kbc_arena *a, const sym *x, int64_t c) {
  sym_builder b = {.a = a};
  sym_builder_add(&b, x, c);
  return sym_builder_finish(&b);
}

sym *sym_neg(kbc_arena *a, const sym *x) { return sym_scale(a, x, -1); }

static const sym_atom *const *merge_factors(kbc_arena *a, const sym_term *x, const sym_term *y) {
  if (x->n == 0) return y->f;
  if (y->n == 0) return x->f;
  const sym_atom **f = KBC_NEW_ARRAY(a, const sym_atom *, x->n + y->n);
  int i = 0, j = 0, k = 0;
  while (i < x->n && j < y->n) f[k++] = sym_atom_cmp(x->f[i], y->f[j]) <= 0 ? x->f[i++] : y->f[j++];
  while (i < x->n) f[k++] = x->f[i++];
  while (j < y->n) f[k++] = y->f[j++];
  return f;
}

sym *sym_mul(kbc_arena *a, const sym *x, const sym *y) {
  if (!x || !y) return NULL;
  sym_builder b = {.a = a};
  for (int i = 0; i < x->n; i++)
    for (int j = 0; j < y->n; j++) {
      int64_t k;
      if (mul_ovf(x->t[i].coeff, y->t[j].coeff, &k)) return NULL;
      sym_builder_term(&b, k, x->t[i].n + y->t[j].n, merge_factors(a, &x->t[i], &y->t[j]));
    }
  return sym_builder_finish(&b);
}

/* ---- floor division and modulo ----------------------------------------- */

static int64_t gcd64(int64_t c, int64_t x) { /* c > 0 */
  int64_t r = x % c;
  if (r < 0) r = -r;
  while (r) {
    int64_t t = c % r;
    c = r;
    r = t;
  }
  return c;
}

/* gcd of c and every coefficient of x. */
static int64_t common_factor(const sym *x, int64_t c) {
  for (int i = 0; i < x->n && c > 1; i++) c = gcd64(c, x->t[i].coeff);
  return c;
}

static sym *divide_exact(kbc_arena *a, const sym *x, int64_t g) {
  sym_builder b = {.a = a};
  for (int i = 0; i < x->n; i++) sym_builder_term(&b, x->t[i].coeff / g, x->t[i].n, x->t[i].f);
  return sym_builder_finish(&b);
}

/* The atom t when x is exactly 1*t, else NULL. */
static const sym_atom *single_atom(const sym *x) {
  if (!x || x->n != 1 || x->t[0].n != 1 || x->t[0].coeff != 1) return NULL;
  return x->t[0].f[0];
}

/* Splits x into its non-constant terms whose coefficients are not multiples
 * of c (returned), the others divided by c (*whole, NULL for mod) and the
 * constant (*k). */
static sym *split_multiples(kbc_arena *a, const sym *x, int64_t c, sym **whole, int64_t *k) {
  sym_builder rest = {.a = a}, mult = {.a = a};
  *k = 0;
  for (int i = 0; i < x->n; i++) {
    const sym_term *t = &x->t[i];
    if (t->n == 0) *k = t->coeff;
    else if (t->coeff % c != 0) sym_builder_term(&rest, t->coeff, t->n, t->f);
    else sym_builder_term(&mult, t->coeff / c, t->n, t->f);
  }
  if (whole) *whole = sym_builder_finish(&mult);
  return sym_builder_finish(&rest);
}

static sym *make_atom(kbc_arena *a, sym_atom_kind kind, const sym *b, int64_t k, int64_t c) {
  sym_atom *t = KBC_NEW(a, sym_atom);
  t->kind = kind;
  t->arg = sym_add(a, b, sym_const(a, k));
  t->c = c;
  return t->arg ? sym_of_atom(a, t) : NULL;
}

/* floor((b + k)/c): b non-constant, no coefficient a multiple of c, 0 <= k < c. */
static sym *div_atom(kbc_arena *a, const sym *b, int64_t k, int64_t c) {
  int64_t g = common_factor(b, c);
  if (g > 1) {
    b = divide_exact(a, b, g);
    k /= g;
    c /= g;
  }
  const sym_atom *in = single_atom(b);
  int64_t kd, dc;
  if (in && in->kind == SYM_ATOM_DIV && !mul_ovf(k, in->c, &kd) && !mul_ovf(in->c, c, &dc))
    return sym_div(a, sym_add(a, in->arg, sym_const(a, kd)), dc);
  return make_atom(a, SYM_ATOM_DIV, b, k, c);
}

sym *sym_div(kbc_arena *a, const sym *x, int64_t c) {
  if (!x || c <= 0) return NULL;
  if (c == 1) return (sym *)x;
  sym *whole;
  int64_t k;
  sym *rest = split_multiples(a, x, c, &whole, &k);
  whole = sym_add(a, whole, sym_const(a, sym_floordiv(k, c)));
  if (!rest || rest->n == 0) return rest ? whole : NULL;
  return sym_add(a, whole, div_atom(a, rest, sym_floormod(k, c), c));
}

sym *sym_mod(kbc_arena *a, const sym *x, int64_t c) {
  if (!x || c <= 0) return NULL;
  int64_t k;
  sym *b = split_multiples(a, x, c, NULL, &k);
  if (!b) return NULL;
  k = sym_floormod(k, c);
  if (b->n == 0) return sym_const(a, k);
  int64_t g = common_factor(b, c);
  if (g > 1) {
    sym *in = sym_mod(a, sym_add(a, divide_exact(a, b, g), sym_const(a, k / g)), c / g);
    return sym_add(a, sym_scale(a, in, g), sym_const(a, k % g));
  }
  const sym_atom *in = single_atom(b);
  if (in && in->kind == SYM_ATOM_MOD && in->c % c == 0)
    return sym_mod(a, sym_add(a, in->arg, sym_const(a, k)), c);
  return make_atom(a, SYM_ATOM_MOD, b, k, c);
}

/* ---- inspection -------------------------------------------------------- */

int sym_is_const(const sym *x, int64_t *value) {
  if (!x || x->n > 1 || (x->n == 1 && x->t[0].n != 0)) return 0;
  if (value) *value = x->n ? x->t[0].coeff : 0;
  return 1;
}

int sym_equal(const sym *x, const sym *y) { return x && y && sym_cmp(x, y) == 0; }

/* Whether x mentions an atom of `kind` with `id` (any id when any). */
static bool mentions(const sym *x, sym_atom_kind kind, bool any, int id) {
  for (int i = 0; i < x->n; i++)
    for (int j = 0; j < x->t[i].n; j++) {
      const sym_atom *t = x->t[i].f[j];
      if (t->kind == kind && (any || t->id == id)) return true;
      if ((t->kind == SYM_ATOM_DIV || t->kind == SYM_ATOM_MOD) && mentions(t->arg, kind, any, id))
        return true;
    }
  return false;
}

int sym_has_index(const sym *x) { return x && mentions(x, SYM_ATOM_INDEX, true, 0); }
int sym_mentions_index(const sym *x, int id) { return x && mentions(x, SYM_ATOM_INDEX, false, id); }
int sym_has_axis(const sym *x) { return x && mentions(x, SYM_ATOM_AXIS, true, 0); }

int sym_is_index(const sym *x, int *id) {
  const sym_atom *t = single_atom(x);
  if (!t || t->kind != SYM_ATOM_INDEX) return 0;
  if (id) *id = t->id;
  return 1;
}

int sym_as_mod(const sym *x, const sym **arg, int64_t *m, int64_t *coeff, int64_t *rest) {
  if (!x || x->n < 1 || x->n > 2 || x->t[0].n != 1 || x->t[0].f[0]->kind != SYM_ATOM_MOD) return 0;
  if (x->n == 2 && x->t[1].n != 0) return 0; /* the second term, if any, the constant */
  *arg = x->t[0].f[0]->arg;
  *m = x->t[0].f[0]->c;
  *coeff = x->t[0].coeff;
  *rest = x->n == 2 ? x->t[1].coeff : 0;
  return 1;
}

int sym_degree(const sym *x) {
  int d = 0;
  for (int i = 0; x && i < x->n; i++)
    if (x->t[i].n > d) d = x->t[i].n;
  return d;
}

/* The factors of t without factor `skip`. */
static const sym_atom *const *drop_factor(kbc_arena *a, const sym_term *t, int skip) {
  const sym_atom **f = KBC_NEW_ARRAY(a, const sym_atom *, t->n);
  for (int i = 0, k = 0; i < t->n; i++)
    if (i != skip) f[k++] = t->f[i];
  return f;
}

/* Position of t's only index factor: -1 when none, -2 when t is not affine
 * in the index variables. */
static int index_factor(const sym_term *t) {
  int at = -1;
  for (int j = 0; j < t->n; j++) {
    const sym_atom *f = t->f[j];
    if (f->kind == SYM_ATOM_INDEX) {
      if (at >= 0) return -2;
      at = j;
    } else if (f->kind != SYM_ATOM_AXIS && mentions(f->arg, SYM_ATOM_INDEX, true, 0)) {
      return -2;
    }
  }
  return at;
}

int sym_split_affine(kbc_arena *a, const sym *x, int n_index, sym **coeff, sym **rest) {
  if (!x || n_index < 0) return 0;
  sym_builder *cb = KBC_NEW_ARRAY(a, sym_builder, n_index > 0 ? n_index : 1);
  for (int i = 0; i < n_index; i++) cb[i].a = a;
  sym_builder rb = {.a = a};
  for (int i = 0; i < x->n; i++) {
    const sym_term *t = &x->t[i];
    int at = index_factor(t);
    if (at == -2) return 0;
    if (at == -1) {
      sym_builder_term(&rb, t->coeff, t->n, t->f);
      continue;
    }
    int id = t->f[at]->id;
    if (id < 0 || id >= n_index) return 0;
    sym_builder_term(&cb[id], t->coeff, t->n - 1, drop_factor(a, t, at));
  }
  for (int i = 0; i < n_index; i++)
    if (!(coeff[i] = sym_builder_finish(&cb[i]))) return 0;
  *rest = sym_builder_finish(&rb);
  return *rest != NULL;
}

/* ---- substitution ------------------------------------------------------ */

static const sym *map_atom(kbc_arena *a, const sym_atom *t, sym_atom_fn fn, void *ctx) {
  const sym *r;
  if (fn(ctx, t, &r)) return r;
  if (t->kind == SYM_ATOM_AXIS || t->kind == SYM_ATOM_INDEX) return sym_of_atom(a, t);
  const sym *arg = sym_map_atoms(a, t->arg, fn, ctx);
  return t->kind == SYM_ATOM_DIV ? sym_div(a, arg, t->c) : sym_mod(a, arg, t->c);
}

sym *sym_map_atoms(kbc_arena *a, const sym *x, sym_atom_fn fn, void *ctx) {
  if (!x) return NULL;
  sym_builder b = {.a = a};
  for (int i = 0; i < x->n; i++) {
    const sym_term *t = &x->t[i];
    sym *p = sym_const(a, t->coeff);
    for (int j = 0; j < t->n; j++) p = sym_mul(a, p, map_atom(a, t->f[j], fn, ctx));
    sym_builder_add(&b, p, 1);
  }
  return sym_builder_finish(&b);
}

typedef struct {
  sym_atom_kind kind;
  int id;
  const sym *by;
} subst_ctx;

static int subst_fn(void *ctx, const sym_atom *t, const sym **out) {
  const subst_ctx *s = ctx;
  if (t->kind != s->kind || t->id != s->id) return 0;
  *out = s->by;
  return 1;
}

static sym *subst(kbc_arena *a, const sym *x, sym_atom_kind kind, int id, const sym *by) {
  if (!by) return NULL;
  subst_ctx s = {kind, id, by};
  return sym_map_atoms(a, x, subst_fn, &s);
}

sym *sym_subst_index(kbc_arena *a, const sym *x, int id, const sym *by) {
  return subst(a, x, SYM_ATOM_INDEX, id, by);
}

sym *sym_subst_axis(kbc_arena *a, const sym *x, int id, const sym *by) {
  return subst(a, x, SYM_ATOM_AXIS, id, by);
}

/* ---- evaluation -------------------------------------------------------- */

static bool eval_atom(const sym_atom *t, const int64_t *axes, const int64_t *idx, int64_t *out) {
  int64_t v;
  switch (t->kind) {
  case SYM_ATOM_AXIS:
    if (!axes) return false;
    *out = axes[t->id];
    return true;
  case SYM_ATOM_INDEX:
    if (!idx) return false;
    *out = idx[t->id];
    return true;
  case SYM_ATOM_DIV:
    if (!sym_eval(t->arg, axes, idx, &v)) return false;
    *out = sym_floordiv(v, t->c);
    return true;
  case SYM_ATOM_MOD:
    if (!sym_eval(t->arg, axes, idx, &v)) return false;
    *out = sym_floormod(v, t->c);
    return true;
  }
  return false;
}

int sym_eval(const sym *x, const int64_t *axes, const int64_t *idx, int64_t *out) {
  if (!x || !out) return 0;
  int64_t sum = 0;
  for (int i = 0; i < x->n; i++) {
    int64_t p = x->t[i].coeff, v;
    for (int j = 0; j < x->t[i].n; j++)
      if (!eval_atom(x->t[i].f[j], axes, idx, &v) || mul_ovf(p, v, &p)) return 0;
    if (add_ovf(sum, p, &sum)) return 0;
  }
  *out = sum;
  return 1;
}

/* A bound of |atom|: axes at their values, index i in [0, idx_max[i]]. */
static bool bound_atom(const sym_atom *t, const int64_t *axes, const int64_t *idx_max, int64_t *out) {
  int64_t v;
  switch (t->kind) {
  case SYM_ATOM_AXIS:
    if (!axes || axes[t->id] < 0) return false;
    *out = axes[t->id];
    return true;
  case SYM_ATOM_INDEX:
    if (!idx_max || idx_max[t->id] < 0) return false;
    *out = idx_max[t->id];
    return true;
  case SYM_ATOM_DIV: /* |floor(a / c)| <= |a| / c + 1 */
    if (!sym_bound(t->arg, axes, idx_max, &v)) return false;
    *out = v / t->c + 1;
    return true;
  case SYM_ATOM_MOD:
    *out = t->c - 1;
    return true;
  }
  return false;
}

int sym_bound(const sym *x, const int64_t *axes, const int64_t *idx_max, int64_t *out) {
  if (!x || !out) return 0;
  int64_t sum = 0;
  for (int i = 0; i < x->n; i++) {
    if (x->t[i].coeff == INT64_MIN) return 0;
    int64_t p = x->t[i].coeff < 0 ? -x->t[i].coeff : x->t[i].coeff, v;
    for (int j = 0; j < x->t[i].n; j++)
      if (!bound_atom(x->t[i].f[j], axes, idx_max, &v) || mul_ovf(p, v, &p)) return 0;
    if (add_ovf(sum, p, &sum)) return 0;
  }
  *out = sum;
  return 1;
}

/* ---- printing ---------------------------------------------------------- */

static unsigned long long magnitude(int64_t k) {
  return k < 0 ? 0 - (unsigned long long)k : (unsigned long long)k;
}

static void print_var(const sym_atom *t, const char *name, kbc_buf *out) {
  if (!name) name = t->name;
  if (name) kbc_buf_puts(out, name);
  else kbc_buf_printf(out, "%s%d", t->kind == SYM_ATOM_AXIS ? "axis" : "index", t->id);
}

/* The argument of a div/mod: bare when a single variable. */
static void print_arg(const sym *x, kbc_buf *out) {
  const sym_atom *t = single_atom(x);
  bool bare = t && (t->kind == SYM_ATOM_AXIS || t->kind == SYM_ATOM_INDEX);
  if (!bare) kbc_buf_putc(out, '(');
  sym_print(x, out);
  if (!bare) kbc_buf_putc(out, ')');
}

static void print_atom(const sym_atom *t, bool paren, kbc_buf *out) {
  if (t->kind == SYM_ATOM_AXIS || t->kind == SYM_ATOM_INDEX) {
    print_var(t, NULL, out);
    return;
  }
  if (paren) kbc_buf_putc(out, '(');
  print_arg(t->arg, out);
  kbc_buf_printf(out, t->kind == SYM_ATOM_DIV ? "/%lld" : " %% %lld", (long long)t->c);
  if (paren) kbc_buf_putc(out, ')');
}

void sym_print(const sym *x, kbc_buf *out) {
  if (!x) {
    kbc_buf_puts(out, "<overflow>");
    return;
  }
  if (x->n == 0) kbc_buf_putc(out, '0');
  for (int i = 0; i < x->n; i++) {
    const sym_term *t = &x->t[i];
    bool neg = t->coeff < 0;
    if (i > 0) kbc_buf_puts(out, neg ? " - " : " + ");
    else if (neg) kbc_buf_putc(out, '-');
    unsigned long long mag = magnitude(t->coeff);
    if (t->n == 0 || mag != 1) kbc_buf_printf(out, t->n ? "%llu*" : "%llu", mag);
    /* A div/mod standing alone after " + " or " - " needs no parentheses. */
    bool alone = t->n == 1 && mag == 1 && !(i == 0 && neg);
    for (int j = 0; j < t->n; j++) {
      if (j) kbc_buf_putc(out, '*');
      print_atom(t->f[j], !alone, out);
    }
  }
}

char *sym_str(kbc_arena *a, const sym *x) {
  kbc_buf b = {0};
  sym_print(x, &b);
  char *s = kbc_arena_strdup(a, kbc_buf_str(&b));
  kbc_buf_free(&b);
  return s;
}

static bool obviously_nonneg(const sym *x) {
  for (int i = 0; i < x->n; i++) {
    if (x->t[i].coeff <= 0) return false;
    for (int j = 0; j < x->t[i].n; j++) {
      const sym_atom *t = x->t[i].f[j];
      if (t->kind == SYM_ATOM_DIV && !obviously_nonneg(t->arg)) return false;
    }
  }
  return true;
}

static void print_c(const sym *x, bool primary, kbc_buf *out, sym_namer name, void *ctx);

static void c_atom(const sym_atom *t, kbc_buf *out, sym_namer name, void *ctx) {
  if (t->kind == SYM_ATOM_AXIS || t->kind == SYM_ATOM_INDEX) {
    print_var(t, name ? name(ctx, t->kind, t->id) : NULL, out);
    return;
  }
  bool div = t->kind == SYM_ATOM_DIV;
  if (obviously_nonneg(t->arg)) {
    /* "(X / c)": X binds at least as tightly as '/' (a positive product is
     * fine, since '*' and '/' associate to the left); a sum is wrapped. */
    kbc_buf_putc(out, '(');
    print_c(t->arg, false, out, name, ctx);
    kbc_buf_printf(out, " %c %lldLL)", div ? '/' : '%', (long long)t->c);
  } else {
    kbc_buf_puts(out, div ? "kbc_floordiv(" : "kbc_floormod(");
    print_c(t->arg, false, out, name, ctx);
    kbc_buf_printf(out, ", %lldLL)", (long long)t->c);
  }
}

static void c_term(const sym_term *t, bool first, kbc_buf *out, sym_namer name, void *ctx) {
  int64_t k = t->coeff;
  if (k == INT64_MIN) {
    kbc_buf_puts(out, first ? "(-9223372036854775807LL - 1)" : " + (-9223372036854775807LL - 1)");
    if (t->n) kbc_buf_putc(out, '*');
  } else {
    if (!first || k < 0) kbc_buf_puts(out, first ? "-" : k < 0 ? " - " : " + ");
    long long mag = k < 0 ? -k : k;
    if (t->n == 0 || mag != 1) kbc_buf_printf(out, t->n ? "%lldLL*" : "%lldLL", mag);
  }
  for (int j = 0; j < t->n; j++) {
    if (j) kbc_buf_putc(out, '*');
    c_atom(t->f[j], out, name, ctx);
  }
}

/* primary: the text must stand as an operand of any C operator, so
 * anything but a lone atom or a non-negative constant is parenthesized
 * (a product too: `q % 2LL*w` reads as `(q % 2) * w`).  Otherwise only a
 * sum or a leading minus is (the text then binds like a product). */
static void print_c(const sym *x, bool primary, kbc_buf *out, sym_namer name, void *ctx) {
  if (!x) {
    kbc_buf_puts(out, "kbc_sym_overflow"); /* fails to compile, on purpose */
    return;
  }
  if (x->n == 0) {
    kbc_buf_puts(out, "0LL");
    return;
  }
  const sym_term *t0 = &x->t[0];
  bool product = t0->n > 1 || (t0->n == 1 && t0->coeff != 1);
  bool wrap = x->n > 1 || t0->coeff < 0 || (primary && product);
  if (wrap) kbc_buf_putc(out, '(');
  for (int i = 0; i < x->n; i++) c_term(&x->t[i], i == 0, out, name, ctx);
  if (wrap) kbc_buf_putc(out, ')');
}

void sym_print_c(const sym *x, kbc_buf *out, sym_namer name, void *ctx) { print_c(x, true, out, name, ctx); }
