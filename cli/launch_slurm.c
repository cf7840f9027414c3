/* launch_slurm.c — the `slurm` backend (launch.h): each cairn-worker is one
 * task of a Slurm array job.
 *
 * submit: one `sbatch --parsable --array=0-(n-1)` for n workers (split in
 * arrays of at most --array-max, default SLURM_ARRAY_MAX), with --job-name
 * cairn-worker, --cpus-per-task = spec->cores, --mem = spec->memory_mib,
 * --output WORKDIR/slurm/%A_%a.log and the words of --batch-options (checked
 * by parse_batch_options), running WORKDIR/slurm/worker.sh (keeper.sh for
 * workers without --exit-when-idle). The script makes a private folder on
 * the node (mktemp -d under $TMPDIR or /tmp) for the worker's --dir, runs the
 * worker (the invitation file is passed as its path: WORKDIR must be on a
 * file system the nodes share), passes SIGTERM on to it, removes the folder,
 * prints "cairn-slurm: worker exit status N" and exits N. Ids are
 * "JOBID_TASK", the log of one is WORKDIR/slurm/ID.log.
 *
 * refresh: one `squeue -u USER -h -r -n cairn-worker -o "%i %T"` a round,
 * cached; poll reads the cache (PENDING/CONFIGURING/REQUEUED... -> PENDING,
 * RUNNING/COMPLETING... -> RUNNING). A job gone from squeue is asked about
 * once with `sacct -n -X -P -o JobID,State,ExitCode -j ID` (COMPLETED ->
 * DONE, any other final state -> FAILED); when sacct cannot answer (it
 * failed, e.g. accounting storage is disabled: then it is never asked
 * again) the job's log decides from its last marker line: DONE for status
 * 0, else FAILED; a log without the marker after SLURM_LOG_ROUNDS rounds is
 * FAILED (killed, or never started). A squeue that fails keeps the last
 * states. Jobs are dropped once poll reported them final, or (removed ones)
 * once squeue no longer lists them: the state is bounded by the pool.
 *
 * remove: `scancel ID`. fini: waits up to SLURM_GRACE seconds for the
 * removed jobs to leave squeue, then `scancel --signal=KILL --full` the
 * ones left and waits SLURM_KILL_WAIT more; it says what it found.
 *
 * --cluster defaults to the Slurm partition: the one --batch-options names
 * (the first of a list), else the cluster's default partition (`sinfo -h -o
 * %P`, the one marked '*'). Every command runs from an argv array (no
 * shell), bounded by a timeout. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/launch.h"

/* Tasks in one array job at most by default (Slurm's default MaxArraySize
 * is 1001); --array-max changes it. */
#define SLURM_ARRAY_MAX 1000
/* Rounds a job gone from squeue may wait for its log's marker line (a
 * shared file system can show the end of a file late) before FAILED. */
#define SLURM_LOG_ROUNDS 3
#define SLURM_JOB_NAME "cairn-worker"
/* Seconds sbatch, squeue, sacct, scancel and sinfo may take. */
#define SLURM_TIMEOUT 30.0
/* Seconds removed jobs have to leave squeue before SIGKILL, then after it. */
#define SLURM_GRACE 60.0
#define SLURM_KILL_WAIT 20.0
/* Words of --batch-options at most. */
#define SLURM_MAX_BOPTS 32
/* Bytes of squeue output read at most (a longer one counts as failed). */
#define SLURM_SQUEUE_MAX (4u << 20)
#define SLURM_MARKER "cairn-slurm: worker exit status "

typedef struct slurm_job {
  char id[CAIRN_LAUNCH_ID_MAX]; /* "JOBID_TASK" */
  long job;                     /* JOBID and TASK as numbers */
  int task;
  int state;                    /* last known CAIRN_LAUNCH_* */
  int queued;                   /* in the latest squeue: 1, its state in qstate */
  int qstate;
  int removed;                  /* 1: scancel sent; 2: seen gone since */
  int reported;                 /* poll answered a final state: may be dropped */
  int gone;                     /* rounds seen gone from squeue without a verdict */
} slurm_job;

