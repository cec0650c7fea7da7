/* test_parse.c — the frontend: lexer, parser, AST printer.
 *
 * Expressions are checked through ast_print_expr()'s fully parenthesized
 * S-expressions; errors through the first diagnostic, exact text and
 * line:col. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/ast.h"

/* ---- helpers ------------------------------------------------------------ */

typedef struct {
  kbc_arena *arena;
  kbc_diag *diag;
  ast_program *prog;
} parsed;

static parsed parse_n(const char *src, size_t len) {
  parsed p;
  p.arena = kbc_arena_create();
  p.diag = kbc_diag_create("t.kb", src);
  p.prog = ast_parse_n(p.arena, p.diag, src, len);
  /* the contract: NULL iff an error was reported */
  assert_int_equal(p.prog == NULL, kbc_diag_errors(p.diag) > 0);
  return p;
}

static parsed parse(const char *src) { return parse_n(src, strlen(src)); }

static void done(parsed *p) {
  kbc_diag_destroy(p->diag);
  kbc_arena_destroy(p->arena);
}

static parsed parse_ok(const char *src) {
  parsed p = parse(src);
  if (!p.prog) fail_msg("unexpected error: %s", kbc_diag_text(p.diag));
  return p;
}

/* The whole printed AST of src. */
static void check_print(const char *src, const char *want) {
  parsed p = parse_ok(src);
  kbc_buf b = {0};
  ast_print(p.prog, &b);
  assert_string_equal(kbc_buf_str(&b), want);
  kbc_buf_free(&b);
  done(&p);
}

/* The S-expression of the right-hand side of "t = <expr>". */
static void check_expr(const char *expr, const char *want) {
  char src[4096];
  snprintf(src, sizeof src, "t = %s", expr);
  parsed p = parse_ok(src);
  assert_int_equal(p.prog->items.n, 1);
  const ast_item *it = p.prog->items.items[0];
  assert_int_equal(it->kind, AST_I_STMT);
  kbc_buf b = {0};
  ast_print_expr(it->u.stmt.rhs, &b);
  assert_string_equal(kbc_buf_str(&b), want);
  kbc_buf_free(&b);
  done(&p);
}

/* want is "LINE:COL: error: MESSAGE" (the file name t.kb is prepended). */
static void check_error_n(const char *src, size_t len, const char *want) {
  parsed p = parse_n(src, len);
  if (p.prog) fail_msg("expected error '%s' but parsing succeeded", want);
  assert_int_equal(kbc_diag_errors(p.diag), 1);
  char full[1024];
  snprintf(full, sizeof full, "t.kb:%s", want);
  assert_string_equal(kbc_diag_first(p.diag), full);
  done(&p);
}

static void check_error(const char *src, const char *want) {
  check_error_n(src, strlen(src), want);
}

static const ast_item *item(const parsed *p, int i) {
  assert_true(i < p->prog->items.n);
  return p->prog->items.items[i];
}

/* ---- precedence and associativity ---------------------------------------- */

static void test_sub_left_assoc(void **state) {
  (void)state;
  check_expr("a - b - c", "(- (- a b) c)");
  check_expr("a + b - c + d", "(+ (- (+ a b) c) d)");
}

static void test_mul_over_add(void **state) {
  (void)state;
  check_expr("a + b * c", "(+ a (* b c))");
  check_expr("a * b + c", "(+ (* a b) c)");
  check_expr("a / b % c * d", "(* (% (/ a b) c) d)");
  check_expr("(a + b) * c", "(* (+ a b) c)");
  check_expr("a - (b - c)", "(- a (- b c))");
}

static void test_unary(void **state) {
  (void)state;
  check_expr("-a * b", "(* (- a) b)");
  check_expr("- - a", "(- (- a))");
  check_expr("!a && b", "(&& (! a) b)");
  check_expr("-x[i] + 1", "(+ (- (access x i)) 1)");
  check_expr("a * -b", "(* a (- b))");
  check_expr("!(a < b)", "(! (< a b))");
  check_expr("-2", "(- 2)");
}

static void test_comparisons(void **state) {
  (void)state;
  check_expr("a + 1 < b * 2", "(< (+ a 1) (* b 2))");
  check_expr("a == b", "(== a b)");
  check_expr("a != b", "(!= a b)");
  check_expr("a <= b", "(<= a b)");
  check_expr("a > b", "(> a b)");
  check_expr("a >= -b", "(>= a (- b))");
}

static void test_comparison_nonassoc(void **state) {
  (void)state;
  check_error("t = a < b < c", "1:11: error: syntax error, unexpected '<'");
  check_error("t = a == b == c", "1:12: error: syntax error, unexpected '=='");
  check_expr("(a < b) == c", "(== (< a b) c)");
}

static void test_and_or(void **state) {
  (void)state;
  check_expr("a || b && c", "(|| a (&& b c))");
  check_expr("a && b || c && d", "(|| (&& a b) (&& c d))");
  check_expr("a || b || c", "(|| (|| a b) c)");
  check_expr("a == b && c != d", "(&& (== a b) (!= c d))");
  check_expr("a < b + 1 || !c", "(|| (< a (+ b 1)) (! c))");
}

/* ---- numbers ---------------------------------------------------------------- */

