/* lower.c — lowering driver: items, scopes, defs and loops.
 *
 * Before: a parsed AST.  After ir_lower(): an IR program whose statements
 * are in execution order, every name resolved, every index range inferred
 * (bounds are proven later by ir_check_bounds), or NULL with located
 * errors.  Items are lowered in order; a failed item poisons the names it
 * would define so that one mistake gives one message. */
#include <stdint.h>
#include <string.h>

#include "lower.h"
#include "lower_impl.h"

lw_name *lw_lookup(lower *L, const char *name) {
  for (lw_scope *s = L->scope; s; s = s->parent)
    for (lw_name *n = s->names; n; n = n->next)
      if (!strcmp(n->name, name)) {
        n->used = 1;
        return n;
      }
  return NULL;
}

static lw_name *lookup_in(lw_scope *s, const char *name) {
  for (lw_name *n = s->names; n; n = n->next)
    if (!strcmp(n->name, name)) return n;
  return NULL;
}

int lw_assignable(lower *L, const lw_name *n, const char *name, kbc_loc loc) {
  if (n && n->kind == LW_NAME_POISON) return 0;
  if (n && n->kind != LW_NAME_TENSOR) {
    kbc_error(L->d, loc, "'%s' is %s and cannot be assigned", name,
              n->kind == LW_NAME_AXIS ? "an axis" : n->kind == LW_NAME_DEF ? "a def" : "a loop variable");
    return 0;
  }
  return 1;
}

int lw_caller_owns(lower *L, const lw_name *n, kbc_loc loc) {
  for (lw_scope *s = L->scope; s; s = s->parent) {
    for (lw_name *m = s->names; m; m = m->next)
      if (m == n) return 0;
    if (s->is_def) {
      kbc_error(L->d, loc, "cannot assign to '%s' inside a def: it belongs to the caller", n->name);
      return 1;
    }
  }
  return 0;
}

/* "; did you mean 'best'?", or "" when nothing was close. */
static const char *suggestion(lower *L, const kbc_suggest *s) {
  const char *best = kbc_suggest_best(s);
  return best ? kbc_arena_printf(L->a, "; did you mean '%s'?", best) : "";
}

const char *lw_did_you_mean(lower *L, const char *name, unsigned mask, lw_stmt *st, int functions) {
  kbc_suggest s;
  kbc_suggest_init(&s, name);
  for (lw_scope *sc = L->scope; sc; sc = sc->parent)
    for (lw_name *n = sc->names; n; n = n->next)
      if (mask & (1u << n->kind) || (functions && n->kind == LW_NAME_DEF)) kbc_suggest_add(&s, n->name);
  for (int i = 0; st && i < st->names.len; i++) kbc_suggest_add(&s, KBC_VEC_AT(st->names, const char, i));
  if (functions) lw_suggest_functions(&s);
  return suggestion(L, &s);
}

const char *lw_did_you_mean_reduction(lower *L, const char *name) {
  kbc_suggest s;
  kbc_suggest_init(&s, name);
  for (int i = 0; i < IR_RED_COUNT; i++) kbc_suggest_add(&s, ir_red_name[i]);
  return suggestion(L, &s);
}

lw_name *lw_bind(lower *L, lw_scope *s, const char *name, lw_name_kind kind) {
  lw_name *n = lookup_in(s, name);
  if (!n) {
    n = KBC_NEW(L->a, lw_name);
    n->name = kbc_arena_strdup(L->a, name);
    n->next = s->names;
    s->names = n;
  }
  n->kind = kind;
  return n;
}

/* A program-unique tensor name: prefix + base, with .N appended on clashes. */
const char *lw_fresh_name(lower *L, const char *base) {
  const char *prefix = L->scope->prefix ? L->scope->prefix : "";
  const char *name = kbc_arena_printf(L->a, "%s%s", prefix, base);
  for (int k = 1; ir_tensor_find(L->p, name); k++)
    name = kbc_arena_printf(L->a, "%s%s.%d", prefix, base, k);
  return name;
}

static const char *const role_word[] = {"input", "output", "tensor"};

