/* bind.h — binding a program's var axes to values.
 *
 * Before: a checked program.  After ir_bind(): every axis, assert and
 * tensor shape evaluated for the given var values, or a clear error (no
 * location: these are errors about the call, not the spec text) naming the
 * axis, assert or tensor at fault. */
#ifndef KBC_BIND_H
#define KBC_BIND_H

#include <stdint.h>

#include "ir.h"

enum { IR_BIND_MAX_RANK = 8 };

typedef struct {
  int n_vars;
  int64_t *vars;    /* by var_id */
  int n_tensors;
  int64_t **shape;  /* by tensor id: rank values */
  int64_t *numel;   /* by tensor id: product of the shape (1 for a scalar) */
} ir_binding;

/* Evaluates everything for vars[0..n_vars) (by var_id).  Fails when a var or
 * an axis size or a tensor dimension is < 1, an assert is false, a size
 * overflows, or a tensor has more than 2^40 elements.  The binding's arrays
 * are allocated in the arena. */
int ir_bind(const ir_program *p, kbc_arena *a, const int64_t *vars, ir_binding *out, kbc_diag *d);

/* Whether every index value of the program's kernels under binding b fits
 * an int with room to spare (each below 2^30: every tensor's element count,
 * every var axis, per statement the product of its free (or scatter)
 * extents and the product of its reduction extents, and every address a
 * statement forms — each partial sum of its terms, with the indices up to
 * their extents — and integer value it uses), so that the 32-bit index
 * variant of the generated code (cg_narrow_indices) computes the same
 * offsets as the 64-bit one, a tile's rows past the end included. */
int ir_binding_fits_i32(const ir_program *p, const ir_binding *b);

/* A caller's tensor shape, by name (for inference and checking). */
typedef struct {
  const char *name;
  int rank;
  const int64_t *shape;
} ir_shape_arg;

/* Infers the var axes from the shapes of the given inputs: a dimension
 * whose size is a single var binds it; a dimension a*v + b (a != 0) with one
 * still-unbound var v binds v = (dim - b)/a when exact; repeated to a fixed
 * point.  vars[i] >= 1 on entry are preset values (--set) and are checked,
 * not overwritten; 0 = unknown.  Then every input's rank and shape is
 * checked against the spec.  Errors name the tensor, the dimension and the
 * axis: "input 'x': dimension 2 has size 7, but axis d is 6 (from input
 * 'y')", "missing input 'bias'", "unexpected input 'foo'", "cannot infer
 * axis 'n': no input shape determines it; set it with --set n=N". */
int ir_infer_vars(const ir_program *p, const ir_shape_arg *args, int n_args, int64_t *vars,
                  kbc_diag *d);

#endif