static void test_numbers(void **state) {
  (void)state;
  parsed p = parse_ok("t = 1e-5 + 2.5 + 3E+2 + 007 + 9223372036854775807 + 4e3");
  const ast_expr *e = item(&p, 0)->u.stmt.rhs;
  const ast_expr *v[6];
  for (int i = 5; i > 0; i--) {
    v[i] = e->u.binary.rhs;
    e = e->u.binary.lhs;
  }
  v[0] = e;
  assert_int_equal(v[0]->kind, AST_E_NUM);
  assert_false(v[0]->u.num.is_int);
  assert_true(v[0]->u.num.fval == 1e-5);
  assert_string_equal(v[0]->u.num.text, "1e-5");
  assert_true(v[1]->u.num.fval == 2.5);
  assert_false(v[2]->u.num.is_int);
  assert_true(v[2]->u.num.fval == 300.0);
  assert_true(v[3]->u.num.is_int);
  assert_true(v[3]->u.num.ival == 7);
  assert_string_equal(v[3]->u.num.text, "007");
  assert_true(v[4]->u.num.ival == INT64_MAX);
  assert_false(v[5]->u.num.is_int);
  assert_true(v[5]->u.num.fval == 4000.0);
  done(&p);
}

static void test_range_lexing(void **state) {
  (void)state;
  /* 0..n is INT '..' IDENT, 1.5..2 is FLOAT '..' INT */
  check_print("for i in 0..n { }", "for i in 0 .. n\n");
  check_print("for i in 1.5..2 { }", "for i in 1.5 .. 2\n");
  check_print("for i in 0..2*n+1 { }", "for i in 0 .. (+ (* 2 n) 1)\n");
}

static void test_huge_int(void **state) {
  (void)state;
  check_error("t = 9223372036854775808", "1:5: error: integer literal too large");
  check_error("axis n const 1\nt = x[99999999999999999999999]",
              "2:7: error: integer literal too large");
  check_error("t = 1e999", "1:5: error: floating-point literal too large");
}

static void test_bad_number_forms(void **state) {
  (void)state;
  check_error("t = 1.", "1:6: error: unexpected character '.'");
  check_error("t = .5", "1:5: error: unexpected character '.'");
  /* 1e alone is INT 1 followed by the identifier e */
  check_error("t = 1e", "1:7: error: syntax error, unexpected end of file, expecting '=' or '+=' or '['");
}

/* ---- items ------------------------------------------------------------------ */

static void test_kernel(void **state) {
  (void)state;
  parsed p = parse_ok("kernel my_kernel");
  assert_string_equal(p.prog->kernel_name, "my_kernel");
  assert_int_equal(item(&p, 0)->kind, AST_I_KERNEL);
  done(&p);
  p = parse_ok("axis n var");
  assert_null(p.prog->kernel_name);
  done(&p);
}

static void test_axes(void **state) {
  (void)state;
  parsed p = parse_ok("axis n var\naxis c const 24\naxis od = d - ks + 1");
  assert_int_equal(p.prog->items.n, 3);
  assert_int_equal(item(&p, 0)->u.axis.kind, AST_AXIS_VAR);
  assert_null(item(&p, 0)->u.axis.value);
  assert_int_equal(item(&p, 1)->u.axis.kind, AST_AXIS_CONST);
  assert_true(item(&p, 1)->u.axis.value->u.num.ival == 24);
  assert_int_equal(item(&p, 2)->u.axis.kind, AST_AXIS_DERIVED);
  assert_string_equal(item(&p, 2)->u.axis.name, "od");
  assert_int_equal(item(&p, 2)->u.axis.name_loc.line, 3);
  assert_int_equal(item(&p, 2)->u.axis.name_loc.col, 6);
  done(&p);
  check_print("axis n var\naxis c const 24\naxis od = d - ks + 1",
              "axis n var\naxis c const 24\naxis od = (+ (- d ks) 1)\n");
}

static void test_assert(void **state) {
  (void)state;
  check_print("assert image_size % patch == 0", "assert (== (% image_size patch) 0)\n");
}

static void test_decls(void **state) {
  (void)state;
  parsed p = parse_ok("input x f32[a, b*2]\noutput y bf16[a]\ntensor t f16 [ n ]\ninput s f32");
  assert_int_equal(item(&p, 0)->u.decl.role, AST_DECL_INPUT);
  assert_int_equal(item(&p, 0)->u.decl.rank, 2);
  assert_true(item(&p, 0)->u.decl.has_shape);
  assert_string_equal(item(&p, 0)->u.decl.dtype, "f32");
  assert_int_equal(item(&p, 0)->u.decl.dtype_loc.col, 9);
  assert_int_equal(item(&p, 1)->u.decl.role, AST_DECL_OUTPUT);
  assert_int_equal(item(&p, 2)->u.decl.role, AST_DECL_TENSOR);
  assert_int_equal(item(&p, 3)->u.decl.has_shape, 0);
  assert_int_equal(item(&p, 3)->u.decl.rank, 0);
  done(&p);
  check_print("input x f32[a, b*2]\noutput y bf16[a]\ntensor t f16 [ n ]\ninput s f32",
              "input x f32[a, (* b 2)]\noutput y bf16[a]\ntensor t f16[n]\ninput s f32\n");
  check_error("input x f32[]", "1:13: error: syntax error, unexpected ']'");
}

static void test_def(void **state) {
  (void)state;
  const char *src =
      "def layer(x, l) {\n"
      "  h[i] = relu(x[i] + b[l, i])\n"
      "  return h;\n"
      "}\n"
      "def zero() { return 0 }";
  check_print(src,
              "def layer(x, l)\n"
              "  stmt h[i] =\n"
              "    (call relu (+ (access x i) (access b l i)))\n"
              "  return h\n"
              "def zero()\n"
              "  return 0\n");
  parsed p = parse_ok(src);
  const ast_item *d = item(&p, 0);
  assert_int_equal(d->kind, AST_I_DEF);
  assert_int_equal(d->u.def.n_params, 2);
  assert_string_equal(d->u.def.params[1], "l");
  assert_int_equal(d->u.def.param_locs[1].line, 1);
  assert_int_equal(d->u.def.param_locs[1].col, 14);
  assert_int_equal(d->u.def.body.n, 1);
  assert_int_equal(item(&p, 1)->u.def.n_params, 0);
  done(&p);
}

