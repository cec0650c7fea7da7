/* ir_print.c — the IR as readable text (`kbc compile --emit ir`).
 *
 * The output is deterministic and close to the spec language: declarations,
 * then one statement per line with its index ranges on the line below:
 *
 *   conv[n, c, z, i, j] = bias[c] + sum(ci, dz, di, dj: x[n, ci, z + dz, i + di, j + dj] * ...)
 *     for n < batch_size, c < 24, z < d - 2, i < h - 2, j < w - 2; ci < in_channels, ...
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static void print_sym(const ir_stmt *s, const sym *x, kbc_buf *out) {
  (void)s;
  if (!x) {
    kbc_buf_puts(out, "<overflow>");
    return;
  }
  sym_print(x, out);
}

/* Shortest %g form that reads back as the same double. */
static void print_number(double v, kbc_buf *out) {
  char tmp[64];
  if (isinf(v)) {
    kbc_buf_puts(out, v > 0 ? "inf" : "-inf");
    return;
  }
  if (isnan(v)) {
    kbc_buf_puts(out, "nan");
    return;
  }
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if (strtod(tmp, NULL) == v) break;
  }
  kbc_buf_puts(out, tmp);
  if (!strpbrk(tmp, ".eEn")) kbc_buf_puts(out, ".0"); /* floats look like floats */
}

static void print_rec(const ir_stmt *s, const ir_expr *e, int parent_prec, kbc_buf *out);

static void print_args(const ir_stmt *s, const ir_expr *e, kbc_buf *out) {
  for (int i = 0; i < ir_op_info[e->op].arity; i++) {
    if (i) kbc_buf_puts(out, ", ");
    print_rec(s, e->arg[i], 0, out);
  }
}

static void print_rec(const ir_stmt *s, const ir_expr *e, int parent_prec, kbc_buf *out) {
  const ir_op_info_t *info = &ir_op_info[e->op];
  switch (e->op) {
  case IR_OP_CONST:
    print_number(e->u.value, out);
    return;
  case IR_OP_INDEX:
    kbc_buf_putc(out, '(');
    print_sym(s, e->u.index, out);
    kbc_buf_putc(out, ')');
    return;
  case IR_OP_LOAD: {
    const ir_tensor *t = e->u.load.tensor;
    kbc_buf_puts(out, t->name);
    if (e->u.load.padded) kbc_buf_putc(out, '?');
    if (t->rank == 0) return;
    kbc_buf_putc(out, '[');
    for (int i = 0; i < t->rank; i++) {
      if (i) kbc_buf_puts(out, ", ");
      print_sym(s, e->u.load.idx[i], out);
    }
    kbc_buf_putc(out, ']');
    return;
  }
  case IR_OP_REDUCE:
    kbc_buf_printf(out, "%s(", ir_red_name[e->u.reduce.op]);
    for (int i = 0; i < e->u.reduce.n_vars; i++) {
      int v = e->u.reduce.vars[i];
      if (i) kbc_buf_puts(out, ", ");
      kbc_buf_puts(out, s && v >= 0 && v < s->n_index ? s->index[v].name : "?");
    }
    kbc_buf_puts(out, ": ");
    print_rec(s, e->arg[0], 0, out);
    kbc_buf_putc(out, ')');
    return;
  default:
    break;
  }
  switch (info->fmt) {
  case IR_FMT_PREFIX:
    kbc_buf_puts(out, info->text);
    print_rec(s, e->arg[0], 6, out);
    return;
  case IR_FMT_INFIX: {
    int paren = info->prec < parent_prec;
    if (paren) kbc_buf_putc(out, '(');
    print_rec(s, e->arg[0], info->prec, out);
    kbc_buf_printf(out, " %s ", info->text);
    /* Left-associative: the right operand needs parentheses at equal precedence. */
    print_rec(s, e->arg[1], info->prec + 1, out);
    if (paren) kbc_buf_putc(out, ')');
    return;
  }
  default:
    kbc_buf_printf(out, "%s(", info->text);
    print_args(s, e, out);
    kbc_buf_putc(out, ')');
    return;
  }
}

void ir_print_expr(const ir_stmt *s, const ir_expr *e, kbc_buf *out) { print_rec(s, e, 0, out); }

static void print_shape(const ir_tensor *t, kbc_buf *out) {
  kbc_buf_puts(out, ir_dtype_name[t->dtype]);
  if (t->rank == 0) return;
  kbc_buf_putc(out, '[');
  for (int i = 0; i < t->rank; i++) {
    if (i) kbc_buf_puts(out, ", ");
    print_sym(NULL, t->shape[i], out);
  }
  kbc_buf_putc(out, ']');
}

void ir_print_stmt(const ir_stmt *s, kbc_buf *out) {
  kbc_buf_puts(out, s->out->name);
  if (s->out->rank > 0) {
    kbc_buf_putc(out, '[');
    for (int i = 0; i < s->out->rank; i++) {
      if (i) kbc_buf_puts(out, ", ");
      print_sym(s, s->lhs[i], out);
    }
    kbc_buf_putc(out, ']');
  }
  kbc_buf_puts(out, s->accumulate ? " += " : " = ");
  print_rec(s, s->rhs, 0, out);
  kbc_buf_putc(out, '\n');
  if (s->n_index == 0) return;
  kbc_buf_puts(out, "    for ");
  /* Iterated indices first, then the reduction ones after a ';'. */
  int n_iter = 0;
  for (int pass = 0; pass < 2; pass++) {
    int n = 0;
    for (int i = 0; i < s->n_index; i++) {
      if ((s->index[i].kind == IR_IDX_REDUCE) != pass) continue;
      if (n++) kbc_buf_puts(out, ", ");
      else if (pass && n_iter) kbc_buf_puts(out, "; ");
      kbc_buf_printf(out, "%s < ", s->index[i].name);
      print_sym(s, s->index[i].extent, out);
    }
    if (!pass) n_iter = n;
  }
  kbc_buf_putc(out, '\n');
}

static const char *const axis_kind_text[] = {"var", "const", "="};

void ir_print(const ir_program *p, kbc_buf *out) {
  kbc_buf_printf(out, "kernel %s\n", p->name);
  for (int i = 0; i < p->axes.len; i++) {
    const ir_axis *ax = IR_AXIS(p, i);
    kbc_buf_printf(out, "axis %s %s", ax->name, axis_kind_text[ax->kind]);
    if (ax->kind != IR_AXIS_VAR) {
      kbc_buf_putc(out, ' ');
      print_sym(NULL, ax->size, out);
    }
    if (ax->fixed) kbc_buf_puts(out, "  # var, specialized");
    kbc_buf_putc(out, '\n');
  }
  for (int i = 0; i < p->asserts.len; i++) {
    const ir_assert *as = KBC_VEC_AT(p->asserts, ir_assert, i);
    kbc_buf_puts(out, "assert ");
    print_sym(NULL, as->lhs, out);
    kbc_buf_printf(out, " %s ", ir_cmp_text[as->op]);
    print_sym(NULL, as->rhs, out);
    kbc_buf_putc(out, '\n');
  }
  static const char *const role[] = {"input", "output", "tensor"};
  for (int i = 0; i < p->tensors.len; i++) {
    const ir_tensor *t = IR_TENSOR(p, i);
    kbc_buf_printf(out, "%s %s ", role[t->role], t->name);
    print_shape(t, out);
    kbc_buf_putc(out, '\n');
  }
  for (int i = 0; i < p->stmts.len; i++) ir_print_stmt(IR_STMT(p, i), out);
}