typedef struct slurm_state {
  char dir[PATH_MAX];           /* WORKDIR/slurm */
  char worker[PATH_MAX];        /* the shipped worker unpacked under dir (on the
                                   shared file system), or "": spec->worker_path */
  char user[64];                /* squeue -u */
  char cluster[128];            /* the default --cluster (the partition) */
  const char *bopts[SLURM_MAX_BOPTS + 1];
  int nbopts;
  char *bcopy;                  /* the words bopts point into */
  int no_sacct;                 /* sacct failed once: never asked again */
  int array_max;                /* tasks in one sbatch at most */
  slurm_job *j;                 /* live, removed and not yet reported jobs */
  size_t n, cap;
  slurm_job **by_id;            /* j sorted by (job, task) for one squeue's lines */
  char *out;                    /* squeue's output, SLURM_SQUEUE_MAX bytes */
} slurm_state;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("cairn launch: slurm: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---- options ---- */

/* sbatch options the backend sets itself, or that would break it (block,
 * write elsewhere, submit to another cluster, change the job's name). */
static const char *const refused[] = {
  "-a", "--array", "--parsable", "-o", "--output", "-e", "--error", "-J", "--job-name",
  "--wrap", "-W", "--wait", "--test-only", "-M", "--clusters", "--cluster", "-h", "--help",
  "-u", "--usage", "-V", "--version", "-i", "--input", NULL};
/* sbatch flags that take no value: a bare word after one would be taken
 * for the batch script. */
static const char *const flags[] = {
  "--contiguous", "--exclusive", "-H", "--hold", "--ignore-pbs", "-k", "--no-kill",
  "--no-requeue", "-O", "--overcommit", "-s", "--oversubscribe", "-Q", "--quiet", "--reboot",
  "--requeue", "--spread-job", "--use-min-nodes", "-v", "--verbose", "--get-user-env", "--nice",
  NULL};

static int listed(const char *const *list, const char *w, size_t len) {
  for (int i = 0; list[i]; i++)
    if (strlen(list[i]) == len && strncmp(list[i], w, len) == 0)
      return 1;
  return 0;
}

/* The option name of word w: "--name" of "--name=value", "-p" of "-pdebug". */
static size_t opt_len(const char *w) {
  if (w[1] == '-')
    return strcspn(w, "=");
  return 2;
}

/* Whether option name w (len bytes) is one of list: a short one exactly, a
 * long one or an abbreviation of it (sbatch takes "--part" for
 * "--partition"). */
static int names(const char *const *list, const char *w, size_t len) {
  for (int i = 0; list[i]; i++) {
    if (list[i][1] != '-' ? strlen(list[i]) == len && strncmp(list[i], w, len) == 0
                          : w[1] == '-' && len >= 3 && len <= strlen(list[i]) &&
                              strncmp(list[i], w, len) == 0)
      return 1;
  }
  return 0;
}

/* Splits --batch-options on blanks into s->bopts and checks each word: an
 * option ("-x", "-xVALUE", "--name", "--name=value") not in `refused`
 * (--cpus-per-task/-c and --mem* too when --cores/--memory are given), or
 * the value following an option that takes one. Notes a --partition/-p. */
static int parse_batch_options(slurm_state *s, const cairn__launch_spec *spec, const char **part,
                               char *err, size_t errlen) {
  *part = NULL;
  if (!spec->batch_options)
    return 0;
  s->bcopy = strdup(spec->batch_options);
  if (!s->bcopy)
    return snprintf(err, errlen, "out of memory"), -1;
  const char *prev = NULL; /* the option awaiting its value, if any */
  for (char *save = NULL, *w = strtok_r(s->bcopy, " \t\n", &save); w;
       w = strtok_r(NULL, " \t\n", &save)) {
    if (s->nbopts == SLURM_MAX_BOPTS)
      return snprintf(err, errlen, "--batch-options has more than %d words", SLURM_MAX_BOPTS), -1;
    s->bopts[s->nbopts++] = w;
    if (w[0] != '-' || !w[1]) {
      if (!prev)
        return snprintf(err, errlen, "--batch-options: \"%.64s\" is not an sbatch option "
                                     "(write --name=value or --name value)", w), -1;
      static const char *const partition[] = {"-p", "--partition", NULL};
      if (names(partition, prev, strlen(prev)))
        *part = w;
      prev = NULL;
      continue;
    }
    size_t len = opt_len(w);
    static const char *const cpus[] = {"-c", "--cpus-per-task", NULL};
    static const char *const mem[] = {"--mem", "--mem-per-cpu", "--mem-per-gpu", NULL};
    static const char *const partition[] = {"-p", "--partition", NULL};
    if (names(refused, w, len) || (names(cpus, w, len) && spec->cores > 0) ||
        ((names(mem, w, len) || strncmp(w, "--mem", 5) == 0) && spec->memory_mib > 0))
      return snprintf(err, errlen, "--batch-options: %.*s is set by cairn launch (or breaks it)",
                      (int)len, w), -1;
    int inline_value = w[1] == '-' ? w[len] == '=' : w[2] != '\0';
    if (names(partition, w, len) && inline_value)
      *part = w + len + (w[len] == '=');
    prev = inline_value || names(flags, w, len) ? NULL : w;
  }
  return 0;
}

/* The default partition: sinfo's line ending in '*'. 0, or -1 with err. */
static int default_partition(char *out, size_t size, char *err, size_t errlen) {
  const char *argv[] = {"sinfo", "-h", "-o", "%P", NULL};
  char buf[8192];
  int rc = cairn__launch_run(argv, NULL, 0, buf, sizeof buf, SLURM_TIMEOUT);
  if (rc != 0)
    return snprintf(err, errlen, "sinfo %s (is Slurm's client installed, $SLURM_CONF right and "
                                 "slurmctld up?)", rc < 0 ? "did not run or timed out" : "failed"),
           -1;
  for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    size_t len = strlen(l);
    if (len > 1 && l[len - 1] == '*') {
      snprintf(out, size, "%.*s", (int)(len - 1), l);
      return 0;
    }
  }
  return snprintf(err, errlen, "the cluster has no default partition: give --batch-options "
                               "\"--partition NAME\" or --cluster LABEL"), -1;
}

