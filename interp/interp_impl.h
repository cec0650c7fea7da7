/* interp_impl.h — the interpreter's evaluation plan, private to
 * interp/interp.c (which runs plans) and interp/interp_compile.c (which builds
 * them), and to their white-box unit test.
 *
 * A plan is one statement compiled for one binding:
 *   - the statement's expression tree as an array of nodes whose operands
 *     are node numbers, constants folded;
 *   - "tracked values": int64 affine functions base + sum coef[v]*idx[v] of
 *     the index variables, kept current by the loops (moving index v by one
 *     adds coef[v] to every tracked value that mentions v);
 *   - "slots": cached sums of scale * value(sym) for index syms that are
 *     not affine (j/64, (j/64) % 12), recomputed only after an index they
 *     mention has moved;
 *   - each load (and the target) as FLAT when every dimension is proven
 *     inside the tensor over the whole iteration box (affine dimensions by
 *     their range over the box, others by sym_bounds): offset = a tracked
 *     value + a slot, no check; else DIMS: each dimension tracked or cached
 *     and checked on every read;
 *   - per index variable: its extent, the tracked values it moves and the
 *     slots it invalidates.
 * Loops leave every index at 0 when they finish, so the tracked values'
 * "all indices zero" state is the resting state. */
#ifndef KBC_INTERP_IMPL_H
#define KBC_INTERP_IMPL_H

#include <math.h>

#include "interp.h"

/* Moving index v: tracked value tv += step; wrapping it from ext-1 to 0:
 * tv -= wrap (= step * (ext-1)). */
typedef struct {
  int tv;
  int64_t step, wrap;
} interp_upd;

typedef struct {
  int64_t ext;
  int n_upd, cap_upd;
  interp_upd *upd;
  int n_dirty, cap_dirty;
  int *dirty; /* slots that mention this index */
} interp_var;

/* sum scale[i] * value(syms[i]); when `proven`, the value must lie in
 * [lo, hi] (the range the bounds proof gave; re-checked on every refresh,
 * so that a wrong proof is reported instead of reading out of bounds). */
typedef struct {
  int n;
  const sym **syms;
  int64_t *scale;
  int proven;
  int64_t lo, hi;
} interp_slot;

typedef enum { INTERP_ACC_FLAT, INTERP_ACC_DIMS } interp_acc_mode;

/* A load, or the statement's target. */
typedef struct {
  const ir_tensor *t;
  const sym *const *idx; /* the index syms as written */
  int padded;
  interp_acc_mode mode;
  int flat;              /* FLAT: offset = tracked value `flat` + slot `slot` */
  int slot;              /* FLAT: the non-affine dimensions, or -1 */
  int rank;
  int *dim_tv;           /* DIMS: per dimension a tracked value, or -1: */
  int *dim_slot;         /*   the slot of its value */
  const int64_t *shape;
  int64_t *stride;
} interp_access;

/* Node kinds beyond ir_op. */
enum {
  INODE_LOAD_FLAT = IR_OP_COUNT, /* a = access, b = tracked flat offset */
  INODE_LOAD_MIXED,              /* a = access, b = tracked part, c = slot part */
  INODE_LOAD_DIMS,               /* a = access */
  INODE_INDEX_TV,                /* a = tracked value */
  INODE_INDEX_SLOT,              /* a = slot */
  INODE_DOT,                     /* a sum of (a product of) one or two flat loads: a = reduce number */
  INODE_COUNT
};

typedef struct {
  int op;      /* ir_op or INODE_* */
  int a, b, c; /* operands (node numbers) or as noted above; REDUCE: a = body, b = reduce number */
  double value; /* CONST */
  /* Vectorized evaluation (see interp.c): the node is evaluated for a run
   * of consecutive values of index v at once, or for one point (v = -1). */
  int v;
  int flags;     /* INODE_* flags below */
  int64_t vstep; /* LOAD_FLAT, LOAD_MIXED, INDEX_TV: the step along v */
} interp_node;

enum {
  INODE_UNSAFE = 1,    /* may report an error: must not run where not taken */
  INODE_HEAVY = 2,     /* contains a reduction */
  INODE_POINTWISE = 4, /* in a vector context, evaluated point by point */
  INODE_VROOT = 8,     /* a reduction vectorized along its innermost index */
  INODE_UNIFORM = 16,  /* in a vector context, the same for every point: evaluated once */
};

/* Points per vector. */
enum { INTERP_VW = 128 };

/* 1 (default): vectorized evaluation; 0: point by point only (the unit
 * test compares the two). */
extern int interp_vectorize;

