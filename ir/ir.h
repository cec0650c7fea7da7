/* ir.h — the kbc intermediate representation.
 *
 * A program is a list of axes (named sizes), tensors (inputs, outputs,
 * temporaries; shapes are syms over the var axes) and index-notation
 * statements in execution order.  A statement assigns (or, with `+=`,
 * scatter-accumulates) an expression tree to a tensor over its index
 * variables.  Everything lives in the program's arena.
 *
 * Invariants (checked by ir_verify after every pass):
 *   - every load has exactly rank(tensor) index syms, mentioning only the
 *     statement's index variables and var axes;
 *   - a reduction's variables are reduction indices of its statement, each
 *     reduced by exactly one reduction node, and used only inside it;
 *   - a plain statement's lhs is its free index variables, in order, with
 *     extents equal to the tensor's shape;
 *   - a tensor is read only after a statement that writes it (inputs are
 *     written by the caller); outputs are written;
 *   - expression types agree with ir_op_info (float arithmetic, int index
 *     arithmetic, bool conditions).
 */
#ifndef KBC_IR_H
#define KBC_IR_H

#include <stdint.h>

#include "support/arena.h"
#include "support/buf.h"
#include "support/diag.h"
#include "sym/sym.h"

typedef struct ir_program ir_program;
typedef struct ir_tensor ir_tensor;
typedef struct ir_stmt ir_stmt;
typedef struct ir_expr ir_expr;

/* ---- axes -------------------------------------------------------------- */

typedef enum { IR_AXIS_VAR, IR_AXIS_CONST, IR_AXIS_DERIVED } ir_axis_kind;

typedef struct {
  const char *name;
  kbc_loc loc;
  ir_axis_kind kind;
  int var_id; /* IR_AXIS_VAR: its atom id (index into program->vars), else -1 */
  sym *size;  /* VAR: sym_axis(var_id); CONST: a constant; DERIVED: over var atoms */
  int fixed;  /* CONST: declared var, fixed to its size by specialization */
} ir_axis;

/* A var axis's value, by name: the sizes a program is specialized for. */
typedef struct {
  const char *name;
  int64_t value;
} ir_axis_value;

/* The comparisons of asserts, written once: the enum and ir_cmp_text come
 * from this list.  Their order is the frontend's (AST_BINOPS, EQ to GE),
 * which the lowering maps by offset (checked there at compile time). */
#define IR_CMPS(X) \
  X(EQ, "==")      \
  X(NE, "!=")      \
  X(LT, "<")       \
  X(LE, "<=")      \
  X(GT, ">")       \
  X(GE, ">=")

typedef enum {
#define X(id, text) IR_CMP_##id,
  IR_CMPS(X)
#undef X
} ir_cmp;
#define X(id, text) +1
enum { IR_CMP_COUNT = 0 IR_CMPS(X) }; /* outside ir_cmp, so that switches need not name it */
#undef X

extern const char *const ir_cmp_text[IR_CMP_COUNT];

/* `assert lhs op rhs` between axis expressions, checked when axes are bound. */
typedef struct {
  sym *lhs, *rhs;
  ir_cmp op;
  kbc_loc loc;
  const char *text;
} ir_assert;

/* ---- tensors ----------------------------------------------------------- */

#define IR_DTYPES(X) \
  X(F32, "f32", 4, 1) \
  X(F16, "f16", 2, 0) \
  X(BF16, "bf16", 2, 0) \
  X(I32, "i32", 4, 0)
/* columns: enum suffix, spelling, bytes, supported by this kbc version */

typedef enum {
#define X(id, text, bytes, ok) IR_DT_##id,
  IR_DTYPES(X)
#undef X
  IR_DT_COUNT
} ir_dtype;

extern const char *const ir_dtype_name[IR_DT_COUNT];
extern const int ir_dtype_bytes[IR_DT_COUNT];
extern const int ir_dtype_supported[IR_DT_COUNT];

typedef enum { IR_ROLE_INPUT, IR_ROLE_OUTPUT, IR_ROLE_TEMP } ir_role;

struct ir_tensor {
  const char *name; /* unique in the program (temporaries from defs, loops
                       and library calls get dotted names: layer2.attn) */
  int id;           /* index in program->tensors */
  kbc_loc loc;
  ir_role role;
  ir_dtype dtype;
  int rank; /* 0 for a scalar */
  sym **shape;
  int declared; /* shape written by the user (input/output/tensor decl) */
};

/* ---- expressions ------------------------------------------------------- */

