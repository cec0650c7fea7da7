/* interp_compile.c — compiles one statement for one binding into the
 * interpreter's evaluation plan (see interp_impl.h).
 *
 * Before: a verified statement, a binding.  After: a plan in the arena
 * whose every node is resolved: constants folded, each load classified as
 * FLAT (proven inside its tensor over the whole iteration box: a tracked
 * offset plus a cached slot for non-affine dimensions, no checks) or DIMS
 * (each dimension tracked or cached, checked per read), each reduction's
 * variables and extents known.  The compiler re-checks the scoping
 * invariants that the evaluator's memory safety depends on (an index used
 * only inside its loop, each reduction index reduced once), reporting
 * breaks as internal errors. */
#include <string.h>

#include "interp_impl.h"

typedef struct {
  kbc_arena *a;
  const ir_program *p;
  const ir_binding *b;
  const ir_stmt *s;
  kbc_diag *d;
  interp_plan *pl;
  char *in_scope; /* per index: its loop encloses the node being compiled */
  char *reduced;  /* per index: bound by a reduction node already */
  int n_empty;    /* indices in scope with extent < 1: nothing here ever runs */
  sym **coeff;    /* scratch for sym_split_affine */
  sym **lo, **hi; /* per index: 0 and extent - 1, for sym_bounds */
  int64_t *scratch; /* n_index * (IR_BIND_MAX_RANK + 2) */
  int ok;
} comp;

static void fail(comp *c, const char *what) {
  if (c->ok)
    kbc_internal(c->d, c->s->loc, "interpreter: statement '%s' (writing '%s'): %s",
                 c->s->text ? c->s->text : "?", c->s->out ? c->s->out->name : "?", what);
  c->ok = 0;
}

/* Makes room for one more element of an arena array. */
static void *grow(kbc_arena *a, void *items, int len, int *cap, size_t size) {
  if (len < *cap) return items;
  int ncap = *cap ? *cap * 2 : 8;
  items = kbc_arena_grow(a, items, size * (size_t)*cap, size * (size_t)ncap);
  *cap = ncap;
  return items;
}

/* ---- tracked values ----------------------------------------------------- */

/* x = base + sum coef[v]*idx[v], evaluated for the binding; indices that
 * never move (extent 1) get coefficient 0.  0 when x is not affine in the
 * indices or a value overflows. */
static int affine(comp *c, const sym *x, int64_t *coef, int64_t *base) {
  int n = c->pl->n_index;
  sym *rest;
  if (!sym_split_affine(c->a, x, n, c->coeff, &rest)) return 0;
  for (int v = 0; v < n; v++) {
    coef[v] = 0;
    if (c->pl->var[v].ext > 1 && !sym_eval(c->coeff[v], c->b->vars, NULL, &coef[v])) return 0;
  }
  return sym_eval(rest, c->b->vars, NULL, base);
}

/* The range [lo, hi] of base + sum coef[v]*idx[v] over the iteration box
 * (every index in scope over [0, ext)); 0 on overflow. */
static int box(const comp *c, int64_t base, const int64_t *coef, int64_t *lo, int64_t *hi) {
  *lo = *hi = base;
  for (int v = 0; v < c->pl->n_index; v++) {
    if (!coef[v]) continue;
    int64_t span;
    if (__builtin_mul_overflow(coef[v], c->pl->var[v].ext - 1, &span)) return 0;
    if (__builtin_add_overflow(span < 0 ? *lo : *hi, span, span < 0 ? lo : hi)) return 0;
  }
  return 1;
}

/* A new tracked value; its box must have been computed without overflow
 * (so that no update overflows). */
static int new_tv(comp *c, int64_t base, const int64_t *coef) {
  interp_plan *pl = c->pl;
  pl->tv0 = grow(c->a, pl->tv0, pl->n_tv, &pl->cap_tv, sizeof *pl->tv0);
  int t = pl->n_tv++;
  pl->tv0[t] = base;
  for (int v = 0; v < pl->n_index; v++) {
    if (!coef[v]) continue;
    interp_var *iv = &pl->var[v];
    iv->upd = grow(c->a, iv->upd, iv->n_upd, &iv->cap_upd, sizeof *iv->upd);
    iv->upd[iv->n_upd++] = (interp_upd){t, coef[v], coef[v] * (iv->ext - 1)};
  }
  return t;
}

