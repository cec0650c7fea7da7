/* emit.c — the IR as C: names, index arithmetic, expressions.
 *
 * Before: a verified program and a statement being emitted.  After: C
 * text appended to the emitter's buffer; expressions come back as C
 * expression strings (in the arena), reductions as loops emitted before
 * the expression that uses them.  Types: float values are `float`, index
 * values `long long`, conditions `bool`.  Names come from the IR: tensors
 * by their (sanitized) names, var axes by theirs, index variables by
 * theirs, made distinct from each other, from C/CUDA keywords, and from
 * the emitter's own names (which all start with '_'). */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"
#include "ir/subst.h"
#include "support/name.h"

static const char *const reserved[] = {
    "auto", "bool", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short",
    "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while",
    "class", "delete", "new", "this", "template", "typename", "namespace", "using", "true", "false", "operator",
    "private", "public", "protected", "virtual", "friend", "mutable", "explicit", "asm", "catch", "try", "throw",
    "nullptr", "and", "or", "not", "xor", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "min",
    "max", "abs", "exp", "log", "sqrt", "erf", "tanh", "pow", "printf", "malloc", "free", "memcpy", "memset",
    "signbit", "isnan", "isinf", "NULL", "INFINITY", "NAN", NULL};

static int is_reserved(const char *s) {
  for (int i = 0; reserved[i]; i++)
    if (!strcmp(reserved[i], s)) return 1;
  return 0;
}

/* Identifier characters kept, '.' -> "_", a leading '_' or a keyword
 * prefixed with "u_". */
static char *sanitize(kbc_arena *a, const char *name) {
  char *s = kbc_name_sanitize(kbc_arena_strdup(a, name), KBC_NAME_IDENT);
  if (s[0] == '_' || isdigit((unsigned char)s[0]) || is_reserved(s)) return kbc_arena_printf(a, "u_%s", s);
  return s;
}

/* C names for every tensor and var axis: sanitized, and made unique with
 * "_<id>" where sanitizing made two names equal (`out.max` -> `out_max`
 * could meet a user's `out_max`). */
cg_names *cg_names_make(kbc_arena *a, const ir_program *p) {
  cg_names *n = KBC_NEW(a, cg_names);
  n->axis = KBC_NEW_ARRAY(a, const char *, p->vars.len + 1);
  n->tensor = KBC_NEW_ARRAY(a, const char *, p->tensors.len + 1);
  for (int i = 0; i < p->vars.len; i++) n->axis[i] = sanitize(a, IR_VAR(p, i)->name);
  for (int i = 0; i < p->tensors.len; i++) {
    const char *c = sanitize(a, IR_TENSOR(p, i)->name);
    int clash = 0;
    for (int j = 0; j < i; j++) clash |= !strcmp(n->tensor[j], c);
    for (int j = 0; j < p->vars.len; j++) clash |= !strcmp(n->axis[j], c);
    n->tensor[i] = clash ? kbc_arena_printf(a, "%s_%d", c, i) : c;
  }
  n->n_tensors = p->tensors.len;
  n->n_axes = p->vars.len;
  return n;
}

static int name_clash(const cg_names *names, const char *s) {
  for (int i = 0; i < names->n_tensors; i++)
    if (!strcmp(names->tensor[i], s)) return 1;
  for (int i = 0; i < names->n_axes; i++)
    if (!strcmp(names->axis[i], s)) return 1;
  return 0;
}

const char **cg_index_names(kbc_arena *a, const cg_names *names, const ir_stmt *s) {
  const char **out = KBC_NEW_ARRAY(a, const char *, s->n_index + 1);
  for (int i = 0; i < s->n_index; i++) {
    const char *n = sanitize(a, s->index[i].name);
    for (;;) {
      int clash = name_clash(names, n);
      for (int j = 0; j < i; j++) clash |= !strcmp(out[j], n);
      if (!clash) break;
      n = kbc_arena_printf(a, "%s_i", n);
    }
    out[i] = n;
  }
  return out;
}

void cg_line(cg_emit *E, const char *fmt, ...) {
  for (int i = 0; i < E->indent; i++) kbc_buf_puts(E->out, "  ");
  va_list ap;
  va_start(ap, fmt);
  char tmp[1024];
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < (int)sizeof tmp) {
    kbc_buf_puts(E->out, tmp);
  } else {
    char *big = malloc((size_t)n + 1);
    if (!big) abort();
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    kbc_buf_puts(E->out, big);
    free(big);
  }
  kbc_buf_putc(E->out, '\n');
}