static void slurm_free(slurm_state *s) {
  free(s->bcopy);
  free(s->j);
  free(s->by_id);
  free(s->out);
  free(s);
}

static int slurm_init(void **st, const cairn__launch_opt *opts, int n,
                      const cairn__launch_spec *spec, char *err, size_t errlen) {
  slurm_state *s = calloc(1, sizeof *s);
  if (!s || !(s->out = malloc(SLURM_SQUEUE_MAX))) {
    free(s);
    return snprintf(err, errlen, "out of memory"), -1;
  }
  s->array_max = SLURM_ARRAY_MAX;
  for (int i = 0; i < n; i++) { /* the only option: --array-max */
    char *end;
    long v = strtol(opts[i].value, &end, 10);
    if (*end || !*opts[i].value || v < 1 || v > 100000) {
      snprintf(err, errlen, "--array-max wants an integer from 1 to 100000, got \"%.32s\"",
               opts[i].value);
      slurm_free(s);
      return -1;
    }
    s->array_max = (int)v;
  }
  struct passwd *pw = getpwuid(getuid());
  if (pw && strlen(pw->pw_name) < sizeof s->user)
    snprintf(s->user, sizeof s->user, "%s", pw->pw_name);
  else
    snprintf(s->user, sizeof s->user, "%u", (unsigned)getuid());
  const char *part = NULL;
  int rc = parse_batch_options(s, spec, &part, err, errlen);
  if (rc == 0 && part)
    snprintf(s->cluster, sizeof s->cluster, "%.*s", (int)strcspn(part, ","), part);
  else if (rc == 0 && !spec->cluster)
    rc = default_partition(s->cluster, sizeof s->cluster, err, errlen);
  snprintf(s->dir, sizeof s->dir, "%s/slurm", spec->work_dir);
  if (rc == 0 && mkdir(s->dir, 0700) && errno != EEXIST)
    rc = (snprintf(err, errlen, "cannot create %s: %s", s->dir, strerror(errno)), -1);
  if (rc == 0 && spec->shipped_worker) { /* --ship-worker: the nodes run the unpacked copy */
    char unpack[PATH_MAX + 8];
    snprintf(unpack, sizeof unpack, "%s/worker", s->dir);
    rc = cairn__launch_unpack_worker(spec->shipped_worker, unpack, s->worker, sizeof s->worker,
                                    err, errlen);
  }
  if (rc) {
    slurm_free(s);
    return -1;
  }
  *st = s;
  return 0;
}

