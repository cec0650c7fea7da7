/* fuzz_parse.c — libFuzzer target for the frontend (lexer, parser, printer).
 *
 * Each input is parsed twice: as NUL-terminated text (ast_parse, stopping at
 * the first NUL byte) and as raw bytes (ast_parse_n, where a NUL is an
 * error).  Checked: no crash or sanitizer report; the result is NULL iff
 * exactly one error was reported; every expression's depth is consistent
 * and at most AST_MAX_DEPTH; statement texts are one line; printing is
 * deterministic.
 *
 *   clang -fsanitize=fuzzer,address,undefined -I. -Ibuild/frontend -Ifrontend
 *         support/arena.c support/buf.c support/diag.c frontend/ast.c
 *         build/frontend/parser.c build/frontend/lexer.c tests/fuzz/fuzz_parse.c
 *         -o fuzz_parse
 *   ./fuzz_parse -dict=tests/fuzz/parse.dict tests/fuzz/corpus/parse
 *
 * With -DKBC_FUZZ_MAIN (and without -fsanitize=fuzzer) it is a plain program
 * that replays the files named on its command line. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/ast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(c)                                                         \
  do {                                                                     \
    if (!(c)) {                                                            \
      fprintf(stderr, "fuzz_parse: check failed: %s (line %d)\n", #c, __LINE__); \
      abort();                                                             \
    }                                                                      \
  } while (0)

static int check_expr(const ast_expr *e) {
  REQUIRE(e != NULL);
  REQUIRE(e->depth >= 1 && e->depth <= AST_MAX_DEPTH);
  int d = 0, c;
  switch (e->kind) {
  case AST_E_NUM:
    REQUIRE(e->u.num.text != NULL);
    break;
  case AST_E_NAME:
    REQUIRE(e->u.name.name != NULL && strlen(e->u.name.name) <= 255);
    break;
  case AST_E_ACCESS:
    REQUIRE(e->u.access.n_idx >= 1);
    for (int i = 0; i < e->u.access.n_idx; i++)
      if ((c = check_expr(e->u.access.idx[i])) > d) d = c;
    break;
  case AST_E_CALL:
    for (int i = 0; i < e->u.call.n_args; i++)
      if ((c = check_expr(e->u.call.args[i].value)) > d) d = c;
    REQUIRE(e->u.call.is_reduction == (e->u.call.body != NULL));
    if (e->u.call.body && (c = check_expr(e->u.call.body)) > d) d = c;
    break;
  case AST_E_UNARY:
    d = check_expr(e->u.unary.operand);
    break;
  case AST_E_BINARY:
    d = check_expr(e->u.binary.lhs);
    if ((c = check_expr(e->u.binary.rhs)) > d) d = c;
    break;
  default:
    REQUIRE(!"bad expression kind");
  }
  REQUIRE(e->depth == d + 1);
  return e->depth;
}

static void check_block(const ast_block *b, int level) {
  REQUIRE(level <= 64);
  for (int i = 0; i < b->n; i++) {
    const ast_item *it = b->items[i];
    REQUIRE(it->loc.line >= 1 && it->loc.col >= 1);
    switch (it->kind) {
    case AST_I_KERNEL:
      break;
    case AST_I_AXIS:
      REQUIRE((it->u.axis.kind == AST_AXIS_VAR) == (it->u.axis.value == NULL));
      if (it->u.axis.value) check_expr(it->u.axis.value);
      break;
    case AST_I_ASSERT:
      check_expr(it->u.assert_.cond);
      break;
    case AST_I_DECL:
      for (int j = 0; j < it->u.decl.rank; j++) check_expr(it->u.decl.shape[j]);
      break;
    case AST_I_DEF:
      check_block(&it->u.def.body, level + 1);
      check_expr(it->u.def.ret);
      break;
    case AST_I_FOR:
      check_expr(it->u.for_.lo);
      check_expr(it->u.for_.hi);
      check_block(&it->u.for_.body, level + 1);
      break;
    case AST_I_STMT:
      for (int j = 0; j < it->u.stmt.n_idx; j++) check_expr(it->u.stmt.idx[j]);
      check_expr(it->u.stmt.rhs);
      REQUIRE(it->u.stmt.text != NULL && strchr(it->u.stmt.text, '\n') == NULL);
      REQUIRE(strncmp(it->u.stmt.text, it->u.stmt.name, strlen(it->u.stmt.name)) == 0);
      break;
    default:
      REQUIRE(!"bad item kind");
    }
  }
}

static void parse_one(const char *src, size_t len, int raw) {
  kbc_arena *a = kbc_arena_create();
  kbc_diag *d = kbc_diag_create("fuzz.kb", src);
  ast_program *p = raw ? ast_parse_n(a, d, src, len) : ast_parse(a, d, src);
  if (p) {
    REQUIRE(kbc_diag_errors(d) == 0);
    check_block(&p->items, 0);
    kbc_buf b1 = {0}, b2 = {0};
    ast_print(p, &b1);
    ast_print(p, &b2);
    REQUIRE(b1.len == b2.len && strcmp(kbc_buf_str(&b1), kbc_buf_str(&b2)) == 0);
    kbc_buf_free(&b1);
    kbc_buf_free(&b2);
  } else {
    REQUIRE(kbc_diag_errors(d) == 1);
    REQUIRE(strstr(kbc_diag_first(d), "internal error") == NULL);
  }
  kbc_diag_destroy(d);
  kbc_arena_destroy(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  if (size) memcpy(s, data, size);
  s[size] = 0;
  parse_one(s, size, 0);
  if (memchr(s, 0, size)) parse_one(s, size, 1);
  free(s);
  return 0;
}

#ifdef KBC_FUZZ_MAIN
#define KBC_FUZZ_NAME "fuzz_parse"
#include "replay_main.h"
#endif
