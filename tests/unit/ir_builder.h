/* ir_builder.h — the unit tests' tiny IR builder and data helpers (one
 * program at a time, in the test's own arena): included by test_interp.c
 * and test_bind.c, each a cmocka executable of its own.
 *
 * Before: <cmocka.h> and the IR headers included.  After: setup/teardown
 * for cmocka, the builder (var, tensor, stmt, idx, finish, ld, red, ...),
 * run() (bind, random inputs, interpret: vectorized and point by point
 * must agree bit for bit) and the checks close_to() and expect_error(). */
#ifndef KBC_TEST_IR_BUILDER_H
#define KBC_TEST_IR_BUILDER_H

/* ---- a tiny IR builder (one program at a time) ---------------------------- */

static kbc_arena *A;
static ir_program *P;
static kbc_diag *D;
static const kbc_loc L0 = {0, 0};

static inline int setup(void **state) {
  (void)state;
  A = kbc_arena_create();
  P = ir_program_create(A, "test");
  D = kbc_diag_create("test.kb", NULL);
  return 0;
}

static inline int teardown(void **state) {
  (void)state;
  kbc_diag_destroy(D);
  kbc_arena_destroy(A);
  return 0;
}

static inline sym *K(int64_t v) { return sym_const(A, v); }
static inline sym *add(sym *x, sym *y) { return sym_add(A, x, y); }
static inline sym *sub(sym *x, sym *y) { return sym_sub(A, x, y); }
static inline sym *mul(sym *x, sym *y) { return sym_mul(A, x, y); }

static inline sym *var(const char *name) {
  ir_axis *ax = KBC_NEW(A, ir_axis);
  ax->name = name;
  ax->kind = IR_AXIS_VAR;
  ax->var_id = P->vars.len;
  ax->size = sym_axis(A, ax->var_id, name);
  kbc_vec_push(A, &P->vars, ax);
  kbc_vec_push(A, &P->axes, ax);
  return ax->size;
}

static inline sym *derived(const char *name, sym *size, ir_axis_kind kind) {
  ir_axis *ax = KBC_NEW(A, ir_axis);
  ax->name = name;
  ax->kind = kind;
  ax->var_id = -1;
  ax->size = size;
  kbc_vec_push(A, &P->axes, ax);
  return size;
}

static inline void add_assert(sym *lhs, ir_cmp op, sym *rhs, const char *text) {
  ir_assert *as = KBC_NEW(A, ir_assert);
  *as = (ir_assert){.lhs = lhs, .rhs = rhs, .op = op, .text = text};
  kbc_vec_push(A, &P->asserts, as);
}

/* tensor(name, role, rank, dims...) */
static inline ir_tensor *tensor(const char *name, ir_role role, int rank, ...) {
  sym *shape[8];
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) shape[i] = va_arg(ap, sym *);
  va_end(ap);
  return ir_tensor_add(P, name, role, IR_DT_F32, rank, shape, L0);
}

static inline ir_stmt *stmt(ir_tensor *out, int accumulate, const char *text) {
  ir_stmt *s = KBC_NEW(A, ir_stmt);
  s->id = P->stmts.len;
  s->out = out;
  s->accumulate = accumulate;
  s->text = text;
  s->index = KBC_NEW_ARRAY(A, ir_index, 16);
  s->lhs = KBC_NEW_ARRAY(A, sym *, 8);
  return s;
}

static inline sym *idx(ir_stmt *s, const char *name, ir_idx_kind kind, sym *extent) {
  int id = s->n_index++;
  s->index[id] = (ir_index){name, kind, extent};
  return sym_index(A, id, name);
}

/* finish(s, rhs, lhs syms...) */
static inline void finish(ir_stmt *s, ir_expr *rhs, ...) {
  va_list ap;
  va_start(ap, rhs);
  for (int i = 0; i < s->out->rank; i++) s->lhs[i] = va_arg(ap, sym *);
  va_end(ap);
  s->rhs = rhs;
  kbc_vec_push(A, &P->stmts, s);
}