/* ---- submit ---- */

/* The job script: see the top of this file. */
static const char script_head[] =
  "#!/bin/sh\n"
  "# cairn launch slurm: one cairn-worker per array task (docs/launch.md)\n"
  "echo \"cairn-slurm: job ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID} (${SLURM_JOB_ID}) on "
  "$(hostname)\"\n"
  "umask 077\n"
  "d=$(mktemp -d \"${TMPDIR:-/tmp}/cairn-worker.XXXXXX\") || exit 1\n";
static const char script_tail[] =
  " </dev/null & p=$!\n"
  "trap 'kill -TERM $p 2>/dev/null' TERM INT HUP\n"
  "s=0; wait $p || s=$?\n"
  "while kill -0 $p 2>/dev/null; do s=0; wait $p || s=$?; done\n"
  "rm -rf \"$d\"\n"
  "echo \"" SLURM_MARKER "$s\"\n"
  "exit $s\n";

/* Writes the script for spec to path (mode 0700, replaced atomically). */
static int write_script(slurm_state *s, const cairn__launch_spec *spec, const char *path,
                        char *err, size_t errlen) {
  const char *argv[128];
  char buf[256];
  const char *cluster = spec->cluster ? spec->cluster : s->cluster[0] ? s->cluster : NULL;
  if (cairn__launch_worker_argv(spec, cluster, NULL, spec->invitation_file, argv, 128, buf,
                               sizeof buf) < 0)
    return snprintf(err, errlen, "the worker's command line is too long"), -1;
  if (s->worker[0])
    argv[0] = s->worker;
  size_t size = 65536;
  char *text = malloc(size);
  if (!text)
    return snprintf(err, errlen, "out of memory"), -1;
  snprintf(text, size, "%s", script_head);
  int rc = 0;
  for (int i = 0; rc == 0 && argv[i]; i++) {
    if (strlen(text) + 2 > size)
      rc = -1;
    else {
      strcat(text, " ");
      rc = cairn__launch_shell_quote(text, size, argv[i]);
    }
  }
  if (rc == 0 && strlen(text) + sizeof script_tail + 16 < size) {
    strcat(text, " --dir \"$d\"");
    strcat(text, script_tail);
  } else
    rc = -1;
  char tmp[PATH_MAX + 32];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  unlink(tmp);
  int fd = rc ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
  if (fd >= 0) {
    size_t len = strlen(text);
    rc = write(fd, text, len) == (ssize_t)len ? 0 : -1;
    rc = close(fd) || rc ? -1 : rename(tmp, path);
  } else
    rc = -1;
  free(text);
  if (rc)
    snprintf(err, errlen, "cannot write %s", path);
  return rc;
}