const char *cg_fmt(cg_emit *E, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = kbc_arena_alloc(E->a, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

/* ---- index arithmetic --------------------------------------------------- */

static const char *namer(void *ctx, sym_atom_kind kind, int id) {
  cg_emit *E = ctx;
  if (kind == SYM_ATOM_AXIS) return E->names->axis[id];
  if (kind == SYM_ATOM_INDEX && E->idx && E->s && id >= 0 && id < E->s->n_index) return E->idx[id];
  return NULL;
}

const char *cg_sym(cg_emit *E, const sym *x) {
  kbc_buf b = {0};
  sym_print_c(x, &b, namer, E);
  const char *s = kbc_arena_strdup(E->a, kbc_buf_str(&b));
  kbc_buf_free(&b);
  return s;
}

const char *cg_offset(cg_emit *E, const ir_tensor *t, sym *const *idx) { return cg_offset_in(E, t, idx, NULL); }

const char *cg_offset_in(cg_emit *E, const ir_tensor *t, sym *const *idx, const cg_flat_spaces *flat) {
  if (t->rank == 0) return "0";
  if (flat && flat->n) {
    sym *off = ir_flat_offset(E->a, t, idx);
    for (int i = 0; i < flat->n && off; i++) off = cg_collapse(E->a, E->s, off, flat->ids[i], flat->len[i]);
    return off ? cg_sym(E, off) : "kbc_uncollapsed_offset"; /* callers check first: never emitted */
  }
  const char *off = cg_sym(E, idx[0]);
  for (int d = 1; d < t->rank; d++)
    off = kbc_arena_printf(E->a, "(%s) * %s + %s", off, cg_sym(E, t->shape[d]), cg_sym(E, idx[d]));
  return off;
}

const char *cg_in_bounds(cg_emit *E, const ir_tensor *t, sym *const *idx) {
  /* A dimension whose index stays in range over the statement's index
   * ranges (proven as check does: a padded convolution's batch and channel
   * dimensions) is not tested; the others are.  Every caller evaluates
   * the access only at index values inside those ranges. */
  sym **lo = NULL, **hi = NULL;
  if (E->s && E->p) ir_index_ranges(E->a, E->s, &lo, &hi);
  const char *c = NULL;
  for (int d = 0; d < t->rank; d++) {
    sym *blo, *bhi;
    if (lo && ir_index_in_bounds(E->a, E->p->facts, idx[d], E->s->n_index, lo, hi, t->shape[d], &blo, &bhi) == 1)
      continue;
    const char *i = cg_sym(E, idx[d]);
    const char *one = kbc_arena_printf(E->a, "0 <= %s && %s < %s", i, i, cg_sym(E, t->shape[d]));
    c = c ? kbc_arena_printf(E->a, "%s && %s", c, one) : one;
  }
  return c ? c : "true";
}

const char *cg_float_literal(kbc_arena *a, double v) {
  if (isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  if (isnan(v)) return "__int_as_float(0x7fc00000)";
  char tmp[64];
  for (int prec = 6; prec <= 9; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if ((float)strtod(tmp, NULL) == (float)v) break;
  }
  if (!strpbrk(tmp, ".e")) strcat(tmp, ".0");
  /* a primary expression: "(-1.0f)", so that `(-%s)` never reads `--1.0f` */
  return kbc_arena_printf(a, tmp[0] == '-' ? "(%sf)" : "%sf", tmp);
}

/* b's text in a, its first line only, no comment terminators; b freed. */
static const char *comment_text(kbc_arena *a, kbc_buf *b) {
  char *t = kbc_arena_strdup(a, kbc_buf_str(b));
  kbc_buf_free(b);
  char *nl = strchr(t, '\n');
  if (nl) *nl = 0;
  for (char *p = t; *p; p++)
    if (p[0] == '*' && p[1] == '/') p[1] = ' ';
  return t;
}

const char *cg_stmt_comment(kbc_arena *a, const ir_stmt *s) {
  kbc_buf b = {0};
  ir_print_stmt(s, &b);
  return comment_text(a, &b);
}

const char *cg_expr_comment(kbc_arena *a, const ir_stmt *s, const ir_expr *e) {
  kbc_buf b = {0};
  ir_print_expr(s, e, &b);
  return comment_text(a, &b);
}

/* ---- expressions -------------------------------------------------------- */

const char *cg_float_value(cg_emit *E, const ir_expr *e, const char *c) {
  return e->type == IR_TY_FLOAT ? c : kbc_arena_printf(E->a, "(float)(%s)", c);
}

static const char *as_float(cg_emit *E, const ir_expr *e, const char *c) { return cg_float_value(E, e, c); }
static const char *expr(cg_emit *E, const ir_expr *e, const cg_expr_ctx *x);

static const char *fresh(cg_emit *E, const char *base) { return kbc_arena_printf(E->a, "_%s%d", base, E->tmp++); }

const char *cg_combine(cg_emit *E, ir_red op, const char *acc, const char *v) {
  switch (op) {
  case IR_RED_SUM: return kbc_arena_printf(E->a, "%s + %s", acc, v);
  case IR_RED_PROD: return kbc_arena_printf(E->a, "%s * %s", acc, v);
  case IR_RED_MAX: return kbc_arena_printf(E->a, "kbc_fmax(%s, %s)", acc, v); /* NaN wins, as in PyTorch */
  default: return kbc_arena_printf(E->a, "kbc_fmin(%s, %s)", acc, v);
  }
}

/* Unroll factor of flattened loops (opt.unroll: KBC_UNROLL=N, for tuning). */
static int flat_unroll(const cg_emit *E) { return E->opt->unroll; }

void cg_decode(cg_emit *E, const char *q, const char *flat, const int *ids, int n, const char *const *dst) {
  cg_line(E, "{");
  E->indent++;
  cg_line(E, "long long %s = %s;", q, flat);
  for (int i = n - 1; i > 0; i--) {
    const char *ext = cg_sym(E, E->s->index[ids[i]].extent);
    cg_line(E, "%s = %s %% %s;", dst[i], q, ext);
    cg_line(E, "%s /= %s;", q, ext);
  }
  cg_line(E, "%s = %s;", dst[0], q);
  E->indent--;
  cg_line(E, "}");
}

const char *cg_extent_product(cg_emit *E, const int *ids, int n) {
  const char *p = "1LL";
  for (int i = 0; i < n; i++) p = kbc_arena_printf(E->a, "%s * %s", p, cg_sym(E, E->s->index[ids[i]].extent));
  return p;
}

/* From here until E->n_hoisted is restored, cg_expr gives `name` for e
 * (recip: e is x / d, given as x times the reciprocal `name`). */
static void remember(cg_emit *E, const ir_expr *e, const char *name, int recip) {
  E->hoisted[E->n_hoisted] = e;
  E->hoisted_recip[E->n_hoisted] = (unsigned char)recip;
  E->hoisted_name[E->n_hoisted++] = name;
}

int cg_substitute(cg_emit *E, const ir_expr *e, const char *text) {
  if (E->n_hoisted >= CG_MAX_HOISTED) return 0;
  remember(E, e, text, 0);
  return 1;
}

int cg_substitute_recip(cg_emit *E, const ir_expr *div, const char *recip) {
  if (E->n_hoisted >= CG_MAX_HOISTED) return 0;
  remember(E, div, recip, 1);
  return 1;
}

sym *cg_contiguous_base(cg_emit *E, const ir_expr *e, int n, const int *ids) {
  kbc_arena *a = E->a;
  const ir_stmt *s = E->s;
  sym *off = ir_flat_offset(a, e->u.load.tensor, e->u.load.idx);
  if (!cg_offset_contiguous(a, s, off, ids, n)) return NULL;
  sym **by = KBC_NEW_ARRAY(a, sym *, s->n_index + 1);
  for (int i = 0; i < s->n_index; i++) by[i] = sym_index(a, i, s->index[i].name);
  for (int i = 0; i < n; i++) by[ids[i]] = sym_const(a, 0);
  return ir_sym_subst(a, off, s->n_index, by);
}

/* Loads in e (outside nested reductions) contiguous along the loop: a
 * pointer to their row before the loop, indexed by the loop counter.
 * Loads of a tensor x gives as a value (x->value_of) read no memory: none. */
static void flat_pointers(cg_emit *E, const ir_expr *e, int n, const int *ids, const char *counter,
                          const cg_expr_ctx *x) {
  if (e->op == IR_OP_REDUCE || E->n_hoisted >= CG_MAX_HOISTED) return;
  if (e->op == IR_OP_LOAD && cg_value_of(x, e->u.load.tensor)) return;
  if (e->op == IR_OP_LOAD && !e->u.load.padded) {
    int mentions = 0;
    for (int i = 0; i < n; i++) mentions |= ir_expr_mentions_index(e, ids[i]);
    for (int i = 0; i < E->n_hoisted; i++)
      if (E->hoisted[i] == e) mentions = 0;
    sym *base = mentions ? cg_contiguous_base(E, e, n, ids) : NULL;
    if (base) {
      const char *ptr = fresh(E, "row");
      cg_line(E, "auto *%s = %s + %s; // %s, contiguous along the loop below", ptr,
              E->names->tensor[e->u.load.tensor->id], cg_sym(E, base), e->u.load.tensor->name);
      remember(E, e, kbc_arena_printf(E->a, "%s[%s]", ptr, counter), 0);
    }
    return;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) flat_pointers(E, e->arg[i], n, ids, counter, x);
}

int cg_mentions_unhoisted(const cg_emit *E, const ir_expr *e, const int *ids, int n) {
  for (int i = 0; i < E->n_hoisted; i++)
    if (E->hoisted[i] == e) return E->hoisted_recip[i] ? cg_mentions_unhoisted(E, e->arg[0], ids, n) : 0;
  if (e->op == IR_OP_LOAD || e->op == IR_OP_INDEX) {
    for (int i = 0; i < n; i++)
      if (ir_expr_mentions_index(e, ids[i])) return 1;
    return 0;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (cg_mentions_unhoisted(E, e->arg[i], ids, n)) return 1;
  return 0;
}

/* step: the C expression added per iteration; step_ll: the same as a
 * long long, to decode into digits. */
static void flat_loop(cg_emit *E, cg_flat *L, int n, const int *ids, const char *start, const char *step,
                      const char *step_ll, const ir_expr *const *body, int n_body, const cg_expr_ctx *x) {
  *L = (cg_flat){.n = n, .ids = ids, .inc = NULL, .saved = E->n_hoisted};
  if (n == 1) { /* a plain loop */
    const char *v = E->idx[ids[0]];
    for (int i = 0; i < n_body; i++) flat_pointers(E, body[i], n, ids, v, x);
    cg_line(E, "#pragma unroll %d", flat_unroll(E));
    cg_line(E, "for (long long %s = %s; %s < %s; %s += %s) {", v, start, v, cg_sym(E, E->s->index[ids[0]].extent), v,
            step);
    E->indent++;
    return;
  }
  const char *total = cg_extent_product(E, ids, n);
  const char *f = fresh(E, "f"), *q = fresh(E, "q");
  for (int i = 0; i < n_body; i++) flat_pointers(E, body[i], n, ids, f, x);
  /* With the body known and every use of the indices through a row
   * pointer, the loop counter alone: no digits to maintain. */
  int need_digits = n_body == 0;
  for (int i = 0; i < n_body; i++) need_digits |= cg_mentions_unhoisted(E, body[i], ids, n);
  if (need_digits) {
    L->inc = fresh(E, "inc");
    /* The digits of start (the indices) and of step (the increments). */
    cg_line(E, "long long %s[%d];", L->inc, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) cg_line(E, "long long %s;", E->idx[ids[i]]);
    const char **digits = KBC_NEW_ARRAY(E->a, const char *, n), **incs = KBC_NEW_ARRAY(E->a, const char *, n);
    for (int i = 0; i < n; i++) {
      digits[i] = E->idx[ids[i]];
      incs[i] = kbc_arena_printf(E->a, "%s[%d]", L->inc, i);
    }
    cg_decode(E, q, start, ids, n, digits);
    cg_decode(E, q, step_ll, ids, n, incs);
  }
  cg_line(E, "#pragma unroll %d", flat_unroll(E));
  cg_line(E, "for (long long %s = %s; %s < %s; %s += %s) {", f, start, f, total, f, step);
  E->indent++;
}

void cg_flat_loop(cg_emit *E, cg_flat *L, int n, const int *ids, const char *start, int step,
                  const ir_expr *const *body, int n_body, const cg_expr_ctx *x) {
  flat_loop(E, L, n, ids, start, kbc_arena_printf(E->a, "%d", step), kbc_arena_printf(E->a, "%dLL", step), body,
            n_body, x);
}

void cg_flat_loop_end(cg_emit *E, const cg_flat *L) {
  /* Advance the digits by the step's, carrying (each digit and increment
   * is below its extent, so one subtraction suffices). */
  for (int i = L->n - 1; i >= 0 && L->inc; i--) {
    const char *v = E->idx[L->ids[i]];
    cg_line(E, "%s += %s[%d];", v, L->inc, i);
    if (i > 0)
      cg_line(E, "if (%s >= %s) { %s -= %s; ++%s; }", v, cg_sym(E, E->s->index[L->ids[i]].extent), v,
              cg_sym(E, E->s->index[L->ids[i]].extent), E->idx[L->ids[i - 1]]);
  }
  E->indent--;
  cg_line(E, "}");
  E->n_hoisted = L->saved;
}

static int has_load(const ir_expr *e, int *padded_or_reduce) {
  if (e->op == IR_OP_REDUCE || (e->op == IR_OP_LOAD && e->u.load.padded)) *padded_or_reduce = 1;
  int n = e->op == IR_OP_LOAD;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n += has_load(e->arg[i], padded_or_reduce);
  return n;
}

static int hoistable(const ir_expr *e, const int *vars, int nv) {
  int invariant = e->type == IR_TY_FLOAT, unsafe = 0;
  for (int i = 0; i < nv && invariant; i++) invariant = !ir_expr_mentions_index(e, vars[i]);
  return invariant && has_load(e, &unsafe) && !unsafe;
}

int cg_hoist_open(const cg_emit *E, const ir_expr *e) {
  if (e->op == IR_OP_WHERE || e->op == IR_OP_REDUCE || E->n_hoisted + 2 > CG_MAX_HOISTED) return 0;
  for (int i = 0; i < E->n_hoisted; i++)
    if (E->hoisted[i] == e) return 0; /* already a value of an outer loop */
  return 1;
}

static void hoist(cg_emit *E, const ir_expr *e, const int *vars, int nv, const cg_expr_ctx *x) {
  if (!cg_hoist_open(E, e)) return;
  if (hoistable(e, vars, nv)) {
    const char *v = expr(E, e, x), *name = fresh(E, "h");
    cg_line(E, "const float %s = %s; // invariant in the loop below", name, v);
    remember(E, e, name, 0);
    return;
  }
  if (e->op == IR_OP_DIV && e->type == IR_TY_FLOAT && hoistable(e->arg[1], vars, nv)) {
    /* x / d with d invariant: x times 1/d, the reciprocal computed once */
    hoist(E, e->arg[0], vars, nv, x);
    const char *r = fresh(E, "r");
    cg_line(E, "const float %s = 1.0f / %s; // invariant in the loop below", r, expr(E, e->arg[1], x));
    remember(E, e, r, 1);
    return;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) hoist(E, e->arg[i], vars, nv, x);
}

int cg_hoist_invariants(cg_emit *E, const ir_expr *e, const int *vars, int nv) {
  return cg_hoist_invariants_in(E, e, vars, nv, NULL);
}

int cg_hoist_invariants_in(cg_emit *E, const ir_expr *e, const int *vars, int nv, const cg_expr_ctx *x) {
  int before = E->n_hoisted;
  hoist(E, e, vars, nv, x);
  return before;
}

/* Blocked summation for a long serial sum: an accumulator that takes T
 * terms one by one drifts by up to T rounding errors of its own size (a
 * sum of 2,400 equal terms 1.7e-5 off, GPU fuzz seed 504262); summed in
 * blocks of about sqrt(T) terms, each into a fresh partial, the drift is
 * about 2 sqrt(T).  Returns the loop level whose body starts a block, with
 * *chunk its iterations per block (0: the whole loop), or -1 for a sum too
 * short to need it.  The loops inside the level are kept whole, so a block
 * is chunk times their product. */
static int sum_blocks(const cg_emit *E, const ir_expr *e, int *chunk) {
  enum { MIN_TERMS = 256 };
  *chunk = 0;
  double terms = ir_reduce_terms(E->s, e);
  if (e->u.reduce.op != IR_RED_SUM || terms < MIN_TERMS || terms > 1e15) return -1;
  double target = sqrt(terms), inner = 1;
  for (int i = e->u.reduce.n_vars - 1; i >= 0; i--) {
    const sym *ext = E->s->index[e->u.reduce.vars[i]].extent;
    double n = ir_estimate(ext);
    if (inner * n >= target) {
      int c = (int)ceil(target / inner);
      int64_t v;
      int known = sym_is_const(ext, &v), whole = known && c >= v;
      if (whole && i == 0) return -1; /* no block smaller than the sum */
      if (known && !whole) { /* a divisor of the extent near c (blocks of equal, known length), else as many
                                blocks as c makes, of equal size */
        int best = 0;
        for (int d = (c + 1) / 2; d <= 2 * c && d < v; d++)
          if (v % d == 0 && (!best || abs(d - c) < abs(best - c))) best = d;
        int64_t blocks = (v + c - 1) / c;
        c = best ? best : (int)((v + blocks - 1) / blocks);
      }
      *chunk = whole ? 0 : c;
      return i;
    }
    inner *= n;
  }
  return -1;
}

/* One term of a pair loop, in a block of its own (opening it with `open`):
 * body at index i = at, combined into acc. */
static void pair_term(cg_emit *E, const char *open, const ir_expr *body, int i, const char *at, const char *acc,
                      ir_red op, const cg_expr_ctx *x) {
  cg_line(E, "%s{", open);
  E->indent++;
  cg_line(E, "const long long %s = %s;", E->idx[i], at);
  const char *t = as_float(E, body, expr(E, body, x));
  cg_line(E, "%s = %s;", acc, cg_combine(E, op, acc, t));
  E->indent--;
  cg_line(E, "}");
}

/* A team apart's share of a reduction over one index (a plain op, no
 * online pair or Welford state): the team's stride taken in pairs of
 * steps, each step into a sum of its own, the two combined at the end
 * (the same order run to run), the loop not unrolled: two loads in flight
 * a thread, from rows 8 apart.  More in flight ran slower: on the H100
 * (2026-12-06, KernelBench L1/47, 128 x 4096 x 4095, one run) unrolled 1
 * 3,015 us, 2 3,226, 4 3,280, a thread a column unrolled 8 3,515 (as
 * bench/micro/colsum.cu's copies of the kernel: the rows a warp reads at
 * once stay close, the DRAM pages they open shared with the neighbouring
 * warps'; torch.sum about 2,900-3,020).  Taken where a thread a point
 * became a team (g->pairs: group.c, across_points). */
static void pair_loop(cg_emit *E, const ir_expr *e, const cg_acc *into, const cg_split *split,
                      const cg_expr_ctx *x) {
  const ir_expr *body = e->arg[0];
  int v = e->u.reduce.vars[0], step = split->team.size, saved = E->n_hoisted;
  ir_red op = e->u.reduce.op;
  const char *ext = cg_sym(E, E->s->index[v].extent), *q = fresh(E, "q"), *other = fresh(E, "acc");
  flat_pointers(E, body, 1, &v, E->idx[v], x);
  cg_line(E, "float %s = %s;", other, cg_float_literal(E->a, ir_red_identity(op)));
  cg_line(E, "long long %s = %s;", q, split->team.lane ? split->team.lane : "_lane");
  cg_line(E, "#pragma unroll 1");
  cg_line(E, "for (; %s + %d < %s; %s += %d) {", q, step, ext, q, 2 * step);
  E->indent++;
  pair_term(E, "", body, v, q, into->acc, op, x);
  pair_term(E, "", body, v, cg_fmt(E, "%s + %d", q, step), other, op, x);
  E->indent--;
  cg_line(E, "}");
  pair_term(E, cg_fmt(E, "if (%s < %s) ", q, ext), body, v, q, into->acc, op, x);
  cg_line(E, "%s = %s;", into->acc, cg_combine(E, op, into->acc, other));
  E->n_hoisted = saved;
}

/* Loops over the reduction's indices (each from 0 to its extent). */
static const char *reduce(cg_emit *E, const ir_expr *e, const cg_expr_ctx *x) {
  const char *acc = fresh(E, "acc");
  ir_red op = e->u.reduce.op;
  cg_line(E, "float %s = %s;", acc, cg_float_literal(E->a, ir_red_identity(op)));
  int n = e->u.reduce.n_vars;
  const cg_split *split = x && x->split && x->split->reduce == e ? x->split : NULL;
  int coop = split != NULL;
  int hoisted = E->n_hoisted;
  hoist(E, e->arg[0], e->u.reduce.vars, n, x);
  cg_flat loop;
  /* what the terms go into: acc by op, or the split's online pair or
   * Welford state (a whole team's reduction only) */
  int whole = coop && !split->part_step;
  cg_acc into = {.acc = acc,
                 .op = op,
                 .online = whole && op == IR_RED_MAX ? split->online : NULL,
                 .welford = whole && op == IR_RED_SUM ? split->welford : NULL};
  if (whole && cg_vec_loop(E, n, e->u.reduce.vars, split->team.lane ? split->team.lane : "_lane", split->team.size,
                           &(cg_vec_body){.value = e->arg[0], .acc = &into}, x)) {
    /* float4 along the row (vec_loop.c) */
    E->n_hoisted = hoisted;
    cg_acc_team_combine(E, &split->team, &into);
    return acc;
  }
  if (whole && split->team.pairs && n == 1 && !into.online && !into.welford) {
    pair_loop(E, e, &into, split, x);
    E->n_hoisted = hoisted;
    cg_acc_team_combine(E, &split->team, &into);
    return acc;
  }
  if (coop && split->part_step && split->rows && n >= 2) {
    /* This thread's part, by rows: the rows its block takes, the team
     * along each row's last index (the caller combines). */
    cg_flat rows;
    flat_loop(E, &rows, n - 1, e->u.reduce.vars, split->part_start, split->part_step,
              kbc_arena_printf(E->a, "(long long)%s", split->part_step), NULL, 0, x);
    const int *last = &e->u.reduce.vars[n - 1];
    const char *lane = split->team.lane ? split->team.lane : "_lane";
    if (!cg_vec_loop(E, 1, last, lane, split->team.size, &(cg_vec_body){.value = e->arg[0], .acc = &into}, x)) {
      const ir_expr *body = e->arg[0];
      cg_flat_loop(E, &loop, 1, last, lane, split->team.size, &body, 1, x);
      const char *term = as_float(E, body, expr(E, body, x));
      cg_acc_add(E, &into, 1, &term);
      cg_flat_loop_end(E, &loop);
    }
    cg_flat_loop_end(E, &rows);
    E->n_hoisted = hoisted;
    return acc;
  }
  if (coop && split->part_step) {
    /* This thread's part of the reduction space (the caller combines). */
    const ir_expr *body = e->arg[0];
    flat_loop(E, &loop, n, e->u.reduce.vars, split->part_start, split->part_step,
              kbc_arena_printf(E->a, "(long long)%s", split->part_step), &body, 1, x);
  } else if (coop) {
    /* One flat loop over the reduction space, strided across the team. */
    const ir_expr *body = e->arg[0];
    cg_flat_loop(E, &loop, n, e->u.reduce.vars, split->team.lane ? split->team.lane : "_lane", split->team.size,
                 &body, 1, x);
  }
  /* A long serial sum in blocks (see sum_blocks): loops 0..lvl-1 as they
   * are, loop lvl in chunks of `chunk` (the whole loop where chunk is 0),
   * each chunk's terms summed into a partial added to the accumulator. */
  int chunk = 0, lvl = coop ? -1 : sum_blocks(E, e, &chunk);
  const char *part = acc, *base = NULL;
  for (int i = 0; i < (coop ? 0 : n); i++) {
    int v = e->u.reduce.vars[i];
    const char *ext = cg_sym(E, E->s->index[v].extent);
    if (i == lvl && chunk) {
      base = fresh(E, "b");
      cg_line(E, "for (long long %s = 0; %s < %s; %s += %d) {", base, base, ext, base, chunk);
      E->indent++;
    }
    if (i == lvl) {
      part = fresh(E, "part");
      cg_line(E, "float %s = 0.0f; // this block's terms, summed apart: a long serial sum drifts", part);
    }
    int64_t len;
    if (i == lvl && chunk && sym_is_const(E->s->index[v].extent, &len) && len % chunk == 0) {
      /* blocks of equal, known length: a loop the compiler unrolls, its
       * loads issued ahead of the serial sum */
      cg_line(E, "#pragma unroll 8");
      cg_line(E, "for (long long %s = %s; %s < %s + %d; ++%s) {", E->idx[v], base, E->idx[v], base, chunk, E->idx[v]);
    } else if (i == lvl && chunk)
      cg_line(E, "for (long long %s = %s; %s < kbc_min_ll(%s + %d, %s); ++%s) {", E->idx[v], base, E->idx[v], base,
              chunk, ext, E->idx[v]);
    else
      cg_line(E, "for (long long %s = 0; %s < %s; ++%s) {", E->idx[v], E->idx[v], ext, E->idx[v]);
    E->indent++;
  }
  const char *body = as_float(E, e->arg[0], expr(E, e->arg[0], x));
  cg_acc into_part = into;
  into_part.acc = part;
  cg_acc_add(E, &into_part, 1, &body);
  if (coop) cg_flat_loop_end(E, &loop);
  for (int i = (coop ? 0 : n) - 1; i >= 0; i--) {
    E->indent--;
    cg_line(E, "}");
    if (i == lvl) cg_line(E, "%s = %s;", acc, cg_combine(E, op, acc, part));
    if (i == lvl && chunk) {
      E->indent--;
      cg_line(E, "}");
    }
  }
  E->n_hoisted = hoisted;
  if (whole) cg_acc_team_combine(E, &split->team, &into);
  return acc;
}

/* The team's values of the nv floats v merged so that every thread holds
 * the team's (the online pair and Welford's state; a single value by op is
 * cg_team_combine): across a warp by shuffles (the partner's values named
 * fresh from other[i]), across the block's warps through _red, _red2, ...
 * (emit_setup declares them); merge(E, v, o) prints v merged with o. */
typedef void state_merge(cg_emit *E, const char *const *v, const char *const *o);

/* The same for a team whose threads are team->across apart: each thread's
 * state into the shared arrays at its own thread, then every thread merges
 * its point's, lane 0's first and the others' in lane order (the same
 * result on every thread of the team, run to run). */
static void team_merge_across(cg_emit *E, const cg_team *team, int nv, const char *const *v, state_merge *merge) {
  const char *red[4], *at[4];
  kbc_buf stores = {0};
  for (int i = 0; i < nv; i++) {
    red[i] = i ? cg_fmt(E, "_red%d", i + 1) : "_red";
    at[i] = cg_fmt(E, "%s[_w * %d + threadIdx.x %% %d]", red[i], team->across, team->across);
    kbc_buf_printf(&stores, "%s%s[threadIdx.x] = %s;", i ? " " : "", red[i], v[i]);
  }
  cg_line(E, "%s", kbc_arena_strdup(E->a, stores.data));
  kbc_buf_free(&stores);
  cg_line(E, "__syncthreads();");
  for (int i = 0; i < nv; i++) cg_line(E, "%s = %s[threadIdx.x %% %d];", v[i], red[i], team->across);
  cg_line(E, "for (int _w = 1; _w < %d; ++_w) {", team->size);
  E->indent++;
  merge(E, v, at);
  E->indent--;
  cg_line(E, "}");
  cg_line(E, "__syncthreads();");
}

static void team_merge_state(cg_emit *E, const cg_team *team, int nv, const char *const *v, const char *const *other,
                             state_merge *merge) {
  const char *o[4], *red[4], *at[4];
  if (team->across) {
    team_merge_across(E, team, nv, v, merge);
    return;
  }
  int warp = team->size <= 32;
  const char *mask = warp ? (team->mask ? team->mask : "_mask") : "0xffffffffu";
  for (int i = 0; i < nv; i++) {
    o[i] = fresh(E, other[i]);
    red[i] = i ? cg_fmt(E, "_red%d", i + 1) : "_red";
    at[i] = cg_fmt(E, "%s[_w]", red[i]);
  }
  cg_line(E, "for (int _s = %d; _s > 0; _s >>= 1) {", warp ? team->size / 2 : 16);
  E->indent++;
  for (int i = 0; i < nv; i++) cg_line(E, "const float %s = __shfl_xor_sync(%s, %s, _s);", o[i], mask, v[i]);
  merge(E, v, o);
  E->indent--;
  cg_line(E, "}");
  if (warp) return;
  kbc_buf stores = {0};
  for (int i = 0; i < nv; i++) kbc_buf_printf(&stores, " %s[threadIdx.x >> 5] = %s;", red[i], v[i]);
  cg_line(E, "if ((threadIdx.x & 31) == 0) {%s }", kbc_arena_strdup(E->a, stores.data));
  kbc_buf_free(&stores);
  cg_line(E, "__syncthreads();");
  for (int i = 0; i < nv; i++) cg_line(E, "%s = %s[0];", v[i], red[i]);
  cg_line(E, "for (int _w = 1; _w < %d; ++_w) {", team->size / 32);
  E->indent++;
  merge(E, v, at);
  E->indent--;
  cg_line(E, "}");
  cg_line(E, "__syncthreads();");
}

/* Welford's state (count, mean, squared deviations, sum) v merged with o,
 * Chan's rule: the means weighed by their counts, the deviations' sums
 * added with the means' difference squared times nA nB / n; the plain
 * sums added. */
static void welford_merge(cg_emit *E, const char *const *v, const char *const *o) {
  const char *n2 = fresh(E, "n2"), *d = fresh(E, "d"), *f = fresh(E, "f");
  cg_line(E, "{");
  cg_line(E, "  %s += %s;", v[3], o[3]);
  cg_line(E, "  const float %s = %s + %s;", n2, v[0], o[0]);
  cg_line(E, "  if (%s > 0.0f) {", n2);
  cg_line(E, "    const float %s = %s - %s, %s = %s / %s;", d, o[1], v[1], f, o[0], n2);
  cg_line(E, "    %s += %s * %s;", v[1], d, f);
  cg_line(E, "    %s += %s + %s * %s * %s * %s;", v[2], o[2], d, d, v[0], f);
  cg_line(E, "    %s = %s;", v[0], n2);
  cg_line(E, "  }");
  cg_line(E, "}");
}

/* The online pair (m, s) merged with (om, os): the larger max, each sum
 * rescaled to it (a side whose max is the larger one as it is: no
 * exp(-inf + inf)). */
static void online_merge(cg_emit *E, const char *const *v, const char *const *o) {
  const char *nm = fresh(E, "nm");
  cg_line(E, "{");
  cg_line(E, "  const float %s = kbc_fmax(%s, %s);", nm, v[0], o[0]);
  cg_line(E, "  %s = (%s == %s ? %s : %s * expf(%s - %s)) + (%s == %s ? %s : %s * expf(%s - %s));", v[1], v[0], nm, v[1],
          v[1], v[0], nm, o[0], nm, o[1], o[1], o[0], nm);
  cg_line(E, "  %s = %s;", v[0], nm);
  cg_line(E, "}");
}

/* Welford's state of prefix w: Pn, Pm, Pq, Ps. */
static void welford_names(cg_emit *E, const char *w, const char **v) {
  static const char part[4] = {'n', 'm', 'q', 's'};
  for (int i = 0; i < 4; i++) v[i] = cg_fmt(E, "%s%c", w, part[i]);
}

/* One term: Welford's update; four (a float4's): their own sum, mean and
 * deviations, merged (one division for the four).  The plain sum is kept
 * beside the mean: a row holding +inf has the sum +inf, where Welford's
 * mean turns NaN at the next finite term. */
static void welford_add(cg_emit *E, const char *w, int n, const char *const *t) {
  const char *v[4];
  welford_names(E, w, v);
  if (n == 1) {
    const char *x = fresh(E, "t"), *d = fresh(E, "d");
    cg_line(E, "{ // Welford: count, mean, squared deviations");
    cg_line(E, "  const float %s = %s;", x, t[0]);
    cg_line(E, "  %s += %s;", v[3], x);
    cg_line(E, "  %s += 1.0f;", v[0]);
    cg_line(E, "  const float %s = %s - %s;", d, x, v[1]);
    cg_line(E, "  %s += %s / %s;", v[1], d, v[0]);
    cg_line(E, "  %s += %s * (%s - %s);", v[2], d, x, v[1]);
    cg_line(E, "}");
    return;
  }
  const char *m4 = fresh(E, "m4"), *q4 = fresh(E, "q4"), *s4 = fresh(E, "s4");
  cg_line(E, "{ // Welford, four terms: their sum, mean and squared deviations, merged");
  E->indent++;
  cg_line(E, "const float %s = (%s + %s) + (%s + %s), %s = %s * 0.25f;", s4, t[0], t[1], t[2], t[3], m4, s4);
  cg_line(E, "const float %s = ((%s - %s) * (%s - %s) + (%s - %s) * (%s - %s)) + ((%s - %s) * (%s - %s) + (%s - %s) * (%s - %s));",
          q4, t[0], m4, t[0], m4, t[1], m4, t[1], m4, t[2], m4, t[2], m4, t[3], m4, t[3], m4);
  welford_merge(E, v, (const char *const[]){"4.0f", m4, q4, s4});
  E->indent--;
  cg_line(E, "}");
}

/* As the two passes would have it: terms t_k raise the max m to their own
 * max first (the sum rescaled: a NaN takes both, +inf makes the old sum
 * 0), then add exp(t_k - m) each (1 for a finite term at the max, NaN for
 * +inf at +inf); while m is -inf (every term so far -inf) they add
 * nothing (were every term -inf, the sum is NaN: cg_online_finish).  Four
 * terms at a time (a float4): one compare and rarely a rescale for the
 * four, their exps independent of each other. */
static void online_add(cg_emit *E, const char *m, const char *s, int n, const char *const *t) {
  const char *mx = t[0];
  if (n == 1) { /* the term used thrice: evaluated once */
    mx = fresh(E, "t");
    cg_line(E, "const float %s = %s;", mx, t[0]);
    t = &mx;
  } else {
    mx = fresh(E, "mx");
  }
  cg_line(E, "{ // online: a new max rescales the sum");
  E->indent++;
  if (n == 4) cg_line(E, "const float %s = kbc_fmax(kbc_fmax(%s, %s), kbc_fmax(%s, %s));", mx, t[0], t[1], t[2], t[3]);
  cg_line(E, "if (%s > %s || %s != %s) { %s = %s * expf(%s - %s); %s = %s; }", mx, m, mx, mx, s, s, m, mx, m, mx);
  if (n == 4)
    cg_line(E, "if (%s != __int_as_float(0xff800000)) %s += (expf(%s - %s) + expf(%s - %s)) + (expf(%s - %s) + expf(%s - %s));",
            m, s, t[0], m, t[1], m, t[2], m, t[3], m);
  else
    cg_line(E, "if (%s != __int_as_float(0xff800000)) %s += expf(%s - %s);", m, s, t[0], m);
  E->indent--;
  cg_line(E, "}");
}

void cg_acc_add(cg_emit *E, const cg_acc *a, int n, const char *const *t) {
  if (a->welford) welford_add(E, a->welford, n, t);
  else if (a->online) online_add(E, a->acc, a->online, n, t);
  else
    for (int i = 0; i < n; i++) cg_line(E, "%s = %s;", a->acc, cg_combine(E, a->op, a->acc, t[i]));
}

void cg_acc_team_combine(cg_emit *E, const cg_team *team, const cg_acc *a) {
  if (a->welford) {
    const char *v[4];
    welford_names(E, a->welford, v);
    team_merge_state(E, team, 4, v, (const char *const[]){"on", "om", "oq", "os"}, welford_merge);
    cg_line(E, "%s = %s;", a->acc, v[3]);
  } else if (a->online) {
    team_merge_state(E, team, 2, (const char *const[]){a->acc, a->online}, (const char *const[]){"om", "os"},
                     online_merge);
  } else {
    cg_team_combine(E, team, a->op, a->acc);
  }
}

void cg_online_finish(cg_emit *E, const char *m, const char *s, const char *terms) {
  cg_line(E, "if (%s == __int_as_float(0xff800000) && %s > 0) %s = __int_as_float(0x7fffffff); // every term -inf: "
          "exp(-inf + inf)", m, terms, s);
}

void cg_team_combine(cg_emit *E, const cg_team *team, ir_red op, const char *acc) {
  const char *other = fresh(E, "o");
  if (team->across) {
    cg_line(E, "_red[threadIdx.x] = %s;", acc);
    cg_line(E, "__syncthreads();");
    cg_line(E, "%s = _red[threadIdx.x %% %d];", acc, team->across);
    cg_line(E, "for (int _w = 1; _w < %d; ++_w) %s = %s;", team->size, acc,
            cg_combine(E, op, acc, cg_fmt(E, "_red[_w * %d + threadIdx.x %% %d]", team->across, team->across)));
    cg_line(E, "__syncthreads();");
  } else if (team->size <= 32) {
    cg_line(E, "for (int _s = %d; _s > 0; _s >>= 1) {", team->size / 2);
    cg_line(E, "  const float %s = __shfl_xor_sync(%s, %s, _s);", other, team->mask ? team->mask : "_mask", acc);
    cg_line(E, "  %s = %s;", acc, cg_combine(E, op, acc, other));
    cg_line(E, "}");
  } else {
    cg_line(E, "for (int _s = 16; _s > 0; _s >>= 1) {");
    cg_line(E, "  const float %s = __shfl_xor_sync(0xffffffffu, %s, _s);", other, acc);
    cg_line(E, "  %s = %s;", acc, cg_combine(E, op, acc, other));
    cg_line(E, "}");
    cg_line(E, "if ((threadIdx.x & 31) == 0) _red[threadIdx.x >> 5] = %s;", acc);
    cg_line(E, "__syncthreads();");
    cg_line(E, "%s = _red[0];", acc);
    cg_line(E, "for (int _w = 1; _w < %d; ++_w) %s = %s;", team->size / 32, acc, cg_combine(E, op, acc, "_red[_w]"));
    cg_line(E, "__syncthreads();");
  }
}

static const char *unary(cg_emit *E, const ir_expr *e, const char *x) {
  const char *f = as_float(E, e->arg[0], x);
  switch (e->op) {
  case IR_OP_NEG: return kbc_arena_printf(E->a, "(-%s)", x);
  case IR_OP_NOT: return kbc_arena_printf(E->a, "(!%s)", x);
  case IR_OP_EXP: return kbc_arena_printf(E->a, "expf(%s)", f);
  case IR_OP_LOG: return kbc_arena_printf(E->a, "logf(%s)", f);
  case IR_OP_SQRT: return kbc_arena_printf(E->a, "sqrtf(%s)", f);
  case IR_OP_RSQRT: return kbc_arena_printf(E->a, "(1.0f / sqrtf(%s))", f);
  case IR_OP_TANH: return kbc_arena_printf(E->a, "tanhf(%s)", f);
  case IR_OP_ERF: return kbc_arena_printf(E->a, "erff(%s)", f);
  case IR_OP_ABS:
    return e->type == IR_TY_INT ? kbc_arena_printf(E->a, "kbc_abs_ll(%s)", x) : kbc_arena_printf(E->a, "fabsf(%s)", f);
  case IR_OP_RELU: return kbc_arena_printf(E->a, "kbc_fmax(%s, 0.0f)", f);
  case IR_OP_SIGMOID: return kbc_arena_printf(E->a, "(1.0f / (1.0f + expf(-%s)))", f);
  case IR_OP_GELU: return kbc_arena_printf(E->a, "kbc_gelu(%s)", f);
  case IR_OP_LOG1P: return kbc_arena_printf(E->a, "log1pf(%s)", f);
  case IR_OP_EXPM1: return kbc_arena_printf(E->a, "expm1f(%s)", f);
  case IR_OP_SOFTPLUS: return kbc_arena_printf(E->a, "(%s > 20.0f ? %s : log1pf(expf(%s)))", f, f, f);
  case IR_OP_SILU: return kbc_arena_printf(E->a, "(%s / (1.0f + expf(-%s)))", f, f);
  default: return "kbc_bad_op";
  }
}

static const char *binary(cg_emit *E, const ir_expr *e, const char *x, const char *y) {
  const ir_expr *l = e->arg[0], *r = e->arg[1];
  int ints = l->type == IR_TY_INT && r->type == IR_TY_INT;
  const char *fx = as_float(E, l, x), *fy = as_float(E, r, y);
  const char *ax = ints ? x : fx, *ay = ints ? y : fy;
  switch (e->op) {
  case IR_OP_DIV: return kbc_arena_printf(E->a, "(%s / %s)", fx, fy);
  case IR_OP_MAX:
    return ints ? kbc_arena_printf(E->a, "kbc_max_ll(%s, %s)", x, y) : kbc_arena_printf(E->a, "kbc_fmax(%s, %s)", fx, fy);
  case IR_OP_MIN:
    return ints ? kbc_arena_printf(E->a, "kbc_min_ll(%s, %s)", x, y) : kbc_arena_printf(E->a, "kbc_fmin(%s, %s)", fx, fy);
  case IR_OP_POW: return kbc_arena_printf(E->a, "powf(%s, %s)", fx, fy);
  case IR_OP_AND: case IR_OP_OR:
    return kbc_arena_printf(E->a, "(%s %s %s)", x, ir_op_info[e->op].text, y);
  default:
    return kbc_arena_printf(E->a, "(%s %s %s)", ax, ir_op_info[e->op].text, ay);
  }
}

const char *cg_expr(cg_emit *E, const ir_expr *e) { return expr(E, e, NULL); }

const char *cg_expr_in(cg_emit *E, const ir_expr *e, const cg_expr_ctx *x) { return expr(E, e, x); }

static const char *expr(cg_emit *E, const ir_expr *e, const cg_expr_ctx *x) {
  if (x && x->known && e == x->known) return x->known_value;
  for (int i = E->n_hoisted - 1; i >= 0; i--)
    if (e == E->hoisted[i])
      return E->hoisted_recip[i] ? kbc_arena_printf(E->a, "(%s * %s)", expr(E, e->arg[0], x), E->hoisted_name[i])
                                 : E->hoisted_name[i];
  switch (e->op) {
  case IR_OP_CONST:
    return cg_float_literal(E->a, e->u.value);
  case IR_OP_INDEX:
    return kbc_arena_printf(E->a, "(%s)", cg_sym(E, e->u.index));
  case IR_OP_LOAD: {
    const ir_tensor *t = e->u.load.tensor;
    const char *given = cg_value_of(x, t);
    if (given) return given;
    /* A tensor this kernel writes is read through __ldca: a plain load
     * could be merged with a load of a __restrict__ tensor (`c ? t[i] :
     * x[j]` as one load from a selected pointer) and read through the
     * non-coherent cache, before the team's writes (found by the
     * differential fuzzer on the H200).  The statement's own output appears
     * as a load only as its store's target. */
    int team_written = E->written && E->written[t->id] && !(E->s && t == E->s->out); /* its own: the store */
    const char *off = cg_offset_in(E, t, e->u.load.idx, x ? x->flat : NULL);
    const char *ld = team_written ? kbc_arena_printf(E->a, "__ldca(&%s[%s])", E->names->tensor[t->id], off)
                                  : kbc_arena_printf(E->a, "%s[%s]", E->names->tensor[t->id], off);
    if (!e->u.load.padded) return ld;
    return kbc_arena_printf(E->a, "(%s ? %s : 0.0f)", cg_in_bounds(E, t, e->u.load.idx), ld);
  }
  case IR_OP_REDUCE:
    return reduce(E, e, x);
  case IR_OP_WHERE: {
    const char *c = expr(E, e->arg[0], x);
    const char *yes = expr(E, e->arg[1], x), *no = expr(E, e->arg[2], x);
    if (e->type == IR_TY_FLOAT) {
      yes = as_float(E, e->arg[1], yes);
      no = as_float(E, e->arg[2], no);
    }
    return kbc_arena_printf(E->a, "(%s ? %s : %s)", c, yes, no);
  }
  default:
    break;
  }
  if (ir_op_info[e->op].arity == 1) return unary(E, e, expr(E, e->arg[0], x));
  const char *lhs = expr(E, e->arg[0], x);
  return binary(E, e, lhs, expr(E, e->arg[1], x));
}

/* ---- kernel signatures -------------------------------------------------- */

static void mark(const ir_expr *e, unsigned char *used) {
  if (e->op == IR_OP_LOAD) used[e->u.load.tensor->id] |= 1;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) mark(e->arg[i], used);
}

int cg_collect_tensors(kbc_arena *a, const ir_program *p, int first, int count, int **ids) {
  unsigned char *used = KBC_NEW_ARRAY(a, unsigned char, p->tensors.len + 1);
  for (int i = first; i < first + count; i++) {
    const ir_stmt *s = IR_STMT(p, i);
    mark(s->rhs, used);
    used[s->out->id] |= 2;
  }
  int n = 0;
  *ids = KBC_NEW_ARRAY(a, int, p->tensors.len + 1);
  for (int i = 0; i < p->tensors.len; i++)
    if (used[i]) (*ids)[n++] = i;
  return n;
}

const unsigned char *cg_signature(const cg_ctx *C, const char *name, int block, int min_blocks, int n_tensors,
                                  const int *ids, int first, int count) {
  return cg_signature_scratch(C, name, block, min_blocks, n_tensors, ids, first, count, NULL);
}

const unsigned char *cg_signature_scratch(const cg_ctx *C, const char *name, int block, int min_blocks,
                                          int n_tensors, const int *ids, int first, int count, const char *scratch) {
  const ir_program *p = C->p;
  kbc_buf *out = C->out;
  unsigned char *written = KBC_NEW_ARRAY(C->a, unsigned char, p->tensors.len + 1);
  for (int i = 0; C->changing && i < p->tensors.len; i++) written[i] = C->changing[i] ? 2 : 0;
  for (int i = first; i < first + count; i++) written[IR_STMT(p, i)->out->id] = 1;
  if (C->changing) {
    kbc_buf_printf(out, "%sstatic __device__ __noinline__ void\n%s(const uint3 blockIdx, const uint3 gridDim%s%s",
                   C->slots > 1 ? "template <int KBC_SLOT> " : "", name, C->slots > 1 ? ", const uint3 threadIdx" : "",
                   n_tensors || scratch || p->vars.len ? ",\n    " : "");
  } else {
    const char *min = min_blocks >= 1    ? kbc_arena_printf(C->a, ", %d", min_blocks)
                      : min_blocks <= -2 ? kbc_arena_printf(C->a, ", KBC_BLOCKS_SM90(%d)", -min_blocks)
                                         : "";
    kbc_buf_printf(out, "extern \"C\" __global__ void __launch_bounds__(%d%s)\n%s(", block, min, name);
  }
  for (int i = 0; i < n_tensors; i++) {
    const ir_tensor *t = IR_TENSOR(p, ids[i]);
    /* Only read-only tensors are __restrict__: a tensor the kernel writes is
     * read back by other threads of the team after a barrier, and restrict
     * would let the compiler keep (or hoist) loads across it; one another
     * stage writes could be read through the non-coherent cache. */
    kbc_buf_printf(out, "%s%s%s", i ? ",\n    " : "",
                   written[t->id] == 1 ? "float *" : written[t->id] ? "const float *" : "const float *__restrict__ ",
                   C->names->tensor[t->id]);
  }
  if (scratch) kbc_buf_printf(out, "%sfloat *__restrict__ %s", n_tensors ? ",\n    " : "", scratch);
  for (int i = 0; i < p->vars.len; i++)
    kbc_buf_printf(out, "%sconst long long %s", n_tensors + !!scratch + i ? ",\n    " : "", C->names->axis[i]);
  kbc_buf_puts(out, ")\n{\n");
  if (!C->changing) cg_grid_dependency(C);
  return written;
}

void cg_open_block(cg_emit *E, const char *head) {
  cg_line(E, "%s {", head);
  E->indent++;
}

void cg_close_block(cg_emit *E) {
  E->indent--;
  cg_line(E, "}");
}

void cg_grid_dependency(const cg_ctx *C) {
  if (C->t->opt.pdl) kbc_buf_puts(C->out, "  kbc_grid_dependency(); // the grid before done (programmatic dependent launch)\n");
}

const char *cg_ld4(const cg_emit *E, const ir_tensor *t) {
  return E->written && E->written[t->id] ? "__ldca" : "__ldg";
}
