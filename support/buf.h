/* buf.h — growable heap string builder (for output text that outlives an
 * arena: diagnostics, printed IR, generated CUDA).  A zeroed kbc_buf is
 * empty and valid; kbc_buf_free() releases it. */
#ifndef KBC_BUF_H
#define KBC_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct {
  char *data; /* NUL-terminated when len > 0 or after any append */
  size_t len, cap;
} kbc_buf;

void kbc_buf_puts(kbc_buf *b, const char *s);
void kbc_buf_putn(kbc_buf *b, const char *s, size_t n);
void kbc_buf_putc(kbc_buf *b, char c);
void kbc_buf_printf(kbc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kbc_buf_vprintf(kbc_buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
const char *kbc_buf_str(const kbc_buf *b); /* "" when empty */
void kbc_buf_free(kbc_buf *b);

#endif
