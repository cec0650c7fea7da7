/* json.h — a small strict pull parser for JSON text (RFC 8259), for readers
 * of fixed schemas such as the safetensors header, and the two writers
 * every JSON the CLI prints goes through (strings and numbers; the
 * brackets, commas and keys around them are the caller's literal text).
 *
 * Before: rt_json_init() on n bytes of text (not necessarily NUL-terminated).
 * The caller walks the document it expects: rt_json_peek() shows the next
 * value's first byte, and the readers below consume one value or token each.
 * Nothing recurses, so hostile nesting costs no stack: a schema reader
 * rejects the first bracket it does not expect.
 *
 * After a failure (-1) r->msg holds one line, e.g.
 *   "invalid JSON at byte 17 of the header: expected ':', found '}'"
 * or, from the number reader, "-1 is negative"; the caller adds context.
 * Strings are checked to be UTF-8 and decoded (all escapes, including
 * surrogate pairs as \uXXXX\uXXXX); unpaired surrogates and raw control
 * characters are errors.  Numbers are read only as non-negative integers
 * without leading zeros; a float, negative or too large number is an error
 * that quotes it. */
#ifndef KBC_RUNTIME_JSON_H
#define KBC_RUNTIME_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "support/buf.h"

typedef struct {
  const char *s;
  size_t n, pos;
  const char *doc; /* "the header": names the text in messages */
  char msg[200];   /* the last error */
} rt_json_reader;

void rt_json_init(rt_json_reader *r, const char *s, size_t n, const char *doc);

/* The next byte after whitespace (consumed), or -1 at the end. */
int rt_json_peek(rt_json_reader *r);
/* Consumes c, else fails with "expected <expected>". */
int rt_json_expect(rt_json_reader *r, char c, const char *expected);
/* Fails with "invalid JSON at byte P of DOC: expected <expected>, found X". */
int rt_json_syntax(rt_json_reader *r, const char *expected);

/* A string into a malloc'ed, NUL-terminated *out; *len counts decoded bytes
 * (a \u0000 makes it exceed strlen, which callers may reject). */
int rt_json_string(rt_json_reader *r, char **out, size_t *len);
/* A non-negative integer <= max. */
int rt_json_uint(rt_json_reader *r, uint64_t max, uint64_t *out);
/* An array of at most cap such integers: 0, -1 error, -2 more than cap. */
int rt_json_uints(rt_json_reader *r, uint64_t max, uint64_t *v, int cap, int *n);
/* Object members, after the '{' has been consumed and *first set to 1:
 * 1 with a malloc'ed key (and the ':' consumed), 0 after the closing '}'. */
int rt_json_member(rt_json_reader *r, int *first, char **key, size_t *keylen);

/* UTF-8: length of the valid sequence at p (0 if invalid: overlong forms,
 * surrogates and code points above U+10FFFF are invalid). */
int rt_json_utf8_seq(const unsigned char *p, size_t avail);
int rt_json_utf8_valid(const char *s);

/* ---- writing ----
 * Appends s as a JSON string: quotes included; '"', '\\' and the control
 * characters escaped (\n, \t, ... or \u00XX), and every byte that does not
 * start a valid UTF-8 sequence written as \ufffd, so the output is valid
 * JSON whatever s holds (s == NULL: null). */
void rt_json_put_string(kbc_buf *out, const char *s);
/* Appends v as a JSON number (%.9g: round-trips a float), or null when v
 * is not finite (JSON has no NaN or infinity). */
void rt_json_put_number(kbc_buf *out, double v);

#endif
