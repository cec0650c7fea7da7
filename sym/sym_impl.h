/* sym_impl.h — the representation of syms, private to sym/sym.c and
 * sym/sym_prove.c.  Nothing else may include it.
 *
 * A sym is a sorted array of terms; a term is a nonzero coefficient times a
 * sorted array of atom pointers (an atom repeated k times is a k-th power).
 * Terms are ordered by degree (highest first), then by their atoms, so the
 * constant term, if any, is last.  The zero sym has no terms. */
#ifndef KBC_SYM_IMPL_H
#define KBC_SYM_IMPL_H

#include <stdbool.h>

#include "sym.h"

typedef struct sym_atom {
  sym_atom_kind kind;
  int id;           /* axis, index */
  const char *name; /* axis, index; may be NULL */
  const sym *arg;   /* div, mod: a normalized, non-constant sym */
  int64_t c;        /* div, mod: >= 2 */
} sym_atom;

typedef struct {
  int64_t coeff;            /* never 0 */
  int n;                    /* number of factors (the term's degree) */
  const sym_atom *const *f; /* n factors, sorted by sym_atom_cmp */
} sym_term;

struct sym {
  int n;
  const sym_term *t;
};

/* Collects terms, then normalizes them into a sym (NULL after any overflow
 * or NULL input, which sets `bad`). */
typedef struct {
  kbc_arena *a;
  sym_term *t;
  int n, cap;
  bool bad;
} sym_builder;

void sym_builder_term(sym_builder *b, int64_t coeff, int n, const sym_atom *const *f);
void sym_builder_add(sym_builder *b, const sym *x, int64_t scale); /* += scale*x */
sym *sym_builder_finish(sym_builder *b);

int sym_atom_cmp(const sym_atom *x, const sym_atom *y);
sym *sym_of_atom(kbc_arena *a, const sym_atom *t);

/* Rebuilds x with every atom t replaced by the sym that fn gives: fn returns
 * 1 after setting *out (NULL means failure), or 0 to keep t — an axis or
 * index atom as it is, a div/mod atom with fn applied inside its argument.
 * Returns NULL on failure or overflow. */
typedef int (*sym_atom_fn)(void *ctx, const sym_atom *t, const sym **out);
sym *sym_map_atoms(kbc_arena *a, const sym *x, sym_atom_fn fn, void *ctx);

/* Floor division and non-negative remainder for c > 0 (never overflow). */
static inline int64_t sym_floordiv(int64_t x, int64_t c) {
  int64_t q = x / c;
  return (x % c != 0 && x < 0) ? q - 1 : q;
}
static inline int64_t sym_floormod(int64_t x, int64_t c) {
  int64_t r = x % c;
  return r < 0 ? r + c : r;
}

#endif
