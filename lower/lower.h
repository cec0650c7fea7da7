/* lower.h — the lowering from AST to IR (the pipeline's first step).
 *
 * Before: a parsed AST.  After: an IR program whose names are resolved,
 * axes evaluated, `for` unrolled, defs and library functions expanded and
 * index ranges inferred, or NULL with every semantic error reported. */
#ifndef KBC_LOWER_H
#define KBC_LOWER_H

#include "frontend/ast.h"
#include "ir/ir.h"

/* fixed (n_fixed of them, or none) specializes the program: each names a
 * var axis, which becomes a constant of that value (an error for a name
 * that is not a var axis or a value below 1). */
ir_program *ir_lower(kbc_arena *a, kbc_diag *d, const ast_program *ast, const char *default_name,
                     const ir_axis_value *fixed, int n_fixed);

#endif