/* One sbatch of an array of n tasks; its job id (> 0), or -1 with err. */
static long sbatch(slurm_state *s, const cairn__launch_spec *spec, const char *script, int n,
                   char *err, size_t errlen) {
  char array[32], cpus[32], mem[32], log[PATH_MAX + 16], out[256];
  const char *argv[SLURM_MAX_BOPTS + 24];
  int k = 0;
  argv[k++] = "sbatch";
  argv[k++] = "--parsable";
  snprintf(array, sizeof array, "--array=0-%d", n - 1);
  argv[k++] = array;
  argv[k++] = "--job-name";
  argv[k++] = SLURM_JOB_NAME;
  snprintf(log, sizeof log, "%s/%%A_%%a.log", s->dir);
  argv[k++] = "--output";
  argv[k++] = log;
  if (spec->cores > 0) {
    snprintf(cpus, sizeof cpus, "--cpus-per-task=%d", spec->cores);
    argv[k++] = cpus;
  }
  if (spec->memory_mib > 0) {
    snprintf(mem, sizeof mem, "--mem=%lld", spec->memory_mib);
    argv[k++] = mem;
  }
  for (int i = 0; i < s->nbopts; i++)
    argv[k++] = s->bopts[i];
  argv[k++] = "--"; /* a value-less option left last takes this, not the script */
  argv[k++] = script;
  argv[k] = NULL;
  int rc = cairn__launch_run(argv, NULL, 0, out, sizeof out, SLURM_TIMEOUT);
  char *end;
  long id = strtol(out, &end, 10);
  if (rc != 0 || id <= 0 || (*end && *end != ';' && *end != '\n'))
    return snprintf(err, errlen, "sbatch %s (its messages are above)",
                    rc < 0 ? "did not run or timed out" : "failed"), -1;
  return id;
}

static int grow(slurm_state *s, size_t more) {
  if (s->n + more <= s->cap)
    return 0;
  size_t cap = s->cap ? s->cap : 16;
  while (cap < s->n + more)
    cap *= 2;
  slurm_job *j = realloc(s->j, cap * sizeof *j);
  if (!j)
    return -1;
  s->j = j;
  s->cap = cap;
  return 0;
}

static int slurm_submit(void *st, const cairn__launch_spec *spec, int n,
                        char ids[][CAIRN_LAUNCH_ID_MAX], char *err, size_t errlen) {
  slurm_state *s = st;
  char script[PATH_MAX + 16];
  snprintf(script, sizeof script, "%s/%s", s->dir, spec->idle_exit > 0 ? "worker.sh" : "keeper.sh");
  if (grow(s, (size_t)n))
    return snprintf(err, errlen, "out of memory"), -1;
  if (write_script(s, spec, script, err, errlen))
    return -1;
  int k = 0;
  while (k < n) {
    int m = n - k < s->array_max ? n - k : s->array_max;
    long job = sbatch(s, spec, script, m, err, errlen);
    if (job < 0)
      break;
    for (int i = 0; i < m; i++, k++) {
      slurm_job *j = &s->j[s->n++];
      *j = (slurm_job){.job = job, .task = i, .state = CAIRN_LAUNCH_PENDING};
      snprintf(j->id, sizeof j->id, "%ld_%d", job, i);
      snprintf(ids[k], CAIRN_LAUNCH_ID_MAX, "%s", j->id);
    }
  }
  return k ? k : -1;
}

/* ---- refresh and poll ---- */

static int state_of(const char *t) {
  static const char *const running[] = {"RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT",
                                        "RESIZING", NULL};
  static const char *const pending[] = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD",
                                        "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT",
                                        "SUSPENDED", "STOPPED", NULL};
  if (listed(running, t, strlen(t)))
    return CAIRN_LAUNCH_RUNNING;
  if (listed(pending, t, strlen(t)))
    return CAIRN_LAUNCH_PENDING;
  return strcmp(t, "COMPLETED") == 0 ? CAIRN_LAUNCH_DONE : CAIRN_LAUNCH_FAILED;
}

static int by_id_cmp(const void *a, const void *b) {
  const slurm_job *x = *(slurm_job *const *)a, *y = *(slurm_job *const *)b;
  if (x->job != y->job)
    return x->job < y->job ? -1 : 1;
  return (x->task > y->task) - (x->task < y->task);
}

/* One squeue of this user's cairn-worker jobs: sets each job's queued and
 * qstate. 0, or -1 when squeue failed (nothing changed). O(n log n + lines
 * log n) for n jobs held. */