static void test_for(void **state) {
  (void)state;
  check_print("for l in 0..num_layers {\n"
              "  for k in 0..2 { a[l, k] += w[l, k] }\n"
              "  r = layer(r, l)\n"
              "}",
              "for l in 0 .. num_layers\n"
              "  for k in 0 .. 2\n"
              "    stmt a[l, k] +=\n"
              "      (access w l k)\n"
              "  stmt r =\n"
              "    (call layer r l)\n");
}

static void test_stmts(void **state) {
  (void)state;
  parsed p = parse_ok("out = a\ny[i, j] += b[j, i]\nz[i] = 1");
  const ast_item *s0 = item(&p, 0), *s1 = item(&p, 1);
  assert_false(s0->u.stmt.has_idx);
  assert_false(s0->u.stmt.accumulate);
  assert_true(s1->u.stmt.has_idx);
  assert_int_equal(s1->u.stmt.n_idx, 2);
  assert_true(s1->u.stmt.accumulate);
  assert_int_equal(s1->loc.line, 2);
  assert_int_equal(s1->loc.col, 1);
  done(&p);
}

static void test_semicolons(void **state) {
  (void)state;
  check_print("kernel k; axis n var; input x f32[n]; y = x;",
              "kernel k\naxis n var\ninput x f32[n]\nstmt y =\n  x\n");
  check_error("y = x;;", "1:7: error: syntax error, unexpected ';'");
}

static void test_empty_program(void **state) {
  (void)state;
  check_print("", "");
  check_print("  # only a comment\n\n\t\n", "");
}

/* ---- calls, reductions, accesses ------------------------------------------- */

static void test_reduction_vs_call(void **state) {
  (void)state;
  check_expr("sum(i, j: x[i, j])", "(call sum [i j] : (access x i j))");
  check_expr("max(a, b)", "(call max a b)");
  check_expr("f()", "(call f)");
  check_expr("max(ky, kx: s[ky, kx] * 2)", "(call max [ky kx] : (* (access s ky kx) 2))");
  parsed p = parse_ok("t = sum(i: x[i]) + max(a, b)");
  const ast_expr *e = item(&p, 0)->u.stmt.rhs;
  assert_true(e->u.binary.lhs->u.call.is_reduction);
  assert_non_null(e->u.binary.lhs->u.call.body);
  assert_false(e->u.binary.rhs->u.call.is_reduction);
  assert_null(e->u.binary.rhs->u.call.body);
  assert_int_equal(e->u.binary.rhs->u.call.n_args, 2);
  done(&p);
}

static void test_kwargs(void **state) {
  (void)state;
  check_expr("softmax(m, axis=1)", "(call softmax m axis=1)");
  check_expr("f(a=1, b, c = x + 1)", "(call f a=1 b c=(+ x 1))");
  check_expr("layernorm(r, norm1_w[l], norm1_b[l], 1e-5)",
             "(call layernorm r (access norm1_w l) (access norm1_b l) 1e-5)");
  parsed p = parse_ok("t = softmax(m, axis = 1)");
  const ast_expr *c = item(&p, 0)->u.stmt.rhs;
  assert_null(c->u.call.args[0].key);
  assert_string_equal(c->u.call.args[1].key, "axis");
  assert_int_equal(c->u.call.args[1].loc.col, 16);
  done(&p);
}

static void test_padded_access(void **state) {
  (void)state;
  check_expr("x?[i - 1, j] + x[i]", "(+ (access? x (- i 1) j) (access x i))");
  parsed p = parse_ok("t = x ? [i]");
  assert_true(item(&p, 0)->u.stmt.rhs->u.access.padded);
  done(&p);
  check_error("t = x?(i)", "1:7: error: syntax error, unexpected '(', expecting '['");
}

static void test_nested_calls_and_where(void **state) {
  (void)state;
  check_expr("where(t == 0, dq[b], where(t == 1, dk[b], dv[b]))",
             "(call where (== t 0) (access dq b) (call where (== t 1) (access dk b) (access dv b)))");
  check_expr("x[y[i], f(j)]", "(access x (access y i) (call f j))");
}

/* ---- whole specs ------------------------------------------------------------- */

static const char conv3d_src[] =
    "# conv3d_min_softmax.kb — KernelBench level 2, problem 24\n"
    "kernel conv3d_min_softmax\n"
    "\n"
    "axis batch_size   var\n"
    "axis in_channels  var\n"
    "axis out_channels const 24\n"
    "axis d var\n"
    "axis h var\n"
    "axis w var\n"
    "axis ks const 3\n"
    "axis od = d - ks + 1\n"
    "axis oh = h - ks + 1\n"
    "axis ow = w - ks + 1\n"
    "\n"
    "input  x      f32[batch_size, in_channels, d, h, w]\n"
    "input  weight f32[out_channels, in_channels, ks, ks, ks]\n"
    "input  bias   f32[out_channels]\n"
    "output out    f32[batch_size, out_channels, oh, ow]\n"
    "\n"
    "conv[n, c, z, i, j] = bias[c] + sum(ci, dz, di, dj: x[n, ci, z+dz, i+di, j+dj] * "
    "weight[c, ci, dz, di, dj])\n"
    "m[n, c, i, j]       = min(z: conv[n, c, z, i, j])\n"
    "out                 = softmax(m, axis=1)\n";

