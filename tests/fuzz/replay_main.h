/* replay_main.h — the replay driver of a fuzz target built as a plain
 * program (-DKBC_FUZZ_MAIN): every FILE given, and every regular file in
 * every DIR given, is fed to LLVMFuzzerTestOneInput once (the kept corpus
 * as a regression test; a crash or a sanitizer report fails it).
 *
 * Before including: LLVMFuzzerTestOneInput is defined, and KBC_FUZZ_NAME
 * names the target for the summary line.  Exit status: 0 when every input
 * was read, 1 when one could not be, 2 without arguments. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static int replay_file(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return perror(path), -1;
  size_t cap = 4096, len = 0, k;
  unsigned char *b = malloc(cap), *bigger;
  while (b && (k = fread(b + len, 1, cap - len, fp)) > 0)
    if ((len += k) == cap) {
      bigger = realloc(b, cap *= 2);
      if (!bigger) free(b);
      b = bigger;
    }
  fclose(fp);
  if (!b) return fprintf(stderr, "%s: out of memory\n", path), -1;
  LLVMFuzzerTestOneInput(b, len);
  free(b);
  return 0;
}

/* Runs path, or every regular file in it if it is a directory. */
static int replay_path(const char *path, int *count) {
  struct stat st;
  if (stat(path, &st) != 0) return perror(path), -1;
  if (!S_ISDIR(st.st_mode)) return (*count)++, replay_file(path);
  DIR *d = opendir(path);
  struct dirent *de;
  char sub[4096];
  int rc = d ? 0 : -1;
  while (d && (de = readdir(d))) {
    snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
    if (de->d_name[0] != '.' && stat(sub, &st) == 0 && S_ISREG(st.st_mode))
      rc |= ((*count)++, replay_file(sub));
  }
  if (d) closedir(d);
  return rc;
}

int main(int argc, char **argv) {
  int count = 0, rc = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE-OR-DIR...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; i++) rc |= replay_path(argv[i], &count);
  fprintf(stderr, "%s: ran %d inputs\n", KBC_FUZZ_NAME, count);
  return rc ? 1 : 0;
}