static int squeue(slurm_state *s) {
  const char *argv[] = {"squeue", "-u", s->user, "-h", "-r", "-n", SLURM_JOB_NAME,
                        "-o", "%i %T", NULL};
  int rc = cairn__launch_run(argv, NULL, 0, s->out, SLURM_SQUEUE_MAX, SLURM_TIMEOUT);
  if (rc != 0 || strlen(s->out) + 1 >= SLURM_SQUEUE_MAX)
    return -1;
  slurm_job **by = realloc(s->by_id, (s->n ? s->n : 1) * sizeof *by);
  if (!by)
    return -1;
  s->by_id = by;
  for (size_t i = 0; i < s->n; i++) {
    by[i] = &s->j[i];
    by[i]->queued = 0;
  }
  qsort(by, s->n, sizeof *by, by_id_cmp);
  for (char *save = NULL, *l = strtok_r(s->out, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save)) {
    slurm_job key = {0}, *kp = &key, **hit;
    char t[32];
    if (sscanf(l, "%ld_%d %31s", &key.job, &key.task, t) != 3)
      continue;
    if ((hit = bsearch(&kp, by, s->n, sizeof *by, by_id_cmp))) {
      (*hit)->queued = 1;
      (*hit)->qstate = state_of(t);
    }
  }
  return 0;
}

/* The final state sacct gives id: DONE/FAILED, or -1 when it cannot tell. */
static int sacct_state(slurm_state *s, const char *id) {
  if (s->no_sacct)
    return -1;
  const char *argv[] = {"sacct", "-n", "-X", "-P", "-o", "JobID,State,ExitCode", "-j", id, NULL};
  char out[2048];
  int rc = cairn__launch_run(argv, NULL, 0, out, sizeof out, SLURM_TIMEOUT);
  if (rc != 0) {
    s->no_sacct = 1;
    say("sacct cannot answer (no accounting storage?); a job's log tells how it ended");
    return -1;
  }
  size_t len = strlen(id);
  for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    if (strncmp(l, id, len) || l[len] != '|')
      continue;
    char t[64];
    if (sscanf(l + len + 1, "%63[^|]", t) != 1)
      continue;
    t[strcspn(t, " ")] = '\0'; /* "CANCELLED by 0" */
    int st = state_of(t);
    return st == CAIRN_LAUNCH_DONE || st == CAIRN_LAUNCH_FAILED ? st : -1;
  }
  return -1;
}

/* From the last marker line of id's log: DONE for status 0, FAILED for any
 * other; -1 when the log has no marker (yet). */
static int log_state(const slurm_state *s, const char *id) {
  char path[PATH_MAX + 80], tail[4097];
  snprintf(path, sizeof path, "%s/%s.log", s->dir, id);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  if (fseek(f, -4096, SEEK_END))
    rewind(f);
  size_t k = fread(tail, 1, sizeof tail - 1, f);
  fclose(f);
  tail[k] = '\0';
  const char *last = NULL;
  for (const char *p = tail; (p = strstr(p, SLURM_MARKER)); p++)
    last = p;
  if (!last)
    return -1;
  last += strlen(SLURM_MARKER);
  return last[0] == '0' && (last[1] == '\n' || last[1] == '\0') ? CAIRN_LAUNCH_DONE
                                                              : CAIRN_LAUNCH_FAILED;
}

/* Drops the jobs poll reported final and the removed ones seen gone. */
static void compact(slurm_state *s) {
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++)
    if (!s->j[i].reported && s->j[i].removed != 2)
      s->j[k++] = s->j[i];
  s->n = k;
}

static void slurm_refresh(void *st) {
  slurm_state *s = st;
  compact(s);
  int live = 0;
  for (size_t i = 0; i < s->n; i++)
    live += !s->j[i].removed && s->j[i].state <= CAIRN_LAUNCH_RUNNING;
  if (!live || squeue(s))
    return; /* nothing to ask, or unknown this round: the last states stand */
  for (size_t i = 0; i < s->n; i++) {
    slurm_job *j = &s->j[i];
    if (j->removed || j->state > CAIRN_LAUNCH_RUNNING)
      continue;
    if (j->queued)
      j->gone = 0;
    int st2 = j->queued ? j->qstate : j->gone ? -1 : sacct_state(s, j->id);
    if (st2 < 0 && (st2 = log_state(s, j->id)) < 0)
      st2 = ++j->gone < SLURM_LOG_ROUNDS ? j->state : CAIRN_LAUNCH_FAILED;
    j->state = st2;
  }
}

