/* rt_err.c — see rt_err.h. */
#include "rt_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rt_fail(rt_err *err, rt_err_kind kind, const char *fmt, ...) {
  if (!err) return -1;
  /* formatted apart first: an argument may be err's own message */
  kbc_buf m = {0};
  va_list ap;
  va_start(ap, fmt);
  kbc_buf_vprintf(&m, fmt, ap);
  va_end(ap);
  rt_err_clear(err);
  err->kind = kind;
  kbc_buf_putn(&err->msg, kbc_buf_str(&m), m.len);
  kbc_buf_free(&m);
  return -1;
}

int rt_err_copy(rt_err *err, const rt_err *from) {
  if (!err || err == from) return -1;
  rt_err_clear(err);
  err->kind = from->kind;
  kbc_buf_putn(&err->msg, kbc_buf_str(&from->msg), from->msg.len);
  return -1;
}

const char *rt_err_msg(const rt_err *err) { return err ? kbc_buf_str(&err->msg) : ""; }

const char *rt_err_kind_name(rt_err_kind kind) {
  static const char *const names[] = {
#define X(id, text) text,
      RT_ERR_KINDS(X)
#undef X
  };
  return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "error";
}

void rt_err_clear(rt_err *err) {
  if (!err) return;
  err->kind = RT_ERR_NONE;
  err->msg.len = 0;
  if (err->msg.data) err->msg.data[0] = 0;
}

void rt_err_free(rt_err *err) {
  if (!err) return;
  kbc_buf_free(&err->msg);
  err->kind = RT_ERR_NONE;
}