/* A new slot: sum scale[i] * syms[i]; invalidated by every index it mentions. */
static int new_slot(comp *c, int n, const sym **syms, const int64_t *scale) {
  interp_plan *pl = c->pl;
  pl->slot = grow(c->a, pl->slot, pl->n_slots, &pl->cap_slots, sizeof *pl->slot);
  int k = pl->n_slots++;
  interp_slot *sl = &pl->slot[k];
  *sl = (interp_slot){.n = n};
  sl->syms = KBC_NEW_ARRAY(c->a, const sym *, n);
  sl->scale = KBC_NEW_ARRAY(c->a, int64_t, n);
  memcpy(sl->syms, syms, sizeof(const sym *) * (size_t)n);
  memcpy(sl->scale, scale, sizeof(int64_t) * (size_t)n);
  for (int v = 0; v < pl->n_index; v++) {
    int mentions = 0;
    for (int i = 0; i < n; i++) mentions |= sym_mentions_index(syms[i], v);
    if (!mentions) continue;
    interp_var *iv = &pl->var[v];
    iv->dirty = grow(c->a, iv->dirty, iv->n_dirty, &iv->cap_dirty, sizeof *iv->dirty);
    iv->dirty[iv->n_dirty++] = k;
  }
  return k;
}

static int slot_mentions(const interp_plan *pl, int slot, int v) {
  for (int i = 0; i < pl->var[v].n_dirty; i++)
    if (pl->var[v].dirty[i] == slot) return 1;
  return 0;
}

/* The range of a non-affine index sym over the box, by sym_bounds; 0 when
 * no bound can be proven. */
static int prove_range(comp *c, const sym *x, int64_t *lo, int64_t *hi) {
  sym *l, *h;
  return sym_bounds(c->a, c->p->facts, x, c->pl->n_index, c->lo, c->hi, &l, &h) &&
         sym_eval(l, c->b->vars, NULL, lo) && sym_eval(h, c->b->vars, NULL, hi);
}

/* Checks that x exists and mentions only indices whose loops enclose it. */
static int check_scope(comp *c, const sym *x) {
  if (!x) {
    fail(c, "missing (overflowed) index expression");
    return 0;
  }
  for (int v = 0; v < c->pl->n_index; v++)
    if (!c->in_scope[v] && sym_mentions_index(x, v)) {
      char *m = kbc_arena_printf(c->a, "index '%s' used outside its loop",
                                 c->s->index[v].name ? c->s->index[v].name : "?");
      fail(c, m);
      return 0;
    }
  /* No index beyond the statement's: sym_eval would read past idx[]. */
  const sym *y = x;
  for (int v = 0; v < c->pl->n_index && y; v++)
    if (sym_mentions_index(y, v)) y = sym_subst_index(c->a, y, v, sym_const(c->a, 0));
  if (!y || sym_has_index(y)) {
    fail(c, "index expression mentions an index the statement does not have");
    return 0;
  }
  return 1;
}

/* ---- nodes -------------------------------------------------------------- */

static int add_node(comp *c, int op, int a, int b, int k) {
  interp_plan *pl = c->pl;
  pl->node = grow(c->a, pl->node, pl->n_nodes, &pl->cap_nodes, sizeof *pl->node);
  pl->node[pl->n_nodes] = (interp_node){.op = op, .a = a, .b = b, .c = k, .v = -1};
  return pl->n_nodes++;
}

static int add_const(comp *c, double v) {
  int n = add_node(c, IR_OP_CONST, 0, 0, 0);
  c->pl->node[n].value = v;
  return n;
}

static int is_const(const comp *c, int n) { return c->pl->node[n].op == IR_OP_CONST; }
static double const_of(const comp *c, int n) { return c->pl->node[n].value; }

/* A load of t at idx (or the statement's target): FLAT when every
 * dimension is proven inside t over the box, else DIMS. */
