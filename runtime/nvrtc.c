/* nvrtc.c — see nvrtc.h.  Sections: loading NVRTC; archs and options; one
 * compilation in this process; the same in a forked child; ptxas resource
 * lines. */
#include "nvrtc.h"

#include "support/env.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- loading ------------------------------------------------------------- */

/* nvrtc.h 13.0: nvrtcResult is an enum (NVRTC_SUCCESS = 0), nvrtcProgram an
 * opaque pointer. */
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;
enum { NVRTC_SUCCESS = 0 };

typedef struct {
  const char *(*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int *, int *);
  nvrtcResult (*GetNumSupportedArchs)(int *); /* optional */
  nvrtcResult (*GetSupportedArchs)(int *);    /* optional */
  nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int,
                               const char *const *, const char *const *);
  nvrtcResult (*DestroyProgram)(nvrtcProgram *);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetPTX)(nvrtcProgram, char *);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
} nvrtc_api;
static nvrtc_api nv;

#define NV_SYM(member, optional) {offsetof(nvrtc_api, member), "nvrtc" #member, optional}
static const struct {
  size_t offset;
  const char *symbol;
  int optional;
} nv_symbols[] = {
    NV_SYM(GetErrorString, 0),    NV_SYM(Version, 0),           NV_SYM(GetNumSupportedArchs, 1),
    NV_SYM(GetSupportedArchs, 1), NV_SYM(CreateProgram, 0),     NV_SYM(DestroyProgram, 0),
    NV_SYM(CompileProgram, 0),    NV_SYM(GetPTXSize, 0),        NV_SYM(GetPTX, 0),
    NV_SYM(GetCUBINSize, 0),      NV_SYM(GetCUBIN, 0),          NV_SYM(GetProgramLogSize, 0),
    NV_SYM(GetProgramLog, 0),
};
#undef NV_SYM

static pthread_once_t nv_once = PTHREAD_ONCE_INIT;
static int nv_loaded;
static rt_err nv_error;
static char *nv_name;

static void nv_load(void) {
  kbc_buf tried = {0}, path = {0};
  const char *env = kbc_env_str("KBC_NVRTC_LIB"), *home = kbc_env_str("CUDA_HOME");
  if (home) kbc_buf_printf(&path, "%s/lib64/libnvrtc.so", home);
  const char *names[] = {env, "libnvrtc.so.13", "libnvrtc.so",
                         "/usr/local/cuda/lib64/libnvrtc.so", path.len ? path.data : NULL};
  void *h = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) {
    if (!names[i]) continue;
    h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      nv_name = strdup(names[i]);
      rt_debug(1, "NVRTC loaded from %s", names[i]);
    } else {
      const char *why = dlerror();
      kbc_buf_printf(&tried, "\n  %s", why);
      if (i == 0) rt_debug(1, "KBC_NVRTC_LIB: %s; trying the default places", why);
    }
  }
  kbc_buf_free(&path);
  if (!h) {
    rt_fail(&nv_error, RT_ERR_NO_DEVICE, "NVRTC could not be loaded (set KBC_NVRTC_LIB or CUDA_HOME); tried:%s",
            kbc_buf_str(&tried));
    kbc_buf_free(&tried);
    return;
  }
  kbc_buf_free(&tried);
  for (size_t i = 0; i < sizeof nv_symbols / sizeof nv_symbols[0]; i++) {
    void *p = dlsym(h, nv_symbols[i].symbol);
    if (!p && !nv_symbols[i].optional) {
      rt_fail(&nv_error, RT_ERR_NO_DEVICE, "NVRTC library %s lacks %s", nv_name, nv_symbols[i].symbol);
      return;
    }
    memcpy((char *)&nv + nv_symbols[i].offset, &p, sizeof p);
  }
  nv_loaded = 1;
}

int rt_nvrtc_available(rt_err *err) {
  pthread_once(&nv_once, nv_load);
  return nv_loaded ? 0 : rt_err_copy(err, &nv_error);
}

const char *rt_nvrtc_lib_name(void) {
  pthread_once(&nv_once, nv_load);
  return nv_loaded ? nv_name : NULL;
}

