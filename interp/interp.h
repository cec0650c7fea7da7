/* interp.h — the CPU reference interpreter: the semantic oracle of kbc.
 *
 * Before: a verified program and a binding; data[t->id] holds every input
 * tensor as row-major doubles (a scalar: one double).  After ir_interp():
 * data[t->id] holds every output and temporary (allocated with malloc by
 * the interpreter; release them with ir_interp_release).  Arithmetic and
 * accumulation are in double; statements run in program order (a large
 * one on several threads, bit-identical to one: interp.c); a `+=`
 * statement adds into its target (zero-filled unless written before); a
 * padded load outside its tensor reads 0.  A load outside its tensor that is
 * not padded is an internal error (the bounds checker proved it cannot
 * happen), reported, never performed. */
#ifndef KBC_INTERP_H
#define KBC_INTERP_H

#include "ir/bind.h"

/* Refuses (clear error) when the temporaries and outputs together would
 * exceed this many bytes. */
#define IR_INTERP_MAX_BYTES ((int64_t)16 << 30)

/* Non-input entries of data[] are overwritten (pass them NULL or
 * released).  Returns 1 on success; on failure (reported) every non-input
 * entry is NULL again. */
int ir_interp(const ir_program *p, const ir_binding *b, double **data, kbc_diag *d);
/* Frees data[t->id] for every non-input tensor and sets it to NULL. */
void ir_interp_release(const ir_program *p, double **data);

#endif