static int compile_access(comp *c, const ir_tensor *t, sym *const *idx, int padded) {
  interp_plan *pl = c->pl;
  int n = pl->n_index, rank = t->rank;
  if (t->id < 0 || t->id >= c->b->n_tensors || rank < 0 || rank > IR_BIND_MAX_RANK) {
    fail(c, "access to a tensor the binding does not know");
    return -1;
  }
  pl->acc = grow(c->a, pl->acc, pl->n_acc, &pl->cap_acc, sizeof *pl->acc);
  int k = pl->n_acc++;
  interp_access *ac = &pl->acc[k];
  *ac = (interp_access){.t = t, .idx = (const sym *const *)idx, .padded = padded, .rank = rank};
  ac->shape = c->b->shape[t->id];
  ac->stride = KBC_NEW_ARRAY(c->a, int64_t, rank + 1);
  ac->dim_tv = KBC_NEW_ARRAY(c->a, int, rank + 1);
  ac->dim_slot = KBC_NEW_ARRAY(c->a, int, rank + 1);
  int64_t size = 1;
  for (int d = rank - 1; d >= 0; d--) {
    ac->stride[d] = size;
    size *= ac->shape[d]; /* numel <= 2^40: no overflow */
  }
  /* scratch: coef[d*n + v], base[d], then the flat coefficients */
  int64_t *coef = c->scratch, *base = coef + (size_t)n * IR_BIND_MAX_RANK;
  int64_t *fcoef = base + IR_BIND_MAX_RANK, fbase = 0, slot_lo = 0, slot_hi = 0, x;
  int tracked[IR_BIND_MAX_RANK + 1], inside = !c->n_empty, ovf = 0, n_rest = 0;
  const sym *rest[IR_BIND_MAX_RANK + 1];
  int64_t rest_scale[IR_BIND_MAX_RANK + 1];
  for (int v = 0; v < n; v++) fcoef[v] = 0;
  for (int d = 0; d < rank; d++) {
    if (!check_scope(c, idx[d])) return -1;
    int64_t *cd = coef + (size_t)d * n, lo = 0, hi = -1;
    tracked[d] = !c->n_empty && affine(c, idx[d], cd, &base[d]) && box(c, base[d], cd, &lo, &hi);
    int known = tracked[d] || (!c->n_empty && prove_range(c, idx[d], &lo, &hi));
    inside = inside && known && lo >= 0 && hi < ac->shape[d];
    if (!inside) continue; /* DIMS: only tracked[] matters from here */
    if (tracked[d]) {
      ovf |= __builtin_mul_overflow(base[d], ac->stride[d], &x) || __builtin_add_overflow(fbase, x, &fbase);
      for (int v = 0; v < n; v++)
        ovf |= __builtin_mul_overflow(cd[v], ac->stride[d], &x) || __builtin_add_overflow(fcoef[v], x, &fcoef[v]);
    } else {
      /* lo, hi in [0, shape): the products stay below numel <= 2^40 */
      slot_lo += lo * ac->stride[d];
      slot_hi += hi * ac->stride[d];
      rest[n_rest] = idx[d];
      rest_scale[n_rest++] = ac->stride[d];
    }
  }
  if (inside && !ovf) {
    ac->mode = INTERP_ACC_FLAT;
    ac->flat = new_tv(c, fbase, fcoef);
    ac->slot = n_rest ? new_slot(c, n_rest, rest, rest_scale) : -1;
    if (ac->slot >= 0) {
      interp_slot *sl = &pl->slot[ac->slot];
      sl->proven = 1, sl->lo = slot_lo, sl->hi = slot_hi;
    }
    return k;
  }
  ac->mode = INTERP_ACC_DIMS;
  for (int d = 0; d < rank; d++) {
    int64_t one = 1;
    ac->dim_tv[d] = tracked[d] ? new_tv(c, base[d], coef + (size_t)d * n) : -1;
    ac->dim_slot[d] = tracked[d] ? -1 : new_slot(c, 1, (const sym **)&idx[d], &one);
  }
  return k;
}