static void test_conv3d_example(void **state) {
  (void)state;
  check_print(conv3d_src,
              "kernel conv3d_min_softmax\n"
              "axis batch_size var\n"
              "axis in_channels var\n"
              "axis out_channels const 24\n"
              "axis d var\n"
              "axis h var\n"
              "axis w var\n"
              "axis ks const 3\n"
              "axis od = (+ (- d ks) 1)\n"
              "axis oh = (+ (- h ks) 1)\n"
              "axis ow = (+ (- w ks) 1)\n"
              "input x f32[batch_size, in_channels, d, h, w]\n"
              "input weight f32[out_channels, in_channels, ks, ks, ks]\n"
              "input bias f32[out_channels]\n"
              "output out f32[batch_size, out_channels, oh, ow]\n"
              "stmt conv[n, c, z, i, j] =\n"
              "  (+ (access bias c) (call sum [ci dz di dj] : (* (access x n ci (+ z dz) (+ i di) "
              "(+ j dj)) (access weight c ci dz di dj))))\n"
              "stmt m[n, c, i, j] =\n"
              "  (call min [z] : (access conv n c z i j))\n"
              "stmt out =\n"
              "  (call softmax m axis=1)\n");
  parsed p = parse_ok(conv3d_src);
  assert_string_equal(p.prog->kernel_name, "conv3d_min_softmax");
  assert_int_equal(p.prog->items.n, 18);
  const ast_item *conv = item(&p, 15);
  assert_string_equal(conv->u.stmt.text,
                      "conv[n, c, z, i, j] = bias[c] + sum(ci, dz, di, dj: x[n, ci, z+dz, i+di, "
                      "j+dj] * weight[c, ci, dz, di, dj])");
  assert_string_equal(item(&p, 16)->u.stmt.text, "m[n, c, i, j] = min(z: conv[n, c, z, i, j])");
  assert_string_equal(item(&p, 17)->u.stmt.text, "out = softmax(m, axis=1)");
  assert_int_equal(conv->loc.line, 20);
  done(&p);
}

static const char sam_src[] =
    "tensor qkv f32[batch_size, height, width, 3, num_attention_heads, head_dim]\n"
    "qkv[b, y, x, t, n, c] = qkv_bias[t*hidden_size + n*head_dim + c]\n"
    "    + sum(e: hidden_states[b, y, x, e] * qkv_weight[t*hidden_size + n*head_dim + c, e])\n"
    "tensor rel_h f32[batch_size, num_attention_heads, height, width, height]\n"
    "rel_h[b, n, y, x, ky] = sum(c: qkv[b, y, x, 0, n, c] * rel_pos_h[y - ky + height - 1, c])\n"
    "tensor rel_w f32[batch_size, num_attention_heads, height, width, width]\n"
    "rel_w[b, n, y, x, kx] = sum(c: qkv[b, y, x, 0, n, c] * rel_pos_w[x - kx + width - 1, c])\n"
    "s[b, n, y, x, ky, kx] = scale * sum(c: qkv[b, y, x, 0, n, c] * qkv[b, ky, kx, 1, n, c])\n"
    "                      + rel_h[b, n, y, x, ky] + rel_w[b, n, y, x, kx]\n"
    "mx[b, n, y, x]  = max(ky, kx: s[b, n, y, x, ky, kx])\n"
    "ex[b, n, y, x, ky, kx] = exp(s[b, n, y, x, ky, kx] - mx[b, n, y, x])\n"
    "p[b, n, y, x, ky, kx]  = ex[b, n, y, x, ky, kx] / sum(ky2, kx2: ex[b, n, y, x, ky2, kx2])\n"
    "o[b, y, x, n, c] = sum(ky, kx: p[b, n, y, x, ky, kx] * qkv[b, ky, kx, 2, n, c])\n"
    "\n"
    "grad_proj_bias[i]      = sum(b, y, x: grad_output[b, y, x, i])\n"
    "grad_proj_weight[i, j] = sum(b, y, x: grad_output[b, y, x, i] * o[b, y, x, j / head_dim, j "
    "% head_dim])\n"
    "go[b, y, x, n, c] = sum(i: grad_output[b, y, x, i] * proj_weight[i, n*head_dim + c])\n"
    "dp[b, n, y, x, ky, kx] = sum(c: go[b, y, x, n, c] * qkv[b, ky, kx, 2, n, c])\n"
    "dv[b, ky, kx, n, c]    = sum(y, x: p[b, n, y, x, ky, kx] * go[b, y, x, n, c])\n"
    "ds[b, n, y, x, ky, kx] = p[b, n, y, x, ky, kx]\n"
    "                       * (dp[b, n, y, x, ky, kx] - sum(ky2, kx2: dp[b, n, y, x, ky2, kx2] * "
    "p[b, n, y, x, ky2, kx2]))\n"
    "grh[b, n, y, x, ky] = sum(kx: ds[b, n, y, x, ky, kx])\n"
    "grw[b, n, y, x, kx] = sum(ky: ds[b, n, y, x, ky, kx])\n"
    "dq[b, y, x, n, c] = scale * sum(ky, kx: ds[b, n, y, x, ky, kx] * qkv[b, ky, kx, 1, n, c])\n"
    "                  + sum(ky: grh[b, n, y, x, ky] * rel_pos_h[y - ky + height - 1, c])\n"
    "                  + sum(kx: grw[b, n, y, x, kx] * rel_pos_w[x - kx + width - 1, c])\n"
    "dk[b, ky, kx, n, c] = scale * sum(y, x: ds[b, n, y, x, ky, kx] * qkv[b, y, x, 0, n, c])\n"
    "grad_rel_pos_h[y - ky + height - 1, c] += qkv[b, y, x, 0, n, c] * grh[b, n, y, x, ky]\n"
    "grad_rel_pos_w[x - kx + width - 1, c]  += qkv[b, y, x, 0, n, c] * grw[b, n, y, x, kx]\n"
    "tensor dqkv f32[batch_size, height, width, 3, num_attention_heads, head_dim]\n"
    "dqkv[b, y, x, t, n, c] = where(t == 0, dq[b, y, x, n, c], where(t == 1, dk[b, y, x, n, c], "
    "dv[b, y, x, n, c]))\n"
    "grad_hidden_states[b, y, x, e] = sum(t, n, c: dqkv[b, y, x, t, n, c] * qkv_weight[t*hidden_size "
    "+ n*head_dim + c, e])\n"
    "grad_qkv_weight[j, e] = sum(b, y, x: dqkv[b, y, x, j / hidden_size, (j / head_dim) % "
    "num_attention_heads, j % head_dim]\n"
    "                                    * hidden_states[b, y, x, e])\n"
    "grad_qkv_bias[j]      = sum(b, y, x: dqkv[b, y, x, j / hidden_size, (j / head_dim) % "
    "num_attention_heads, j % head_dim])\n";