typedef struct {
  ir_red op;
  int n_vars;
  const int *vars;
  /* INODE_DOT: the loads' data (by access number), tracked offsets,
   * slots (constant within the reduction, or -1) and steps along the
   * innermost reduction variable. */
  int n_loads;
  int acc[2], tv[2], slot[2];
  int64_t step[2];
} interp_reduce;

typedef struct {
  const ir_stmt *s;
  int n_nodes, cap_nodes;
  interp_node *node;
  int root;
  int n_acc, cap_acc;
  interp_access *acc;
  int n_red, cap_red;
  interp_reduce *red;
  int n_slots, cap_slots;
  interp_slot *slot;
  int n_tv, cap_tv;
  int64_t *tv0; /* tracked values with every index at 0 */
  int n_index;
  interp_var *var; /* by index id */
  int n_outer;
  int *outer; /* free and scatter indices, outermost first */
  int lhs;    /* access of the target */
  int empty;  /* an outer extent is < 1: the statement does nothing */
  int reads_out; /* the right side loads the target */
  /* Row mode, for a plain statement whose value is a DOT (or a DOT
   * combined with one other operand by + - * /) that strides badly along
   * its innermost reduction index but well along the innermost outer index
   * j (a[i, k] * b[k, j]): each DOT term is accumulated into a row of
   * sums over j, reduction indices outside.  Every output element still
   * sums its terms in the same order, so results are identical. */
  int row_dot;         /* the DOT node, or -1: no row mode */
  int64_t row_step[2]; /* its loads' steps along j */
  /* A statement without reductions runs vectorized along j. */
  int vec_top;
  int64_t lhs_vstep; /* vec_top: the target's step along j */
  int uses_vec;      /* some node runs vectorized: needs vector buffers */
} interp_plan;

/* Compiles statement s for binding b.  Errors (a statement breaking the IR
 * invariants the interpreter relies on, an overflowing extent) are reported
 * as internal errors; returns 0 then. */
int interp_compile(kbc_arena *a, const ir_program *p, const ir_binding *b, const ir_stmt *s,
                   interp_plan *out, kbc_diag *d);

/* ---- scalar semantics, shared by evaluation and constant folding -------- */

/* max/min that propagate NaN, as PyTorch does. */
static inline double interp_max(double x, double y) { return (x > y || x != x) ? x : y; }
static inline double interp_min(double x, double y) { return (x < y || x != x) ? x : y; }

static inline double interp_unary(int op, double x) {
  switch (op) {
  case IR_OP_NEG: return -x;
  case IR_OP_NOT: return x == 0.0;
  case IR_OP_EXP: return exp(x);
  case IR_OP_LOG: return log(x);
  case IR_OP_SQRT: return sqrt(x);
  case IR_OP_RSQRT: return 1.0 / sqrt(x);
  case IR_OP_TANH: return tanh(x);
  case IR_OP_ERF: return erf(x);
  case IR_OP_ABS: return fabs(x);
  case IR_OP_RELU: return x < 0.0 ? 0.0 : x;
  case IR_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
  case IR_OP_GELU: return 0.5 * x * erfc(x * -0.70710678118654752440); /* 1 + erf(y) = erfc(-y), exact in the tail */
  case IR_OP_LOG1P: return log1p(x);
  case IR_OP_EXPM1: return expm1(x);
  case IR_OP_SOFTPLUS: return x > 20.0 ? x : log1p(exp(x)); /* as torch.nn.functional.softplus */
  case IR_OP_SILU: return x / (1.0 + exp(-x));
  default: return NAN;
  }
}

static inline double interp_binary(int op, double x, double y) {
  switch (op) {
  case IR_OP_ADD: return x + y;
  case IR_OP_SUB: return x - y;
  case IR_OP_MUL: return x * y;
  case IR_OP_DIV: return x / y;
  case IR_OP_MAX: return interp_max(x, y);
  case IR_OP_MIN: return interp_min(x, y);
  case IR_OP_POW: return pow(x, y);
  case IR_OP_EQ: return x == y;
  case IR_OP_NE: return x != y;
  case IR_OP_LT: return x < y;
  case IR_OP_LE: return x <= y;
  case IR_OP_GT: return x > y;
  case IR_OP_GE: return x >= y;
  case IR_OP_AND: return x != 0.0 && y != 0.0;
  case IR_OP_OR: return x != 0.0 || y != 0.0;
  default: return NAN;
  }
}

static inline double interp_combine(ir_red op, double acc, double x) {
  switch (op) {
  case IR_RED_SUM: return acc + x;
  case IR_RED_PROD: return acc * x;
  case IR_RED_MAX: return interp_max(acc, x);
  case IR_RED_MIN: return interp_min(acc, x);
  default: return NAN;
  }
}

#endif
