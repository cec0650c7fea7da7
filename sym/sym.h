/* sym.h — symbolic integer arithmetic over axes and index variables.
 *
 * A sym is an immutable, arena-allocated, *normalized* integer expression:
 * a sum of terms, each an int64 coefficient times a product of atoms.
 * Atoms are
 *   - an axis variable (a `var` axis of the spec, bound per call),
 *   - an index variable (of one statement: a free or reduction index),
 *   - floor(X / c) and X mod c, for a constant c > 0 and a sym X.
 * Division and modulo are floor division and non-negative remainder (as in
 * Python): floor(-1/4) = -1, -1 mod 4 = 3.
 *
 * Normal form is canonical: two syms are equal as functions when their
 * normal forms are identical (for the quasi-affine expressions kbc uses), so
 * sym_equal() is structural.  Rules applied by the constructors include:
 *   constant folding; like terms collected, zero terms dropped; terms and
 *   atoms in a canonical order; floor(X/1) = X, X mod 1 = 0;
 *   floor((c*A + B)/c) = A + floor(B/c) when every coefficient of c*A is a
 *   multiple of c; (c*A + B) mod c = B mod c; floor(floor(X/a)/b) =
 *   floor(X/(a*b)); constants: floor(7/2) = 3, -7 mod 2 = 1.
 *
 * Overflow: any operation whose result would need a coefficient outside
 * int64, and any operation given a NULL operand, returns NULL.  Callers
 * check the final result of a computation once.
 *
 * Before: an arena.  After: syms valid until the arena is destroyed. */
#ifndef KBC_SYM_H
#define KBC_SYM_H

#include <stdint.h>

#include "support/arena.h"
#include "support/buf.h"

typedef struct sym sym;

typedef enum {
  SYM_ATOM_AXIS,  /* a var axis, by id */
  SYM_ATOM_INDEX, /* an index variable, by id */
  SYM_ATOM_DIV,   /* floor(arg / c) */
  SYM_ATOM_MOD,   /* arg mod c */
} sym_atom_kind;

/* ---- construction ------------------------------------------------------ */
sym *sym_const(kbc_arena *a, int64_t value);
sym *sym_axis(kbc_arena *a, int id, const char *name);  /* name used when printing */
sym *sym_index(kbc_arena *a, int id, const char *name);
sym *sym_add(kbc_arena *a, const sym *x, const sym *y);
sym *sym_sub(kbc_arena *a, const sym *x, const sym *y);
sym *sym_neg(kbc_arena *a, const sym *x);
sym *sym_mul(kbc_arena *a, const sym *x, const sym *y);
sym *sym_scale(kbc_arena *a, const sym *x, int64_t c);
sym *sym_div(kbc_arena *a, const sym *x, int64_t c); /* c > 0, else NULL */
sym *sym_mod(kbc_arena *a, const sym *x, int64_t c); /* c > 0, else NULL */

/* ---- inspection -------------------------------------------------------- */
int sym_is_const(const sym *x, int64_t *value); /* value may be NULL */
int sym_equal(const sym *x, const sym *y);
int sym_has_index(const sym *x);                 /* mentions any index variable */
int sym_mentions_index(const sym *x, int id);    /* mentions index variable id */
int sym_has_axis(const sym *x);                  /* mentions any axis variable */
int sym_is_index(const sym *x, int *id);         /* exactly 1*index_var */
int sym_degree(const sym *x);                    /* max atoms in a term (0 for a constant) */
/* Whether x is coeff * (arg mod m) + rest (one mod atom, alone in its
 * term, plus a constant); if so, its parts. */
int sym_as_mod(const sym *x, const sym **arg, int64_t *m, int64_t *coeff, int64_t *rest);

/* Splits x = sum_i coeff[i] * index_i + rest, where coeff[i] and rest
 * mention no index variable.  coeff must have room for n_index entries
 * (ids 0..n_index-1; ids outside that range make it fail).  Fails (returns
 * 0) when x is not affine in the index variables: a product of two index
 * variables, or an index variable inside floor/mod. */
int sym_split_affine(kbc_arena *a, const sym *x, int n_index, sym **coeff, sym **rest);