typedef enum { IR_TY_FLOAT, IR_TY_INT, IR_TY_BOOL } ir_type;

/* How an op prints: as a call f(a, b), infix a + b, prefix -a, or special. */
typedef enum { IR_FMT_CALL, IR_FMT_INFIX, IR_FMT_PREFIX, IR_FMT_SPECIAL } ir_fmt;

/* The op table: enum suffix, spelling, arity, print style, infix
 * precedence (higher binds tighter; 0 for non-infix). */
#define IR_OPS(X)                          \
  X(CONST, "const", 0, SPECIAL, 0)         \
  X(LOAD, "load", 0, SPECIAL, 0)           \
  X(INDEX, "index", 0, SPECIAL, 0)         \
  X(REDUCE, "reduce", 1, SPECIAL, 0)       \
  X(NEG, "-", 1, PREFIX, 0)                \
  X(NOT, "!", 1, PREFIX, 0)                \
  X(EXP, "exp", 1, CALL, 0)                \
  X(LOG, "log", 1, CALL, 0)                \
  X(SQRT, "sqrt", 1, CALL, 0)              \
  X(RSQRT, "rsqrt", 1, CALL, 0)            \
  X(TANH, "tanh", 1, CALL, 0)              \
  X(ERF, "erf", 1, CALL, 0)                \
  X(ABS, "abs", 1, CALL, 0)                \
  X(RELU, "relu", 1, CALL, 0)              \
  X(SIGMOID, "sigmoid", 1, CALL, 0)        \
  X(GELU, "gelu", 1, CALL, 0)              \
  X(LOG1P, "log1p", 1, CALL, 0)            \
  X(EXPM1, "expm1", 1, CALL, 0)            \
  X(SOFTPLUS, "softplus", 1, CALL, 0)      \
  X(SILU, "silu", 1, CALL, 0)              \
  X(ADD, "+", 2, INFIX, 4)                 \
  X(SUB, "-", 2, INFIX, 4)                 \
  X(MUL, "*", 2, INFIX, 5)                 \
  X(DIV, "/", 2, INFIX, 5)                 \
  X(MAX, "max", 2, CALL, 0)                \
  X(MIN, "min", 2, CALL, 0)                \
  X(POW, "pow", 2, CALL, 0)                \
  X(EQ, "==", 2, INFIX, 3)                 \
  X(NE, "!=", 2, INFIX, 3)                 \
  X(LT, "<", 2, INFIX, 3)                  \
  X(LE, "<=", 2, INFIX, 3)                 \
  X(GT, ">", 2, INFIX, 3)                  \
  X(GE, ">=", 2, INFIX, 3)                 \
  X(AND, "&&", 2, INFIX, 2)                \
  X(OR, "||", 2, INFIX, 1)                 \
  X(WHERE, "where", 3, CALL, 0)

typedef enum {
#define X(id, text, arity, fmt, prec) IR_OP_##id,
  IR_OPS(X)
#undef X
  IR_OP_COUNT
} ir_op;

typedef struct {
  const char *text;
  int arity;
  ir_fmt fmt;
  int prec;
} ir_op_info_t;

extern const ir_op_info_t ir_op_info[IR_OP_COUNT];

/* Reductions: enum suffix, spelling, identity. */
#define IR_REDUCTIONS(X)        \
  X(SUM, "sum", 0.0)            \
  X(PROD, "prod", 1.0)          \
  X(MAX, "max", -INFINITY)      \
  X(MIN, "min", INFINITY)

typedef enum {
#define X(id, text, ident) IR_RED_##id,
  IR_REDUCTIONS(X)
#undef X
  IR_RED_COUNT
} ir_red;

extern const char *const ir_red_name[IR_RED_COUNT];
double ir_red_identity(ir_red r);

struct ir_expr {
  ir_op op;
  ir_type type;
  kbc_loc loc;
  ir_expr *arg[3]; /* operands (ir_op_info[op].arity of them); REDUCE: arg[0] = body */
  union {
    double value; /* CONST (type FLOAT; INT/BOOL constants use INDEX) */
    struct {
      ir_tensor *tensor;
      sym **idx;  /* tensor->rank index expressions */
      int padded; /* reads outside the tensor give 0 (name?[...]) */
    } load;
    sym *index;   /* INDEX: an integer expression used as a value */
    struct {
      ir_red op;
      int n_vars;
      int *vars;  /* statement index ids reduced here */
    } reduce;
  } u;
};

/* ---- statements -------------------------------------------------------- */

