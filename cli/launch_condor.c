/* launch_condor.c — the `condor` backend (launch.h): cairn-worker processes as
 * vanilla-universe jobs of an HTCondor pool.
 *
 * submit writes a submit description WORKDIR/condor/submit-N.sub (see
 * cairn__condor_submit_text: the worker's executable in place on the shared
 * file system, its arguments in the new quoted syntax, request_cpus and
 * request_memory, output/error per job and one event log, the invitation file
 * as an input file so its code is never on a command line, the custom
 * attributes +CairnWorker and +CairnFactory, --batch-options lines, `queue N`)
 * and runs `condor_submit -terse FILE`; the jobs' ids are "CLUSTER.PROC".
 * refresh runs one `condor_q -constraint 'CairnFactory == "TAG"' -af ClusterId
 * ProcId JobStatus ExitCode` a round, then, only for jobs that left the queue,
 * one `condor_history` with the same attributes; held jobs are removed and
 * count as failed; jobs the factory was told ended are dropped, so a round
 * costs O(jobs held) (a find is linear in them). remove runs
 * `condor_rm CLUSTER.PROC`; fini waits up to
 * CONDOR_GRACE seconds for the removed jobs to leave the queue. Every command
 * runs from an argv array (no shell) with a timeout of CONDOR_TIMEOUT s. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/launch.h"
#include "cli/launch_condor.h"

/* Seconds an HTCondor command may take. */
#define CONDOR_TIMEOUT 60.0
/* Seconds fini waits for removed jobs to leave the queue. */
#define CONDOR_GRACE 20.0
/* Rounds a job may be missing from both condor_q and condor_history before
 * it counts as lost. */
#define CONDOR_LOST_ROUNDS 3
#define CONDOR_SUBMIT_MAX 65536

typedef struct condor_job {
  long cluster, proc;
  int state;   /* last known CAIRN_LAUNCH_* */
  int removed; /* remove was called */
  int missing; /* rounds in a row found in neither condor_q nor condor_history */
  int seen;    /* found by this round's queries */
  int told;    /* poll answered DONE or FAILED: the factory forgot it */
} condor_job;

typedef struct condor_state {
  char dir[PATH_MAX - 64]; /* WORKDIR/condor */
  char worker[PATH_MAX];   /* the executable, absolute */
  char tag[96];            /* CairnFactory of this factory's jobs */
  const char *schedd, *pool;
  condor_job *j;
  size_t n, cap;
  unsigned seq; /* numbers the submit files */
} condor_state;

/* ---- the submit description (no HTCondor needed) ---- */

int cairn__condor_quote_args(const char *const *argv, char *out, size_t size) {
  size_t k = 0;
#define PUT(c) do { if (k + 2 > size) return -1; out[k++] = (c); } while (0)
  PUT('"');
  for (int i = 0; argv[i]; i++) {
    if (strpbrk(argv[i], "\n\r$"))
      return -1;
    if (i)
      PUT(' ');
    PUT('\'');
    for (const char *p = argv[i]; *p; p++) {
      if (*p == '\'' || *p == '"')
        PUT(*p);
      PUT(*p);
    }
    PUT('\'');
  }
  PUT('"');
#undef PUT
  out[k] = '\0';
  return 0;
}

/* Commands the backend writes itself: --batch-options may not set them. */
static const char *const reserved[] = {
  "universe", "executable", "arguments", "args", "transfer_executable", "output", "error",
  "log", "transfer_input_files", "should_transfer_files", "when_to_transfer_output",
  "transfer_output_files", "queue", "+cairnworker", "+cairnfactory", NULL,
};

/* Checks one trimmed line of --batch-options (len bytes at s). */
static int check_line(const char *s, size_t len, char *err, size_t errlen) {
  if (!len || *s == '#')
    return 0;
  size_t k = *s == '+';
  while (k < len && (s[k] == '_' || s[k] == '.' || (s[k] >= 'a' && s[k] <= 'z') ||
                     (s[k] >= 'A' && s[k] <= 'Z') || (k > (*s == '+') && s[k] >= '0' && s[k] <= '9')))
    k++;
  size_t key = k;
  while (k < len && (s[k] == ' ' || s[k] == '\t'))
    k++;
  if (key == (size_t)(*s == '+') || k >= len || s[k] != '=')
    return snprintf(err, errlen, "--batch-options: \"%.*s\" is not KEY = VALUE", (int)(len > 80 ? 80 : len), s), -1;
  for (int i = 0; reserved[i]; i++)
    if (strlen(reserved[i]) == key && strncasecmp(reserved[i], s, key) == 0)
      return snprintf(err, errlen, "--batch-options: the condor backend writes %.*s itself",
                      (int)key, s), -1;
  return 0;
}