/* Replaces index variable `id` by `by` (any sym), renormalizing. */
sym *sym_subst_index(kbc_arena *a, const sym *x, int id, const sym *by);
/* Replaces axis variable `id` by `by`. */
sym *sym_subst_axis(kbc_arena *a, const sym *x, int id, const sym *by);

/* ---- evaluation -------------------------------------------------------- */
/* Evaluates x with axis values axes[id] and index values idx[id] (either
 * may be NULL if x mentions none).  Returns 0 on int64 overflow. */
int sym_eval(const sym *x, const int64_t *axes, const int64_t *idx, int64_t *out);
/* An upper bound of |x| and of every partial sum of its terms, with axis
 * values axes[id] (>= 0) and every index variable id anywhere in
 * [0, idx_max[id]]: the sum over terms of |coeff| times each atom's bound
 * (floor(a/c): bound(a)/c + 1; a mod c: c - 1).  Returns 0 on int64
 * overflow or a missing value. */
int sym_bound(const sym *x, const int64_t *axes, const int64_t *idx_max, int64_t *out);

/* ---- printing ---------------------------------------------------------- */
/* Readable spec syntax, deterministic: "2*height - 1", "image_size/4",
 * "-x + 3", "(j/64) % 12", "2*(j/64)" (a div/mod is parenthesized unless it
 * is a whole term with coefficient 1 or -1 after a binary + or -).  NULL
 * prints as "<overflow>". */
void sym_print(const sym *x, kbc_buf *out);
char *sym_str(kbc_arena *a, const sym *x);

/* C syntax for generated code, an int64 (long long) expression,
 * always a C primary expression: anything but a lone atom or a
 * non-negative constant is parenthesized, so the text may stand as the
 * operand of any C operator ("(2LL*w)", "(h - 1LL)", "(-i)").
 * name(ctx, kind, id) gives the C name of an axis or index atom (name may be
 * NULL, or return NULL: the atom's own name is used).  Floor division /
 * modulo are emitted as plain C `/` and `%` when the operand is obviously
 * non-negative (every coefficient positive, every atom an axis, an index
 * variable — assumed >= 0 in generated code —, a mod, or a div of an
 * obviously non-negative operand), else as kbc_floordiv(x, c) /
 * kbc_floormod(x, c), long long functions that the emitter's preamble
 * defines. */
typedef const char *(*sym_namer)(void *ctx, sym_atom_kind kind, int id);
void sym_print_c(const sym *x, kbc_buf *out, sym_namer name, void *ctx);

/* ---- bounds and proofs ------------------------------------------------- */

/* Facts that hold for every valid binding of the var axes.  Every axis
 * variable is >= 1 without being told. */
typedef struct sym_facts sym_facts;
sym_facts *sym_facts_create(kbc_arena *a);
void sym_facts_assume_nonneg(sym_facts *f, const sym *p); /* p >= 0 */
void sym_facts_assume_zero(sym_facts *f, const sym *p);   /* p == 0 (e.g. x mod 4) */

/* 1 when p >= 0 is proven for every binding satisfying the facts; 0 when
 * not proven (which does not mean false).  Sound, not complete. */
int sym_prove_nonneg(kbc_arena *a, const sym_facts *f, const sym *p);
/* Convenience: prove x <= y, x < y, x == y (equal normal forms, or both
 * x <= y and y <= x proven).  f may be NULL (no facts). */
int sym_prove_le(kbc_arena *a, const sym_facts *f, const sym *x, const sym *y);
int sym_prove_lt(kbc_arena *a, const sym_facts *f, const sym *x, const sym *y);
int sym_prove_eq(kbc_arena *a, const sym_facts *f, const sym *x, const sym *y);

/* Interval of x over index variables: index variable id ranges over
 * [lo[id], hi[id]] (inclusive; syms over axes only).  Writes syms over axes
 * *out_lo <= x <= *out_hi.  Returns 0 when no bound can be derived (an
 * index variable with an unknown sign of its coefficient, a product of two
 * index variables, ...).  Uses the facts to decide coefficient signs and
 * to tighten mod: (X mod c) is [lo(X), hi(X)] when 0 <= lo and hi < c are
 * proven, else [0, c-1]. */
int sym_bounds(kbc_arena *a, const sym_facts *f, const sym *x, int n_index,
               sym *const *lo, sym *const *hi, sym **out_lo, sym **out_hi);

#endif