static void test_sam_hq_snippet(void **state) {
  (void)state;
  parsed p = parse_ok(sam_src);
  assert_int_equal(p.prog->items.n, 28);
  int stmts = 0, accum = 0;
  for (int i = 0; i < p.prog->items.n; i++) {
    const ast_item *it = item(&p, i);
    if (it->kind == AST_I_STMT) {
      stmts++;
      accum += it->u.stmt.accumulate;
      assert_null(strchr(it->u.stmt.text, '\n'));
      assert_null(strstr(it->u.stmt.text, "  "));
    }
  }
  assert_int_equal(stmts, 24);
  assert_int_equal(accum, 2);
  /* the multi-line s[...] statement */
  const ast_item *s = item(&p, 6);
  assert_string_equal(s->u.stmt.name, "s");
  assert_string_equal(s->u.stmt.text,
                      "s[b, n, y, x, ky, kx] = scale * sum(c: qkv[b, y, x, 0, n, c] * qkv[b, ky, "
                      "kx, 1, n, c]) + rel_h[b, n, y, x, ky] + rel_w[b, n, y, x, kx]");
  kbc_buf b = {0};
  ast_print_expr(s->u.stmt.rhs, &b);
  assert_string_equal(kbc_buf_str(&b),
                      "(+ (+ (* scale (call sum [c] : (* (access qkv b y x 0 n c) (access qkv b ky "
                      "kx 1 n c)))) (access rel_h b n y x ky)) (access rel_w b n y x kx))");
  kbc_buf_free(&b);
  /* grad_rel_pos_h[y - ky + height - 1, c] += ... */
  const ast_item *g = item(&p, 21);
  assert_true(g->u.stmt.accumulate);
  b = (kbc_buf){0};
  ast_print_expr(g->u.stmt.idx[0], &b);
  assert_string_equal(kbc_buf_str(&b), "(- (+ (- y ky) height) 1)");
  kbc_buf_free(&b);
  done(&p);
}

/* ---- statement text, locations, depth --------------------------------------- */

static void test_stmt_text(void **state) {
  (void)state;
  parsed p = parse_ok("  out[i,\n\tj]   =  a # first part\n   # a whole comment line\n"
                      "     + b[i]  ;  # trailing\nnext = 1#x\n");
  assert_string_equal(item(&p, 0)->u.stmt.text, "out[i, j] = a + b[i]");
  assert_string_equal(item(&p, 1)->u.stmt.text, "next = 1");
  done(&p);
  p = parse_ok("def f(x) {\n  y += x *\n 2\n  return y }");
  assert_string_equal(item(&p, 0)->u.def.body.items[0]->u.stmt.text, "y += x * 2");
  done(&p);
  p = parse_ok("a=b\r\n+c");
  assert_string_equal(item(&p, 0)->u.stmt.text, "a=b +c");
  done(&p);
}

static void test_locations(void **state) {
  (void)state;
  parsed p = parse_ok("# header\n\tt[i] = a +\n  x[i] * f(y)\n");
  const ast_item *s = item(&p, 0);
  assert_int_equal(s->loc.line, 2);
  assert_int_equal(s->loc.col, 2); /* a tab is one column */
  const ast_expr *e = s->u.stmt.rhs;
  assert_int_equal(e->kind, AST_E_BINARY);
  assert_int_equal(e->loc.line, 2); /* the '+' */
  assert_int_equal(e->loc.col, 11);
  const ast_expr *m = e->u.binary.rhs;
  assert_int_equal(m->loc.line, 3); /* the '*' */
  assert_int_equal(m->loc.col, 8);
  assert_int_equal(m->u.binary.lhs->loc.col, 3);
  assert_int_equal(m->u.binary.lhs->u.access.name_loc.col, 3);
  assert_int_equal(m->u.binary.rhs->u.call.name_loc.col, 10);
  assert_int_equal(m->u.binary.rhs->u.call.args[0].loc.col, 12);
  assert_int_equal(e->u.binary.lhs->loc.col, 9);
  done(&p);
}

static void test_depth_field(void **state) {
  (void)state;
  parsed p = parse_ok("t = a + b * -c\nu = f(x[i + 1])\nv = 7");
  const ast_expr *e = item(&p, 0)->u.stmt.rhs;
  assert_int_equal(e->depth, 4);
  assert_int_equal(e->u.binary.lhs->depth, 1);
  assert_int_equal(e->u.binary.rhs->depth, 3);
  assert_int_equal(item(&p, 1)->u.stmt.rhs->depth, 4);
  assert_int_equal(item(&p, 2)->u.stmt.rhs->depth, 1);
  done(&p);
}

/* ---- errors -------------------------------------------------------------------- */