/* 0, or -1 with "<call>: NVRTC_ERROR_..." in *err. */
static int nv_check(nvrtcResult r, const char *call, rt_err *err) {
  if (r == NVRTC_SUCCESS) return 0;
  const char *s = nv.GetErrorString ? nv.GetErrorString(r) : NULL;
  return s ? rt_fail(err, RT_ERR_CUDA, "%s: %s", call, s) : rt_fail(err, RT_ERR_CUDA, "%s: NVRTC error %d", call, r);
}

int rt_nvrtc_version(int *major, int *minor, rt_err *err) {
  if (rt_nvrtc_available(err) < 0) return -1;
  return nv_check(nv.Version(major, minor), "nvrtcVersion", err);
}

int rt_nvrtc_supported_archs(int *archs, int max, rt_err *err) {
  if (rt_nvrtc_available(err) < 0) return -1;
  if (!nv.GetNumSupportedArchs || !nv.GetSupportedArchs)
    return rt_fail(err, RT_ERR_CUDA, "this NVRTC cannot list its supported archs");
  int n = 0;
  if (nv_check(nv.GetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs", err) < 0) return -1;
  if (n <= 0 || n > 1024) return rt_fail(err, RT_ERR_CUDA, "nvrtcGetNumSupportedArchs: implausible count %d", n);
  int *all = calloc((size_t)n, sizeof *all);
  if (!all) return rt_fail(err, RT_ERR_MEMORY, "out of memory");
  int rc = nv_check(nv.GetSupportedArchs(all), "nvrtcGetSupportedArchs", err);
  for (int i = 0; rc == 0 && i < n && i < max; i++) archs[i] = all[i];
  free(all);
  return rc < 0 ? -1 : n;
}

/* ---- archs and options --------------------------------------------------- */

const char *const rt_kbc_archs[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", NULL};

/* The SM number of "sm_<N>[a|f]", or -1 when arch has another form. */
static int arch_number(const char *arch) {
  if (strncmp(arch, "sm_", 3) != 0) return -1;
  const char *p = arch + 3;
  int n = 0, digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++) n = n * 10 + (*p - '0');
  if (digits < 2) return -1;
  if (*p == 'a' || *p == 'f') p++;
  return *p ? -1 : n;
}

int rt_arch_check(const char *arch, rt_err *err) {
  int want = arch ? arch_number(arch) : -1;
  int archs[128];
  int n = rt_nvrtc_supported_archs(archs, 128, NULL);
  for (int i = 0; want >= 0 && i < n && i < 128; i++)
    if (archs[i] == want) return 0;
  if (want >= 0 && n < 0) return 0; /* cannot list them: NVRTC will judge */
  kbc_buf msg = {0};
  kbc_buf_printf(&msg, "unknown target '%s': kbc targets", arch ? arch : "(null)");
  for (int i = 0; rt_kbc_archs[i]; i++) kbc_buf_printf(&msg, " %s", rt_kbc_archs[i]);
  if (n > 0) {
    int major = 0, minor = 0;
    rt_nvrtc_version(&major, &minor, NULL);
    kbc_buf_printf(&msg, "; NVRTC %d.%d compiles for", major, minor);
    for (int i = 0; i < n && i < 128; i++) kbc_buf_printf(&msg, " sm_%d", archs[i]);
  }
  rt_fail(err, RT_ERR_ARGUMENT, "%s", kbc_buf_str(&msg));
  kbc_buf_free(&msg);
  return -1;
}

void rt_arch_of_cc(int major, int minor, char *buf, size_t size) {
  snprintf(buf, size, "sm_%d%d%s", major, minor, major == 9 && minor == 0 ? "a" : "");
}

int rt_nvrtc_options(const char *arch, const char *const *extra, int n_extra, kbc_buf *out,
                     rt_err *err) {
  for (int i = 0; i < n_extra; i++)
    if (strchr(extra[i], '\n')) return rt_fail(err, RT_ERR_ARGUMENT, "NVRTC option with a newline: '%s'", extra[i]);
  kbc_buf_printf(out, "--gpu-architecture=%s\n-std=c++17\n-default-device\n--ptxas-options=-v\n", arch);
  if (rt_debug_level() >= 1) kbc_buf_puts(out, "-lineinfo\n");
  for (int i = 0; i < n_extra; i++) kbc_buf_printf(out, "%s\n", extra[i]);
  return 0;
}

/* ---- one compilation ----------------------------------------------------- */

/* Splits option lines into an array of pointers into text (modified). */
static char **split_lines(char *text, int *n) {
  int count = 0;
  for (char *p = text; *p; p++) count += *p == '\n';
  char **v = calloc((size_t)count + 1, sizeof *v);
  if (!v) return NULL;
  *n = 0;
  for (char *p = text; *p;) {
    char *nl = strchr(p, '\n');
    *nl = 0;
    v[(*n)++] = p;
    p = nl + 1;
  }
  return v;
}

/* Runs NVRTC once with the given option lines; stores the cubin (when
 * cubin) and the PTX (when ptx and NVRTC gives one: *have_ptx), appends the
 * log to *log. */
static int nvrtc_run(const char *src, const char *name, const char *arch, char *opt_text,
                     rt_blob *cubin, rt_blob *ptx, int *have_ptx, kbc_buf *log, rt_err *err) {
  int n_opts = 0;
  char **opts = split_lines(opt_text, &n_opts);
  if (!opts) return rt_fail(err, RT_ERR_MEMORY, "out of memory");
  kbc_buf file = {0};
  kbc_buf_printf(&file, "%s.cu", name);
  nvrtcProgram prog = NULL;
  int rc = nv_check(nv.CreateProgram(&prog, src, file.data, 0, NULL, NULL), "nvrtcCreateProgram", err);
  nvrtcResult cr = rc == 0 ? nv.CompileProgram(prog, n_opts, (const char *const *)opts) : NVRTC_SUCCESS;
  size_t n = 0;
  if (rc == 0 && nv.GetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
    char *text = malloc(n);
    if (text && nv.GetProgramLog(prog, text) == NVRTC_SUCCESS) kbc_buf_putn(log, text, strlen(text));
    free(text);
  }
  if (rc == 0 && cr != NVRTC_SUCCESS) {
    const char *s = nv.GetErrorString(cr);
    rc = rt_fail(err, RT_ERR_CUDA, "NVRTC failed to compile %s for %s: %s\n%s", name, arch, s ? s : "error",
                 kbc_buf_str(log));
  }
  if (rc == 0 && cubin) {
    rc = nv_check(nv.GetCUBINSize(prog, &n), "nvrtcGetCUBINSize", err);
    char *bytes = rc == 0 ? malloc(n ? n : 1) : NULL;
    if (rc == 0 && (n == 0 || !bytes)) rc = rt_fail(err, RT_ERR_CUDA, "NVRTC returned no cubin for %s (%s)", name, arch);
    if (rc == 0) rc = nv_check(nv.GetCUBIN(prog, bytes), "nvrtcGetCUBIN", err);
    if (rc == 0) rt_blob_set(cubin, bytes, n);
    free(bytes);
  }
  if (rc == 0 && ptx && nv.GetPTXSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
    char *text = malloc(n);
    if (text && nv.GetPTX(prog, text) == NVRTC_SUCCESS) {
      rt_blob_set(ptx, text, strlen(text));
      *have_ptx = 1;
    }
    free(text);
  }
  if (prog) nv.DestroyProgram(&prog);
  kbc_buf_free(&file);
  free(opts);
  return rc;
}

/* The whole compilation in this process. */
static int compile_here(const char *src, const char *name, const char *arch,
                        const char *const *extra, int n_extra, rt_blob *cubin, rt_blob *ptx,
                        kbc_buf *log, rt_err *err) {
  kbc_buf opts = {0};
  int have_ptx = 0;
  int rc = rt_nvrtc_options(arch, extra, n_extra, &opts, err);
  if (rc == 0) {
    if (rt_debug_level() >= 3) {
      kbc_buf line = {0};
      kbc_buf_putn(&line, opts.data, opts.len - 1);
      for (size_t i = 0; i < line.len; i++)
        if (line.data[i] == '\n') line.data[i] = ' ';
      rt_debug(3, "NVRTC options for %s: %s", name, line.data);
      kbc_buf_free(&line);
    }
    rc = nvrtc_run(src, name, arch, opts.data, cubin, ptx, &have_ptx, log, err);
  }
  if (rc == 0 && ptx && !have_ptx) { /* PTX from a virtual-arch compilation */
    kbc_buf virt = {0}, vopts = {0}, vlog = {0};
    kbc_buf_printf(&virt, "compute_%s", arch + 3);
    rc = rt_nvrtc_options(virt.data, extra, n_extra, &vopts, err);
    if (rc == 0) rc = nvrtc_run(src, name, virt.data, vopts.data, NULL, ptx, &have_ptx, &vlog, err);
    if (rc == 0 && !have_ptx) rc = rt_fail(err, RT_ERR_CUDA, "NVRTC returned no PTX for %s (%s)", name, virt.data);
    kbc_buf_free(&virt), kbc_buf_free(&vopts), kbc_buf_free(&vlog);
  }
  kbc_buf_free(&opts);
  return rc;
}

/* ---- isolation in a child process ----------------------------------------- */

/* The child's reply on the pipe: i32 rc (0, or the error's rt_err_kind),
 * then four u64-length-prefixed byte strings: err, log, cubin, ptx (ptx
 * length UINT64_MAX when none). */

static int put_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t k = write(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    c += k, n -= (size_t)k;
  }
  return 0;
}

static int put_bytes(int fd, const void *p, uint64_t n) {
  return put_all(fd, &n, sizeof n) < 0 || (n && n != UINT64_MAX && put_all(fd, p, n) < 0) ? -1 : 0;
}

static void child_compile(int fd, const char *src, const char *name, const char *arch,
                          const char *const *extra, int n_extra, int want_ptx) {
  rt_blob cubin = {0}, ptx = {0};
  kbc_buf log = {0};
  rt_err err = {0};
  /* 0, or the error's kind (never RT_ERR_NONE, which is 0) */
  int32_t rc = compile_here(src, name, arch, extra, n_extra, &cubin, want_ptx ? &ptx : NULL, &log, &err)
                   ? (err.kind != RT_ERR_NONE ? (int32_t)err.kind : (int32_t)RT_ERR_INTERNAL) : 0;
  int bad = put_all(fd, &rc, sizeof rc) < 0 || put_bytes(fd, err.msg.data, err.msg.len) < 0 ||
            put_bytes(fd, log.data, log.len) < 0 || put_bytes(fd, cubin.data, cubin.len) < 0 ||
            put_bytes(fd, ptx.data, want_ptx ? ptx.len : UINT64_MAX) < 0;
  _exit(bad ? 3 : 0); /* no atexit handlers, no flushing of the parent's stdio */
}

/* Takes one length-prefixed string from the reply at *pos. */
static int take(const kbc_buf *reply, size_t *pos, const char **p, uint64_t *n) {
  if (reply->len - *pos < sizeof *n) return -1;
  memcpy(n, reply->data + *pos, sizeof *n);
  *pos += sizeof *n;
  *p = reply->data + *pos;
  if (*n == UINT64_MAX) return 0;
  if (*n > reply->len - *pos) return -1;
  *pos += *n;
  return 0;
}

static int compile_isolated(const char *src, const char *name, const char *arch,
                            const char *const *extra, int n_extra, rt_blob *cubin, rt_blob *ptx,
                            kbc_buf *log, rt_err *err) {
  int fds[2];
  if (pipe(fds) < 0) return rt_fail(err, RT_ERR_IO, "pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]), close(fds[1]);
    return rt_fail(err, RT_ERR_IO, "fork: %s", strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    signal(SIGPIPE, SIG_DFL);
    child_compile(fds[1], src, name, arch, extra, n_extra, ptx != NULL);
  }
  close(fds[1]);
  kbc_buf reply = {0};
  char chunk[65536];
  for (;;) {
    ssize_t k = read(fds[0], chunk, sizeof chunk);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    kbc_buf_putn(&reply, chunk, (size_t)k);
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  int rc = 0;
  if (WIFSIGNALED(status)) {
    rc = rt_fail(err, RT_ERR_CUDA, "NVRTC crashed compiling %s for %s in its isolated child process "
                 "(signal %d: %s)", name, arch, WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    rc = rt_fail(err, RT_ERR_CUDA, "the NVRTC child process compiling %s for %s failed (exit status %d)", name,
                 arch, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  } else {
    int32_t child_rc = 0;
    size_t pos = sizeof child_rc;
    const char *p[4];
    uint64_t n[4];
    if (reply.len < pos) rc = -1;
    else memcpy(&child_rc, reply.data, sizeof child_rc);
    for (int i = 0; rc == 0 && i < 4; i++) rc = take(&reply, &pos, &p[i], &n[i]);
    if (rc < 0 || pos != reply.len) {
      rc = rt_fail(err, RT_ERR_INTERNAL, "the NVRTC child process sent a malformed reply");
    } else {
      kbc_buf_putn(log, p[1], n[1]);
      if (child_rc != 0) {
        rt_err_kind kind = child_rc > 0 && child_rc <= RT_ERR_INTERNAL ? (rt_err_kind)child_rc : RT_ERR_INTERNAL;
        rc = rt_fail(err, kind, "%.*s", n[0] < (1u << 30) ? (int)n[0] : 0, p[0]);
      } else {
        rt_blob_set(cubin, p[2], n[2]);
        if (ptx && n[3] != UINT64_MAX) rt_blob_set(ptx, p[3], n[3]);
      }
    }
  }
  kbc_buf_free(&reply);
  return rc;
}

int rt_nvrtc_compile(const char *src, const char *name, const char *arch,
                     const char *const *extra_opts, int n_extra, rt_blob *cubin, rt_blob *ptx,
                     rt_resources *res, kbc_buf *log, rt_err *err) {
  if (!src || !cubin) return rt_fail(err, RT_ERR_ARGUMENT, "rt_nvrtc_compile: no source or no cubin output");
  if (!name || !*name) name = "kernel";
  if (rt_nvrtc_available(err) < 0 || rt_arch_check(arch, err) < 0) return -1;
  rt_debug(4, "CUDA source of %s:\n%s", name, src);
  kbc_buf mylog = {0};
  rt_blob c = {0}, p = {0};
  int rc = kbc_env_flag("KBC_NVRTC_ISOLATE", 0)
               ? compile_isolated(src, name, arch, extra_opts, n_extra, &c, ptx ? &p : NULL, &mylog, err)
               : compile_here(src, name, arch, extra_opts, n_extra, &c, ptx ? &p : NULL, &mylog, err);
  size_t n = mylog.len;
  while (n && (mylog.data[n - 1] == '\n' || mylog.data[n - 1] == ' ')) n--;
  if (n) rt_debug(3, "NVRTC log of %s (%s):\n%.*s", name, arch, (int)n, mylog.data);
  if (rc == 0) {
    rt_blob_free(cubin);
    *cubin = c;
    if (ptx) rt_blob_free(ptx), *ptx = p;
    if (res) rt_resources_parse(kbc_buf_str(&mylog), res);
    if (log) kbc_buf_putn(log, kbc_buf_str(&mylog), mylog.len);
  } else {
    rt_blob_free(&c), rt_blob_free(&p);
  }
  kbc_buf_free(&mylog);
  return rc;
}

/* ---- resources ------------------------------------------------------------ */

void rt_resources_free(rt_resources *r) {
  for (int i = 0; i < r->n; i++) free(r->k[i].name);
  free(r->k);
  r->k = NULL;
  r->n = 0;
}

static rt_kernel_resources *add_kernel(rt_resources *r, const char *name, size_t len) {
  rt_kernel_resources *k = realloc(r->k, ((size_t)r->n + 1) * sizeof *k);
  char *copy = malloc(len + 1);
  if (!k || !copy) {
    fputs("kbc: out of memory\n", stderr);
    abort();
  }
  memcpy(copy, name, len);
  copy[len] = 0;
  r->k = k;
  k = &r->k[r->n++];
  *k = (rt_kernel_resources){copy, -1, -1, -1, -1, -1, 0};
  return k;
}

/* The number just before `what` in line (e.g. "12 bytes spill stores"), or -1. */
static long number_before(const char *line, const char *end, const char *what) {
  const char *w = strstr(line, what);
  if (!w || w >= end) return -1;
  const char *d = w;
  while (d > line && d[-1] == ' ') d--;
  const char *e = d;
  while (d > line && d[-1] >= '0' && d[-1] <= '9') d--;
  return d == e ? -1 : strtol(d, NULL, 10);
}

void rt_resources_parse(const char *log, rt_resources *out) {
  rt_resources_free(out);
  rt_kernel_resources *cur = NULL; /* the entry whose properties follow */
  for (const char *line = log; line && *line;) {
    const char *end = strchr(line, '\n');
    if (!end) end = line + strlen(line);
    const char *q;
    if ((q = strstr(line, "Compiling entry function '")) && q < end) {
      q += strlen("Compiling entry function '");
      const char *e = memchr(q, '\'', (size_t)(end - q));
      cur = e ? add_kernel(out, q, (size_t)(e - q)) : NULL;
    } else if ((q = strstr(line, "Function properties for ")) && q < end) {
      /* also printed for non-entry functions: attach only to the current entry */
      q += strlen("Function properties for ");
      size_t len = (size_t)(end - q);
      rt_kernel_resources *last = out->n ? &out->k[out->n - 1] : NULL;
      cur = last && strlen(last->name) == len && !strncmp(last->name, q, len) ? last : NULL;
    } else if (cur && number_before(line, end, "bytes stack frame") >= 0) {
      cur->stack_frame = number_before(line, end, "bytes stack frame");
      cur->spill_stores = number_before(line, end, "bytes spill stores");
      cur->spill_loads = number_before(line, end, "bytes spill loads");
    } else if (out->n && (q = strstr(line, "Used ")) && q < end &&
               number_before(line, end, "registers") >= 0) {
      rt_kernel_resources *k = &out->k[out->n - 1];
      k->registers = (int)strtol(q + 5, NULL, 10);
      k->barriers = (int)number_before(line, end, "barriers");
      long smem = number_before(line, end, "bytes smem");
      k->smem = smem < 0 ? 0 : smem;
    }
    line = *end ? end + 1 : end;
  }
}

const rt_kernel_resources *rt_resources_find(const rt_resources *r, const char *name) {
  for (int i = 0; i < r->n; i++)
    if (!strcmp(r->k[i].name, name)) return &r->k[i];
  return NULL;
}

void rt_resources_format(const rt_resources *r, kbc_buf *out) {
  for (int i = 0; i < r->n; i++) {
    const rt_kernel_resources *k = &r->k[i];
    kbc_buf_printf(out, "%s: %d registers, %ld bytes spill stores, %ld bytes spill loads, "
                   "%ld bytes stack, %ld bytes smem\n", k->name, k->registers, k->spill_stores,
                   k->spill_loads, k->stack_frame, k->smem);
  }
}

void rt_resources_serialize(const rt_resources *r, kbc_buf *out) {
  for (int i = 0; i < r->n; i++) {
    const rt_kernel_resources *k = &r->k[i];
    kbc_buf_printf(out, "%s\t%d\t%d\t%ld\t%ld\t%ld\t%ld\n", k->name, k->registers, k->barriers,
                   k->stack_frame, k->spill_stores, k->spill_loads, k->smem);
  }
}

int rt_resources_deserialize(const char *text, size_t len, rt_resources *out) {
  rt_resources_free(out);
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *tab = nl ? memchr(p, '\t', (size_t)(nl - p)) : NULL;
    if (!tab || tab == p) goto bad;
    rt_kernel_resources *k = add_kernel(out, p, (size_t)(tab - p));
    long v[6];
    const char *q = tab;
    for (int i = 0; i < 6; i++) {
      char *e;
      if (*q != '\t') goto bad;
      errno = 0;
      v[i] = strtol(q + 1, &e, 10);
      if (e == q + 1 || errno) goto bad;
      q = e;
    }
    if (q != nl) goto bad;
    k->registers = (int)v[0], k->barriers = (int)v[1], k->stack_frame = v[2];
    k->spill_stores = v[3], k->spill_loads = v[4], k->smem = v[5];
    p = nl + 1;
  }
  return 0;
bad:
  rt_resources_free(out);
  return -1;
}
