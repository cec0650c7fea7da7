/* gemm_xform.c — an A operand computed from its load, in the wgmma K loop.
 *
 * Before: a wgmma plan with A from registers (plan->areg) whose A factor
 * is an elementwise function f of one load L of its M and K indices
 * (gemm_operand.xform, planned by gemm_plan.c as L: the stages hold L's
 * tile).  After: the text that turns each of a thread's A fragment
 * elements, L's value at (row, k) as loaded from the stage, into f's:
 *   - f's row terms (its largest float subexpressions that read memory
 *     and mention no K index: `m[i]`, `1 / l[i]`) at the thread's two
 *     fragment rows, once a tile, before the K loop (gemm_xform_rows);
 *   - f's k terms (those that mention no M index) at each k a fragment
 *     holds, once a k step (gemm_xform_ks);
 *   - f itself per element, the terms by name and L by the staged value
 *     (gemm_xform_value), 0 past the K range (the stage's zeros there are
 *     L's, not f's).
 * Rows past M and k past the range read their terms at the last row and
 * k inside: never stored, never out of bounds.  Terms inside a where()'s
 * branches are left in f, read where the branch is taken.
 *
 * SAM-HQ's attention probabilities p = exp(s - mx) / l are such an A for
 * `o` (row terms) and `dv` (k terms): they can be read from s and the row
 * statistics rather than stored (docs/FUSED_ATTENTION.md, order of work
 * item 5). */
#include "gemm_impl.h"
#include "ir/subst.h"

enum { XF_MAX_TERMS = 8 };

/* Terms: t[i] read into a register; where div[i] is not NULL, t[i] is
 * that division's divisor, its reciprocal read instead (x / t as x times
 * it: one rounding more, a multiplication for a division per element). */
typedef struct {
  const ir_expr *t[XF_MAX_TERMS], *div[XF_MAX_TERMS];
  int n;
} xf_terms;

static int reads_memory(const ir_expr *e) {
  if (e->op == IR_OP_LOAD) return 1;
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (reads_memory(e->arg[i])) return 1;
  return 0;
}

/* Whether e, outside where() branches, is a row term (k = 0: it mentions
 * no K index; or neither kind of index, once a tile) or a k term (k = 1:
 * no M index). */
static int is_term(const cg_gemm_plan *plan, const ir_expr *e, int branch, int k) {
  const cg_contraction *c = &plan->tiling.c;
  if (branch || e->type != IR_TY_FLOAT || ir_expr_holds(e, plan->op[0].e) || !reads_memory(e)) return 0;
  if (!gemm_mentions_any(e, c->k, c->n_k)) return !k;
  return k && !gemm_mentions_any(e, c->m, c->n_m);
}

static int either_term(const cg_gemm_plan *plan, const ir_expr *e, int branch) {
  return is_term(plan, e, branch, 0) || is_term(plan, e, branch, 1);
}