static void test_err_unexpected_token(void **state) {
  (void)state;
  check_error("x[a b] = 1", "1:5: error: syntax error, unexpected identifier, expecting ']' or ','");
  check_error("axis in var", "1:6: error: syntax error, unexpected 'in', expecting identifier");
  check_error("kernel k\naxis n foo",
              "2:8: error: syntax error, unexpected identifier, expecting 'var' or 'const' or '='");
  check_error("t = f(a b)",
              "1:9: error: syntax error, unexpected identifier, expecting ')' or ',' or ':'");
  check_error("t = a +", "1:8: error: syntax error, unexpected end of file");
  check_error("t = * a", "1:5: error: syntax error, unexpected '*'");
  check_error("t = sum(i: a, b)", "1:13: error: syntax error, unexpected ',', expecting ')'");
  check_error("x y = 1", "1:3: error: syntax error, unexpected identifier, expecting '=' or '+=' or '['");
}

static void test_err_unterminated_eof(void **state) {
  (void)state;
  check_error("t = a[1, 2", "1:11: error: syntax error, unexpected end of file, expecting ']' or ','");
  /* reported just past the last token, not on the trailing blank lines */
  check_error("t = (a + b\n\n  # comment\n\n",
              "1:11: error: syntax error, unexpected end of file, expecting ')'");
  check_error("t = f(a", "1:8: error: syntax error, unexpected end of file, expecting ')' or ',' or ':'");
  check_error("t =", "1:4: error: syntax error, unexpected end of file");
}

static void test_err_missing_brace(void **state) {
  (void)state;
  check_error("for i in 0..n {\n  x[i] = 1\n", "2:11: error: syntax error, unexpected end of file");
  check_error("def f(a) {\n  return a\n", "2:11: error: syntax error, unexpected end of file, expecting '}'");
  check_error("for i in 0..n\n  x[i] = 1",
              "2:3: error: syntax error, unexpected identifier, expecting '{'");
}

static void test_err_return_outside_def(void **state) {
  (void)state;
  check_error("axis n var\nreturn n", "2:1: error: syntax error, unexpected 'return'");
  check_error("for i in 0..n { return i }", "1:17: error: syntax error, unexpected 'return'");
  check_error("def f(x) { y = x }", "1:18: error: missing 'return' at the end of def 'f'");
}

static void test_err_bad_char(void **state) {
  (void)state;
  check_error("t = a @ b", "1:7: error: unexpected character '@'");
  check_error("t = a & b", "1:7: error: unexpected character '&'");
  check_error("t = a | b", "1:7: error: unexpected character '|'");
  check_error("t = \"s\"", "1:5: error: unexpected character '\"'");
  check_error("axis n var\n  t = a \x01", "2:9: error: unexpected character '\\x01'");
  check_error("t = caf\xc3\xa9", "1:8: error: unexpected character '\\xc3'");
  check_error("t = a\x7f", "1:6: error: unexpected character '\\x7f'");
  /* non-ASCII inside comments is fine */
  check_print("# caf\xc3\xa9 \x01 \xff\nt = a # \xe2\x80\x94 dash\n", "stmt t =\n  a\n");
}

static void test_err_nul_byte(void **state) {
  (void)state;
  static const char src[] = "t = a\0 + b";
  check_error_n(src, sizeof src - 1, "1:6: error: unexpected character '\\x00'");
  static const char src2[] = "# a NUL \0 in a comment\nt = a";
  parsed p = parse_n(src2, sizeof src2 - 1);
  assert_non_null(p.prog);
  done(&p);
  /* ast_parse() stops at the first NUL */
  p = parse_ok("t = a\0 @@@");
  done(&p);
}

static char *repeat(const char *pre, const char *unit, int n, const char *mid, const char *unit2,
                    int n2, const char *post) {
  size_t len = strlen(pre) + strlen(unit) * (size_t)n + strlen(mid) + strlen(unit2) * (size_t)n2 +
               strlen(post) + 1;
  char *s = malloc(len), *o = s;
  assert_non_null(s);
  o += sprintf(o, "%s", pre);
  for (int i = 0; i < n; i++) o += sprintf(o, "%s", unit);
  o += sprintf(o, "%s", mid);
  for (int i = 0; i < n2; i++) o += sprintf(o, "%s", unit2);
  sprintf(o, "%s", post);
  return s;
}

static void test_err_nested_parens(void **state) {
  (void)state;
  char *ok = repeat("t = ", "(", 200, "a", ")", 200, "");
  parsed p = parse_ok(ok);
  done(&p);
  free(ok);
  char *bad = repeat("t = ", "(", 201, "a", ")", 201, "");
  check_error(bad, "1:205: error: expression nested too deeply (more than 200 levels)");
  free(bad);
  /* far deeper than Bison's stack: still one clean error */
  char *huge = repeat("t = ", "(", 100000, "a", "", 0, "");
  check_error(huge, "1:205: error: expression nested too deeply (more than 200 levels)");
  free(huge);
  char *brk = repeat("t = ", "x[", 300, "a", "]", 300, "");
  check_error(brk, "1:406: error: expression nested too deeply (more than 200 levels)");
  free(brk);
}

static void test_err_nested_operators(void **state) {
  (void)state;
  /* a left-leaning chain: the tree is as deep as it is long */
  char *ok = repeat("t = a", "+a", 199, "", "", 0, "");
  parsed p = parse_ok(ok);
  assert_int_equal(item(&p, 0)->u.stmt.rhs->depth, 200);
  done(&p);
  free(ok);
  char *bad = repeat("t = a", "+a", 200, "", "", 0, "");
  /* reported at the 200th '+' */
  check_error(bad, "1:404: error: expression nested too deeply (more than 200 levels)");
  free(bad);
  char *neg = repeat("t = ", "-", 5000, "a", "", 0, "");
  check_error(neg, "1:205: error: expression nested too deeply (more than 200 levels)");
  free(neg);
  char *calls = repeat("t = ", "f(", 250, "a", ")", 250, "");
  check_error(calls, "1:406: error: expression nested too deeply (more than 200 levels)");
  free(calls);
  /* reductions: the 201st open '(' is reported (col 4 + 200*7 + 4) */
  char *red = repeat("t = ", "sum(i: ", 201, "a", ")", 201, "");
  check_error(red, "1:1408: error: expression nested too deeply (more than 200 levels)");
  free(red);
}