/* "'x' is already defined", with a note where it was, when known. */
static void already_defined(lower *L, kbc_loc loc, const char *name, const lw_name *prev) {
  kbc_error(L->d, loc, "'%s' is already defined", name);
  if (prev && prev->kind == LW_NAME_AXIS)
    kbc_note(L->d, prev->axis->loc, "'%s' is declared here as an axis", name);
  else if (prev && prev->kind == LW_NAME_TENSOR && prev->view.tensor)
    kbc_note(L->d, prev->view.tensor->loc, "'%s' is first defined here", name);
  else if (prev && prev->kind == LW_NAME_DEF)
    kbc_note(L->d, prev->def->u.def.name_loc, "'%s' is first defined here", name);
}

static int lower_decl(lower *L, const ast_item *it) {
  const char *name = it->u.decl.name;
  if (it->u.decl.role != AST_DECL_TENSOR && L->scope != L->global) {
    kbc_error(L->d, it->loc, "'%s' declarations are only allowed at the top level", role_word[it->u.decl.role]);
    return 0;
  }
  int dt = -1;
  for (int i = 0; i < IR_DT_COUNT; i++)
    if (!strcmp(ir_dtype_name[i], it->u.decl.dtype)) dt = i;
  if (dt < 0) {
    kbc_error(L->d, it->u.decl.dtype_loc, "unknown element type '%s' (expected f32, f16, bf16 or i32)",
              it->u.decl.dtype);
    return 0;
  }
  if (!ir_dtype_supported[dt]) {
    kbc_error(L->d, it->u.decl.dtype_loc, "element type '%s' is not supported yet (only f32 is)",
              it->u.decl.dtype);
    return 0;
  }
  lw_name *prev = lookup_in(L->scope, name);
  if (prev && prev->kind != LW_NAME_POISON) {
    already_defined(L, it->u.decl.name_loc, name, prev);
    return 0;
  }
  int rank = it->u.decl.rank;
  sym **shape = KBC_NEW_ARRAY(L->a, sym *, rank > 0 ? rank : 1);
  const char *what = kbc_arena_printf(L->a, "the shape of '%s'", name);
  for (int i = 0; i < rank; i++)
    if (!(shape[i] = lw_int_expr(L, it->u.decl.shape[i], NULL, what))) return 0;
  for (int i = 0; i < rank; i++) {
    int64_t c;
    if (sym_is_const(shape[i], &c) && c < 1) {
      kbc_error(L->d, it->u.decl.shape[i]->loc, "dimension %d of '%s' is %lld; sizes must be positive", i,
                name, (long long)c);
      return 0;
    }
  }
  static const ir_role roles[] = {IR_ROLE_INPUT, IR_ROLE_OUTPUT, IR_ROLE_TEMP};
  const char *irname = it->u.decl.role == AST_DECL_TENSOR ? lw_fresh_name(L, name) : name;
  if (it->u.decl.role != AST_DECL_TENSOR && ir_tensor_find(L->p, name)) {
    kbc_error(L->d, it->u.decl.name_loc, "'%s' is already defined", name);
    kbc_note(L->d, ir_tensor_find(L->p, name)->loc, "'%s' is first defined here", name);
    return 0;
  }
  ir_tensor *t = ir_tensor_add(L->p, irname, roles[it->u.decl.role], (ir_dtype)dt, rank, shape, it->u.decl.name_loc);
  t->declared = 1;
  lw_name *n = lw_bind(L, L->scope, name, LW_NAME_TENSOR);
  n->view = (lw_view){.tensor = t};
  return 1;
}

static int lower_def(lower *L, const ast_item *it) {
  if (L->scope != L->global) {
    kbc_error(L->d, it->loc, "'def' is only allowed at the top level");
    return 0;
  }
  const char *name = it->u.def.name;
  lw_name *prev = lookup_in(L->scope, name);
  if (prev && prev->kind != LW_NAME_POISON) {
    already_defined(L, it->u.def.name_loc, name, prev);
    return 0;
  }
  if (lw_library_find(name) || lw_scalar_fn_arity(name, NULL) >= 0) {
    kbc_error(L->d, it->u.def.name_loc, "'%s' is a built-in function and cannot be redefined", name);
    return 0;
  }
  for (int i = 0; i < it->u.def.n_params; i++)
    for (int j = 0; j < i; j++)
      if (!strcmp(it->u.def.params[i], it->u.def.params[j])) {
        kbc_error(L->d, it->u.def.param_locs[i], "parameter '%s' appears twice", it->u.def.params[i]);
        return 0;
      }
  lw_name *n = lw_bind(L, L->scope, name, LW_NAME_DEF);
  n->def = it;
  return 1;
}

