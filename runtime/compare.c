/* compare.c — see compare.h. */
#include "compare.h"

#include <math.h>
#include <string.h>

rt_compare_result rt_compare_f32(const float *got, const float *want, int64_t n, double tol) {
  rt_compare_result r = {0};
  double dd = 0, ww = 0;
  for (int64_t k = 0; k < n; k++) {
    uint32_t bits;
    memcpy(&bits, &got[k], sizeof bits);
    if (bits == RT_UNWRITTEN) {
      r.unwritten++;
      continue;
    }
    double x = got[k], y = want[k];
    if (!isfinite(x) || !isfinite(y)) {
      int agree = (isnan(x) && isnan(y)) || (isinf(x) && isinf(y) && (x > 0) == (y > 0));
      r.nonfinite += !agree;
      continue;
    }
    double d = fabs(x - y);
    dd += d * d;
    ww += y * y;
    if (d > r.max_abs) r.max_abs = d;
  }
  r.rel_l2 = ww > 0 ? sqrt(dd) / sqrt(ww) : sqrt(dd);
  r.ok = r.rel_l2 <= tol && !r.nonfinite && !r.unwritten;
  return r;
}