static slurm_job *find(slurm_state *s, const char *id) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->j[i].id, id) == 0)
      return &s->j[i];
  return NULL;
}

static int slurm_poll(void *st, const char *id) {
  slurm_job *j = find(st, id);
  if (!j)
    return CAIRN_LAUNCH_FAILED;
  j->reported = j->state == CAIRN_LAUNCH_DONE || j->state == CAIRN_LAUNCH_FAILED;
  return j->state;
}

/* ---- remove and fini ---- */

static int slurm_remove(void *st, const char *id) {
  slurm_job *j = find(st, id);
  if (!j)
    return -1;
  j->removed = 1;
  const char *argv[] = {"scancel", id, NULL};
  return cairn__launch_run(argv, NULL, 0, NULL, 0, SLURM_TIMEOUT) == 0 ? 0 : -1;
}

/* Marks the removed jobs squeue no longer lists; how many it still lists
 * (all of them when squeue fails). */
static int removed_left(slurm_state *s) {
  int any = 0;
  for (size_t i = 0; i < s->n; i++)
    any += s->j[i].removed == 1;
  if (!any)
    return 0;
  if (squeue(s))
    return any;
  int left = 0;
  for (size_t i = 0; i < s->n; i++)
    if (s->j[i].removed == 1) {
      if (s->j[i].queued)
        left++;
      else
        s->j[i].removed = 2;
    }
  return left;
}

/* Waits up to secs for the removed jobs to leave squeue; how many stay. */
static int wait_removed(slurm_state *s, double secs) {
  struct timespec t0, now, tick = {1, 0};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int left = removed_left(s);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!left || (double)(now.tv_sec - t0.tv_sec) >= secs)
      return left;
    nanosleep(&tick, NULL);
  }
}

static void slurm_fini(void *st) {
  slurm_state *s = st;
  int removed = 0;
  for (size_t i = 0; i < s->n; i++)
    removed += s->j[i].removed != 0;
  int left = wait_removed(s, SLURM_GRACE);
  if (left) {
    say("%d removed job%s still queued after %.0f s: scancel --signal=KILL", left,
        left == 1 ? "" : "s", SLURM_GRACE);
    for (size_t i = 0; i < s->n; i++)
      if (s->j[i].removed == 1) {
        const char *argv[] = {"scancel", "--signal=KILL", "--full", s->j[i].id, NULL};
        cairn__launch_run(argv, NULL, 0, NULL, 0, SLURM_TIMEOUT);
      }
    left = wait_removed(s, SLURM_KILL_WAIT);
  }
  if (left)
    for (size_t i = 0; i < s->n; i++)
      if (s->j[i].removed == 1)
        say("job %s is still in squeue", s->j[i].id);
  if (removed)
    say("%d of %d removed job%s left the queue", removed - left, removed,
        removed == 1 ? "" : "s");
  slurm_free(s);
}

const cairn__launch_backend cairn__launch_slurm = {
  .name = "slurm",
  .summary = "cairn-worker processes as tasks of Slurm array jobs (sbatch)",
  .options = (const char *const[]){"array-max", NULL},
  .help = "  --array-max N            workers in one array job at most (default 1000; keep\n"
          "                           it below the cluster's MaxArraySize)\n"
          "  --batch-options \"...\"    sbatch options, e.g. \"--partition debug --time 2:00:00\"\n"
          "  --worker PATH and --work-dir DIR must be valid on the nodes (a shared file\n"
          "  system); --cluster default: the partition; job logs in WORKDIR/slurm/\n",
  .init = slurm_init,
  .refresh = slurm_refresh,
  .submit = slurm_submit,
  .poll = slurm_poll,
  .remove = slurm_remove,
  .fini = slurm_fini,
};
