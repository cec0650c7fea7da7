/* lower.h — the lowering from AST to IR (the pipeline's first step).
 *
 * Before: a parsed AST.  After: an IR program whose names are resolved,
 * axes evaluated, `for` unrolled, defs and library functions expanded and
 * index ranges inferred, or NULL with every semantic error reported. */
#ifndef KBC_LOWER_H
#define KBC_LOWER_H

#include "frontend/ast.h"
#include "ir/ir.h"

ir_program *ir_lower(kbc_arena *a, kbc_diag *d, const ast_program *ast, const char *default_name);

#endif
