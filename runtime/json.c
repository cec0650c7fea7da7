/* json.c — see json.h. */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rt_json_init(rt_json_reader *r, const char *s, size_t n, const char *doc) {
  r->s = s, r->n = n, r->pos = 0, r->doc = doc ? doc : "the text";
  r->msg[0] = 0;
}

__attribute__((format(printf, 2, 3))) static int fail(rt_json_reader *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->msg, sizeof r->msg, fmt, ap);
  va_end(ap);
  return -1;
}

int rt_json_peek(rt_json_reader *r) {
  while (r->pos < r->n && (r->s[r->pos] == ' ' || r->s[r->pos] == '\t' ||
                           r->s[r->pos] == '\n' || r->s[r->pos] == '\r'))
    r->pos++;
  return r->pos < r->n ? (unsigned char)r->s[r->pos] : -1;
}

int rt_json_syntax(rt_json_reader *r, const char *expected) {
  int c = rt_json_peek(r);
  char found[32];
  if (c < 0) snprintf(found, sizeof found, "the end");
  else if (c > 0x20 && c < 0x7f) snprintf(found, sizeof found, "'%c'", c);
  else snprintf(found, sizeof found, "byte 0x%02x", (unsigned)c);
  return fail(r, "invalid JSON at byte %zu of %s: expected %s, found %s", r->pos, r->doc, expected,
              found);
}

int rt_json_expect(rt_json_reader *r, char c, const char *expected) {
  if (rt_json_peek(r) != (unsigned char)c) return rt_json_syntax(r, expected);
  r->pos++;
  return 0;
}