/* Every unrolled loop iteration and every statement costs one unit of
 * L->n_stmts_budget, so nested loops cannot make lowering run for ever.
 * The first time the budget runs out is reported; 0 from then on. */
static int spend_budget(lower *L, const ast_item *it) {
  if (L->n_stmts_budget-- > 0) return 1;
  if (L->n_stmts_budget == -1)
    kbc_error(L->d, it->loc, "the program is too large after unrolling loops (more than %d statements and loop "
              "iterations in all)", LW_MAX_STMTS);
  L->n_stmts_budget = -2;
  return 0;
}

static int lower_for(lower *L, const ast_item *it) {
  sym *lo = lw_int_expr(L, it->u.for_.lo, NULL, "a loop bound");
  sym *hi = lo ? lw_int_expr(L, it->u.for_.hi, NULL, "a loop bound") : NULL;
  if (!hi) return 0;
  int64_t a, b;
  if (!sym_is_const(lo, &a) || !sym_is_const(hi, &b)) {
    kbc_error(L->d, sym_is_const(lo, NULL) ? it->u.for_.hi->loc : it->u.for_.lo->loc,
              "loop bounds must be constants (loops are unrolled at compile time)");
    return 0;
  }
  uint64_t trips = b > a ? (uint64_t)b - (uint64_t)a : 0; /* b - a may overflow int64 */
  if (trips > LW_MAX_LOOP_TRIPS) {
    kbc_error(L->d, it->loc, "loop runs %llu times; at most %d iterations are unrolled", (unsigned long long)trips,
              LW_MAX_LOOP_TRIPS);
    return 0;
  }
  int ok = 1;
  for (int64_t v = a; v < b && ok; v++) {
    if (!spend_budget(L, it)) return 0; /* nested loops multiply */
    lw_scope s = {.parent = L->scope,
                  .prefix = kbc_arena_printf(L->a, "%s%s%lld.", L->scope->prefix ? L->scope->prefix : "",
                                             it->u.for_.var, (long long)v),
                  .is_def = 0};
    lw_scope *outer = L->scope;
    L->scope = &s;
    lw_name *n = lw_bind(L, &s, it->u.for_.var, LW_NAME_INT);
    n->value = sym_const(L->a, v);
    ok = lw_lower_block(L, &it->u.for_.body);
    L->scope = outer;
  }
  return ok;
}

static int lower_item(lower *L, const ast_item *it) {
  switch (it->kind) {
  case AST_I_KERNEL:
    return 1; /* checked by the driver */
  case AST_I_AXIS:
    if (L->scope != L->global) {
      kbc_error(L->d, it->loc, "axes must be declared at the top level");
      return 0;
    }
    return 1; /* resolved up front by lw_resolve_axes */
  case AST_I_ASSERT:
    if (L->scope != L->global) {
      kbc_error(L->d, it->loc, "'assert' is only allowed at the top level");
      return 0;
    }
    return lw_lower_assert(L, it);
  case AST_I_DECL:
    return lower_decl(L, it);
  case AST_I_DEF:
    return lower_def(L, it);
  case AST_I_FOR:
    return lower_for(L, it);
  case AST_I_STMT:
    return spend_budget(L, it) && lw_lower_stmt(L, it);
  }
  return 0;
}

const ir_stmt *lw_writer(lower *L, const ir_tensor *t) {
  for (int i = L->p->stmts.len - 1; i >= 0; i--)
    if (IR_STMT(L->p, i)->out == t) return IR_STMT(L->p, i);
  return NULL;
}

int lw_check_assigned(lower *L, const ir_tensor *t, const char *name, kbc_loc loc) {
  if (t->role == IR_ROLE_INPUT || lw_writer(L, t)) return 1;
  for (int i = 0; i < L->failed.len; i++)
    if (KBC_VEC_AT(L->failed, ir_tensor, i) == t) return 0;
  kbc_error(L->d, loc, "'%s' is read here before any statement assigns it", name);
  return 0;
}

