/* test_name.c — support/name.c, the one sanitiser outside codegen/: a
 * spec's default kernel name from its path (what kbc check, compile, run
 * and the C API name a kernel without a `kernel` line) and file-name
 * sanitising (KBC_DUMP_DIR's files). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "support/name.h"

static void test_sanitize(void **state) {
  (void)state;
  char a[] = "a.b-c d/e_f\xc3\xa9" "9";
  assert_string_equal(kbc_name_sanitize(a, KBC_NAME_IDENT), "a_b_c_d_e_f__9");
  char b[] = "a.b-c d/e_f";
  assert_string_equal(kbc_name_sanitize(b, KBC_NAME_FILE), "a.b-c_d_e_f");
  char c[] = "";
  assert_string_equal(kbc_name_sanitize(c, KBC_NAME_IDENT), "");
}

static void test_from_path(void **state) {
  (void)state;
  kbc_arena *a = kbc_arena_create();
  assert_string_equal(kbc_name_from_path(a, "specs/examples/layer-norm.kb"), "layer_norm");
  assert_string_equal(kbc_name_from_path(a, "x.tar.kb"), "x_tar");
  assert_string_equal(kbc_name_from_path(a, "/a.b/noext"), "noext");
  assert_string_equal(kbc_name_from_path(a, "dir/.hidden"), "_hidden"); /* a leading dot is no extension */
  assert_string_equal(kbc_name_from_path(a, "<string>"), "_string_");
  kbc_arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_sanitize), cmocka_unit_test(test_from_path)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
