/* ast.h — the syntax tree of one spec file, as the parser builds it.
 *
 * Before: source text.  After ast_parse(): an ast_program whose nodes live
 * in the given arena, or NULL with a located error in the kbc_diag.  The
 * AST is purely syntactic: names are unresolved strings; lowering
 * (the lower/ folder) gives them meaning and reports semantic errors. */
#ifndef KBC_AST_H
#define KBC_AST_H

#include <stddef.h>
#include <stdint.h>

#include "support/arena.h"
#include "support/diag.h"

/* ---- expressions ------------------------------------------------------ */

#define AST_BINOPS(X)      \
  X(ADD, "+")              \
  X(SUB, "-")              \
  X(MUL, "*")              \
  X(DIV, "/")              \
  X(MOD, "%")              \
  X(EQ, "==")              \
  X(NE, "!=")              \
  X(LT, "<")               \
  X(LE, "<=")              \
  X(GT, ">")               \
  X(GE, ">=")              \
  X(AND, "&&")             \
  X(OR, "||")

typedef enum {
#define X(name, text) AST_BIN_##name,
  AST_BINOPS(X)
#undef X
  AST_BIN_COUNT
} ast_binop;

extern const char *const ast_binop_text[AST_BIN_COUNT];

typedef enum {
  AST_UN_NEG, /* -e */
  AST_UN_NOT, /* !e */
} ast_unop;

typedef enum {
  AST_E_NUM,    /* number literal */
  AST_E_NAME,   /* bare identifier: axis, index variable, scalar or tensor */
  AST_E_ACCESS, /* name[args] or name?[args] (zero-padded) */
  AST_E_CALL,   /* name(args) or the reduction form name(i, j: body) */
  AST_E_UNARY,
  AST_E_BINARY,
} ast_expr_kind;

typedef struct ast_expr ast_expr;

/* One argument of a call: positional (key == NULL) or `key = value`. */
typedef struct {
  const char *key;
  ast_expr *value;
  kbc_loc loc;
} ast_arg;

/* Expressions nest at most this deep (parentheses, operators, calls): the
 * parser rejects deeper ones, so every recursive walk is bounded. */
enum { AST_MAX_DEPTH = 200 };

struct ast_expr {
  ast_expr_kind kind;
  kbc_loc loc; /* of the expression's first token (an operator's own token for binary) */
  int depth;   /* 1 for a leaf; 1 + the deepest child otherwise */
  union {
    struct {          /* AST_E_NUM */
      int is_int;     /* written without '.', 'e' or 'E' */
      int64_t ival;   /* valid when is_int */
      double fval;    /* always valid */
      const char *text;
    } num;
    struct {          /* AST_E_NAME */
      const char *name;
    } name;
    struct {          /* AST_E_ACCESS */
      const char *name;
      int padded;     /* written name?[...]: reads outside the tensor give 0 */
      int n_idx;
      ast_expr **idx;
      kbc_loc name_loc;
    } access;
    struct {          /* AST_E_CALL */
      const char *name;
      kbc_loc name_loc;
      int n_args;
      ast_arg *args;
      int is_reduction; /* args were followed by ':' body; each arg then
                           must be a bare name (checked by lowering) */
      ast_expr *body;   /* reduction body, else NULL */
    } call;
    struct {          /* AST_E_UNARY */
      ast_unop op;
      ast_expr *operand;
    } unary;
    struct {          /* AST_E_BINARY */
      ast_binop op;
      ast_expr *lhs, *rhs;
    } binary;
  } u;
};

/* ---- items (top level, and bodies of def / for) ------------------------ */

typedef enum {
  AST_I_KERNEL,  /* kernel NAME */
  AST_I_AXIS,    /* axis NAME var | const N | = expr */
  AST_I_ASSERT,  /* assert expr */
  AST_I_DECL,    /* input / output / tensor NAME DTYPE[shape] */
  AST_I_DEF,     /* def NAME(params) { items  return expr } */
  AST_I_FOR,     /* for NAME in lo..hi { items } */
  AST_I_STMT,    /* lhs = expr | lhs += expr */
} ast_item_kind;

typedef enum { AST_AXIS_VAR, AST_AXIS_CONST, AST_AXIS_DERIVED } ast_axis_kind;
typedef enum { AST_DECL_INPUT, AST_DECL_OUTPUT, AST_DECL_TENSOR } ast_decl_role;

typedef struct ast_item ast_item;

typedef struct {
  int n;
  ast_item **items;
} ast_block;

struct ast_item {
  ast_item_kind kind;
  kbc_loc loc; /* of the item's first token */
  union {
    struct {
      const char *name;
    } kernel;
    struct {
      const char *name;
      kbc_loc name_loc;
      ast_axis_kind kind;
      ast_expr *value; /* CONST: the literal; DERIVED: the expression; VAR: NULL */
    } axis;
    struct {
      ast_expr *cond;
    } assert_;
    struct {
      ast_decl_role role;
      const char *name;
      kbc_loc name_loc;
      const char *dtype; /* as written: f32, f16, bf16, i32, ... */
      kbc_loc dtype_loc;
      int has_shape;     /* 0: a scalar (no brackets) */
      int rank;
      ast_expr **shape;
    } decl;
    struct {
      const char *name;
      kbc_loc name_loc;
      int n_params;
      const char **params;
      kbc_loc *param_locs;
      ast_block body;
      ast_expr *ret;     /* `return expr` closing the body */
    } def;
    struct {
      const char *var;
      kbc_loc var_loc;
      ast_expr *lo, *hi; /* half-open range lo..hi */
      ast_block body;
    } for_;
    struct {
      const char *name;  /* target */
      kbc_loc name_loc;
      int has_idx;       /* written name[...] (else the whole tensor) */
      int n_idx;
      ast_expr **idx;
      int accumulate;    /* += */
      ast_expr *rhs;
      const char *text;  /* the statement's source text, one line, for comments */
    } stmt;
  } u;
};

typedef struct {
  const char *kernel_name; /* from `kernel NAME`, or NULL */
  ast_block items;
} ast_program;

/* Parses `source` (NUL-terminated).  Syntax errors are reported to `diag`
 * (the first one stops parsing).  Returns NULL on error. */
ast_program *ast_parse(kbc_arena *arena, kbc_diag *diag, const char *source);
/* The same for the bytes source[0..len), which may contain NUL bytes (each
 * is an "unexpected character" error). */
ast_program *ast_parse_n(kbc_arena *arena, kbc_diag *diag, const char *source, size_t len);

#include "support/buf.h"
/* Appends the AST as an indented tree (for tests and `kbc compile --emit ast`). */
void ast_print(const ast_program *p, kbc_buf *out);
/* Appends one expression as a fully parenthesized S-expression (no newline). */
void ast_print_expr(const ast_expr *e, kbc_buf *out);

#endif
