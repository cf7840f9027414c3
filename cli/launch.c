/* launch.c — `cairn launch BACKEND`: the worker factory. Its options, its
 * work dir, the invitation it hands to workers, and the rounds that keep the
 * pool sized to the master's demand (launch.h says how backends are called).
 *
 * One round every --poll seconds: refresh and poll the backend's workers
 * (dropping those that ended), read GET /v1/demand (on failure: back off
 * doubling up to LAUNCH_BACKOFF_MAX, keep the pool), then submit
 *   ceil(eligible / slots) - starting - idle
 * more workers, at least enough for --min, never past --max, and never more
 * than --rate in any 60 s. The first --min workers ("keepers") run without
 * --exit-when-idle; the others leave by themselves once idle. SIGINT/SIGTERM
 * end the loop: every worker held is removed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "cli/launch.h"
#include "common/termsafe.h"

/* Longest wait between two demand reads while the master does not answer. */
#define LAUNCH_BACKOFF_MAX 30.0
/* A worker counts as starting (not yet able to ask for work) this long after
 * its submission, or while its backend says PENDING. */
#define LAUNCH_STARTUP 15.0
#define LAUNCH_MAX_WORKERS 10000
#define LAUNCH_MAX_WORKER_ARGS 64

static const char launch_usage[] =
  "usage: cairn launch BACKEND --server URL [options] [backend options]\n"
  "Keeps a pool of cairn-worker processes for the master's work: more when\n"
  "tasks wait (GET /v1/demand), none past --max; idle workers leave by\n"
  "themselves. SIGINT/SIGTERM stop every worker it started.\n"
  "\n"
  "  --server URL             the master (or $CAIRN_SERVER)\n"
  "  --admin-token-file F     the admin token (also --token-file F, --token T,\n"
  "                           $CAIRN_ADMIN_TOKEN); never given to a worker\n"
  "  --min N                  workers kept even without work (default 0)\n"
  "  --max N                  workers at most (default 4)\n"
  "  --rate N                 submissions a minute at most (default 60)\n"
  "  --idle-exit S            a worker leaves after S s without work (default 60)\n"
  "  --poll S                 seconds between rounds (default 2)\n"
  "  --cluster LABEL          the workers' --cluster (default: the backend's)\n"
  "  --cores N, --memory MIB  each worker's offer (and batch request)\n"
  "  --slots N                tasks at once per worker (default --cores, else 1)\n"
  "  --worker PATH            the cairn-worker to run (default cairn-worker)\n"
  "  --worker-options \"...\"   extra worker flags, e.g. \"--app cell=/opt/cell\"\n"
  "  --batch-options \"...\"    passed to batch backends' submissions\n"
  "  --ship-worker TARBALL    a worker tarball (cairn-worker-*-linux-x86_64.tar.gz)\n"
  "                           unpacked where the workers run; its cairn-worker is run\n"
  "  --work-dir DIR           logs, state, the invitation file (default: a new\n"
  "                           folder cairn-launch.XXXXXX under $TMPDIR or /tmp)\n"
  "\nbackends:\n";

typedef struct held {
  char id[CAIRN_LAUNCH_ID_MAX];
  double since;
  int state, keeper;
} held;

typedef struct demand {
  long long eligible, leased, present, idle;
  int invite, closed; /* how the master registers volunteers */
} demand;