/* A failed statement poisons its target so later uses do not cascade. */
static void poison(lower *L, const ast_item *it) {
  if (it->kind != AST_I_STMT && it->kind != AST_I_DECL && it->kind != AST_I_DEF) return;
  const char *name = it->kind == AST_I_STMT ? it->u.stmt.name
                     : it->kind == AST_I_DECL ? it->u.decl.name : it->u.def.name;
  lw_name *n = lw_lookup(L, name);
  if (n && n->kind == LW_NAME_TENSOR && it->kind == AST_I_STMT && n->view.tensor &&
      n->view.tensor->role != IR_ROLE_TEMP) {
    /* keep inputs/outputs: their later uses are still meaningful, but a read
     * of what the failed statement meant to write says nothing new */
    kbc_vec_push(L->a, &L->failed, n->view.tensor);
    return;
  }
  lw_bind(L, L->scope, name, LW_NAME_POISON);
}

int lw_lower_block(lower *L, const ast_block *b) {
  int ok = 1;
  for (int i = 0; i < b->n; i++) {
    if (kbc_diag_errors(L->d) >= KBC_DIAG_MAX_ERRORS) return 0;
    if (!lower_item(L, b->items[i])) {
      ok = 0;
      poison(L, b->items[i]);
    }
  }
  return ok;
}

static int check_kernel_item(lower *L, const ast_program *ast) {
  int seen = 0, ok = 1;
  for (int i = 0; i < ast->items.n; i++) {
    const ast_item *it = ast->items.items[i];
    if (it->kind != AST_I_KERNEL) continue;
    if (seen++) {
      kbc_error(L->d, it->loc, "a spec holds one kernel; 'kernel' appears again here");
      ok = 0;
    } else if (i != 0) {
      kbc_error(L->d, it->loc, "'kernel NAME' must be the first item of the spec");
      ok = 0;
    } else {
      L->p->name = it->u.kernel.name;
    }
  }
  return ok;
}

/* Warnings for global names the spec declares and never uses: an input
 * never read, a var or constant axis never referred to (a declaration's
 * own shape counts as a use).  In declaration order. */
static void warn_unused(lower *L) {
  lw_name *unused[64];
  int n = 0;
  for (lw_name *nm = L->global->names; nm && n < 64; nm = nm->next) {
    if (nm->used) continue;
    int input = nm->kind == LW_NAME_TENSOR && nm->view.tensor && nm->view.tensor->role == IR_ROLE_INPUT;
    int axis = nm->kind == LW_NAME_AXIS && nm->axis && nm->axis->kind != IR_AXIS_DERIVED;
    if (input || axis) unused[n++] = nm;
  }
  for (int i = n - 1; i >= 0; i--) { /* the scope lists the latest binding first */
    const lw_name *nm = unused[i];
    if (nm->kind == LW_NAME_TENSOR)
      kbc_warning(L->d, nm->view.tensor->loc, "input '%s' is never read", nm->name);
    else
      kbc_warning(L->d, nm->axis->loc, "%s axis '%s' is never used", nm->axis->kind == IR_AXIS_VAR ? "var" : "constant",
                  nm->name);
  }
}

ir_program *ir_lower(kbc_arena *a, kbc_diag *d, const ast_program *ast, const char *default_name,
                     const ir_axis_value *fixed, int n_fixed) {
  lower L = {.a = a, .d = d, .n_stmts_budget = LW_MAX_STMTS, .fixed = fixed, .n_fixed = n_fixed};
  L.p = ir_program_create(a, default_name);
  lw_scope global = {0};
  L.global = L.scope = &global;
  int ok = check_kernel_item(&L, ast);
  ok = lw_resolve_axes(&L, &ast->items) && ok;
  if (ok) ok = lw_lower_block(&L, &ast->items);
  if (ok) {
    for (int i = 0; i < L.p->tensors.len; i++) {
      ir_tensor *t = IR_TENSOR(L.p, i);
      if (t->role != IR_ROLE_OUTPUT) continue;
      if (!lw_writer(&L, t)) {
        kbc_error(d, t->loc, "output '%s' is never assigned", t->name);
        ok = 0;
      }
    }
    if (ir_outputs(L.p, NULL, 0) == 0) {
      kbc_loc where = {1, 1};
      if (ast->items.n) where = ast->items.items[0]->loc; /* the kernel line, normally */
      kbc_error(d, where, "the spec declares no output; declare what it computes with 'output NAME f32[...]'");
      ok = 0;
    }
    if (ok && kbc_diag_errors(d) == 0 && !n_fixed) warn_unused(&L);
  }
  return ok && kbc_diag_errors(d) == 0 ? L.p : NULL;
}
