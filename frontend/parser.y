/* parser.y — the grammar of a spec file (Bison, pure, with locations).
 *
 * Before: a scanner (lexer.l) over the source text.  After kbc_yyparse():
 * ctx->top holds the top-level items, or a located error was reported to
 * ctx->diag (the first syntax error stops parsing; ctx->failed is set).
 * ast_parse() itself lives in lexer.l, next to the scanner it creates.
 *
 * Newlines are whitespace: every item is self-delimiting (an expression can
 * never be followed by an identifier or a keyword), and an optional ';' may
 * end any item.
 *
 *   program   : item*
 *   item      : 'kernel' IDENT
 *             | 'axis' IDENT 'var' | 'axis' IDENT 'const' expr | 'axis' IDENT '=' expr
 *             | 'assert' expr
 *             | ('input' | 'output' | 'tensor') IDENT IDENT ('[' expr (',' expr)* ']')?
 *             | 'def' IDENT '(' (IDENT (',' IDENT)*)? ')' '{' item* 'return' expr ';'? '}'
 *             | 'for' IDENT 'in' expr '..' expr '{' item* '}'
 *             | IDENT ('[' expr (',' expr)* ']')? ('=' | '+=') expr
 *   expr      : '||' < '&&' < comparisons (non-associative) < '+' '-' < '*' '/' '%'
 *               < prefix '-' '!' < primary
 *   primary   : NUMBER | IDENT | IDENT '[' exprs ']' | IDENT '?' '[' exprs ']'
 *             | IDENT '(' ')' | IDENT '(' args ')' | IDENT '(' args ':' expr ')'
 *             | '(' expr ')'
 *   arg       : expr | IDENT '=' expr | KEYWORD '=' expr   (softmax(m, axis=1))
 *
 * Errors are located at the offending token; an unexpected end of file is
 * reported just past the last token.  A def body lacking its closing
 * `return expr` gets its own message.  Syntax errors read as Bison's
 * "detailed" ones ("syntax error, unexpected X, expecting A or B"), and a
 * note follows where the likely cause is known: a keyword where a name was
 * expected ("'var' is a keyword"), a chained comparison (a < b < c).
 *
 * Bounds (so that every later recursive walk is bounded, and so is Bison's
 * stack): an expression tree deeper than AST_MAX_DEPTH, or more than
 * AST_MAX_DEPTH open '(' '[' and prefix operators at once, is rejected with
 * "expression nested too deeply"; def/for bodies nest at most
 * KBC_MAX_ITEM_DEPTH deep. */

%require "3.8"
%define api.pure full
%define api.prefix {kbc_yy}
%define api.token.prefix {KBC_TOK_}
%define api.location.type {kbc_yyltype}
%define parse.error custom
%locations
%expect 0
%param {yyscan_t scanner} {kbc_parse_ctx *ctx}

%code requires {
#include <stddef.h>

#include "ast.h"
#include "support/suggest.h"

#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif

/* A source range: line/column (1-based; columns count bytes, a tab is one)
 * of the first byte and of the position just past the last byte, and the
 * same range as byte offsets [first_byte, last_byte). */
typedef struct kbc_yyltype {
  int first_line, first_column;
  int last_line, last_column;
  size_t first_byte, last_byte;
} kbc_yyltype;

/* def/for bodies nest at most this deep. */
enum { KBC_MAX_ITEM_DEPTH = 64 };

/* State shared by the scanner and the parser during one ast_parse(). */
typedef struct kbc_parse_ctx {
  kbc_arena *arena;
  kbc_diag *diag;
  const char *src; /* the text being parsed, src[0..len) */
  size_t len;
  int line, col;   /* scanner position: the next byte to read */
  size_t byte;
  int end_line, end_col; /* just past the last token (where EOF is reported) */
  size_t end_byte;
  int nest;        /* open '(' '[' and prefix operators of expressions */
  int item_depth;  /* open def/for bodies */
  int failed;      /* an error was reported */
  size_t cmp_end;  /* byte just past the last comparison parsed (0: none) */
  kbc_vec top;     /* the top-level items */
} kbc_parse_ctx;
}