static void test_err_nested_items(void **state) {
  (void)state;
  char *ok = repeat("", "for i in 0..n {\n", 64, "x = 1\n", "}\n", 64, "");
  parsed p = parse_ok(ok);
  done(&p);
  free(ok);
  char *bad = repeat("", "for i in 0..n {\n", 65, "x = 1\n", "}\n", 65, "");
  check_error(bad, "65:15: error: items nested too deeply (more than 64 levels of def/for)");
  free(bad);
  char *huge = repeat("", "def f() { ", 20000, "", "", 0, "");
  check_error(huge, "1:649: error: items nested too deeply (more than 64 levels of def/for)");
  free(huge);
}

static void test_err_ident_too_long(void **state) {
  (void)state;
  char name[300];
  memset(name, 'a', 255);
  name[255] = 0;
  char src[400];
  snprintf(src, sizeof src, "t = %s", name);
  parsed p = parse_ok(src);
  assert_int_equal(strlen(item(&p, 0)->u.stmt.rhs->u.name.name), 255);
  done(&p);
  snprintf(src, sizeof src, "t = b +\n  %sz", name);
  check_error(src, "2:3: error: identifier too long (more than 255 characters)");
}

static void test_err_first_error_stops(void **state) {
  (void)state;
  parsed p = parse("t = a @ b\nu = ]\nv = $");
  assert_null(p.prog);
  assert_int_equal(kbc_diag_errors(p.diag), 1);
  done(&p);
}

static void test_keywords_not_identifiers(void **state) {
  (void)state;
  check_error("input in f32", "1:7: error: syntax error, unexpected 'in', expecting identifier");
  check_error("t = for", "1:5: error: syntax error, unexpected 'for'");
  /* but sum, max, exp and dtypes are plain identifiers */
  check_print("sum = max + exp\ninput f32 f32", "stmt sum =\n  (+ max exp)\ninput f32 f32\n");
}

static void test_print_deterministic(void **state) {
  (void)state;
  kbc_buf a = {0}, b = {0};
  parsed p1 = parse_ok(sam_src), p2 = parse_ok(sam_src);
  ast_print(p1.prog, &a);
  ast_print(p2.prog, &b);
  assert_string_equal(kbc_buf_str(&a), kbc_buf_str(&b));
  assert_true(a.len > 1000);
  kbc_buf_free(&a);
  kbc_buf_free(&b);
  done(&p1);
  done(&p2);
  assert_string_equal(ast_binop_text[AST_BIN_MOD], "%");
  assert_string_equal(ast_binop_text[AST_BIN_OR], "||");
}

/* Every spec shipped in the repository parses (when the build says where). */
static void test_repo_specs(void **state) {
  (void)state;
#ifdef KBC_SOURCE_DIR
  static const char *const files[] = {
      "specs/conv3d_min_softmax.kb",     "specs/cvit.kb",
      "specs/sam_hq_attn_relpos_bwd.kb", "specs/examples/batched_matmul.kb",
      "specs/examples/conv2d_strided.kb", "specs/examples/layernorm.kb",
      "specs/examples/matmul_bias_gelu.kb", "specs/examples/mlp_relu.kb",
      "specs/examples/relpos_gather.kb", "specs/examples/relpos_scatter.kb",
      "specs/examples/softmax_middle.kb"};
  int found = 0;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", KBC_SOURCE_DIR, files[i]);
    FILE *f = fopen(path, "rb");
    if (!f) continue; /* not (yet) in this checkout */
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    parsed p = parse(text);
    if (!p.prog) fail_msg("%s: %s", files[i], kbc_diag_text(p.diag));
    assert_true(p.prog->items.n > 0);
    done(&p);
    found++;
  }
  if (!found) skip();
#else
  skip();
#endif
}

/* ---- robustness ------------------------------------------------------------------ */

static uint64_t rng_state;
static uint32_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 16);
}

static int check_tree(const ast_expr *e);

static int check_tree(const ast_expr *e) {
  assert_non_null(e);
  assert_true(e->depth >= 1 && e->depth <= AST_MAX_DEPTH);
  int d = 0;
  switch (e->kind) {
  case AST_E_NUM:
  case AST_E_NAME:
    break;
  case AST_E_ACCESS:
    for (int i = 0; i < e->u.access.n_idx; i++) {
      int c = check_tree(e->u.access.idx[i]);
      d = c > d ? c : d;
    }
    break;
  case AST_E_CALL:
    for (int i = 0; i < e->u.call.n_args; i++) {
      int c = check_tree(e->u.call.args[i].value);
      d = c > d ? c : d;
    }
    if (e->u.call.body) {
      int c = check_tree(e->u.call.body);
      d = c > d ? c : d;
    }
    break;
  case AST_E_UNARY:
    d = check_tree(e->u.unary.operand);
    break;
  case AST_E_BINARY: {
    int l = check_tree(e->u.binary.lhs), r = check_tree(e->u.binary.rhs);
    d = l > r ? l : r;
    break;
  }
  }
  assert_int_equal(e->depth, d + 1);
  return e->depth;
}

static void check_block(const ast_block *b) {
  for (int i = 0; i < b->n; i++) {
    const ast_item *it = b->items[i];
    switch (it->kind) {
    case AST_I_AXIS:
      if (it->u.axis.value) check_tree(it->u.axis.value);
      break;
    case AST_I_ASSERT:
      check_tree(it->u.assert_.cond);
      break;
    case AST_I_DEF:
      check_block(&it->u.def.body);
      check_tree(it->u.def.ret);
      break;
    case AST_I_FOR:
      check_tree(it->u.for_.lo);
      check_tree(it->u.for_.hi);
      check_block(&it->u.for_.body);
      break;
    case AST_I_STMT:
      check_tree(it->u.stmt.rhs);
      assert_null(strchr(it->u.stmt.text, '\n'));
      break;
    default:
      break;
    }
  }
}