/* f's row terms (k = 0) or k terms (k = 1), outside where() branches. */
static void collect(const cg_gemm_plan *plan, const ir_expr *e, int branch, int k, xf_terms *out) {
  if (either_term(plan, e, branch)) {
    if (is_term(plan, e, branch, k) && out->n < XF_MAX_TERMS) out->t[out->n++] = e;
    return;
  }
  if (e->op == IR_OP_DIV && e->type == IR_TY_FLOAT && either_term(plan, e->arg[1], branch)) {
    if (is_term(plan, e->arg[1], branch, k) && out->n < XF_MAX_TERMS) {
      out->div[out->n] = e;
      out->t[out->n++] = e->arg[1];
    }
    collect(plan, e->arg[0], branch, k, out);
    return;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    collect(plan, e->arg[i], branch || (e->op == IR_OP_WHERE && i > 0), k, out);
}

/* The C value of term i of ts: the term's, or its reciprocal. */
static const char *term_value(cg_emit *out, const xf_terms *ts, int i) {
  const char *v = cg_float_value(out, ts->t[i], cg_expr(out, ts->t[i]));
  return ts->div[i] ? cg_fmt(out, "1.0f / %s", v) : v;
}

static void substitute(cg_emit *out, const xf_terms *ts, int i, const char *name) {
  if (ts->div[i]) cg_substitute_recip(out, ts->div[i], name);
  else cg_substitute(out, ts->t[i], name);
}

static xf_terms terms(const cg_gemm_plan *plan, int k) {
  xf_terms t = {0};
  collect(plan, plan->op[0].xform, 0, k, &t);
  return t;
}

/* The indices ids[0..n) stand for the digits of the C variable flat (one
 * index: flat itself), named <flat>_<index name>; declared (and flat
 * decoded into them) where `declare`, else declared before. */
static void bind_digits(gemm_emitter *ge, const char *flat, const int *ids, int n, int declare) {
  if (n == 1) {
    ge->bind[ids[0]] = flat;
    return;
  }
  const char *pre = cg_fmt(&ge->emit, "%s_", flat);
  const char **dst = declare ? gemm_declare_digits(ge, flat, ids, n, pre, "") : gemm_digit_names(ge, ids, n, pre);
  for (int i = 0; i < n; i++) ge->bind[ids[i]] = dst[i];
}

static void bind_batch(gemm_emitter *ge) {
  const cg_contraction *c = &ge->plan->tiling.c;
  for (int i = 0; i < c->n_b; i++) ge->bind[c->bat[i]] = ge->names[c->bat[i]];
}

void gemm_xform_rows(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_operand *o = &plan->op[0];
  const cg_contraction *c = &plan->tiling.c;
  xf_terms rt = terms(plan, 0);
  cg_line(out, "// A = %s, from its load %s staged: the row terms at this thread's fragment rows",
          cg_expr_comment(out->a, plan->s, o->xform), cg_expr_comment(out->a, plan->s, o->e));
  cg_line(out, "// (rows past M read at the last row: never stored)");
  bind_batch(ge);
  for (int r = 0; r < 2; r++) {
    const char *row = cg_fmt(out, "_xm%d", r);
    cg_line(out, "const long long %s = %s + _wm0 + _g + %d < %s ? %s + _wm0 + _g + %d : %s - 1;", row, o->x0, 8 * r,
            o->X, o->x0, 8 * r, o->X);
    bind_digits(ge, row, c->m, c->n_m, 1);
    for (int t = 0; t < rt.n; t++)
      cg_line(out, "const float _xr%d_%d = %s;", r, t, term_value(out, &rt, t));
  }
}

/* Whether fragment k may lie past the K range: K unknown or not whole
 * k-tiles, or split-K's slices. */
static int k_tested(const cg_gemm_plan *plan) {
  int64_t K;
  return plan->split || !sym_is_const(plan->tiling.K, &K) || K % plan->tiling.cfg.bk != 0;
}

void gemm_xform_ks(gemm_emitter *ge) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const cg_contraction *c = &plan->tiling.c;
  xf_terms kt = terms(plan, 1);
  int tested = k_tested(plan);
  bind_batch(ge);
  for (int h = 0; h < 2; h++) {
    const char *k = cg_fmt(out, "_xk%d", h);
    cg_line(out, "const long long %s = (_kt0 + _kt) * %d + _q * 8 + _t4%s; // k of a%d, a%d", k, plan->tiling.cfg.bk,
            h ? " + 4" : "", 2 * h, 2 * h + 1);
    const char *kin = k;
    if (tested) {
      cg_line(out, "const bool %sok = %s < _kend;", k, k);
      kin = cg_fmt(out, "_xc%d", h);
      cg_line(out, "const long long %s = %sok ? %s : _kend - 1; // (past the range: read inside)", kin, k, k);
    }
    if (!kt.n && c->n_k == 1) continue;
    bind_digits(ge, kin, c->k, c->n_k, 1);
    for (int t = 0; t < kt.n; t++)
      cg_line(out, "const float _xkv%d_%d = %s;", h, t, term_value(out, &kt, t));
  }
}

const char *gemm_xform_value(gemm_emitter *ge, int i, const char *x) {
  cg_emit *out = &ge->emit;
  const cg_gemm_plan *plan = ge->plan;
  const gemm_operand *o = &plan->op[0];
  const cg_contraction *c = &plan->tiling.c;
  int r = i % 2, h = i / 2;
  xf_terms rt = terms(plan, 0), kt = terms(plan, 1);
  bind_batch(ge);
  bind_digits(ge, cg_fmt(out, "_xm%d", r), c->m, c->n_m, 0);
  const char *kin = k_tested(plan) ? cg_fmt(out, "_xc%d", h) : cg_fmt(out, "_xk%d", h);
  bind_digits(ge, kin, c->k, c->n_k, 0);
  int before = out->n_hoisted;
  for (int t = 0; t < rt.n; t++) substitute(out, &rt, t, cg_fmt(out, "_xr%d_%d", r, t));
  for (int t = 0; t < kt.n; t++) substitute(out, &kt, t, cg_fmt(out, "_xkv%d_%d", h, t));
  const char **value_of = KBC_NEW_ARRAY(out->a, const char *, ge->ctx->p->tensors.len + 1);
  value_of[o->e->u.load.tensor->id] = x;
  cg_expr_ctx ctx = {.value_of = value_of};
  const char *v = cg_float_value(out, o->xform, cg_expr_in(out, o->xform, &ctx));
  out->n_hoisted = before;
  return k_tested(plan) ? cg_fmt(out, "(_xk%dok ? %s : 0.0f)", h, v) : v;
}
