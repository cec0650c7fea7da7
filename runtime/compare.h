/* compare.h — a computed f32 tensor against its reference, element by
 * element, as `kbc verify` judges the GPU's outputs against the CPU
 * interpreter's.
 *
 * Before: got and want, n elements each; got may hold RT_UNWRITTEN where
 * nothing wrote it (the caller fills it so before computing).  After
 * rt_compare_f32:
 *   - where both are NaN, or both the same infinity, they agree and count
 *     in neither norm; where only one is NaN or infinite, or the
 *     infinities differ, the element is a non-finite mismatch; where got
 *     holds the RT_UNWRITTEN pattern it is unwritten (counted apart, never
 *     as a non-finite mismatch);
 *   - over the other elements, in double: rel_l2 = ||got - want|| /
 *     ||want||, or ||got - want|| itself when ||want|| = 0 (an all-zero
 *     reference is judged by the absolute error); max_abs = max |got -
 *     want| (0 when there is none);
 *   - ok: rel_l2 <= tol, no non-finite mismatch and nothing unwritten.
 * Both norms stay finite (f32 values squared and summed in double). */
#ifndef KBC_RUNTIME_COMPARE_H
#define KBC_RUNTIME_COMPARE_H

#include <stdint.h>

/* A quiet NaN that no arithmetic produces (CUDA's NaN is 0x7fffffff). */
#define RT_UNWRITTEN 0x7fc5a5a5u

typedef struct {
  double rel_l2, max_abs;
  int64_t nonfinite;  /* elements where only one side is NaN or infinite */
  int64_t unwritten;  /* elements of got still holding RT_UNWRITTEN */
  int ok;
} rt_compare_result;

rt_compare_result rt_compare_f32(const float *got, const float *want, int64_t n, double tol);

#endif