static void fuzz_one(const char *src, size_t len) {
  kbc_arena *a = kbc_arena_create();
  kbc_diag *d = kbc_diag_create("f.kb", src);
  ast_program *p = ast_parse_n(a, d, src, len);
  assert_int_equal(p == NULL, kbc_diag_errors(d) > 0);
  if (p) {
    check_block(&p->items);
    kbc_buf b = {0};
    ast_print(p, &b);
    kbc_buf_free(&b);
  } else {
    assert_int_equal(kbc_diag_errors(d), 1);
  }
  kbc_diag_destroy(d);
  kbc_arena_destroy(a);
}

static void test_random_bytes(void **state) {
  (void)state;
  rng_state = 0x9e3779b97f4a7c15ull;
  static const char alphabet[] = "ab_0123456789.eE+-*/%<>=!&|?()[]{},:;# \t\n\r\x01\x80";
  char buf[512];
  for (int iter = 0; iter < 3000; iter++) {
    size_t n = rng() % sizeof buf;
    for (size_t i = 0; i < n; i++)
      buf[i] = (iter & 1) ? (char)(rng() & 0xff) : alphabet[rng() % (sizeof alphabet - 1)];
    fuzz_one(buf, n);
  }
}

static void test_token_soup(void **state) {
  (void)state;
  rng_state = 0x1234567887654321ull;
  static const char *const toks[] = {
      "kernel", "axis", "var", "const", "assert", "input", "output", "tensor", "def", "return",
      "for", "in", "x", "sum", "f32", "n", "0", "12", "1e-5", "2.5", "..", "+=", "==", "!=",
      "<=", ">=", "&&", "||", "?", "+", "-", "*", "/", "%", "<", ">", "=", "!", "(", ")", "[",
      "]", "{", "}", ",", ":", ";", "\n", "# c\n"};
  const int ntoks = (int)(sizeof toks / sizeof toks[0]);
  char buf[2048];
  for (int iter = 0; iter < 4000; iter++) {
    size_t n = 0;
    int count = (int)(rng() % 80);
    for (int i = 0; i < count; i++) {
      const char *t = toks[rng() % (uint32_t)ntoks];
      size_t l = strlen(t);
      if (n + l + 2 >= sizeof buf) break;
      memcpy(buf + n, t, l);
      n += l;
      buf[n++] = ' ';
    }
    buf[n] = 0;
    fuzz_one(buf, n);
  }
}

static void test_mutated_specs(void **state) {
  (void)state;
  rng_state = 0xdeadbeefcafef00dull;
  size_t len = sizeof sam_src - 1;
  char *buf = malloc(len + 1);
  assert_non_null(buf);
  for (int iter = 0; iter < 1500; iter++) {
    const char *base = (iter & 1) ? sam_src : conv3d_src;
    size_t n = strlen(base);
    memcpy(buf, base, n);
    int edits = 1 + (int)(rng() % 4);
    for (int e = 0; e < edits; e++) buf[rng() % n] = "()[]{},:;=+-*x0#\n"[rng() % 17];
    if (iter % 3 == 0) n = rng() % (n + 1); /* truncated */
    buf[n] = 0;
    fuzz_one(buf, n);
  }
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sub_left_assoc),
      cmocka_unit_test(test_mul_over_add),
      cmocka_unit_test(test_unary),
      cmocka_unit_test(test_comparisons),
      cmocka_unit_test(test_comparison_nonassoc),
      cmocka_unit_test(test_and_or),
      cmocka_unit_test(test_numbers),
      cmocka_unit_test(test_range_lexing),
      cmocka_unit_test(test_huge_int),
      cmocka_unit_test(test_bad_number_forms),
      cmocka_unit_test(test_kernel),
      cmocka_unit_test(test_axes),
      cmocka_unit_test(test_assert),
      cmocka_unit_test(test_decls),
      cmocka_unit_test(test_def),
      cmocka_unit_test(test_for),
      cmocka_unit_test(test_stmts),
      cmocka_unit_test(test_semicolons),
      cmocka_unit_test(test_empty_program),
      cmocka_unit_test(test_reduction_vs_call),
      cmocka_unit_test(test_kwargs),
      cmocka_unit_test(test_padded_access),
      cmocka_unit_test(test_nested_calls_and_where),
      cmocka_unit_test(test_conv3d_example),
      cmocka_unit_test(test_sam_hq_snippet),
      cmocka_unit_test(test_stmt_text),
      cmocka_unit_test(test_locations),
      cmocka_unit_test(test_depth_field),
      cmocka_unit_test(test_err_unexpected_token),
      cmocka_unit_test(test_err_unterminated_eof),
      cmocka_unit_test(test_err_missing_brace),
      cmocka_unit_test(test_err_return_outside_def),
      cmocka_unit_test(test_err_bad_char),
      cmocka_unit_test(test_err_nul_byte),
      cmocka_unit_test(test_err_nested_parens),
      cmocka_unit_test(test_err_nested_operators),
      cmocka_unit_test(test_err_nested_items),
      cmocka_unit_test(test_err_ident_too_long),
      cmocka_unit_test(test_err_first_error_stops),
      cmocka_unit_test(test_keywords_not_identifiers),
      cmocka_unit_test(test_print_deterministic),
      cmocka_unit_test(test_repo_specs),
      cmocka_unit_test(test_random_bytes),
      cmocka_unit_test(test_token_soup),
      cmocka_unit_test(test_mutated_specs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
