/* ast.c — operator spellings and the AST printer; see ast.h.
 *
 * ast_print() format (`kbc compile --emit ast`, tests): one item per line,
 * the bodies of def and for indented by two spaces per level:
 *
 *   kernel NAME
 *   axis NAME var
 *   axis NAME const E
 *   axis NAME = E
 *   assert E
 *   input NAME DTYPE                  (also output / tensor; a scalar)
 *   input NAME DTYPE[E, E, ...]       (with a shape)
 *   def NAME(P, P, ...)
 *     ITEM...
 *     return E
 *   for VAR in E .. E
 *     ITEM...
 *   stmt NAME = | stmt NAME[E, ...] =   ("+=" for accumulation)
 *     E                               (the right-hand side, on its own line)
 *
 * Every E is a fully parenthesized S-expression, the same text that
 * ast_print_expr() gives:
 *
 *   42  1e-5  x                   number (as written), name
 *   (+ a b)  (< a b)  (&& a b)    binary operator and its operands
 *   (- a)  (! a)                  prefix operators
 *   (access x i j)                x[i, j];  (access? x i j) for x?[i, j]
 *   (call f a k=v)                f(a, k = v);  (call f) for f()
 *   (call sum [i j] : E)          the reduction form sum(i, j: E)
 *
 * The output is deterministic: it depends only on the AST. */
#include "ast.h"

const char *const ast_binop_text[AST_BIN_COUNT] = {
#define X(name, text) [AST_BIN_##name] = text,
    AST_BINOPS(X)
#undef X
};

static void put_args(kbc_buf *b, const ast_arg *args, int n) {
  for (int i = 0; i < n; i++) {
    if (i) kbc_buf_putc(b, ' ');
    if (args[i].key) kbc_buf_printf(b, "%s=", args[i].key);
    ast_print_expr(args[i].value, b);
  }
}

void ast_print_expr(const ast_expr *e, kbc_buf *b) {
  if (!e) {
    kbc_buf_puts(b, "<null>");
    return;
  }
  switch (e->kind) {
  case AST_E_NUM:
    kbc_buf_puts(b, e->u.num.text ? e->u.num.text : "?");
    return;
  case AST_E_NAME:
    kbc_buf_puts(b, e->u.name.name);
    return;
  case AST_E_ACCESS:
    kbc_buf_printf(b, "(access%s %s", e->u.access.padded ? "?" : "", e->u.access.name);
    for (int i = 0; i < e->u.access.n_idx; i++) {
      kbc_buf_putc(b, ' ');
      ast_print_expr(e->u.access.idx[i], b);
    }
    kbc_buf_putc(b, ')');
    return;
  case AST_E_CALL:
    kbc_buf_printf(b, "(call %s", e->u.call.name);
    if (e->u.call.is_reduction) {
      kbc_buf_puts(b, " [");
      put_args(b, e->u.call.args, e->u.call.n_args);
      kbc_buf_puts(b, "] : ");
      ast_print_expr(e->u.call.body, b);
    } else if (e->u.call.n_args) {
      kbc_buf_putc(b, ' ');
      put_args(b, e->u.call.args, e->u.call.n_args);
    }
    kbc_buf_putc(b, ')');
    return;
  case AST_E_UNARY:
    kbc_buf_puts(b, e->u.unary.op == AST_UN_NEG ? "(- " : "(! ");
    ast_print_expr(e->u.unary.operand, b);
    kbc_buf_putc(b, ')');
    return;
  case AST_E_BINARY: {
    unsigned op = (unsigned)e->u.binary.op;
    kbc_buf_printf(b, "(%s ", op < AST_BIN_COUNT ? ast_binop_text[op] : "?");
    ast_print_expr(e->u.binary.lhs, b);
    kbc_buf_putc(b, ' ');
    ast_print_expr(e->u.binary.rhs, b);
    kbc_buf_putc(b, ')');
    return;
  }
  }
  kbc_buf_puts(b, "<?>");
}