typedef enum {
  IR_IDX_FREE,    /* an lhs index of a plain statement */
  IR_IDX_SCATTER, /* iterated by a += statement (its lhs is any quasi-affine form) */
  IR_IDX_REDUCE,  /* bound by a reduction node */
} ir_idx_kind;

typedef struct {
  const char *name; /* as written (unique within the statement) */
  ir_idx_kind kind;
  sym *extent;      /* the index ranges over [0, extent) ; sym over var axes */
} ir_index;

struct ir_stmt {
  int id;
  kbc_loc loc;
  const char *text; /* the source statement (or the library call) it came from */
  ir_tensor *out;
  int accumulate;   /* `+=`: adds every iteration's value into out; out starts
                       at zero unless an earlier statement wrote it */
  sym **lhs;        /* out->rank index expressions */
  int n_index;
  ir_index *index;  /* by id; sym_index atoms in this statement refer to these */
  ir_expr *rhs;
};

/* ---- program ----------------------------------------------------------- */

struct ir_program {
  kbc_arena *arena;
  const char *name; /* kernel name */
  kbc_vec vars;     /* ir_axis* of kind VAR, by var_id */
  kbc_vec axes;     /* every named axis (ir_axis*), in declaration order */
  kbc_vec asserts;  /* ir_assert* */
  kbc_vec tensors;  /* ir_tensor*, by id */
  kbc_vec stmts;    /* ir_stmt*, in execution order */
  sym_facts *facts; /* every var >= 1, every axis size >= 1, asserts */
};

#define IR_VAR(p, i) KBC_VEC_AT((p)->vars, ir_axis, i)
#define IR_AXIS(p, i) KBC_VEC_AT((p)->axes, ir_axis, i)
#define IR_TENSOR(p, i) KBC_VEC_AT((p)->tensors, ir_tensor, i)
#define IR_STMT(p, i) KBC_VEC_AT((p)->stmts, ir_stmt, i)

/* ---- construction helpers (ir.c) --------------------------------------- */
ir_program *ir_program_create(kbc_arena *a, const char *name);
ir_tensor *ir_tensor_add(ir_program *p, const char *name, ir_role role, ir_dtype dt, int rank,
                         sym **shape, kbc_loc loc);
ir_tensor *ir_tensor_find(const ir_program *p, const char *name);
/* base, or base1, base2, ... : the first name no tensor has yet. */
const char *ir_tensor_fresh_name(const ir_program *p, const char *base);
/* base, or base2, base3, ...: the first that none of idx[0..n) is named
 * (an index added to a statement). */
const char *ir_index_fresh_name(kbc_arena *a, const ir_index *idx, int n, const char *base);
const ir_axis *ir_axis_find(const ir_program *p, const char *name);
/* A statement a pass adds (its indices set, the first `rank` of them free):
 * gives t a new temporary of those indices' extents, named base (made
 * unique), written at them; then inserts t at position `at` of p's
 * statements. */
ir_tensor *ir_stmt_new_temp(ir_program *p, ir_stmt *t, const char *base, int rank);
void ir_stmt_insert(ir_program *p, int at, ir_stmt *t);
ir_expr *ir_const(kbc_arena *a, double v, kbc_loc loc);
ir_expr *ir_index_expr(kbc_arena *a, sym *s, kbc_loc loc);
ir_expr *ir_unary(kbc_arena *a, ir_op op, ir_expr *x, kbc_loc loc);
ir_expr *ir_binary(kbc_arena *a, ir_op op, ir_expr *x, ir_expr *y, kbc_loc loc);
ir_expr *ir_where(kbc_arena *a, ir_expr *c, ir_expr *x, ir_expr *y, kbc_loc loc);
ir_expr *ir_load(kbc_arena *a, ir_tensor *t, sym **idx, int padded, kbc_loc loc);
ir_expr *ir_reduce(kbc_arena *a, ir_red op, int n_vars, const int *vars, ir_expr *body, kbc_loc loc);
/* Output and input tensors in declaration order. */
int ir_inputs(const ir_program *p, ir_tensor **out, int max);
int ir_outputs(const ir_program *p, ir_tensor **out, int max);

/* ---- printing, verification (ir_print.c, ir_verify.c) ------------------- */
void ir_print(const ir_program *p, kbc_buf *out);
void ir_print_expr(const ir_stmt *s, const ir_expr *e, kbc_buf *out);
void ir_print_stmt(const ir_stmt *s, kbc_buf *out);
/* Reports broken invariants as internal errors; returns 0 if any. */
int ir_verify(const ir_program *p, kbc_diag *d, const char *after_pass);

#endif
