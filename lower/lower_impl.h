/* lower_impl.h — internal interface of the lowering from AST to IR.
 *
 * Lowering resolves names, evaluates axes, unrolls `for`, expands `def`
 * calls and library functions, infers index ranges and builds IR
 * statements.  It reports every semantic error of the spec with a location.
 * Files: lower.c (items, scopes, driver), lower_axes.c (axis expressions),
 * lower_stmt.c (index-notation statements), lower_tensor.c (whole-tensor
 * expressions, defs), library.c (softmax, layernorm, linear). */
#ifndef KBC_LOWER_IMPL_H
#define KBC_LOWER_IMPL_H

#include "frontend/ast.h"
#include "ir/ir.h"
#include "support/suggest.h"

/* A tensor as seen through a name: the tensor with its leading n_fixed
 * dimensions fixed (a slice such as attn_in_w[l]). */
typedef struct {
  ir_tensor *tensor;
  int n_fixed;
  sym **fixed;
} lw_view;

static inline int lw_view_rank(const lw_view *v) { return v->tensor->rank - v->n_fixed; }
static inline sym *lw_view_dim(const lw_view *v, int i) { return v->tensor->shape[v->n_fixed + i]; }

typedef enum {
  LW_NAME_AXIS,   /* a global axis */
  LW_NAME_INT,    /* a compile-time integer: loop variable, integer def argument */
  LW_NAME_TENSOR, /* a tensor view */
  LW_NAME_POISON, /* its definition failed; uses are silently errors */
  LW_NAME_DEF,    /* a user def */
} lw_name_kind;

typedef struct lw_name {
  const char *name;
  lw_name_kind kind;
  const ir_axis *axis;
  sym *value;              /* INT */
  lw_view view;            /* TENSOR */
  const ast_item *def;     /* DEF */
  int version;             /* rebindings of this name so far */
  int used;                /* looked up (lw_lookup) since it was bound */
  struct lw_name *next;
} lw_name;

typedef struct lw_scope {
  lw_name *names;
  struct lw_scope *parent;
  const char *prefix; /* for names of temporaries made in this scope */
  int is_def;         /* a def body: outer tensors are read-only */
} lw_scope;

typedef struct {
  kbc_arena *a;
  kbc_diag *d;
  ir_program *p;
  lw_scope *global, *scope;
  int def_depth;   /* nested def expansions (bounded) */
  int n_generated; /* counter for fresh names */
  int64_t n_stmts_budget; /* statements left before "program too large" */
  const char *hint; /* base name for temporaries of the statement being lowered */
  const char *text; /* source text of the statement being lowered */
  const ir_axis_value *fixed; /* var axes made constants (specialization) */
  int n_fixed;
  kbc_vec failed; /* ir_tensor *: declared tensors (outputs, `tensor`) a failed statement meant to write */
} lower;

enum { LW_MAX_DEF_DEPTH = 32, LW_MAX_STMTS = 100000, LW_MAX_LOOP_TRIPS = 4096 };

/* lower.c */
/* The name's binding in scope (marked used), or NULL. */
lw_name *lw_lookup(lower *L, const char *name);
lw_name *lw_bind(lower *L, lw_scope *s, const char *name, lw_name_kind kind);
/* 0 when `name` (bound to n, or unbound: NULL) cannot be a statement's
 * target: a poisoned name (silently) or an axis, def or loop variable
 * (reported at loc). */
int lw_assignable(lower *L, const lw_name *n, const char *name, kbc_loc loc);
/* 1 (after reporting at loc) when n lives beyond the innermost def's scope:
 * a def may not assign its caller's tensors. */
int lw_caller_owns(lower *L, const lw_name *n, kbc_loc loc);
/* "[a, b]": a view's shape, for messages. */
const char *lw_shape_str(lower *L, const lw_view *v);
const char *lw_fresh_name(lower *L, const char *base);
int lw_lower_block(lower *L, const ast_block *b);
/* The statement that last wrote t so far, or NULL. */
const ir_stmt *lw_writer(lower *L, const ir_tensor *t);
/* An input, or a tensor some earlier statement wrote; else 0, reported at
 * loc unless a failed statement meant to write it (L->failed: the error
 * was its statement's). */