int rt_json_utf8_seq(const unsigned char *p, size_t avail) {
  unsigned c = p[0], cp, min;
  int n;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07, min = 0x10000;
  else return 0;
  if ((size_t)n > avail) return 0;
  for (int i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (p[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

int rt_json_utf8_valid(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  size_t left = strlen(s);
  while (left) {
    int n = rt_json_utf8_seq(p, left);
    if (!n) return 0;
    p += n, left -= (size_t)n;
  }
  return 1;
}

static int hex4(const char *p, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    v = v << 4 | (unsigned)d;
  }
  *out = v;
  return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
  int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  static const unsigned char lead[] = {0, 0, 0xc0, 0xe0, 0xf0};
  for (int i = n - 1; i > 0; i--, cp >>= 6) o[i] = (char)(0x80 | (cp & 0x3f));
  o[0] = (char)(lead[n] | cp);
  return (size_t)n;
}

/* The \u escape(s) at s[*pos], just after "\u", appended to o. */
static int unicode_escape(rt_json_reader *r, size_t *pos, char *o, size_t *olen) {
  unsigned cp, lo;
  if (*pos + 4 > r->n || hex4(r->s + *pos, &cp) < 0)
    return fail(r, "invalid \\u escape at byte %zu of %s", *pos - 2, r->doc);
  *pos += 4;
  if (cp >= 0xd800 && cp <= 0xdbff && *pos + 6 <= r->n && r->s[*pos] == '\\' &&
      r->s[*pos + 1] == 'u' && hex4(r->s + *pos + 2, &lo) == 0 && lo >= 0xdc00 && lo <= 0xdfff) {
    *pos += 6;
    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
  } else if (cp >= 0xd800 && cp <= 0xdfff) {
    return fail(r, "unpaired surrogate \\u%04x at byte %zu of %s", cp, *pos - 6, r->doc);
  }
  *olen += put_utf8(o + *olen, cp);
  return 0;
}

static int escape(rt_json_reader *r, size_t *pos, char *o, size_t *olen) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  char c = r->s[*pos]; /* the string's end was found, so this is inside */
  const char *k = c ? strchr(from, c) : NULL;
  (*pos)++;
  if (c == 'u') return unicode_escape(r, pos, o, olen);
  if (!k) return fail(r, "invalid escape at byte %zu of %s", *pos - 2, r->doc);
  o[(*olen)++] = to[k - from];
  return 0;
}

int rt_json_string(rt_json_reader *r, char **out, size_t *len) {
  if (rt_json_peek(r) != '"') return rt_json_syntax(r, "a string");
  size_t start = ++r->pos, end = start;
  while (end < r->n && r->s[end] != '"') end += r->s[end] == '\\' ? 2 : 1;
  if (end >= r->n) return fail(r, "unterminated string at byte %zu of %s", start - 1, r->doc);
  char *o = malloc(end - start + 1); /* decoding never lengthens */
  size_t olen = 0, pos = start;
  if (!o) return fail(r, "out of memory");
  while (pos < end) {
    const unsigned char *p = (const unsigned char *)r->s + pos;
    int k = rt_json_utf8_seq(p, end - pos);
    if (*p < 0x20 || !k) {
      free(o);
      return fail(r, "%s in a string at byte %zu of %s",
                  k ? "unescaped control character" : "invalid UTF-8", pos, r->doc);
    }
    if (*p == '\\') {
      pos++;
      if (escape(r, &pos, o, &olen) < 0) return free(o), -1;
      continue;
    }
    memcpy(o + olen, p, (size_t)k);
    olen += (size_t)k, pos += (size_t)k;
  }
  o[olen] = 0;
  r->pos = end + 1;
  *out = o;
  *len = olen;
  return 0;
}

static int in_number(const rt_json_reader *r, size_t p) {
  return p < r->n && r->s[p] && strchr("+-0123456789.eE", r->s[p]);
}

int rt_json_uint(rt_json_reader *r, uint64_t max, uint64_t *out) {
  int c = rt_json_peek(r);
  size_t start = r->pos, end = start, p = start;
  while (in_number(r, end) && end - start < 40) end++;
  char tok[48];
  snprintf(tok, sizeof tok, "%.*s%s", (int)(end - start), r->s + start, in_number(r, end) ? "..." : "");
  if (c == '-') return fail(r, "%s is negative", tok);
  if (c < '0' || c > '9') return rt_json_syntax(r, "a non-negative integer");
  uint64_t v = 0;
  for (; p < r->n && r->s[p] >= '0' && r->s[p] <= '9'; p++) {
    unsigned d = (unsigned)(r->s[p] - '0');
    if (v > (max - d) / 10) return fail(r, "%s is too large", tok);
    v = v * 10 + d;
  }
  if (in_number(r, p)) return fail(r, "%s is not an integer", tok);
  if (p - start > 1 && r->s[start] == '0') return fail(r, "%s has a leading zero", tok);
  r->pos = p;
  *out = v;
  return 0;
}

int rt_json_uints(rt_json_reader *r, uint64_t max, uint64_t *v, int cap, int *n) {
  *n = 0;
  if (rt_json_expect(r, '[', "'['") < 0) return -1;
  if (rt_json_peek(r) == ']') return r->pos++, 0;
  for (;;) {
    if (*n == cap) return -2;
    if (rt_json_uint(r, max, &v[(*n)++]) < 0) return -1;
    int c = rt_json_peek(r);
    if (c != ',' && c != ']') return rt_json_syntax(r, "',' or ']'");
    r->pos++;
    if (c == ']') return 0;
  }
}

int rt_json_member(rt_json_reader *r, int *first, char **key, size_t *keylen) {
  int c = rt_json_peek(r);
  if (c == '}') return r->pos++, 0;
  if (!*first) {
    if (c != ',') return rt_json_syntax(r, "',' or '}'");
    r->pos++;
  }
  *first = 0;
  if (rt_json_peek(r) != '"') return rt_json_syntax(r, "a string key");
  if (rt_json_string(r, key, keylen) < 0) return -1;
  if (rt_json_expect(r, ':', "':'") < 0) return free(*key), -1;
  return 1;
}

/* ---- writing ---------------------------------------------------------------- */

void rt_json_put_string(kbc_buf *out, const char *s) {
  if (!s) {
    kbc_buf_puts(out, "null");
    return;
  }
  kbc_buf_putc(out, '"');
  const unsigned char *p = (const unsigned char *)s;
  size_t avail = strlen(s);
  while (avail) {
    unsigned c = *p;
    int n = rt_json_utf8_seq(p, avail); /* 0: not valid UTF-8 here */
    if (c == '"' || c == '\\') {
      kbc_buf_putc(out, '\\');
      kbc_buf_putc(out, (char)c);
    } else if (c < 0x20) {
      static const char short_form[] = {['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r'};
      if (c < sizeof short_form && short_form[c]) kbc_buf_printf(out, "\\%c", short_form[c]);
      else kbc_buf_printf(out, "\\u%04x", c);
    } else if (n > 0) {
      kbc_buf_putn(out, (const char *)p, (size_t)n);
    } else {
      kbc_buf_puts(out, "\\ufffd");
    }
    p += n > 0 ? n : 1;
    avail -= n > 0 ? (size_t)n : 1;
  }
  kbc_buf_putc(out, '"');
}

void rt_json_put_number(kbc_buf *out, double v) {
  if (isfinite(v)) kbc_buf_printf(out, "%.9g", v);
  else kbc_buf_puts(out, "null");
}