typedef struct factory {
  const cairn__launch_backend *be;
  void *st;
  cairn__launch_spec spec, keeper_spec;
  cairn__http *h;
  int min, max, rate;
  double poll_s;
  held *w;
  int n;
  double *starts; /* ring of the last `rate` submission times */
  int nstarts;
  long long inv_id; /* current invitation (0: none), its uses left */
  long long inv_left;
  char inv_path[PATH_MAX];
  long long launched, ended, failed;
} factory;

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) { stop_flag = sig; }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("cairn launch: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---- the master ---- */

/* Reads GET /v1/demand into *d: 0, or -1 with why in why (said by the
 * caller once the master stops answering, not at every retry). */
static int read_demand(factory *f, demand *d, char *why, size_t whylen) {
  cairn__http_response r = {0};
  cairn_error err = {0};
  if (cairn__http_request(f->h, "GET", "/v1/demand", NULL, NULL, 0, 1u << 20, &r, &err) !=
      CAIRN_OK) {
    cairn__buf_free(&r.body);
    snprintf(why, whylen, "%s", err.text);
    return -1;
  }
  json_t *o = r.status == 200 ? json_loadb(r.body.data, r.body.len, 0, NULL) : NULL;
  cairn__buf_free(&r.body);
  if (!json_is_object(o)) {
    snprintf(why, whylen, "HTTP %ld%s", r.status,
             r.status == 401 || r.status == 403 ? ": the master refuses the admin token" : "");
    json_decref(o);
    return -1;
  }
  json_t *v = json_object_get(o, "volunteers");
  d->eligible = json_integer_value(json_object_get(o, "eligible"));
  d->leased = json_integer_value(json_object_get(o, "leased"));
  d->present = json_integer_value(json_object_get(v, "present"));
  d->idle = json_integer_value(json_object_get(v, "idle"));
  const char *reg = json_string_value(json_object_get(o, "registration"));
  d->invite = reg && strcmp(reg, "invite") == 0;
  d->closed = reg && strcmp(reg, "closed") == 0;
  json_decref(o);
  return 0;
}

/* Writes code to f->inv_path (mode 0600, replaced atomically). 0 or -1. */
static int write_invitation(factory *f, const char *code) {
  char tmp[PATH_MAX + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", f->inv_path);
  unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  size_t len = strlen(code);
  int ok = write(fd, code, len) == (ssize_t)len && write(fd, "\n", 1) == 1;
  ok = close(fd) == 0 && ok;
  return ok && rename(tmp, f->inv_path) == 0 ? 0 : -1;
}

/* Makes sure the invitation file allows n more registrations: a new
 * invitation of max(n, --max) uses when the current one is spent. 0 or -1. */
static int ensure_invitation(factory *f, int n) {
  if (f->inv_id && f->inv_left >= n)
    return 0;
  long long uses = n > f->max ? n : f->max;
  char body[128];
  snprintf(body, sizeof body, "{\"uses\":%lld,\"expires_seconds\":604800,\"note\":\"cairn launch %s\"}",
           uses, f->be->name);
  json_t *o = NULL;
  long st = cairn__client_json(f->h, "POST", "/v1/invitations", body, &o, 0);
  const char *code = json_string_value(json_object_get(o, "code"));
  int rc = -1;
  if (st == 201 && code && write_invitation(f, code) == 0) {
    f->inv_id = json_integer_value(json_object_get(o, "id"));
    f->inv_left = uses;
    f->spec.invitation_file = f->keeper_spec.invitation_file = f->inv_path;
    rc = 0;
  } else if (st == 201)
    say("cannot write the invitation file %s", f->inv_path);
  json_decref(o);
  return rc;
}

static void revoke_invitation(factory *f) {
  if (!f->inv_id)
    return;
  char path[64];
  snprintf(path, sizeof path, "/v1/invitations/%lld", f->inv_id);
  json_t *o = NULL;
  cairn__client_json(f->h, "DELETE", path, NULL, &o, 1);
  json_decref(o);
  unlink(f->inv_path);
}

/* ---- the pool ---- */

/* Polls every held worker; forgets the ones that ended. */
static void poll_pool(factory *f) {
  if (f->be->refresh)
    f->be->refresh(f->st);
  int k = 0;
  for (int i = 0; i < f->n; i++) {
    int s = f->be->poll(f->st, f->w[i].id);
    if (s == CAIRN_LAUNCH_DONE || s == CAIRN_LAUNCH_FAILED) {
      f->ended++;
      f->failed += s == CAIRN_LAUNCH_FAILED;
      say("worker %s %s (%d left)", f->w[i].id, s == CAIRN_LAUNCH_DONE ? "exited" : "failed",
          f->n - 1 - (i - k));
      continue;
    }
    f->w[i].state = s;
    f->w[k++] = f->w[i];
  }
  f->n = k;
}

/* Submissions the --rate window still allows now. */
static int rate_room(factory *f, double now) {
  int recent = 0;
  for (int i = 0; i < f->nstarts; i++)
    recent += f->starts[i] > now - 60.0;
  return f->rate - recent;
}

static void note_start(factory *f, double now) {
  int oldest = 0;
  if (f->nstarts < f->rate) {
    f->starts[f->nstarts++] = now;
    return;
  }
  for (int i = 1; i < f->nstarts; i++)
    if (f->starts[i] < f->starts[oldest])
      oldest = i;
  f->starts[oldest] = now;
}

/* Submits n workers with spec (keepers or not); how many started. */
static int submit(factory *f, const cairn__launch_spec *spec, int n, int keeper, double now) {
  if (n <= 0)
    return 0;
  char(*ids)[CAIRN_LAUNCH_ID_MAX] = calloc((size_t)n, sizeof *ids);
  char err[512] = "";
  int k = ids ? f->be->submit(f->st, spec, n, ids, err, sizeof err) : -1;
  if (k < n)
    say("%s backend: %s", f->be->name, err[0] ? err : "out of memory");
  for (int i = 0; i < n; i++)
    note_start(f, now); /* attempts count: a failing backend is not asked faster */
  for (int i = 0; i < k; i++) {
    held *w = &f->w[f->n++];
    snprintf(w->id, sizeof w->id, "%s", ids[i]);
    w->since = now;
    w->state = CAIRN_LAUNCH_PENDING;
    w->keeper = keeper;
  }
  free(ids);
  if (k > 0) {
    f->launched += k;
    f->inv_left -= k;
  }
  return k > 0 ? k : 0;
}

static long long clamp(long long x, long long lo, long long hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

/* Sizes the pool to demand d. */
static void scale(factory *f, const demand *d, double now) {
  int starting = 0, keepers = 0;
  for (int i = 0; i < f->n; i++) {
    starting += f->w[i].state == CAIRN_LAUNCH_PENDING || now - f->w[i].since < LAUNCH_STARTUP;
    keepers += f->w[i].keeper;
  }
  long long need = (d->eligible + f->spec.slots - 1) / f->spec.slots - starting - d->idle;
  int room = f->max - f->n, rate = rate_room(f, now);
  int cap = room < rate ? room : rate;
  int keep = (int)clamp(f->min - keepers, 0, cap);
  int more = (int)clamp(need - keep, 0, cap - keep);
  int total = keep + more;
  if (total <= 0)
    return;
  if (d->invite && ensure_invitation(f, total))
    return;
  int k = submit(f, &f->keeper_spec, keep, 1, now);
  k += submit(f, &f->spec, more, 0, now);
  if (k)
    say("started %d worker%s: %d now (eligible %lld, idle %lld, starting %d)", k,
        k == 1 ? "" : "s", f->n, d->eligible, d->idle, starting);
}

/* Sleeps s seconds, waking for a signal. */
static void nap(double s) {
  double end = now_s() + s;
  struct timespec tick = {0, 100 * 1000 * 1000};
  while (!stop_flag && now_s() < end)
    nanosleep(&tick, NULL);
}

static void run_pool(factory *f) {
  double backoff = 0, next_read = 0;
  int down = 0, closed = 0;
  while (!stop_flag) {
    double now = now_s();
    poll_pool(f);
    if (now >= next_read) {
      demand d = {0};
      char why[512] = "";
      if (read_demand(f, &d, why, sizeof why) == 0) {
        if (down)
          say("the master answers again");
        down = 0;
        backoff = 0;
        if (d.closed && !closed)
          say("the master registers no new volunteers (--registration closed): starting none");
        closed = d.closed;
        if (!closed)
          scale(f, &d, now);
      } else {
        backoff = backoff ? fmin(backoff * 2, LAUNCH_BACKOFF_MAX) : f->poll_s;
        if (!down) {
          char safe[512];
          say("cannot read the master's demand (%s); keeping %d worker%s, retrying",
              cairn__termsafe(why, safe, sizeof safe), f->n, f->n == 1 ? "" : "s");
        }
        down = 1;
        next_read = now + backoff;
      }
    }
    nap(f->poll_s);
  }
}

static void stop_pool(factory *f) {
  int removed = 0;
  for (int i = 0; i < f->n; i++) {
    if (f->be->remove(f->st, f->w[i].id))
      say("could not stop worker %s", f->w[i].id);
    else
      removed++;
  }
  f->be->fini(f->st);
  revoke_invitation(f);
  say("stopped %d worker%s (started %lld, %lld ended by themselves, %lld of them failed)",
      removed, removed == 1 ? "" : "s", f->launched, f->ended, f->failed);
}

/* ---- options ---- */

static const cairn__launch_backend *find_backend(const char *name) {
  for (int i = 0; cairn__launch_backends[i]; i++)
    if (strcmp(cairn__launch_backends[i]->name, name) == 0)
      return cairn__launch_backends[i];
  return NULL;
}

static void usage(FILE *out) {
  fputs(launch_usage, out);
  for (int i = 0; cairn__launch_backends[i]; i++) {
    const cairn__launch_backend *b = cairn__launch_backends[i];
    fprintf(out, "  %-8s %s\n%s", b->name, b->summary, b->help ? b->help : "");
  }
}

/* Splits s on blanks into a NULL-terminated list (strings in *copy); NULL
 * when it has more than LAUNCH_MAX_WORKER_ARGS words. */
static const char **split_words(const char *s, char **copy) {
  const char **v = calloc(LAUNCH_MAX_WORKER_ARGS + 1, sizeof *v);
  *copy = strdup(s ? s : "");
  if (!v || !*copy)
    return free(v), NULL;
  int n = 0;
  for (char *save = NULL, *t = strtok_r(*copy, " \t\n", &save); t;
       t = strtok_r(NULL, " \t\n", &save)) {
    if (n == LAUNCH_MAX_WORKER_ARGS)
      return free(v), NULL;
    v[n++] = t;
  }
  return v;
}

static int int_opt(const char *name, const char *v, long long lo, long long hi, long long *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || !*v || *end || x < lo || x > hi)
    return cairn__cli_fail("%s wants an integer from %lld to %lld, got \"%s\"", name, lo, hi, v);
  *out = x;
  return 0;
}

static int num_opt(const char *name, const char *v, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || !*v || *end || !(x >= lo && x <= hi))
    return cairn__cli_fail("%s wants a number from %.10g to %.10g, got \"%s\"", name, lo, hi, v);
  *out = x;
  return 0;
}

typedef struct launch_opts {
  long long min, max, rate, cores, memory, slots;
  double idle, poll;
  const char *cluster, *worker, *wopts, *bopts, *work_dir, *ship;
  cairn__launch_opt bo[CAIRN_LAUNCH_OPT_MAX];
  int nbo;
} launch_opts;

/* One factory option at argv[i] (its value at argv[i+1]): 1 when known, 0
 * when not, -1 after printing why it is bad. */
static int factory_opt(launch_opts *o, const char *a, const char *v) {
  static const struct {
    const char *name;
    int kind; /* 0 integer, 1 number, 2 string */
    size_t off;
    double lo, hi;
  } t[] = {
    {"--min", 0, offsetof(launch_opts, min), 0, LAUNCH_MAX_WORKERS},
    {"--max", 0, offsetof(launch_opts, max), 1, LAUNCH_MAX_WORKERS},
    {"--rate", 0, offsetof(launch_opts, rate), 1, 100000},
    {"--cores", 0, offsetof(launch_opts, cores), 1, 4096},
    {"--memory", 0, offsetof(launch_opts, memory), 1, 1073741824},
    {"--slots", 0, offsetof(launch_opts, slots), 1, 1024},
    {"--idle-exit", 1, offsetof(launch_opts, idle), 0, 86400 * 365},
    {"--poll", 1, offsetof(launch_opts, poll), 0.05, 3600},
    {"--cluster", 2, offsetof(launch_opts, cluster), 0, 0},
    {"--worker", 2, offsetof(launch_opts, worker), 0, 0},
    {"--worker-options", 2, offsetof(launch_opts, wopts), 0, 0},
    {"--batch-options", 2, offsetof(launch_opts, bopts), 0, 0},
    {"--work-dir", 2, offsetof(launch_opts, work_dir), 0, 0},
    {"--ship-worker", 2, offsetof(launch_opts, ship), 0, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (strcmp(a, t[i].name) != 0)
      continue;
    void *p = (char *)o + t[i].off;
    if (t[i].kind == 0)
      return int_opt(a, v, (long long)t[i].lo, (long long)t[i].hi, p) ? -1 : 1;
    if (t[i].kind == 1)
      return num_opt(a, v, t[i].lo, t[i].hi, p) ? -1 : 1;
    *(const char **)p = v;
    return 1;
  }
  return 0;
}

/* A backend option: 1 when be takes it, 0 when not, -1 after an error. */
static int backend_opt(launch_opts *o, const cairn__launch_backend *be, const char *a,
                       const char *v) {
  for (int i = 0; be->options && be->options[i]; i++)
    if (a[0] == '-' && a[1] == '-' && strcmp(a + 2, be->options[i]) == 0) {
      if (o->nbo == CAIRN_LAUNCH_OPT_MAX)
        return cairn__cli_fail("too many %s options", be->name), -1;
      o->bo[o->nbo++] = (cairn__launch_opt){be->options[i], v};
      return 1;
    }
  return 0;
}

static int parse(int argc, char **argv, const cairn__launch_backend *be, launch_opts *o) {
  for (int i = 2; i < argc; i++) {
    if (i + 1 >= argc)
      return cairn__cli_fail("%s needs a value (see cairn launch --help)", argv[i]);
    int r = factory_opt(o, argv[i], argv[i + 1]);
    if (r == 0)
      r = backend_opt(o, be, argv[i], argv[i + 1]);
    if (r < 0)
      return 1;
    if (r == 0)
      return cairn__cli_fail("unknown option \"%s\" for cairn launch %s (see --help)", argv[i],
                            be->name);
    i++;
  }
  if (o->min > o->max)
    return cairn__cli_fail("--min %lld is more than --max %lld", o->min, o->max);
  return 0;
}

/* The work dir: o->work_dir (created 0700 when missing) or a new one. */
static int make_work_dir(const char *want, char *out, size_t size) {
  if (want) {
    snprintf(out, size, "%s", want);
    if (mkdir(out, 0700) && errno != EEXIST)
      return cairn__cli_fail("cannot create %s: %s", out, strerror(errno));
    return 0;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(out, size, "%s/cairn-launch.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(out))
    return cairn__cli_fail("cannot create a work dir under %s: %s", tmp ? tmp : "/tmp",
                          strerror(errno));
  return 0;
}

/* Turns --admin-token-file into --token-file for cairn__client_parse. */
static void alias_token_file(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--admin-token-file") == 0)
      argv[i] = (char *)"--token-file";
}

static int setup(factory *f, launch_opts *o, char *work_dir, char **copy) {
  cairn__launch_spec *s = &f->spec;
  s->worker_path = o->worker ? o->worker : "cairn-worker";
  s->worker_args = split_words(o->wopts, copy);
  if (!s->worker_args)
    return cairn__cli_fail("--worker-options has more than %d words", LAUNCH_MAX_WORKER_ARGS);
  s->cluster = o->cluster;
  s->cores = (int)o->cores;
  s->memory_mib = o->memory;
  s->slots = (int)(o->slots ? o->slots : o->cores ? o->cores : 1);
  s->idle_exit = o->idle;
  s->batch_options = o->bopts;
  s->work_dir = work_dir;
  s->shipped_worker = o->ship;
  f->keeper_spec = *s;
  f->keeper_spec.idle_exit = 0;
  f->min = (int)o->min;
  f->max = (int)o->max;
  f->rate = (int)o->rate;
  f->poll_s = o->poll;
  snprintf(f->inv_path, sizeof f->inv_path, "%s/invitation", work_dir);
  f->w = calloc((size_t)f->max, sizeof *f->w);
  f->starts = calloc((size_t)f->rate, sizeof *f->starts);
  if (!f->w || !f->starts)
    return cairn__cli_fail("out of memory");
  char err[512] = "";
  if (f->be->init(&f->st, o->bo, o->nbo, s, err, sizeof err))
    return cairn__cli_fail("%s: %s", f->be->name, err);
  return 0;
}

int cairn__cmd_launch(int argc, char **argv) {
  if (argc < 2 || cairn__cli_wants_help(argc, argv)) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2;
  }
  const cairn__launch_backend *be = find_backend(argv[1]);
  if (!be)
    return cairn__cli_fail("unknown backend \"%s\" (see cairn launch --help)", argv[1]);
  alias_token_file(argc, argv);
  cairn__client_opts co = {0};
  if (cairn__client_parse(&argc, argv, &co))
    return 1;
  launch_opts o = {.max = 4, .rate = 60, .idle = 60, .poll = 2};
  if (parse(argc, argv, be, &o))
    return 1;
  if (!co.token)
    return cairn__cli_fail("no admin token: give --admin-token-file F or set CAIRN_ADMIN_TOKEN");
  char work_dir[PATH_MAX - 64], *copy = NULL;
  if (make_work_dir(o.work_dir, work_dir, sizeof work_dir))
    return 1;
  factory f = {.be = be};
  f.spec.server = co.server;
  int rc = setup(&f, &o, work_dir, &copy);
  f.h = rc ? NULL : cairn__client_connect(&co);
  if (!rc && f.h) {
    cairn__http_set_timeout(f.h, 10);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a backend's command that exits early */
    say("%s backend, %d to %d workers, work dir %s", be->name, f.min, f.max, work_dir);
    run_pool(&f);
    stop_pool(&f);
  } else if (!rc) {
    be->fini(f.st);
    rc = 1;
  }
  if (f.h)
    cairn__http_delete(f.h);
  free((void *)f.spec.worker_args);
  free(copy);
  free(f.w);
  free(f.starts);
  return rc;
}