int cairn__condor_check_batch_options(const char *text, char *err, size_t errlen) {
  for (const char *p = text; p && *p;) {
    size_t len = strcspn(p, ";\n");
    const char *s = p;
    size_t n = len;
    while (n && (*s == ' ' || *s == '\t' || *s == '\r'))
      s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
      n--;
    if (check_line(s, n, err, errlen))
      return -1;
    p += len + (p[len] != '\0');
  }
  return 0;
}

/* Appends printf output to out at *k; -1 when it does not fit. */
__attribute__((format(printf, 4, 5))) static int add(char *out, size_t size, size_t *k,
                                                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out + *k, size - *k, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= size - *k)
    return -1;
  *k += (size_t)n;
  return 0;
}

/* Appends --batch-options, one line each. */
static int add_batch_options(const char *text, char *out, size_t size, size_t *k) {
  for (const char *p = text; p && *p;) {
    size_t len = strcspn(p, ";\n");
    const char *s = p;
    size_t n = len;
    while (n && (*s == ' ' || *s == '\t' || *s == '\r'))
      s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
      n--;
    if (n && add(out, size, k, "%.*s\n", (int)n, s))
      return -1;
    p += len + (p[len] != '\0');
  }
  return 0;
}

/* A path the submit language takes as it is: no newline, '$' or ','. */
static int plain_path(const char *p) { return p && !strpbrk(p, "\n\r$,"); }

int cairn__condor_submit_text(const cairn__launch_spec *spec, const cairn__condor_submit *sub,
                             char *out, size_t size, char *err, size_t errlen) {
  const char *inv = spec->invitation_file;
  if (!plain_path(sub->executable) || !plain_path(sub->dir) || (inv && !plain_path(inv)))
    return snprintf(err, errlen, "a path holds a newline, '$' or ',', which a submit "
                    "description cannot carry"), -1;
  if (cairn__condor_check_batch_options(spec->batch_options, err, errlen))
    return -1;
  /* The job runs in its scratch folder: the worker's state goes to a
   * subfolder of it, the invitation arrives there as "invitation". */
  const char *argv[128];
  char buf[256], args[8192];
  cairn__launch_spec job = *spec;
  job.worker_path = sub->executable;
  if (cairn__launch_worker_argv(&job, NULL, "cairn-worker-state", inv ? "invitation" : NULL, argv,
                               128, buf, sizeof buf) < 0 ||
      cairn__condor_quote_args(argv + 1, args, sizeof args))
    return snprintf(err, errlen, "the worker's arguments are too long or hold a newline or "
                    "'$'"), -1;
  size_t k = 0;
  int bad = add(out, size, &k,
                "# written by cairn launch condor\n"
                "universe = vanilla\n"
                "executable = %s\n"
                "transfer_executable = false\n"
                "arguments = %s\n",
                sub->executable, args);
  if (!bad && spec->cores > 0)
    bad = add(out, size, &k, "request_cpus = %d\n", spec->cores);
  if (!bad && spec->memory_mib > 0)
    bad = add(out, size, &k, "request_memory = %lld\n", spec->memory_mib);
  if (!bad)
    bad = add(out, size, &k,
              "output = %s/w$(Cluster).$(Process).out\n"
              "error = %s/w$(Cluster).$(Process).err\n"
              "log = %s/workers.log\n"
              "should_transfer_files = YES\n"
              "when_to_transfer_output = ON_EXIT\n"
              "transfer_output_files = \"\"\n",
              sub->dir, sub->dir, sub->dir);
  if (!bad && inv)
    bad = add(out, size, &k, "transfer_input_files = %s\n", inv);
  if (!bad)
    bad = add(out, size, &k, "+CairnWorker = true\n+CairnFactory = \"%s\"\n", sub->tag);
  if (!bad)
    bad = add_batch_options(spec->batch_options, out, size, &k);
  if (!bad)
    bad = add(out, size, &k, "queue %d\n", sub->count);
  if (bad)
    return snprintf(err, errlen, "the submit description is too long"), -1;
  return 0;
}

/* ---- reading HTCondor's answers ---- */

int cairn__condor_parse_terse(const char *out, long *cluster, long *first, long *last) {
  long c2;
  char tail;
  if (sscanf(out, " %ld.%ld - %ld.%ld %c", cluster, first, &c2, last, &tail) != 4 ||
      c2 != *cluster || *first < 0 || *last < *first || *cluster <= 0)
    return -1;
  return 0;
}

