/* narrow.c — the 32-bit index variant of a generated translation unit.
 *
 * Before: cg_generate's text, whose index arithmetic is `long long`
 * throughout (locals, loop counters, kernel parameters for the var axes,
 * the preamble's helpers) and whose integer literals carry `LL`.
 * After: the same text with every `long long` (but `unsigned long long`:
 * pointer alignment tests) made `int` and the `LL` suffix dropped from
 * integer literals, under a first line saying so.  The kernels, their
 * parameters' order and their launch plan are unchanged; var axes are then
 * passed as 32-bit values.  Valid only for a binding whose every index
 * value fits comfortably in an int: ir_binding_fits_i32 decides that. */
#include <stdlib.h>
#include <string.h>

#include "cg_impl.h"

static int ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int number_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == 'x' || c == 'X' ||
         c == '.';
}

void cg_narrow_indices(const char *src, kbc_buf *out) {
  static const char ll[] = "long long", uns[] = "unsigned ";
  kbc_buf_puts(out, "// 32-bit index variant: launched only where every index of the binding fits in an int.\n");
  size_t n = strlen(src);
  for (size_t i = 0; i < n;) {
    char prev = i ? src[i - 1] : ' ';
    if (!ident_char(prev) && !strncmp(src + i, ll, sizeof ll - 1) && !ident_char(src[i + sizeof ll - 1])) {
      int is_unsigned = i >= sizeof uns - 1 && !strncmp(src + i - (sizeof uns - 1), uns, sizeof uns - 1);
      kbc_buf_puts(out, is_unsigned ? ll : "int");
      i += sizeof ll - 1;
    } else if (!ident_char(prev) && src[i] >= '0' && src[i] <= '9') {
      size_t j = i;
      while (j < n && number_char(src[j])) j++;
      kbc_buf_putn(out, src + i, j - i);
      /* an integer literal's LL suffix (U and ULL stay) */
      if (j + 1 < n && src[j] == 'L' && src[j + 1] == 'L' && (j + 2 >= n || !ident_char(src[j + 2]))) j += 2;
      i = j;
    } else {
      kbc_buf_putc(out, src[i++]);
    }
  }
}

void cg_program_narrow(cg_program *g) {
  kbc_buf out = {0};
  cg_narrow_indices(kbc_buf_str(&g->source), &out);
  kbc_buf_free(&g->source);
  g->source = out;
}
