/* vec_loop.c — a team's loop along contiguous indices, a float4 a thread
 * per step.
 *
 * Before: a rows kernel about to emit a loop of a team over one index j of
 * E->s, or over several flattened into one (a softmax over (ky, kx)), from
 * 0 to its extent: a reduction split across the team (its terms
 * accumulated into a variable) or a statement's inner elements strided
 * across it (each stored).  After cg_vec_loop(): where every load along
 * the flat index (and the store) steps by one element, the loop as two
 * loops — over the part where all those rows are 16-byte aligned, four
 * elements per step through float4 loads (and one float4 store); then a
 * scalar loop over the rest (at most three elements at either end; the
 * whole row when the rows' addresses differ modulo 16 bytes) — and 1;
 * else nothing emitted and 0.  Several indices are decoded from the flat
 * position only where the value needs them.  A row registered in
 * E->cache (a rows kernel's, opt.rows_cache) takes the loop over a
 * thread's float4s unrolled whole: the first such loop keeps them in
 * registers, later ones read those where their head and float4 count
 * match the first's.
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
  const ir_expr *load[CG_MAX_HOISTED]; /* the loads along the flat index, each of one row */
  int row_of[CG_MAX_HOISTED];
  int n_load;
  const ir_tensor *tensor[VEC_MAX_ROWS];
  const char *base[VEC_MAX_ROWS]; /* the row's offset with the indices at 0 (C text) */
  const char *key[VEC_MAX_ROWS];  /* the same under E->key_idx (rows kept in registers), or NULL */
  int n_row;
  int refuse;
} vec_rows;

/* The loads of e along the indices ids[0..n) into R; any such load that is not one
 * float per step (padded, strided, of a tensor the kernel also writes, in
 * a nested reduction) refuses the loop. */
static void collect(cg_emit *E, const ir_expr *e, int n, const int *ids, vec_rows *R, const cg_expr_ctx *x) {
  for (int i = 0; i < E->n_hoisted; i++)
    if (E->hoisted[i] == e && !E->hoisted_recip[i]) return;
  if (e->op == IR_OP_REDUCE) {
    R->refuse = 1;
    return;
  }
  if (e->op != IR_OP_LOAD) {
    for (int i = 0; i < ir_op_info[e->op].arity; i++) collect(E, e->arg[i], n, ids, R, x);
    return;
  }
  int mentions = 0;
  for (int i = 0; i < n; i++) mentions |= ir_expr_mentions_index(e, ids[i]);
  if (!mentions) return;
  const ir_tensor *t = e->u.load.tensor;
  if (cg_value_of(x, t)) { /* a value, not a row in memory */
    R->refuse = 1;
    return;
  }
  sym *base = e->u.load.padded || (E->written && E->written[t->id] == 1) ? NULL : cg_contiguous_base(E, e, n, ids);
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
    R->key[r] = NULL;
    if (E->key_idx) {
      const char **names = E->idx;
      E->idx = E->key_idx;
      R->key[r] = cg_sym(E, base);
      E->idx = names;
    }
    R->n_row++;
  }
  R->row_of[R->n_load] = r;
  R->load[R->n_load++] = e;
}

/* Whether the flat loop over ids[0..n) has a known length, *len. */
static int flat_length(cg_emit *E, int n, const int *ids, int64_t *len) {
  int64_t ext;
  *len = 1;
  for (int i = 0; i < n; i++)
    if (sym_is_const(E->s->index[ids[i]].extent, &ext)) *len *= ext;
    else return 0;
  return 1;
}

int cg_vec_row_keys(cg_emit *E, int n, const int *ids, const ir_expr *value, int *tensor, const char **key,
                    int64_t *len, int max) {
  int64_t l;
  if (E->opt->no_vec || n < 1 || !flat_length(E, n, ids, &l) || l < VEC_MIN_EXTENT) return 0;
  vec_rows R = {0};
  collect(E, value, n, ids, &R, NULL);
  if (R.refuse) return 0;
  int m = 0;
  for (int r = 0; r < R.n_row && m < max; r++)
    if (R.key[r]) tensor[m] = R.tensor[r]->id, key[m] = R.key[r], len[m++] = l;
  return m;
}

/* The cache of row r of R in a loop of `step` threads from `lane` over
 * len floats, or NULL. */