int cairn__condor_parse_af(const char *line, long *cluster, long *proc, int *status,
                          int *exit_code) {
  char code[32], tail;
  int n = sscanf(line, " %ld %ld %d %31s %c", cluster, proc, status, code, &tail);
  if (n != 4 || *cluster <= 0 || *proc < 0 || *status < 1 || *status > 7)
    return -1;
  char *end;
  long v = strtol(code, &end, 10);
  *exit_code = *end || end == code || v < 0 || v > 255 ? -1 : (int)v;
  return 0;
}

int cairn__condor_state(int status, int exit_code) {
  switch (status) {
  case 1: return CAIRN_LAUNCH_PENDING;
  case 2:
  case 6:
  case 7: return CAIRN_LAUNCH_RUNNING;
  case 4: return exit_code == 0 ? CAIRN_LAUNCH_DONE : CAIRN_LAUNCH_FAILED;
  default: return CAIRN_LAUNCH_FAILED; /* 3 removed, 5 held */
  }
}

/* ---- running HTCondor ---- */

/* Runs `cmd [-name SCHEDD] [-pool POOL] args...` (args NULL-terminated);
 * its exit status, or -1 when it could not run or timed out. */
static int condor(condor_state *s, const char *cmd, const char *const *args, char *out,
                  size_t outsize) {
  const char *argv[32];
  int k = 0;
  argv[k++] = cmd;
  if (s->schedd) {
    argv[k++] = "-name";
    argv[k++] = s->schedd;
  }
  if (s->pool) {
    argv[k++] = "-pool";
    argv[k++] = s->pool;
  }
  for (int i = 0; args[i] && k < 31; i++)
    argv[k++] = args[i];
  argv[k] = NULL;
  return cairn__launch_run(argv, NULL, 0, out, outsize, CONDOR_TIMEOUT);
}

/* The executable as the nodes see it: absolute; a bare name from PATH. */
static int resolve_executable(const char *name, char *out, size_t size) {
  if (strchr(name, '/'))
    return realpath(name, out) && access(out, X_OK) == 0 && strlen(out) < size ? 0 : -1;
  for (const char *path = getenv("PATH"); path && *path;) {
    size_t len = strcspn(path, ":");
    snprintf(out, size, "%.*s/%s", (int)len, path, name);
    if (len && *path == '/' && access(out, X_OK) == 0)
      return 0;
    path += len + (path[len] == ':');
  }
  return -1;
}

