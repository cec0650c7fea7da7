/* ir.c — the IR's tables and constructors; see ir.h.
 *
 * Constructors only build nodes (typing them by ir_op_info); they check
 * nothing beyond what the type rules need.  ir_verify checks the whole. */
#include "ir.h"

#include <math.h>
#include <string.h>

const char *const ir_dtype_name[IR_DT_COUNT] = {
#define X(id, text, bytes, ok) text,
    IR_DTYPES(X)
#undef X
};
const int ir_dtype_bytes[IR_DT_COUNT] = {
#define X(id, text, bytes, ok) bytes,
    IR_DTYPES(X)
#undef X
};
const int ir_dtype_supported[IR_DT_COUNT] = {
#define X(id, text, bytes, ok) ok,
    IR_DTYPES(X)
#undef X
};

const ir_op_info_t ir_op_info[IR_OP_COUNT] = {
#define X(id, text, arity, fmt, prec) {text, arity, IR_FMT_##fmt, prec},
    IR_OPS(X)
#undef X
};

const char *const ir_cmp_text[IR_CMP_COUNT] = {
#define X(id, text) text,
    IR_CMPS(X)
#undef X
};

const char *const ir_red_name[IR_RED_COUNT] = {
#define X(id, text, ident) text,
    IR_REDUCTIONS(X)
#undef X
};

double ir_red_identity(ir_red r) {
  switch (r) {
#define X(id, text, ident) \
  case IR_RED_##id:        \
    return ident;
    IR_REDUCTIONS(X)
#undef X
  default:
    return NAN;
  }
}

ir_program *ir_program_create(kbc_arena *a, const char *name) {
  ir_program *p = KBC_NEW(a, ir_program);
  p->arena = a;
  p->name = name ? kbc_arena_strdup(a, name) : "kernel";
  p->facts = sym_facts_create(a);
  return p;
}

ir_tensor *ir_tensor_add(ir_program *p, const char *name, ir_role role, ir_dtype dt, int rank,
                         sym **shape, kbc_loc loc) {
  ir_tensor *t = KBC_NEW(p->arena, ir_tensor);
  t->name = kbc_arena_strdup(p->arena, name);
  t->id = p->tensors.len;
  t->loc = loc;
  t->role = role;
  t->dtype = dt;
  t->rank = rank;
  t->shape = KBC_NEW_ARRAY(p->arena, sym *, rank > 0 ? rank : 1);
  for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
  kbc_vec_push(p->arena, &p->tensors, t);
  return t;
}

ir_tensor *ir_tensor_find(const ir_program *p, const char *name) {
  for (int i = 0; i < p->tensors.len; i++)
    if (!strcmp(IR_TENSOR(p, i)->name, name)) return IR_TENSOR(p, i);
  return NULL;
}

const char *ir_tensor_fresh_name(const ir_program *p, const char *base) {
  const char *name = base;
  for (int k = 1; ir_tensor_find(p, name); k++) name = kbc_arena_printf(p->arena, "%s%d", base, k);
  return name;
}

const char *ir_index_fresh_name(kbc_arena *a, const ir_index *idx, int n, const char *base) {
  const char *name = base;
  for (int k = 2;; k++) {
    int taken = 0;
    for (int i = 0; i < n && !taken; i++) taken = !strcmp(idx[i].name, name);
    if (!taken) return name;
    name = kbc_arena_printf(a, "%s%d", base, k);
  }
}

ir_tensor *ir_stmt_new_temp(ir_program *p, ir_stmt *t, const char *base, int rank) {
  kbc_arena *a = p->arena;
  sym **shape = KBC_NEW_ARRAY(a, sym *, rank + 1);
  t->lhs = KBC_NEW_ARRAY(a, sym *, rank + 1);
  for (int k = 0; k < rank; k++) {
    shape[k] = t->index[k].extent;
    t->lhs[k] = sym_index(a, k, t->index[k].name);
  }
  t->out = ir_tensor_add(p, ir_tensor_fresh_name(p, base), IR_ROLE_TEMP, IR_DT_F32, rank, shape, t->loc);
  return t->out;
}

void ir_stmt_insert(ir_program *p, int at, ir_stmt *t) {
  kbc_vec_push(p->arena, &p->stmts, NULL);
  for (int j = p->stmts.len - 1; j > at; j--) p->stmts.items[j] = p->stmts.items[j - 1];
  p->stmts.items[at] = t;
}