static cg_row_cache *cache_of(cg_emit *E, const vec_rows *R, int r, int known, int64_t len, const char *lane,
                              int step) {
  for (int i = 0; known && R->key[r] && i < E->n_cache; i++) {
    cg_row_cache *c = &E->cache[i];
    if (c->tensor == R->tensor[r]->id && c->len == len && c->step == step && !strcmp(c->lane, lane) &&
        !strcmp(c->key, R->key[r]))
      return c;
  }
  return NULL;
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

/* Index `at` of the flat loop as the indices' values, in a scope the
 * caller closes: one index is the counter itself, several its digits. */
static void open_element(cg_emit *E, int n, const int *ids, const char *at) {
  cg_line(E, "{");
  E->indent++;
  if (n == 1) {
    cg_line(E, "const long long %s = %s;", E->idx[ids[0]], at);
    return;
  }
  const char **dst = KBC_NEW_ARRAY(E->a, const char *, n);
  for (int i = 0; i < n; i++) {
    dst[i] = E->idx[ids[i]];
    cg_line(E, "long long %s;", dst[i]);
  }
  cg_decode(E, cg_fmt(E, "_q%d", E->tmp++), at, ids, n, dst);
}

int cg_vec_loop(cg_emit *E, int n_ids, const int *ids, const char *lane, int step, const cg_vec_body *b,
                const cg_expr_ctx *x) {
  if (E->opt->no_vec || n_ids < 1) return 0;
  int64_t len;
  int known = flat_length(E, n_ids, ids, &len);
  if (known && len < VEC_MIN_EXTENT) return 0;
  const char *extent_text = n_ids == 1 ? cg_sym(E, E->s->index[ids[0]].extent) : cg_extent_product(E, ids, n_ids);
  vec_rows R = {0};
  int store_row = -1;
  if (b->target) { /* the store's row first: row 0 */
    const ir_tensor *t = b->target->u.load.tensor;
    sym *base = cg_contiguous_base(E, b->target, n_ids, ids);
    if (!base || E->s->accumulate) return 0;
    R.tensor[0] = t;
    R.base[0] = cg_sym(E, base);
    R.n_row = 1;
    store_row = 0;
  }
  collect(E, b->value, n_ids, ids, &R, x);
  if (R.refuse || R.n_load == 0 || E->n_hoisted + R.n_load > CG_MAX_HOISTED) return 0;
  for (int i = 0; i < R.n_load && store_row == 0; i++)
    if (R.load[i]->u.load.tensor == R.tensor[0]) return 0; /* reads what it writes */

  const char *n = cg_fmt(E, "_n%d", E->tmp++), *hd = cg_fmt(E, "_hd%d", E->tmp++),
             *nv = cg_fmt(E, "_nv%d", E->tmp++), *jv = cg_fmt(E, "_jv%d", E->tmp++),
             *js = cg_fmt(E, "_js%d", E->tmp++);
  const char *row[VEC_MAX_ROWS];
  const char *along = E->idx[ids[0]];
  for (int i = 1; i < n_ids; i++) along = cg_fmt(E, "%s, %s", along, E->idx[ids[i]]);
  cg_line(E, "{ // along %s: float4 where every row below is 16-byte aligned, the rest a float at a time", along);
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
  cg_line(E, "const long long %s = %s;", n, extent_text);
  cg_line(E, "long long %s = %s, %s = 0; // elements a float at a time before the float4s; float4s", hd, n, nv);
  if (same) cg_line(E, "if (((%s) & 15) == 0) { // the rows alike modulo 16 bytes", same);
  else cg_line(E, "{");
  cg_line(E, "  %s = (long long)((0 - ((unsigned long long)%s >> 2)) & 3);", hd, row[0]);
  cg_line(E, "  if (%s > %s) %s = %s;", hd, n, hd, n);
  cg_line(E, "  %s = (%s - %s) / 4;", nv, n, hd);
  cg_line(E, "}");

  /* rows kept in registers (opt.rows_cache): the loop over a thread's
   * float4s unrolled whole, the first loop reading such a row filling
   * its registers, a later one reading them where its head and float4
   * count are the filler's (else memory, as without them) */
  cg_row_cache *rc[VEC_MAX_ROWS] = {0};
  const char *rok[VEC_MAX_ROWS] = {0};
  int cached = 0;
  for (int r = 0; r < R.n_row; r++)
    if (r != store_row && (rc[r] = cache_of(E, &R, r, known, len, lane, step))) {
      cached = 1;
      if (rc[r]->filled) {
        rok[r] = cg_fmt(E, "_rok%d", E->tmp++);
        cg_line(E, "const bool %s = %s == %s && %s == %s; // %s's registers hold this loop's float4s", rok[r], hd,
                rc[r]->hd, nv, rc[r]->nv, R.tensor[r]->name);
      }
    }

  /* float4s, unrolled (opt.unroll) unless a thread takes at most one:
   * a constant row of len elements gives it ceil(len / 4 / step) float4s,
   * and a loop of one iteration unrolled only adds code and registers (a
   * layernorm over rows of 1,024 on 256 threads: 0.85x unrolled once,
   * side by side on the H200, 2026-12-04, docs/results/2026-12-04-tune-unroll.txt) */
  const char *v4[VEC_MAX_ROWS];
  int unroll = E->opt->unroll;
  if (known && (len / 4 + step - 1) / step <= 1) unroll = 1;
  const char *kq = NULL;
  if (cached) { /* a thread's float4s, at most ceil(len / 4 / step) */
    kq = cg_fmt(E, "_kq%d", E->tmp++);
    cg_line(E, "#pragma unroll");
    cg_line(E, "for (int %s = 0; %s < %d; ++%s) {", kq, kq, (int)((len / 4 + step - 1) / step), kq);
    E->indent++;
    cg_line(E, "const long long %s = %s + %s * %d;", jv, lane, kq, step);
    cg_line(E, "if (%s >= %s) break;", jv, nv);
  } else {
    cg_line(E, "#pragma unroll %d", unroll);
    cg_line(E, "for (long long %s = %s; %s < %s; %s += %d) {", jv, lane, jv, nv, jv, step);
    E->indent++;
  }
  const char *at = cg_fmt(E, "_j%d", E->tmp++);
  cg_line(E, "const long long %s = %s + 4 * %s;", at, hd, jv);
  for (int r = 0; r < R.n_row; r++) {
    if (r == store_row) continue;
    v4[r] = cg_fmt(E, "_v%d", E->tmp++);
    const char *ld = cg_fmt(E, "%s((const float4 *)(%s + %s))", cg_ld4(E, R.tensor[r]), row[r], at);
    if (rc[r] && rok[r])
      cg_line(E, "const float4 %s = %s ? %s[%s] : %s;", v4[r], rok[r], rc[r]->name, kq, ld);
    else if (rc[r]) {
      cg_line(E, "const float4 %s = %s;", v4[r], ld);
      cg_line(E, "%s[%s] = %s; // kept for the statements after", rc[r]->name, kq, v4[r]);
    } else cg_line(E, "const float4 %s = %s;", v4[r], ld);
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
    int own_index = cg_mentions_unhoisted(E, b->value, ids, n_ids); /* the element's own indices needed */
    if (own_index) open_element(E, n_ids, ids, cg_fmt(E, "%s + %d", at, q));
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
  for (int r = 0; r < R.n_row; r++)
    if (rc[r] && !rok[r]) { /* filled: with this head and float4 count */
      cg_line(E, "%s = %s, %s = %s;", rc[r]->hd, hd, rc[r]->nv, nv);
      rc[r]->filled = 1;
    }

  /* the rest: the head, then the tail past the float4s */
  cg_line(E, "for (long long %s = %s; %s < %s - 4 * %s; %s += %d) {", js, lane, js, n, nv, js, step);
  E->indent++;
  /* the flat position: one index is it, several are its digits, decoded
   * where the value reads them */
  const char *f = n_ids == 1 ? E->idx[ids[0]] : cg_fmt(E, "_f%d", E->tmp++);
  cg_line(E, "const long long %s = %s < %s ? %s : %s + 4 * %s;", f, js, hd, js, js, nv);
  const char *elem[VEC_MAX_ROWS];
  for (int r = 0; r < R.n_row; r++) elem[r] = cg_fmt(E, "%s[%s]", row[r], f);
  int saved = E->n_hoisted;
  substitute(E, &R, elem);
  int digits = n_ids > 1 && cg_mentions_unhoisted(E, b->value, ids, n_ids);
  if (digits) open_element(E, n_ids, ids, f);
  const char *v = element(E, b, x);
  if (v) cg_line(E, "%s[%s] = %s;", row[0], f, v);
  if (digits) cg_close_block(E);
  E->n_hoisted = saved;
  E->indent--;
  cg_line(E, "}");
  E->indent--;
  cg_line(E, "}");
  return 1;
}