static int compile_expr(comp *c, const ir_expr *e);

static int compile_load(comp *c, const ir_expr *e) {
  const ir_tensor *t = e->u.load.tensor;
  if (!t) {
    fail(c, "load of no tensor");
    return -1;
  }
  int k = compile_access(c, t, e->u.load.idx, e->u.load.padded);
  if (k < 0) return -1;
  const interp_access *ac = &c->pl->acc[k];
  if (ac->mode == INTERP_ACC_DIMS) return add_node(c, INODE_LOAD_DIMS, k, 0, 0);
  if (ac->slot < 0) return add_node(c, INODE_LOAD_FLAT, k, ac->flat, 0);
  return add_node(c, INODE_LOAD_MIXED, k, ac->flat, ac->slot);
}

static int compile_index(comp *c, const sym *x) {
  if (!check_scope(c, x)) return -1;
  int64_t v;
  if (sym_is_const(x, &v)) return add_const(c, (double)v);
  int64_t *coef = c->scratch, base, lo, hi;
  if (!c->n_empty && affine(c, x, coef, &base) && box(c, base, coef, &lo, &hi))
    return add_node(c, INODE_INDEX_TV, new_tv(c, base, coef), 0, 0);
  int64_t one = 1;
  int k = new_slot(c, 1, &x, &one);
  interp_slot *sl = &c->pl->slot[k];
  sl->proven = !c->n_empty && prove_range(c, x, &sl->lo, &sl->hi);
  return add_node(c, INODE_INDEX_SLOT, k, 0, 0);
}

/* The step of tracked value tv along index v. */
static int64_t step_of(const interp_plan *pl, int tv, int v) {
  const interp_var *iv = &pl->var[v];
  for (int i = 0; i < iv->n_upd; i++)
    if (iv->upd[i].tv == tv) return iv->upd[i].step;
  return 0;
}

/* Whether node k is a FLAT load whose slot (if any) stays constant
 * while the reduction rd runs. */
static int dot_load(const interp_plan *pl, int k, const interp_reduce *rd) {
  const interp_node *x = &pl->node[k];
  if (x->op == INODE_LOAD_FLAT) return 1;
  if (x->op != INODE_LOAD_MIXED) return 0;
  for (int i = 0; i < rd->n_vars; i++)
    if (slot_mentions(pl, x->c, rd->vars[i])) return 0;
  return 1;
}

/* Turns a sum over a flat load or a product of two into INODE_DOT. */
static void try_dot(comp *c, int n) {
  interp_plan *pl = c->pl;
  interp_node *x = &pl->node[n];
  interp_reduce *rd = &pl->red[x->b];
  if (rd->op != IR_RED_SUM) return;
  const interp_node *body = &pl->node[x->a];
  int loads[2], n_loads = 0;
  if (dot_load(pl, x->a, rd)) {
    loads[n_loads++] = x->a;
  } else if (body->op == IR_OP_MUL && dot_load(pl, body->a, rd) && dot_load(pl, body->b, rd)) {
    loads[n_loads++] = body->a;
    loads[n_loads++] = body->b;
  } else {
    return;
  }
  int inner = rd->vars[rd->n_vars - 1];
  rd->n_loads = n_loads;
  for (int i = 0; i < n_loads; i++) {
    const interp_node *ld = &pl->node[loads[i]];
    rd->acc[i] = ld->a;
    rd->tv[i] = ld->b;
    rd->slot[i] = ld->op == INODE_LOAD_MIXED ? ld->c : -1;
    rd->step[i] = step_of(pl, rd->tv[i], inner);
  }
  x->op = INODE_DOT;
}

/* Merges a reduction's indices y, x (x innermost) into x running over
 * ext_y * ext_x points, when that visits the same offsets in the same
 * order: every tracked value moves by step_y == step_x * ext_x, and no
 * cached slot mentions either. */