int lw_check_assigned(lower *L, const ir_tensor *t, const char *name, kbc_loc loc);

/* lower_axes.c: an expression over axes, integers and (when allow_index)
 * the statement's index variables, as a sym.  Reports and returns NULL on
 * error.  `what` names the context for messages ("shape of 'x'"). */
typedef struct lw_stmt lw_stmt;
sym *lw_int_expr(lower *L, const ast_expr *e, lw_stmt *st, const char *what);
int lw_resolve_axes(lower *L, const ast_block *top);
int lw_lower_assert(lower *L, const ast_item *it);
/* 1 when e is made only of integers, axes, int names and (with st) index
 * variables — i.e. can be lowered by lw_int_expr. */
int lw_is_int_expr(lower *L, const ast_expr *e, lw_stmt *st);

/* lower_stmt.c */
int lw_lower_stmt(lower *L, const ast_item *it);
/* Whether e holds a reduction (sum, prod, max, min with indices before a
 * ':') outside library and def calls: such a whole-tensor expression is
 * index notation with zero free indices, a scalar. */
int lw_has_reduction(const ast_expr *e);
/* Lowers such an e as one index-notation statement with no free indices
 * into a new rank-0 temporary (named after L->hint); *out views it. */
int lw_scalar_value(lower *L, const ast_expr *e, lw_view *out);

/* lower_tensor.c: a whole-tensor expression as a view (materializing
 * elementwise expressions and calls into temporaries). */
int lw_tensor_expr(lower *L, const ast_expr *e, lw_view *out);
int lw_assign_view(lower *L, const ast_item *it, const lw_view *value);

/* library.c */
typedef struct {
  const char *name;
  int (*expand)(lower *L, const ast_expr *call, lw_view *out);
} lw_library_fn;
const lw_library_fn *lw_library_find(const char *name);
/* Scalar (elementwise) functions usable in index notation. */
int lw_scalar_fn_arity(const char *name, ir_op *op);
/* Offers every function name (scalar, library, reduction) to s. */
void lw_suggest_functions(kbc_suggest *s);

/* lower.c: "; did you mean 'bias'?" for a misspelt name, from the names in
 * scope of the kinds in mask (bits 1 << lw_name_kind), the statement's
 * indices (st, may be NULL) and, with functions, the function names; ""
 * when nothing is close. */
const char *lw_did_you_mean(lower *L, const char *name, unsigned mask, lw_stmt *st, int functions);
/* The same among the reductions (sum, prod, max, min). */
const char *lw_did_you_mean_reduction(lower *L, const char *name);
#define LW_TENSORS (1u << LW_NAME_TENSOR)
#define LW_VALUES ((1u << LW_NAME_TENSOR) | (1u << LW_NAME_AXIS) | (1u << LW_NAME_INT))

/* A statement under construction (shared by lower_stmt.c and library.c). */
struct lw_stmt {
  ir_stmt *s;
  kbc_vec names;   /* const char* by index id */
  kbc_vec kinds;   /* (intptr_t) ir_idx_kind by id */
  kbc_vec extents; /* sym* by id (NULL while unknown) */
  kbc_vec locs;    /* kbc_loc* by id */
  kbc_vec loads;   /* ir_expr* loads, for range inference and checks */
  int n_scope;     /* reduction scope stack depth */
  int scalar;      /* a statement with no free indices made from a whole-tensor expression (for messages) */
  int scope_ids[64];
};

int lw_stmt_add_index(lower *L, lw_stmt *st, const char *name, ir_idx_kind kind, sym *extent, kbc_loc loc);
int lw_stmt_find_index(lw_stmt *st, const char *name);
/* Finishes: infers missing extents, fills s->index; returns NULL on error. */
ir_stmt *lw_stmt_finish(lower *L, lw_stmt *st, ir_tensor *out, sym **lhs, int accumulate,
                        ir_expr *rhs, kbc_loc loc, const char *text);
/* Emits a ready statement into the program. */
void lw_emit(lower *L, ir_stmt *s);
/* A load through a view with the given remaining index syms. */
ir_expr *lw_view_load(lower *L, const lw_view *v, sym **idx, int padded, kbc_loc loc);

#endif