%code provides {
int kbc_yylex(KBC_YYSTYPE *yylval_param, KBC_YYLTYPE *yylloc_param, yyscan_t yyscanner,
              kbc_parse_ctx *ctx);
/* Reports a located error and marks the parse as failed. */
void kbc_parse_error(kbc_parse_ctx *ctx, kbc_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
}

%code {
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Bison's own stack: the nesting bounds above keep it far below this. */
#ifndef YYMAXDEPTH
#define YYMAXDEPTH 10000
#endif

/* Byte offsets travel with the line/column pairs. */
#define YYLLOC_DEFAULT(Cur, Rhs, N)                          \
  do {                                                       \
    if (N) {                                                 \
      (Cur).first_line = YYRHSLOC(Rhs, 1).first_line;        \
      (Cur).first_column = YYRHSLOC(Rhs, 1).first_column;    \
      (Cur).first_byte = YYRHSLOC(Rhs, 1).first_byte;        \
      (Cur).last_line = YYRHSLOC(Rhs, N).last_line;          \
      (Cur).last_column = YYRHSLOC(Rhs, N).last_column;      \
      (Cur).last_byte = YYRHSLOC(Rhs, N).last_byte;          \
    } else {                                                 \
      (Cur).first_line = (Cur).last_line = YYRHSLOC(Rhs, 0).last_line;       \
      (Cur).first_column = (Cur).last_column = YYRHSLOC(Rhs, 0).last_column; \
      (Cur).first_byte = (Cur).last_byte = YYRHSLOC(Rhs, 0).last_byte;       \
    }                                                        \
  } while (0)

static void kbc_yyerror(KBC_YYLTYPE *loc, yyscan_t scanner, kbc_parse_ctx *ctx, const char *msg);

static kbc_loc L(kbc_yyltype l) {
  kbc_loc k = {l.first_line, l.first_column};
  return k;
}

#define NEST_MSG "expression nested too deeply (more than %d levels)"

static ast_expr *new_expr(kbc_parse_ctx *ctx, ast_expr_kind kind, kbc_loc loc) {
  ast_expr *e = KBC_NEW(ctx->arena, ast_expr);
  e->kind = kind;
  e->loc = loc;
  e->depth = 1;
  return e;
}

/* Sets e->depth from its children; reports and returns NULL when too deep. */
static ast_expr *finish_expr(kbc_parse_ctx *ctx, ast_expr *e, int child_depth) {
  e->depth = 1 + child_depth;
  if (e->depth > AST_MAX_DEPTH) {
    kbc_parse_error(ctx, e->loc, NEST_MSG, (int)AST_MAX_DEPTH);
    return NULL;
  }
  return e;
}

static int max_i(int a, int b) { return a > b ? a : b; }

static ast_expr *mk_binary(kbc_parse_ctx *ctx, ast_binop op, kbc_yyltype oploc, ast_expr *l,
                           ast_expr *r) {
  ast_expr *e = new_expr(ctx, AST_E_BINARY, L(oploc));
  e->u.binary.op = op;
  e->u.binary.lhs = l;
  e->u.binary.rhs = r;
  return finish_expr(ctx, e, max_i(l->depth, r->depth));
}

static ast_expr *mk_unary(kbc_parse_ctx *ctx, ast_unop op, kbc_yyltype oploc, ast_expr *x) {
  ctx->nest--;
  ast_expr *e = new_expr(ctx, AST_E_UNARY, L(oploc));
  e->u.unary.op = op;
  e->u.unary.operand = x;
  return finish_expr(ctx, e, x->depth);
}

/* One more open '(' '[' or prefix operator; reports when too many. */
static int nest_open(kbc_parse_ctx *ctx, kbc_yyltype loc) {
  if (++ctx->nest > AST_MAX_DEPTH) {
    kbc_parse_error(ctx, L(loc), NEST_MSG, (int)AST_MAX_DEPTH);
    return 0;
  }
  return 1;
}

static int block_open(kbc_parse_ctx *ctx, kbc_yyltype loc) {
  if (++ctx->item_depth > KBC_MAX_ITEM_DEPTH) {
    kbc_parse_error(ctx, L(loc), "items nested too deeply (more than %d levels of def/for)",
                    (int)KBC_MAX_ITEM_DEPTH);
    return 0;
  }
  return 1;
}

static ast_expr **expr_array(kbc_parse_ctx *ctx, const kbc_vec *v, int *max_depth) {
  ast_expr **a = KBC_NEW_ARRAY(ctx->arena, ast_expr *, v->len);
  for (int i = 0; i < v->len; i++) {
    a[i] = KBC_VEC_AT(*v, ast_expr, i);
    if (max_depth) *max_depth = max_i(*max_depth, a[i]->depth);
  }
  return a;
}

static ast_expr *mk_access(kbc_parse_ctx *ctx, const char *name, kbc_yyltype nloc, int padded,
                           const kbc_vec *idx) {
  ctx->nest--;
  ast_expr *e = new_expr(ctx, AST_E_ACCESS, L(nloc));
  int d = 0;
  e->u.access.name = name;
  e->u.access.name_loc = L(nloc);
  e->u.access.padded = padded;
  e->u.access.n_idx = idx->len;
  e->u.access.idx = expr_array(ctx, idx, &d);
  return finish_expr(ctx, e, d);
}

static ast_expr *mk_call(kbc_parse_ctx *ctx, const char *name, kbc_yyltype nloc,
                         const kbc_vec *args, ast_expr *body) {
  ctx->nest--;
  ast_expr *e = new_expr(ctx, AST_E_CALL, L(nloc));
  int d = 0;
  e->u.call.name = name;
  e->u.call.name_loc = L(nloc);
  e->u.call.n_args = args ? args->len : 0;
  if (e->u.call.n_args) {
    e->u.call.args = KBC_NEW_ARRAY(ctx->arena, ast_arg, args->len);
    for (int i = 0; i < args->len; i++) {
      e->u.call.args[i] = *KBC_VEC_AT(*args, ast_arg, i);
      d = max_i(d, e->u.call.args[i].value->depth);
    }
  }
  e->u.call.is_reduction = body != NULL;
  e->u.call.body = body;
  if (body) d = max_i(d, body->depth);
  return finish_expr(ctx, e, d);
}

static ast_arg *mk_arg(kbc_parse_ctx *ctx, const char *key, kbc_yyltype loc, ast_expr *value) {
  ast_arg *a = KBC_NEW(ctx->arena, ast_arg);
  a->key = key;
  a->value = value;
  a->loc = L(loc);
  return a;
}

static ast_item *new_item(kbc_parse_ctx *ctx, ast_item_kind kind, kbc_yyltype loc) {
  ast_item *it = KBC_NEW(ctx->arena, ast_item);
  it->kind = kind;
  it->loc = L(loc);
  return it;
}

static ast_block mk_block(kbc_parse_ctx *ctx, const kbc_vec *v) {
  ast_block b;
  b.n = v->len;
  b.items = KBC_NEW_ARRAY(ctx->arena, ast_item *, v->len);
  for (int i = 0; i < v->len; i++) b.items[i] = KBC_VEC_AT(*v, ast_item, i);
  return b;
}

/* The source text src[from..to) on one line: runs of whitespace and
 * comments become one space; leading/trailing ones are dropped. */
static const char *collapse_text(kbc_parse_ctx *ctx, size_t from, size_t to) {
  if (to > ctx->len) to = ctx->len;
  if (from > to) from = to;
  char *out = kbc_arena_alloc(ctx->arena, to - from + 1);
  size_t n = 0;
  int space = 0;
  for (size_t i = from; i < to; i++) {
    char c = ctx->src[i];
    if (c == '#') {
      while (i + 1 < to && ctx->src[i + 1] != '\n') i++;
      space = 1;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      space = 1;
    } else {
      if (space && n) out[n++] = ' ';
      space = 0;
      out[n++] = c;
    }
  }
  out[n] = 0;
  return out;
}

static ast_item *mk_stmt(kbc_parse_ctx *ctx, kbc_yyltype all, const char *name,
                         kbc_yyltype nloc, const kbc_vec *idx, int accumulate, ast_expr *rhs) {
  ast_item *it = new_item(ctx, AST_I_STMT, nloc);
  it->u.stmt.name = name;
  it->u.stmt.name_loc = L(nloc);
  it->u.stmt.has_idx = idx != NULL;
  if (idx) {
    it->u.stmt.n_idx = idx->len;
    it->u.stmt.idx = expr_array(ctx, idx, NULL);
  }
  it->u.stmt.accumulate = accumulate;
  it->u.stmt.rhs = rhs;
  it->u.stmt.text = collapse_text(ctx, all.first_byte, all.last_byte);
  return it;
}

#define CHECK(x) \
  do {           \
    if (!(x)) YYABORT; \
  } while (0)
}

%union {
  ast_expr *expr;
  ast_item *item;
  ast_arg *arg;
  const char *str;
  kbc_vec vec;
  int op;
}

/* Declaration order fixes the order of "expecting ..." lists. */
%token END 0 "end of file"
%token <str> IDENT "identifier"
%token <expr> NUMBER "number"
%token KERNEL "'kernel'" AXIS "'axis'" VAR "'var'" CONST "'const'" ASSERT "'assert'"
%token INPUT "'input'" OUTPUT "'output'" TENSOR "'tensor'" DEF "'def'" RETURN "'return'"
%token FOR "'for'" IN "'in'"
%token ']' ')' ',' ':' '=' ';' '{' '}'
%token DOTDOT "'..'" PLUSEQ "'+='" EQ "'=='" NE "'!='" LE "'<='" GE "'>='"
%token ANDAND "'&&'" OROR "'||'"

%type <vec> items exprs args params params_opt
%type <item> item item_core
%type <expr> expr or_e and_e cmp_e add_e mul_e unary primary
%type <arg> arg
%type <str> keyword
%type <op> cmp_op decl_role assign_op

%%

/* The top level is its own left-recursive list, with no reduction closing
 * it: errors between items then list every possibility (so the message is
 * plain "unexpected X" rather than a misleading "expecting end of file"). */
program
  : %empty
  | program item { kbc_vec_push(ctx->arena, &ctx->top, $2); }
  ;

items
  : %empty { memset(&$$, 0, sizeof $$); }
  | items item { $$ = $1; kbc_vec_push(ctx->arena, &$$, $2); }
  ;

item
  : item_core opt_semi { $$ = $1; }
  ;

opt_semi
  : %empty
  | ';'
  ;

item_core
  : KERNEL IDENT {
      $$ = new_item(ctx, AST_I_KERNEL, @1);
      $$->u.kernel.name = $2;
    }
  | AXIS IDENT VAR {
      $$ = new_item(ctx, AST_I_AXIS, @1);
      $$->u.axis.name = $2;
      $$->u.axis.name_loc = L(@2);
      $$->u.axis.kind = AST_AXIS_VAR;
    }
  | AXIS IDENT CONST expr {
      $$ = new_item(ctx, AST_I_AXIS, @1);
      $$->u.axis.name = $2;
      $$->u.axis.name_loc = L(@2);
      $$->u.axis.kind = AST_AXIS_CONST;
      $$->u.axis.value = $4;
    }
  | AXIS IDENT '=' expr {
      $$ = new_item(ctx, AST_I_AXIS, @1);
      $$->u.axis.name = $2;
      $$->u.axis.name_loc = L(@2);
      $$->u.axis.kind = AST_AXIS_DERIVED;
      $$->u.axis.value = $4;
    }
  | ASSERT expr {
      $$ = new_item(ctx, AST_I_ASSERT, @1);
      $$->u.assert_.cond = $2;
    }
  | decl_role IDENT IDENT {
      $$ = new_item(ctx, AST_I_DECL, @1);
      $$->u.decl.role = (ast_decl_role)$1;
      $$->u.decl.name = $2;
      $$->u.decl.name_loc = L(@2);
      $$->u.decl.dtype = $3;
      $$->u.decl.dtype_loc = L(@3);
    }
  | decl_role IDENT IDENT '[' exprs ']' {
      $$ = new_item(ctx, AST_I_DECL, @1);
      $$->u.decl.role = (ast_decl_role)$1;
      $$->u.decl.name = $2;
      $$->u.decl.name_loc = L(@2);
      $$->u.decl.dtype = $3;
      $$->u.decl.dtype_loc = L(@3);
      $$->u.decl.has_shape = 1;
      $$->u.decl.rank = $5.len;
      $$->u.decl.shape = expr_array(ctx, &$5, NULL);
    }
  | DEF IDENT '(' params_opt ')' block_open items RETURN expr opt_semi '}' {
      ctx->item_depth--;
      $$ = new_item(ctx, AST_I_DEF, @1);
      $$->u.def.name = $2;
      $$->u.def.name_loc = L(@2);
      $$->u.def.n_params = $4.len;
      $$->u.def.params = KBC_NEW_ARRAY(ctx->arena, const char *, $4.len);
      $$->u.def.param_locs = KBC_NEW_ARRAY(ctx->arena, kbc_loc, $4.len);
      for (int i = 0; i < $4.len; i++) {
        const ast_expr *p = KBC_VEC_AT($4, ast_expr, i);
        $$->u.def.params[i] = p->u.name.name;
        $$->u.def.param_locs[i] = p->loc;
      }
      $$->u.def.body = mk_block(ctx, &$7);
      $$->u.def.ret = $9;
    }
  | DEF IDENT '(' params_opt ')' block_open items '}' {
      kbc_parse_error(ctx, L(@8), "missing 'return' at the end of def '%s'", $2);
      YYABORT;
    }
  | FOR IDENT IN expr DOTDOT expr block_open items '}' {
      ctx->item_depth--;
      $$ = new_item(ctx, AST_I_FOR, @1);
      $$->u.for_.var = $2;
      $$->u.for_.var_loc = L(@2);
      $$->u.for_.lo = $4;
      $$->u.for_.hi = $6;
      $$->u.for_.body = mk_block(ctx, &$8);
    }
  | IDENT assign_op expr { $$ = mk_stmt(ctx, @$, $1, @1, NULL, $2, $3); }
  | IDENT '[' exprs ']' assign_op expr { $$ = mk_stmt(ctx, @$, $1, @1, &$3, $5, $6); }
  ;

decl_role
  : INPUT { $$ = AST_DECL_INPUT; }
  | OUTPUT { $$ = AST_DECL_OUTPUT; }
  | TENSOR { $$ = AST_DECL_TENSOR; }
  ;

assign_op
  : '=' { $$ = 0; }
  | PLUSEQ { $$ = 1; }
  ;

block_open
  : '{' { CHECK(block_open(ctx, @1)); }
  ;

params_opt
  : %empty { memset(&$$, 0, sizeof $$); }
  | params
  ;

params
  : IDENT {
      memset(&$$, 0, sizeof $$);
      ast_expr *p = new_expr(ctx, AST_E_NAME, L(@1));
      p->u.name.name = $1;
      kbc_vec_push(ctx->arena, &$$, p);
    }
  | params ',' IDENT {
      $$ = $1;
      ast_expr *p = new_expr(ctx, AST_E_NAME, L(@3));
      p->u.name.name = $3;
      kbc_vec_push(ctx->arena, &$$, p);
    }
  ;

/* ---- expressions ---- */

expr
  : or_e
  ;

or_e
  : and_e
  | or_e OROR and_e { CHECK($$ = mk_binary(ctx, AST_BIN_OR, @2, $1, $3)); }
  ;

and_e
  : cmp_e
  | and_e ANDAND cmp_e { CHECK($$ = mk_binary(ctx, AST_BIN_AND, @2, $1, $3)); }
  ;

cmp_e
  : add_e
  | add_e cmp_op add_e {
      CHECK($$ = mk_binary(ctx, (ast_binop)$2, @2, $1, $3));
      ctx->cmp_end = @$.last_byte;
    }
  ;

cmp_op
  : EQ { $$ = AST_BIN_EQ; }
  | NE { $$ = AST_BIN_NE; }
  | '<' { $$ = AST_BIN_LT; }
  | LE { $$ = AST_BIN_LE; }
  | '>' { $$ = AST_BIN_GT; }
  | GE { $$ = AST_BIN_GE; }
  ;

add_e
  : mul_e
  | add_e '+' mul_e { CHECK($$ = mk_binary(ctx, AST_BIN_ADD, @2, $1, $3)); }
  | add_e '-' mul_e { CHECK($$ = mk_binary(ctx, AST_BIN_SUB, @2, $1, $3)); }
  ;

mul_e
  : unary
  | mul_e '*' unary { CHECK($$ = mk_binary(ctx, AST_BIN_MUL, @2, $1, $3)); }
  | mul_e '/' unary { CHECK($$ = mk_binary(ctx, AST_BIN_DIV, @2, $1, $3)); }
  | mul_e '%' unary { CHECK($$ = mk_binary(ctx, AST_BIN_MOD, @2, $1, $3)); }
  ;

unary
  : primary
  | neg unary { CHECK($$ = mk_unary(ctx, AST_UN_NEG, @1, $2)); }
  | not unary { CHECK($$ = mk_unary(ctx, AST_UN_NOT, @1, $2)); }
  ;

neg
  : '-' { CHECK(nest_open(ctx, @1)); }
  ;

not
  : '!' { CHECK(nest_open(ctx, @1)); }
  ;

lparen
  : '(' { CHECK(nest_open(ctx, @1)); }
  ;

lbrack
  : '[' { CHECK(nest_open(ctx, @1)); }
  ;

primary
  : NUMBER
  | IDENT {
      $$ = new_expr(ctx, AST_E_NAME, L(@1));
      $$->u.name.name = $1;
    }
  | IDENT lbrack exprs ']' { CHECK($$ = mk_access(ctx, $1, @1, 0, &$3)); }
  | IDENT '?' lbrack exprs ']' { CHECK($$ = mk_access(ctx, $1, @1, 1, &$4)); }
  | IDENT lparen ')' { CHECK($$ = mk_call(ctx, $1, @1, NULL, NULL)); }
  | IDENT lparen args ')' { CHECK($$ = mk_call(ctx, $1, @1, &$3, NULL)); }
  | IDENT lparen args ':' expr ')' { CHECK($$ = mk_call(ctx, $1, @1, &$3, $5)); }
  | lparen expr ')' {
      ctx->nest--;
      $$ = $2;
    }
  ;

exprs
  : expr {
      memset(&$$, 0, sizeof $$);
      kbc_vec_push(ctx->arena, &$$, $1);
    }
  | exprs ',' expr {
      $$ = $1;
      kbc_vec_push(ctx->arena, &$$, $3);
    }
  ;

args
  : arg {
      memset(&$$, 0, sizeof $$);
      kbc_vec_push(ctx->arena, &$$, $1);
    }
  | args ',' arg {
      $$ = $1;
      kbc_vec_push(ctx->arena, &$$, $3);
    }
  ;

arg
  : expr { $$ = mk_arg(ctx, NULL, @1, $1); }
  | IDENT '=' expr { $$ = mk_arg(ctx, $1, @1, $3); }
  | keyword '=' expr { $$ = mk_arg(ctx, $1, @1, $3); }
  ;

/* A keyword argument may be named by a keyword (softmax(m, axis=1)). */
keyword
  : KERNEL { $$ = "kernel"; }
  | AXIS { $$ = "axis"; }
  | VAR { $$ = "var"; }
  | CONST { $$ = "const"; }
  | ASSERT { $$ = "assert"; }
  | INPUT { $$ = "input"; }
  | OUTPUT { $$ = "output"; }
  | TENSOR { $$ = "tensor"; }
  | DEF { $$ = "def"; }
  | RETURN { $$ = "return"; }
  | FOR { $$ = "for"; }
  | IN { $$ = "in"; }
  ;

%%

void kbc_parse_error(kbc_parse_ctx *ctx, kbc_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kbc_diag_vreport(ctx->diag, KBC_DIAG_ERROR, loc, fmt, ap);
  va_end(ap);
  ctx->failed = 1;
}

/* The cause of a syntax error, when it is a known one: the unexpected
 * token `bad` with `expected[0..n)` the tokens the parser could take. */
/* Whether src[from..to) holds only whitespace and comments. */
static int blank_between(const kbc_parse_ctx *ctx, size_t from, size_t to) {
  for (size_t i = from; i < to && i < ctx->len; i++) {
    char c = ctx->src[i];
    if (c == '#')
      while (i + 1 < to && ctx->src[i + 1] != '\n') i++;
    else if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
      return 0;
  }
  return 1;
}

/* A note on the likely cause of a syntax error at token `bad` (at bad_loc),
 * when it is a known one; expected[0..n) are the tokens the parser could
 * have taken (after default reductions: possibly fewer). */
static int is_word_char(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The keyword a misspelt word was probably meant to be: among the
 * expected keywords for the offending token itself (`axis n vr`), or any
 * item keyword for the name just before an unexpected name at the start
 * of an item (`ouptut y f32[n]`).  Adds a note; 1 when it did. */
static int keyword_note(kbc_parse_ctx *ctx, const kbc_yyltype *bad_loc, yysymbol_kind_t bad,
                        const yysymbol_kind_t *expected, int n) {
  if (bad != YYSYMBOL_IDENT) return 0;
  char word[64];
  size_t b = bad_loc->first_byte, e = bad_loc->last_byte;
  kbc_suggest s;
  if (e > b && e - b < sizeof word) { /* the token itself, against the keywords expected here */
    memcpy(word, ctx->src + b, e - b);
    word[e - b] = 0;
    char kws[16][16];
    int nk = 0;
    for (int i = 0; i < n && nk < 16; i++) {
      const char *k = yysymbol_name(expected[i]); /* a keyword's is "'var'" */
      size_t kl = strlen(k);
      if (k[0] != '\'' || !is_word_char(k[1]) || kl - 2 >= sizeof kws[0]) continue;
      memcpy(kws[nk], k + 1, kl - 2);
      kws[nk++][kl - 2] = 0;
    }
    kbc_suggest_init(&s, word);
    for (int i = 0; i < nk; i++) kbc_suggest_add(&s, kws[i]);
    if (kbc_suggest_best(&s)) {
      kbc_diag_report(ctx->diag, KBC_DIAG_NOTE, L(*bad_loc), "did you mean '%s'?", kbc_suggest_best(&s));
      return 1;
    }
  }
  /* the word before: an item that began with a misspelt keyword */
  size_t end = b;
  while (end > 0 && (ctx->src[end - 1] == ' ' || ctx->src[end - 1] == '\t')) end--;
  size_t start = end;
  while (start > 0 && is_word_char(ctx->src[start - 1])) start--;
  size_t line_start = start;
  while (line_start > 0 && (ctx->src[line_start - 1] == ' ' || ctx->src[line_start - 1] == '\t')) line_start--;
  if (start == end || end - start >= sizeof word || (line_start > 0 && ctx->src[line_start - 1] != '\n'))
    return 0;
  memcpy(word, ctx->src + start, end - start);
  word[end - start] = 0;
  static const char *const items[] = {"kernel", "axis", "assert", "input", "output", "tensor", "def", "for"};
  kbc_suggest_init(&s, word);
  for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) kbc_suggest_add(&s, items[i]);
  if (!kbc_suggest_best(&s)) return 0;
  kbc_diag_report(ctx->diag, KBC_DIAG_NOTE, L(*bad_loc), "'%s' begins this line; did you mean '%s'?", word,
                  kbc_suggest_best(&s));
  return 1;
}

static void syntax_note(kbc_parse_ctx *ctx, const kbc_yyltype *bad_loc, yysymbol_kind_t bad,
                        const yysymbol_kind_t *expected, int n) {
  if (keyword_note(ctx, bad_loc, bad, expected, n)) return;
  int ident = 0;
  for (int i = 0; i < n; i++) ident |= expected[i] == YYSYMBOL_IDENT;
  const char *name = yysymbol_name(bad); /* a keyword's is "'var'" */
  static const char *const cmps[] = {"'=='", "'!='", "'<'", "'<='", "'>'", "'>='"};
  int is_cmp = 0;
  for (size_t i = 0; i < sizeof cmps / sizeof cmps[0]; i++) is_cmp |= !strcmp(name, cmps[i]);
  if (ident && name[0] == '\'' && name[1] >= 'a' && name[1] <= 'z')
    kbc_diag_report(ctx->diag, KBC_DIAG_NOTE, L(*bad_loc), "%s is a keyword and cannot be used as a name; rename it",
                    name);
  else if (is_cmp && ctx->cmp_end && blank_between(ctx, ctx->cmp_end, bad_loc->first_byte))
    kbc_diag_report(ctx->diag, KBC_DIAG_NOTE, L(*bad_loc), "comparisons do not chain; write a < b && b < c");
}

/* "syntax error, unexpected X[, expecting A or B ...]" (at most four
 * expected tokens are listed, as Bison's detailed errors do), then a note
 * on the likely cause. */
static int yyreport_syntax_error(const yypcontext_t *yyctx, yyscan_t scanner, kbc_parse_ctx *ctx) {
  (void)scanner;
  if (ctx->failed) return 0; /* the scanner or an action already said why */
  const kbc_yyltype *where = yypcontext_location(yyctx);
  kbc_loc loc = L(*where);
  yysymbol_kind_t bad = yypcontext_token(yyctx);
  if (bad == YYSYMBOL_YYEMPTY) {
    kbc_parse_error(ctx, loc, "syntax error");
    return 0;
  }
  yysymbol_kind_t expected[YYNTOKENS];
  int n = yypcontext_expected_tokens(yyctx, expected, YYNTOKENS);
  if (n < 0) n = 0;
  char msg[512];
  size_t len = (size_t)snprintf(msg, sizeof msg, "syntax error, unexpected %s", yysymbol_name(bad));
  for (int i = 0; i < n && n <= 4 && len < sizeof msg; i++)
    len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s", i ? " or " : ", expecting ",
                            yysymbol_name(expected[i]));
  kbc_parse_error(ctx, loc, "%s", msg);
  syntax_note(ctx, where, bad, expected, n);
  return 0;
}

static void kbc_yyerror(KBC_YYLTYPE *loc, yyscan_t scanner, kbc_parse_ctx *ctx, const char *msg) {
  (void)scanner;
  if (ctx->failed) return; /* the scanner or an action already said why */
  if (strcmp(msg, "memory exhausted") == 0)
    kbc_parse_error(ctx, L(*loc), "input nested too deeply (parser stack exhausted)");
  else
    kbc_parse_error(ctx, L(*loc), "%s", msg);
}