static int condor_init(void **st, const cairn__launch_opt *opts, int n,
                       const cairn__launch_spec *spec, char *err, size_t errlen) {
  condor_state *s = calloc(1, sizeof *s);
  if (!s)
    return snprintf(err, errlen, "out of memory"), -1;
  for (int i = 0; i < n; i++) {
    if (strcmp(opts[i].name, "schedd") == 0)
      s->schedd = opts[i].value;
    else if (strcmp(opts[i].name, "pool") == 0)
      s->pool = opts[i].value;
  }
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  for (char *p = host; *p; p++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", *p))
      *p = '_';
  snprintf(s->tag, sizeof s->tag, "%.60s:%ld:%lld", host, (long)getpid(), (long long)time(NULL));
  snprintf(s->dir, sizeof s->dir, "%s/condor", spec->work_dir);
  int rc = -1;
  if (mkdir(s->dir, 0700) && errno != EEXIST)
    snprintf(err, errlen, "cannot create %s: %s", s->dir, strerror(errno));
  else if (cairn__condor_check_batch_options(spec->batch_options, err, errlen))
    ;
  else if (spec->shipped_worker) {
    char unpack[PATH_MAX];
    snprintf(unpack, sizeof unpack, "%s/worker", s->dir);
    rc = cairn__launch_unpack_worker(spec->shipped_worker, unpack, s->worker, sizeof s->worker,
                                    err, errlen);
  } else if (resolve_executable(spec->worker_path, s->worker, sizeof s->worker))
    snprintf(err, errlen, "no executable %s here (give --worker with its path on the shared "
             "file system)", spec->worker_path);
  else
    rc = 0;
  if (rc) {
    free(s);
    return -1;
  }
  *st = s;
  return 0;
}

static int condor_submit(void *st, const cairn__launch_spec *spec, int n,
                         char ids[][CAIRN_LAUNCH_ID_MAX], char *err, size_t errlen) {
  condor_state *s = st;
  if (s->n + (size_t)n > s->cap) {
    size_t cap = s->cap ? s->cap : 16;
    while (cap < s->n + (size_t)n)
      cap *= 2;
    condor_job *j = realloc(s->j, cap * sizeof *j);
    if (!j)
      return snprintf(err, errlen, "out of memory"), -1;
    s->j = j;
    s->cap = cap;
  }
  char path[PATH_MAX], out[256];
  char *text = malloc(CONDOR_SUBMIT_MAX);
  if (!text)
    return snprintf(err, errlen, "out of memory"), -1;
  cairn__condor_submit sub = {s->worker, s->dir, s->tag, n};
  int rc = cairn__condor_submit_text(spec, &sub, text, CONDOR_SUBMIT_MAX, err, errlen);
  snprintf(path, sizeof path, "%s/submit-%u.sub", s->dir, ++s->seq);
  FILE *f = rc ? NULL : fopen(path, "w");
  if (!rc && (!f || fputs(text, f) < 0 || fclose(f) != 0)) {
    snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    rc = -1;
  }
  free(text);
  if (rc)
    return -1;
  long cluster, first, last;
  rc = condor(s, "condor_submit", (const char *const[]){"-terse", path, NULL}, out, sizeof out);
  if (rc != 0 || cairn__condor_parse_terse(out, &cluster, &first, &last) ||
      last - first + 1 != n) {
    snprintf(err, errlen, "condor_submit %s %s", path,
             rc < 0 ? "failed or timed out" : rc ? "refused it (see above)" : "answered oddly");
    return -1;
  }
  for (long p = first; p <= last; p++) {
    s->j[s->n++] = (condor_job){cluster, p, CAIRN_LAUNCH_PENDING, 0, 0, 0, 0};
    snprintf(ids[p - first], CAIRN_LAUNCH_ID_MAX, "%ld.%ld", cluster, p);
  }
  return n;
}

static condor_job *find(condor_state *s, long cluster, long proc) {
  for (size_t i = 0; i < s->n; i++)
    if (s->j[i].cluster == cluster && s->j[i].proc == proc)
      return &s->j[i];
  return NULL;
}

/* Applies `-af ClusterId ProcId JobStatus ExitCode` output; removes held
 * jobs (they would never run). */
static void apply(condor_state *s, char *out) {
  for (char *save = NULL, *line = strtok_r(out, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    long cluster, proc;
    int status, code;
    condor_job *j;
    if (cairn__condor_parse_af(line, &cluster, &proc, &status, &code) ||
        !(j = find(s, cluster, proc)) || j->removed || j->state >= CAIRN_LAUNCH_DONE)
      continue;
    j->seen = 1;
    j->state = cairn__condor_state(status, code);
    if (status == 5) {
      char id[48];
      snprintf(id, sizeof id, "%ld.%ld", cluster, proc);
      fprintf(stderr, "cairn launch: condor job %s is held; removing it\n", id);
      condor(s, "condor_rm", (const char *const[]){id, NULL}, NULL, 0);
    }
  }
}

/* One condor_history for the live jobs condor_q did not list. */
static void history(condor_state *s, size_t missing) {
  size_t cap = 128 + missing * 64;
  char *expr = malloc(cap), *out = malloc(64 + missing * 64);
  char limit[32];
  if (!expr || !out)
    goto done;
  size_t k = (size_t)snprintf(expr, cap, "CairnFactory == \"%s\" && (", s->tag);
  int first = 1;
  for (size_t i = 0; i < s->n; i++) {
    condor_job *j = &s->j[i];
    if (j->seen || j->removed || j->state >= CAIRN_LAUNCH_DONE)
      continue;
    int w = snprintf(expr + k, cap - k, "%s(ClusterId == %ld && ProcId == %ld)",
                     first ? "" : " || ", j->cluster, j->proc);
    if (w < 0 || (size_t)w >= cap - k - 2)
      goto done; /* cannot happen: 64 bytes a job */
    k += (size_t)w;
    first = 0;
  }
  snprintf(expr + k, cap - k, ")");
  snprintf(limit, sizeof limit, "%zu", missing);
  if (condor(s, "condor_history",
             (const char *const[]){"-constraint", expr, "-limit", limit, "-af", "ClusterId",
                                   "ProcId", "JobStatus", "ExitCode", NULL},
             out, 64 + missing * 64) == 0)
    apply(s, out);
  for (size_t i = 0; i < s->n; i++) {
    condor_job *j = &s->j[i];
    if (!j->seen && !j->removed && j->state < CAIRN_LAUNCH_DONE &&
        ++j->missing >= CONDOR_LOST_ROUNDS)
      j->state = CAIRN_LAUNCH_FAILED; /* in neither the queue nor the history */
  }
done:
  free(expr);
  free(out);
}

/* Lists this factory's jobs in the queue into out (size bytes); 0 or -1. */
static int queue(condor_state *s, char *out, size_t size) {
  char expr[160];
  snprintf(expr, sizeof expr, "CairnFactory == \"%s\"", s->tag);
  return condor(s, "condor_q",
                (const char *const[]){"-constraint", expr, "-af", "ClusterId", "ProcId",
                                      "JobStatus", "ExitCode", NULL},
                out, size) == 0 ? 0 : -1;
}

/* Drops the jobs the factory forgot, so that a round costs O(jobs held). */
static void compact(condor_state *s) {
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++)
    if (!s->j[i].told || s->j[i].removed)
      s->j[k++] = s->j[i];
  s->n = k;
}

static void condor_refresh(void *st) {
  condor_state *s = st;
  size_t live = 0;
  compact(s);
  for (size_t i = 0; i < s->n; i++) {
    s->j[i].seen = 0;
    live += !s->j[i].removed && s->j[i].state < CAIRN_LAUNCH_DONE;
  }
  if (!live)
    return;
  size_t size = 64 + s->n * 64;
  char *out = malloc(size);
  if (!out || queue(s, out, size)) {
    free(out);
    return; /* unknown this round: the last states stand */
  }
  apply(s, out);
  free(out);
  size_t missing = 0;
  for (size_t i = 0; i < s->n; i++) {
    condor_job *j = &s->j[i];
    if (j->seen)
      j->missing = 0;
    else
      missing += !j->removed && j->state < CAIRN_LAUNCH_DONE;
  }
  if (missing)
    history(s, missing);
}

static condor_job *find_id(condor_state *s, const char *id) {
  long cluster, proc;
  char tail;
  return sscanf(id, "%ld.%ld%c", &cluster, &proc, &tail) == 2 ? find(s, cluster, proc) : NULL;
}

static int condor_poll(void *st, const char *id) {
  condor_job *j = find_id(st, id);
  if (!j)
    return CAIRN_LAUNCH_FAILED;
  j->told = j->state >= CAIRN_LAUNCH_DONE;
  return j->state;
}

static int condor_remove(void *st, const char *id) {
  condor_state *s = st;
  condor_job *j = find_id(s, id);
  if (!j)
    return -1;
  j->removed = 1;
  if (j->state >= CAIRN_LAUNCH_DONE)
    return 0;
  return condor(s, "condor_rm", (const char *const[]){id, NULL}, NULL, 0) == 0 ? 0 : -1;
}

/* Waits up to CONDOR_GRACE s for the removed jobs to leave the queue. */
static void condor_fini(void *st) {
  condor_state *s = st;
  int any = 0;
  for (size_t i = 0; i < s->n; i++)
    any |= s->j[i].removed && s->j[i].state < CAIRN_LAUNCH_DONE;
  size_t size = 64 + s->n * 64;
  char *out = any ? malloc(size) : NULL;
  struct timespec second = {1, 0};
  for (int round = 0; out && round < (int)CONDOR_GRACE; round++) {
    if (queue(s, out, size) == 0) {
      int left = 0;
      for (char *save = NULL, *line = strtok_r(out, "\n", &save); line;
           line = strtok_r(NULL, "\n", &save)) {
        long cluster, proc;
        int status, code;
        condor_job *j;
        left += !cairn__condor_parse_af(line, &cluster, &proc, &status, &code) &&
                (j = find(s, cluster, proc)) && j->removed;
      }
      if (!left)
        break;
      if (round + 1 == (int)CONDOR_GRACE)
        fprintf(stderr, "cairn launch: %d removed condor job%s still leaving the queue\n", left,
                left == 1 ? "" : "s");
    }
    nanosleep(&second, NULL);
  }
  free(out);
  free(s->j);
  free(s);
}

const cairn__launch_backend cairn__launch_condor = {
  .name = "condor",
  .summary = "cairn-worker processes as jobs of an HTCondor pool",
  .options = (const char *const[]){"schedd", "pool", NULL},
  .help = "    --schedd NAME          the condor_schedd to submit to (-name; default the\n"
          "                           local one)\n"
          "    --pool HOST[:PORT]     the pool's central manager (-pool; default the\n"
          "                           configured one)\n"
          "    --batch-options \"...\"  extra submit commands, lines separated by ';' or\n"
          "                           newlines: 'requirements = (OpSys == \"LINUX\")'\n"
          "    --worker: cairn-worker's path on the shared file system; --ship-worker:\n"
          "    unpacked into WORKDIR/condor/worker (WORKDIR on the shared file system)\n",
  .init = condor_init,
  .refresh = condor_refresh,
  .submit = condor_submit,
  .poll = condor_poll,
  .remove = condor_remove,
  .fini = condor_fini,
};