const ir_axis *ir_axis_find(const ir_program *p, const char *name) {
  for (int i = 0; i < p->axes.len; i++)
    if (!strcmp(IR_AXIS(p, i)->name, name)) return IR_AXIS(p, i);
  return NULL;
}

static ir_expr *node(kbc_arena *a, ir_op op, ir_type ty, kbc_loc loc) {
  ir_expr *e = KBC_NEW(a, ir_expr);
  e->op = op;
  e->type = ty;
  e->loc = loc;
  return e;
}

ir_expr *ir_const(kbc_arena *a, double v, kbc_loc loc) {
  ir_expr *e = node(a, IR_OP_CONST, IR_TY_FLOAT, loc);
  e->u.value = v;
  return e;
}

ir_expr *ir_index_expr(kbc_arena *a, sym *s, kbc_loc loc) {
  ir_expr *e = node(a, IR_OP_INDEX, IR_TY_INT, loc);
  e->u.index = s;
  return e;
}

/* The result type of an op on operands of the given types. */
static ir_type result_type(ir_op op, ir_type x, ir_type y) {
  switch (op) {
  case IR_OP_EQ: case IR_OP_NE: case IR_OP_LT: case IR_OP_LE: case IR_OP_GT: case IR_OP_GE:
  case IR_OP_AND: case IR_OP_OR: case IR_OP_NOT:
    return IR_TY_BOOL;
  case IR_OP_NEG: case IR_OP_ABS: case IR_OP_MAX: case IR_OP_MIN: case IR_OP_ADD: case IR_OP_SUB:
  case IR_OP_MUL:
    return x == IR_TY_INT && y == IR_TY_INT ? IR_TY_INT : IR_TY_FLOAT;
  default:
    return IR_TY_FLOAT;
  }
}

ir_expr *ir_unary(kbc_arena *a, ir_op op, ir_expr *x, kbc_loc loc) {
  ir_expr *e = node(a, op, result_type(op, x->type, x->type), loc);
  e->arg[0] = x;
  return e;
}

ir_expr *ir_binary(kbc_arena *a, ir_op op, ir_expr *x, ir_expr *y, kbc_loc loc) {
  ir_expr *e = node(a, op, result_type(op, x->type, y->type), loc);
  e->arg[0] = x;
  e->arg[1] = y;
  return e;
}

ir_expr *ir_where(kbc_arena *a, ir_expr *c, ir_expr *x, ir_expr *y, kbc_loc loc) {
  ir_type ty = x->type == IR_TY_INT && y->type == IR_TY_INT ? IR_TY_INT : IR_TY_FLOAT;
  ir_expr *e = node(a, IR_OP_WHERE, ty, loc);
  e->arg[0] = c;
  e->arg[1] = x;
  e->arg[2] = y;
  return e;
}

ir_expr *ir_load(kbc_arena *a, ir_tensor *t, sym **idx, int padded, kbc_loc loc) {
  ir_expr *e = node(a, IR_OP_LOAD, IR_TY_FLOAT, loc);
  e->u.load.tensor = t;
  e->u.load.idx = KBC_NEW_ARRAY(a, sym *, t->rank > 0 ? t->rank : 1);
  for (int i = 0; i < t->rank; i++) e->u.load.idx[i] = idx[i];
  e->u.load.padded = padded;
  return e;
}

ir_expr *ir_reduce(kbc_arena *a, ir_red op, int n_vars, const int *vars, ir_expr *body, kbc_loc loc) {
  ir_expr *e = node(a, IR_OP_REDUCE, IR_TY_FLOAT, loc);
  e->arg[0] = body;
  e->u.reduce.op = op;
  e->u.reduce.n_vars = n_vars;
  e->u.reduce.vars = KBC_NEW_ARRAY(a, int, n_vars > 0 ? n_vars : 1);
  memcpy(e->u.reduce.vars, vars, sizeof(int) * (size_t)n_vars);
  return e;
}

static int by_role(const ir_program *p, ir_role role, ir_tensor **out, int max) {
  int n = 0;
  for (int i = 0; i < p->tensors.len; i++) {
    ir_tensor *t = IR_TENSOR(p, i);
    if (t->role != role) continue;
    if (n < max) out[n] = t;
    n++;
  }
  return n;
}

int ir_inputs(const ir_program *p, ir_tensor **out, int max) {
  return by_role(p, IR_ROLE_INPUT, out, max);
}

int ir_outputs(const ir_program *p, ir_tensor **out, int max) {
  return by_role(p, IR_ROLE_OUTPUT, out, max);
}