static int collapse(interp_plan *pl, int y, int x) {
  interp_var *vy = &pl->var[y], *vx = &pl->var[x];
  int64_t ext, s;
  if (vy->n_dirty || vx->n_dirty || vx->ext < 1 || vy->ext < 1 ||
      __builtin_mul_overflow(vy->ext, vx->ext, &ext))
    return 0;
  for (int u = 0; u < vy->n_upd; u++)
    if (__builtin_mul_overflow(step_of(pl, vy->upd[u].tv, x), vx->ext, &s) || s != vy->upd[u].step)
      return 0;
  for (int u = 0; u < vx->n_upd; u++)
    if (step_of(pl, vx->upd[u].tv, y) != vx->upd[u].step * vx->ext) return 0;
  vx->ext = ext;
  for (int u = 0; u < vx->n_upd; u++) vx->upd[u].wrap = vx->upd[u].step * (ext - 1);
  vy->n_upd = 0;
  return 1;
}

/* The indices a reduction loops over: without those of extent 1 (they
 * never move), collapsed where possible, at least one. */
static int *loop_vars(comp *c, const int *vars, int nv, int *out_n) {
  interp_plan *pl = c->pl;
  int *lv = KBC_NEW_ARRAY(c->a, int, nv);
  int m = 0;
  for (int i = 0; i < nv; i++)
    if (pl->var[vars[i]].ext != 1 || (m == 0 && i == nv - 1)) lv[m++] = vars[i];
  while (m >= 2 && collapse(pl, lv[m - 2], lv[m - 1])) {
    lv[m - 2] = lv[m - 1];
    m--;
  }
  *out_n = m;
  return lv;
}

static int compile_reduce(comp *c, const ir_expr *e) {
  interp_plan *pl = c->pl;
  int nv = e->u.reduce.n_vars;
  const int *vars = e->u.reduce.vars;
  if (nv < 0 || (nv > 0 && !vars) || (unsigned)e->u.reduce.op >= IR_RED_COUNT) {
    fail(c, "malformed reduction");
    return -1;
  }
  for (int i = 0; i < nv; i++) {
    int v = vars[i];
    if (v < 0 || v >= pl->n_index || c->s->index[v].kind != IR_IDX_REDUCE || c->reduced[v] ||
        c->in_scope[v]) {
      fail(c, "reduction over an index that is not a reduction index, or reduced twice");
      return -1;
    }
    c->reduced[v] = c->in_scope[v] = 1;
    c->n_empty += pl->var[v].ext < 1;
  }
  int body = compile_expr(c, e->arg[0]);
  for (int i = 0; i < nv; i++) {
    c->in_scope[vars[i]] = 0;
    c->n_empty -= pl->var[vars[i]].ext < 1;
  }
  if (body < 0) return -1;
  if (nv == 0) return body;
  int nl;
  const int *lv = loop_vars(c, vars, nv, &nl);
  pl->red = grow(c->a, pl->red, pl->n_red, &pl->cap_red, sizeof *pl->red);
  pl->red[pl->n_red] = (interp_reduce){.op = e->u.reduce.op, .n_vars = nl, .vars = lv};
  int n = add_node(c, IR_OP_REDUCE, body, pl->n_red++, 0);
  try_dot(c, n);
  return n;
}

static int compile_expr(comp *c, const ir_expr *e) {
  if (!e || (unsigned)e->op >= IR_OP_COUNT) {
    fail(c, "missing or unknown expression");
    return -1;
  }
  switch (e->op) {
  case IR_OP_CONST: return add_const(c, e->u.value);
  case IR_OP_INDEX: return compile_index(c, e->u.index);
  case IR_OP_LOAD: return compile_load(c, e);
  case IR_OP_REDUCE: return compile_reduce(c, e);
  default: break;
  }
  int arity = ir_op_info[e->op].arity, arg[3] = {0, 0, 0}, all_const = 1;
  for (int i = 0; i < arity; i++) {
    if ((arg[i] = compile_expr(c, e->arg[i])) < 0) return -1;
    all_const = all_const && is_const(c, arg[i]);
  }
  if (e->op == IR_OP_WHERE && is_const(c, arg[0]))
    return const_of(c, arg[0]) != 0.0 ? arg[1] : arg[2];
  if (all_const && arity == 1) return add_const(c, interp_unary(e->op, const_of(c, arg[0])));
  if (all_const && arity == 2)
    return add_const(c, interp_binary(e->op, const_of(c, arg[0]), const_of(c, arg[1])));
  return add_node(c, e->op, arg[0], arg[1], arg[2]);
}

