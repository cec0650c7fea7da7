/* test_json.c — runtime/json.c's writers: every string written reads back
 * through the strict reader (rt_json_string) as itself when it is valid
 * UTF-8, with the escapes JSON requires; bytes that are not UTF-8 become
 * U+FFFD; numbers that JSON cannot hold become null. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/json.h"

/* Writes s, checks the text is exactly want (when not NULL), and reads it
 * back: returns the decoded string (malloc'ed). */
static char *round_trip(const char *s, const char *want) {
  kbc_buf b = {0};
  rt_json_put_string(&b, s);
  if (want) assert_string_equal(kbc_buf_str(&b), want);
  rt_json_reader r;
  rt_json_init(&r, b.data, b.len, "the test");
  char *out = NULL;
  size_t len = 0;
  assert_int_equal(rt_json_string(&r, &out, &len), 0);
  assert_int_equal(rt_json_peek(&r), -1); /* nothing after the string */
  assert_int_equal(len, strlen(out));
  kbc_buf_free(&b);
  return out;
}

static void test_plain_and_escapes(void **state) {
  (void)state;
  const char *cases[][2] = {
      {"", "\"\""},
      {"out", "\"out\""},
      {"a\"b\\c", "\"a\\\"b\\\\c\""},
      {"line\nnext\ttab\rcr\bbs\ffeed", "\"line\\nnext\\ttab\\rcr\\bbs\\ffeed\""},
      {"\x01\x1f", "\"\\u0001\\u001f\""},
      {"specs/x y.kb", "\"specs/x y.kb\""},
      {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *back = round_trip(cases[i][0], cases[i][1]);
    assert_string_equal(back, cases[i][0]);
    free(back);
  }
}

static void test_invalid_utf8(void **state) {
  (void)state;
  /* a lone continuation byte, a truncated sequence, an overlong form, a
   * surrogate, and a byte that never starts a sequence */
  char *back = round_trip("a\x80" "b\xe2\x82" "c\xc0\xaf" "d\xed\xa0\x80" "e\xff", NULL);
  assert_string_equal(back, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd"
                            "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "e\xef\xbf\xbd");
  free(back);
}

static void test_null_and_numbers(void **state) {
  (void)state;
  kbc_buf b = {0};
  rt_json_put_string(&b, NULL);
  kbc_buf_putc(&b, ' ');
  rt_json_put_number(&b, 0.5);
  kbc_buf_putc(&b, ' ');
  rt_json_put_number(&b, 1e-5);
  kbc_buf_putc(&b, ' ');
  rt_json_put_number(&b, NAN);
  kbc_buf_putc(&b, ' ');
  rt_json_put_number(&b, -INFINITY);
  kbc_buf_putc(&b, ' ');
  rt_json_put_number(&b, 16777217.0);
  assert_string_equal(kbc_buf_str(&b), "null 0.5 1e-05 null null 16777217");
  kbc_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain_and_escapes),
      cmocka_unit_test(test_invalid_utf8),
      cmocka_unit_test(test_null_and_numbers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