static void indent(kbc_buf *b, int level) {
  for (int i = 0; i < level; i++) kbc_buf_puts(b, "  ");
}

static void put_list(kbc_buf *b, ast_expr *const *es, int n) {
  for (int i = 0; i < n; i++) {
    if (i) kbc_buf_puts(b, ", ");
    ast_print_expr(es[i], b);
  }
}

static void print_block(const ast_block *blk, int level, kbc_buf *b);

static void print_item(const ast_item *it, int level, kbc_buf *b) {
  static const char *const roles[] = {"input", "output", "tensor"};
  static const char *const axis_kinds[] = {"var", "const", "="};
  indent(b, level);
  switch (it->kind) {
  case AST_I_KERNEL:
    kbc_buf_printf(b, "kernel %s\n", it->u.kernel.name);
    return;
  case AST_I_AXIS:
    kbc_buf_printf(b, "axis %s %s", it->u.axis.name,
                   (unsigned)it->u.axis.kind < 3 ? axis_kinds[it->u.axis.kind] : "?");
    if (it->u.axis.value) {
      kbc_buf_putc(b, ' ');
      ast_print_expr(it->u.axis.value, b);
    }
    kbc_buf_putc(b, '\n');
    return;
  case AST_I_ASSERT:
    kbc_buf_puts(b, "assert ");
    ast_print_expr(it->u.assert_.cond, b);
    kbc_buf_putc(b, '\n');
    return;
  case AST_I_DECL:
    kbc_buf_printf(b, "%s %s %s",
                   (unsigned)it->u.decl.role < 3 ? roles[it->u.decl.role] : "?",
                   it->u.decl.name, it->u.decl.dtype);
    if (it->u.decl.has_shape) {
      kbc_buf_putc(b, '[');
      put_list(b, it->u.decl.shape, it->u.decl.rank);
      kbc_buf_putc(b, ']');
    }
    kbc_buf_putc(b, '\n');
    return;
  case AST_I_DEF:
    kbc_buf_printf(b, "def %s(", it->u.def.name);
    for (int i = 0; i < it->u.def.n_params; i++)
      kbc_buf_printf(b, "%s%s", i ? ", " : "", it->u.def.params[i]);
    kbc_buf_puts(b, ")\n");
    print_block(&it->u.def.body, level + 1, b);
    indent(b, level + 1);
    kbc_buf_puts(b, "return ");
    ast_print_expr(it->u.def.ret, b);
    kbc_buf_putc(b, '\n');
    return;
  case AST_I_FOR:
    kbc_buf_printf(b, "for %s in ", it->u.for_.var);
    ast_print_expr(it->u.for_.lo, b);
    kbc_buf_puts(b, " .. ");
    ast_print_expr(it->u.for_.hi, b);
    kbc_buf_putc(b, '\n');
    print_block(&it->u.for_.body, level + 1, b);
    return;
  case AST_I_STMT:
    kbc_buf_printf(b, "stmt %s", it->u.stmt.name);
    if (it->u.stmt.has_idx) {
      kbc_buf_putc(b, '[');
      put_list(b, it->u.stmt.idx, it->u.stmt.n_idx);
      kbc_buf_putc(b, ']');
    }
    kbc_buf_puts(b, it->u.stmt.accumulate ? " +=\n" : " =\n");
    indent(b, level + 1);
    ast_print_expr(it->u.stmt.rhs, b);
    kbc_buf_putc(b, '\n');
    return;
  }
  kbc_buf_puts(b, "<?>\n");
}

static void print_block(const ast_block *blk, int level, kbc_buf *b) {
  for (int i = 0; i < blk->n; i++) print_item(blk->items[i], level, b);
}

void ast_print(const ast_program *p, kbc_buf *out) {
  if (p) print_block(&p->items, 0, out);
}