static inline ir_expr *load_v(ir_tensor *t, int padded, va_list ap) {
  sym *ix[8];
  for (int i = 0; i < t->rank; i++) ix[i] = va_arg(ap, sym *);
  return ir_load(A, t, ix, padded, L0);
}
static inline ir_expr *ld(ir_tensor *t, ...) {
  va_list ap;
  va_start(ap, t);
  ir_expr *e = load_v(t, 0, ap);
  va_end(ap);
  return e;
}
static inline ir_expr *ldp(ir_tensor *t, ...) {
  va_list ap;
  va_start(ap, t);
  ir_expr *e = load_v(t, 1, ap);
  va_end(ap);
  return e;
}

/* red(op, body, n, index syms...) */
static inline ir_expr *red(ir_red op, ir_expr *body, int n, ...) {
  int ids[8];
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) assert_true(sym_is_index(va_arg(ap, sym *), &ids[i]));
  va_end(ap);
  return ir_reduce(A, op, n, ids, body, L0);
}

static inline ir_expr *bin(ir_op op, ir_expr *x, ir_expr *y) { return ir_binary(A, op, x, y, L0); }
static inline ir_expr *un(ir_op op, ir_expr *x) { return ir_unary(A, op, x, L0); }
static inline ir_expr *num(double v) { return ir_const(A, v, L0); }
static inline ir_expr *ival(sym *s) { return ir_index_expr(A, s, L0); }

/* ---- data ---------------------------------------------------------------- */

enum { MAXT = 16 };
static double *data[MAXT];
static ir_binding B;

/* n pseudo-random values in [-1, 1) */
static inline double *rnd(int64_t n, unsigned seed) {
  double *x = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  assert_non_null(x);
  unsigned s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < n; i++) {
    s = s * 1103515245u + 12345u;
    x[i] = (double)((s >> 8) & 0xffff) / 32768.0 - 1.0;
  }
  return x;
}

/* Binds vars, gives every input random data, runs.  A successful run is
 * repeated point by point (no vectorized evaluation), which must give
 * bit-identical results. */
static inline int run(const int64_t *vars) {
  memset(data, 0, sizeof data);
  if (!ir_bind(P, A, vars, &B, D)) return 0;
  for (int i = 0; i < P->tensors.len; i++)
    if (IR_TENSOR(P, i)->role == IR_ROLE_INPUT) data[i] = rnd(B.numel[i], (unsigned)i + 1);
  if (!ir_interp(P, &B, data, D)) return 0;
  double *scalar[MAXT];
  memcpy(scalar, data, sizeof data);
  interp_vectorize = 0;
  int ok = ir_interp(P, &B, scalar, D);
  interp_vectorize = 1;
  assert_true(ok);
  for (int i = 0; i < P->tensors.len; i++) {
    if (IR_TENSOR(P, i)->role == IR_ROLE_INPUT) continue;
    if (memcmp(scalar[i], data[i], sizeof(double) * (size_t)B.numel[i]))
      fail_msg("'%s' differs between vectorized and point-by-point evaluation", IR_TENSOR(P, i)->name);
  }
  ir_interp_release(P, scalar);
  return 1;
}

static inline void release(void) {
  ir_interp_release(P, data);
  for (int i = 0; i < P->tensors.len; i++) {
    free(data[i]);
    data[i] = NULL;
  }
}

static inline void close_to(double got, double want) {
  double tol = 1e-12 * (1.0 + fabs(want));
  if (!(fabs(got - want) <= tol)) fail_msg("got %.17g, want %.17g", got, want);
}

static inline void expect_error(const char *substring) {
  const char *text = kbc_diag_text(D);
  if (!strstr(text, substring)) fail_msg("expected '%s' in:\n%s", substring, text);
}

#endif
