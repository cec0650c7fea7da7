/* inline.c — inlines pointwise temporaries into their readers.
 *
 * Before/after: a verified program computing the same values.  A temporary
 * written by exactly one plain statement without reductions (an
 * elementwise producer: `e = exp(x - m)`, `r = x + attn`) is substituted
 * into every statement that reads it: the load `e[a, b]` becomes the
 * producer's expression with its free indices replaced by `a, b`.  The
 * producer then has no readers and dce removes it.  Elementwise chains
 * thereby fuse into their consumers before kernels are formed.  Padded
 * loads are not inlined (outside the tensor they read 0, not the
 * expression), an inlining that would grow a statement beyond MAX_NODES
 * nodes is skipped, and a producer of more than MAX_IN_REDUCTION nodes is
 * not inlined where it is read inside a reduction (each element would be
 * recomputed for every point that reads it).  Such a producer, kept for
 * one reader, is inlined into none: computed and stored anyway, it would
 * be computed again for each other reader to save a load (a residual
 * stream's layer norms, each recomputed from the first layer's in every
 * later one: CViT's `ret` statements held five layers of them). */
#include "passes.h"
#include "ir/subst.h"

enum { MAX_NODES = 256, MAX_IN_REDUCTION = 4 };

static int padded_reads(const ir_expr *e, const ir_tensor *t) {
  int n = e->op == IR_OP_LOAD && e->u.load.tensor == t && e->u.load.padded;
  for (int i = 0; i < ir_op_info[e->op].arity; i++) n += padded_reads(e->arg[i], t);
  return n;
}

/* Whether a load of t sits inside a reduction of e. */
static int read_in_reduction(const ir_expr *e, const ir_tensor *t, int inside) {
  if (e->op == IR_OP_LOAD) return inside && e->u.load.tensor == t;
  for (int i = 0; i < ir_op_info[e->op].arity; i++)
    if (read_in_reduction(e->arg[i], t, inside || e->op == IR_OP_REDUCE)) return 1;
  return 0;
}

/* The producer's rhs at the consumer's load, or the load itself. */
static ir_expr *replace(kbc_arena *a, ir_expr *e, const ir_stmt *prod) {
  if (e->op == IR_OP_LOAD && e->u.load.tensor == prod->out) {
    /* Producer free index lhs[d] (an index id) becomes the load's idx[d]. */
    sym **by = KBC_NEW_ARRAY(a, sym *, prod->n_index > 0 ? prod->n_index : 1);
    for (int d = 0; d < prod->out->rank; d++) {
      int id;
      sym_is_index(prod->lhs[d], &id);
      by[id] = e->u.load.idx[d];
    }
    ir_expr *r = ir_expr_subst(a, prod->rhs, prod->n_index, by, NULL);
    return r ? r : e;
  }
  for (int i = 0; i < ir_op_info[e->op].arity; i++) e->arg[i] = replace(a, e->arg[i], prod);
  return e;
}

static int inlinable(const ir_program *p, const ir_stmt *s) {
  if (s->accumulate || s->out->role != IR_ROLE_TEMP || ir_expr_has_reduce(s->rhs)) return 0;
  if (ir_expr_size(s->rhs) > MAX_NODES / 4) return 0;
  for (int i = 0; i < p->stmts.len; i++) {
    const ir_stmt *o = IR_STMT(p, i);
    if (o != s && o->out == s->out) return 0; /* several writers */
    if (padded_reads(o->rhs, s->out)) return 0;
  }
  return 1;
}

/* Consumer cons's rhs with prod inlined, or NULL where it should keep the
 * load: inside a reduction an element is read by many of the consumer's
 * points, so only trivial producers (x + y) are worth recomputing there;
 * and no statement grows beyond MAX_NODES. */
static ir_expr *inlined(ir_program *p, const ir_stmt *prod, int size, const ir_stmt *cons) {
  if (!ir_expr_reads(cons->rhs, prod->out)) return NULL;
  if (size > MAX_IN_REDUCTION && read_in_reduction(cons->rhs, prod->out, 0)) return NULL;
  ir_expr *r = replace(p->arena, ir_expr_subst(p->arena, cons->rhs, 0, NULL, NULL), prod);
  return ir_expr_size(r) <= MAX_NODES || size <= 1 ? r : NULL;
}

int ir_inline(ir_program *p, kbc_diag *d) {
  (void)d;
  for (int i = 0; i < p->stmts.len; i++) {
    ir_stmt *prod = IR_STMT(p, i);
    if (!inlinable(p, prod)) continue;
    int size = ir_expr_size(prod->rhs);
    /* A producer some reader keeps loading stays computed and stored:
     * inlined into the others, it would be computed again for them (a
     * residual stream's layer norm, recomputed from the first layer in
     * every later one) to save one load each — unless trivial. */
    ir_expr **r = KBC_NEW_ARRAY(p->arena, ir_expr *, p->stmts.len);
    int everywhere = 1;
    for (int j = i + 1; j < p->stmts.len; j++) {
      const ir_stmt *cons = IR_STMT(p, j);
      r[j] = inlined(p, prod, size, cons);
      everywhere &= r[j] || !ir_expr_reads(cons->rhs, prod->out);
    }
    if (!everywhere && size > MAX_IN_REDUCTION) continue;
    for (int j = i + 1; j < p->stmts.len; j++)
      if (r[j]) IR_STMT(p, j)->rhs = r[j];
  }
  return 1;
}