/* ---- vectorization ------------------------------------------------------ */

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

int interp_vectorize = 1;

/* Operand i of node x. */
static int arg_of(const interp_node *x, int i) { return i == 0 ? x->a : i == 1 ? x->b : x->c; }

/* Bottom-up flags: children always come before their parent in the node
 * array (they are compiled first). */
static void mark_flags(interp_plan *pl) {
  for (int n = 0; n < pl->n_nodes; n++) {
    interp_node *x = &pl->node[n];
    switch (x->op) {
    case INODE_LOAD_DIMS: x->flags = pl->acc[x->a].padded ? 0 : INODE_UNSAFE; break;
    case INODE_INDEX_SLOT: x->flags = pl->slot[x->a].proven ? 0 : INODE_UNSAFE; break;
    case IR_OP_CONST: case INODE_LOAD_FLAT: case INODE_LOAD_MIXED: case INODE_INDEX_TV: break;
    case INODE_DOT: x->flags = INODE_HEAVY; break;
    case IR_OP_REDUCE: x->flags = INODE_HEAVY | pl->node[x->a].flags; break;
    default:
      for (int i = 0; i < ir_op_info[x->op].arity; i++) x->flags |= pl->node[arg_of(x, i)].flags;
    }
  }
}

/* Whether the value of node n does not depend on index v. */
static int uniform(const interp_plan *pl, int n, int v) {
  const interp_node *x = &pl->node[n];
  switch (x->op) {
  case IR_OP_CONST: return 1;
  case INODE_LOAD_FLAT: return !step_of(pl, x->b, v);
  case INODE_LOAD_MIXED: return !step_of(pl, x->b, v) && !slot_mentions(pl, x->c, v);
  case INODE_INDEX_TV: return !step_of(pl, x->a, v);
  case INODE_INDEX_SLOT: return !slot_mentions(pl, x->a, v);
  case INODE_LOAD_DIMS: {
    const interp_access *ac = &pl->acc[x->a];
    for (int d = 0; d < ac->rank; d++)
      if (ac->dim_tv[d] >= 0 ? step_of(pl, ac->dim_tv[d], v) != 0 : slot_mentions(pl, ac->dim_slot[d], v))
        return 0;
    return 1;
  }
  case INODE_DOT: {
    const interp_reduce *rd = &pl->red[x->b];
    for (int i = 0; i < rd->n_loads; i++)
      if (step_of(pl, rd->tv[i], v) || (rd->slot[i] >= 0 && slot_mentions(pl, rd->slot[i], v)))
        return 0;
    return 1;
  }
  case IR_OP_REDUCE: return uniform(pl, x->a, v);
  default:
    for (int i = 0; i < ir_op_info[x->op].arity; i++)
      if (!uniform(pl, arg_of(x, i), v)) return 0;
    return 1;
  }
}

/* Top-down: node n runs in the vector context of index v (-1: pointwise).
 * Outside any vector context a reduction vectorizes along its innermost
 * index; inside one, a subtree independent of v is evaluated once per
 * vector, and nodes that cannot run as a vector (checked loads, cached
 * index values depending on v, DOTs, a where() or &&/|| whose untaken side
 * may fail or is costly) run point by point; both evaluate their operands
 * outside any vector context. */
static void assign(interp_plan *pl, int n, int v) {
  interp_node *x = &pl->node[n];
  int arity = x->op < IR_OP_COUNT ? ir_op_info[x->op].arity : 0, lazy = 0;
  if (v >= 0 && x->op != IR_OP_CONST && uniform(pl, n, v)) {
    x->flags |= INODE_UNIFORM;
    v = -1;
  }
  x->v = v;
  if (v < 0) {
    if (x->op == IR_OP_REDUCE) {
      const interp_reduce *rd = &pl->red[x->b];
      x->flags |= INODE_VROOT;
      pl->uses_vec = 1;
      assign(pl, x->a, rd->vars[rd->n_vars - 1]);
      return;
    }
    for (int i = 0; i < arity; i++) assign(pl, arg_of(x, i), -1);
    return;
  }
  switch (x->op) {
  case IR_OP_CONST: return;
  case INODE_LOAD_FLAT: x->vstep = step_of(pl, x->b, v); return;
  case INODE_INDEX_TV: x->vstep = step_of(pl, x->a, v); return;
  case INODE_LOAD_MIXED:
    if (slot_mentions(pl, x->c, v)) x->flags |= INODE_POINTWISE;
    x->vstep = step_of(pl, x->b, v);
    return;
  case INODE_INDEX_SLOT: case INODE_LOAD_DIMS: case INODE_DOT: /* not uniform */
    x->flags |= INODE_POINTWISE;
    return;
  case IR_OP_REDUCE: assign(pl, x->a, v); return;
  case IR_OP_WHERE: /* a uniform condition picks one side for the whole vector */
    lazy = !uniform(pl, x->a, v) && ((pl->node[x->b].flags | pl->node[x->c].flags) & (INODE_UNSAFE | INODE_HEAVY));
    break;
  case IR_OP_AND: case IR_OP_OR:
    lazy = !uniform(pl, x->a, v) && (pl->node[x->b].flags & (INODE_UNSAFE | INODE_HEAVY));
    break;
  default: break;
  }
  if (lazy) x->flags |= INODE_POINTWISE;
  for (int i = 0; i < arity; i++) assign(pl, arg_of(x, i), lazy ? -1 : v);
}

/* The loads inside reductions that stride (|step| > 1) along their vector
 * index: v, or when v < 0 the innermost index of their outermost
 * reduction. */
static int strided(const interp_plan *pl, int n, int v, int in_reduction) {
  const interp_node *x = &pl->node[n];
  switch (x->op) {
  case INODE_LOAD_FLAT: case INODE_LOAD_MIXED:
    return in_reduction && abs64(step_of(pl, x->b, v)) > 1;
  case IR_OP_REDUCE: {
    const interp_reduce *rd = &pl->red[x->b];
    return strided(pl, x->a, v >= 0 ? v : rd->vars[rd->n_vars - 1], 1);
  }
  case INODE_DOT: return 0; /* runs the same either way */
  default: {
    int sum = 0;
    for (int i = 0; x->op < IR_OP_COUNT && i < ir_op_info[x->op].arity; i++)
      sum += strided(pl, arg_of(x, i), v, in_reduction);
    return sum;
  }
  }
}

/* Sets up vectorized evaluation: along j, the innermost outer index, when
 * the target is a flat access not cached along j and the statement has no
 * reductions or its reductions' loads stride less along j than along
 * their own innermost index; else inside the reductions. */
static void plan_vectors(interp_plan *pl) {
  if (!interp_vectorize) return;
  mark_flags(pl);
  const interp_access *lhs = &pl->acc[pl->lhs];
  int j = pl->n_outer > 0 ? pl->outer[pl->n_outer - 1] : -1;
  if (j >= 0 && lhs->mode == INTERP_ACC_FLAT && (lhs->slot < 0 || !slot_mentions(pl, lhs->slot, j)) &&
      (!(pl->node[pl->root].flags & INODE_HEAVY) ||
       strided(pl, pl->root, j, 0) < strided(pl, pl->root, -1, 0))) {
    pl->vec_top = pl->uses_vec = 1;
    pl->lhs_vstep = step_of(pl, lhs->flat, j);
    assign(pl, pl->root, j);
  } else {
    assign(pl, pl->root, -1);
  }
}

/* ---- statements --------------------------------------------------------- */

/* Chooses row mode (see interp_plan) when the DOT at the root strides
 * worse along its innermost reduction index than along j. */
static void plan_rows(interp_plan *pl) {
  pl->row_dot = -1;
  if (pl->s->accumulate || pl->n_outer < 1) return;
  const interp_node *root = &pl->node[pl->root];
  int dot = -1;
  if (root->op == INODE_DOT)
    dot = pl->root;
  else if (root->op == IR_OP_ADD || root->op == IR_OP_SUB || root->op == IR_OP_MUL ||
           root->op == IR_OP_DIV)
    dot = pl->node[root->a].op == INODE_DOT ? root->a : pl->node[root->b].op == INODE_DOT ? root->b : -1;
  if (dot < 0) return;
  const interp_reduce *rd = &pl->red[pl->node[dot].b];
  int j = pl->outer[pl->n_outer - 1], inner_cost = 0, row_cost = 0;
  for (int i = 0; i < rd->n_loads; i++) {
    if (rd->slot[i] >= 0 && slot_mentions(pl, rd->slot[i], j)) return;
    pl->row_step[i] = step_of(pl, rd->tv[i], j);
    inner_cost += abs64(rd->step[i]) > 1;
    row_cost += abs64(pl->row_step[i]) > 1;
  }
  if (row_cost < inner_cost) pl->row_dot = dot;
}

int interp_compile(kbc_arena *a, const ir_program *p, const ir_binding *b, const ir_stmt *s,
                   interp_plan *out, kbc_diag *d) {
  memset(out, 0, sizeof *out);
  int n = s->n_index > 0 ? s->n_index : 0;
  comp c = {.a = a, .p = p, .b = b, .s = s, .d = d, .pl = out, .ok = 1};
  out->s = s;
  out->n_index = n;
  out->var = KBC_NEW_ARRAY(a, interp_var, n + 1);
  out->outer = KBC_NEW_ARRAY(a, int, n + 1);
  c.in_scope = KBC_NEW_ARRAY(a, char, n + 1);
  c.reduced = KBC_NEW_ARRAY(a, char, n + 1);
  c.coeff = KBC_NEW_ARRAY(a, sym *, n + 1);
  c.scratch = KBC_NEW_ARRAY(a, int64_t, (size_t)(n + 1) * (IR_BIND_MAX_RANK + 2));
  c.lo = KBC_NEW_ARRAY(a, sym *, n + 1);
  c.hi = KBC_NEW_ARRAY(a, sym *, n + 1);
  if (!s->out || !s->rhs || (s->out->rank > 0 && !s->lhs)) {
    fail(&c, "statement without target or value");
    return 0;
  }
  if (s->out->role == IR_ROLE_INPUT) {
    fail(&c, "statement writes an input");
    return 0;
  }
  for (int v = 0; v < n; v++) {
    if (!s->index[v].extent || !sym_eval(s->index[v].extent, b->vars, NULL, &out->var[v].ext)) {
      fail(&c, "index extent missing or overflowing");
      return 0;
    }
    c.lo[v] = sym_const(a, 0);
    c.hi[v] = sym_sub(a, s->index[v].extent, sym_const(a, 1));
  }
  /* Outer loops: a plain statement's lhs indices in order (row-major over
   * the target), then any other free or scatter index by id. */
  for (int i = 0; !s->accumulate && i < s->out->rank; i++) {
    int v;
    if (sym_is_index(s->lhs[i], &v) && v >= 0 && v < n && s->index[v].kind != IR_IDX_REDUCE &&
        !c.in_scope[v]) {
      c.in_scope[v] = 1;
      out->outer[out->n_outer++] = v;
    }
  }
  for (int v = 0; v < n; v++)
    if (s->index[v].kind != IR_IDX_REDUCE && !c.in_scope[v]) {
      c.in_scope[v] = 1;
      out->outer[out->n_outer++] = v;
    }
  for (int i = 0; i < out->n_outer; i++) out->empty |= out->var[out->outer[i]].ext < 1;
  if (out->empty) return 1;
  out->lhs = compile_access(&c, s->out, s->lhs, 0);
  if (out->lhs < 0) return 0;
  out->root = compile_expr(&c, s->rhs);
  if (!c.ok || out->root < 0) return 0;
  for (int i = 0; i < out->n_acc; i++)
    if (i != out->lhs && out->acc[i].t == s->out) out->reads_out = 1;
  plan_rows(out);
  plan_vectors(out);
  return 1;
}
