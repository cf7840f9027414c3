/* worker.c — the public worker API (cairn/worker.h): configuration, apps,
 * and run(), which sets up DIR, the identity, the task threads and the
 * heartbeat thread, and tears them down again. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/resources.h"
#include "common/log.h"
#include "worker/fsutil.h"
#include "worker/transport.h"
#include "worker/worker_int.h"

#define DEFAULT_DIR "./cairn-worker"
#define MAX_SLOTS 1024
#define DEFAULT_PEER_LISTEN "0.0.0.0:0"
#define DEFAULT_STALL_MS 10000
#define MAX_IDLE_THRESHOLD 409600u
#define MAX_IDLE_SETTLE 86400u
#define MAX_HALF_LIFE 31536000u
#define RESUME_PATIENCE_MS 10000 /* several projects: a master's answer about recorded tasks */

/* Checks the configuration's sandbox binds: "PATH" or "PATH:rw", PATH
 * absolute, without "..", existing. NULL when good, else the problem. */
static const char *binds_problem(const cairn_worker_config *cfg, char *buf, size_t cap) {
  if (cfg->nsandbox_binds > CAIRN__SANDBOX_MAX_BINDS)
    return "at most 16 sandbox binds";
  for (size_t i = 0; i < cfg->nsandbox_binds; i++) {
    const char *b = cfg->sandbox_binds ? cfg->sandbox_binds[i] : NULL;
    size_t n = b ? strlen(b) : 0;
    if (n > 3 && strcmp(b + n - 3, ":rw") == 0)
      n -= 3;
    char path[PATH_MAX];
    struct stat st;
    if (!b || b[0] != '/' || n >= sizeof path || strstr(b, "/..") || strchr(b, '\n')) {
      snprintf(buf, cap, "sandbox bind \"%.200s\" must be an absolute path without \"..\", "
               "optionally with \":rw\"", b ? b : "(null)");
      return buf;
    }
    memcpy(path, b, n);
    path[n] = '\0';
    if (stat(path, &st) != 0) {
      snprintf(buf, cap, "sandbox bind %.200s: %s", path, strerror(errno));
      return buf;
    }
  }
  return NULL;
}

/* Copies the configuration's sandbox settings into w; -1 when out of memory. */
static int copy_sandbox(cairn_worker *w, const cairn_worker_config *cfg) {
  w->no_sandbox = cfg->no_sandbox != 0;
  w->sandbox.allow_network = cfg->allow_network != 0;
  w->sandbox.binds = w->sandbox_binds;
  for (size_t i = 0; i < cfg->nsandbox_binds; i++) {
    const char *b = cfg->sandbox_binds[i];
    size_t n = strlen(b);
    int rw = n > 3 && strcmp(b + n - 3, ":rw") == 0;
    if (!(w->sandbox_paths[i] = strndup(b, rw ? n - 3 : n)))
      return -1;
    w->sandbox_binds[i] = (cairn__sandbox_bind){w->sandbox_paths[i], rw};
    w->sandbox.nbinds = i + 1;
  }
  return 0;
}

/* Before any work: with program apps (the project's signed apps count) and
 * the sandbox on, checks that bwrap runs here (sandbox.h); says why not and
 * how to fix it. */
static cairn_status check_sandbox(cairn_worker *w, cairn_error *err) {
  size_t programs = 0;
  for (size_t k = 0; k < w->nprojects; k++)
    programs += w->projects[k].has_project_key != 0;
  for (size_t i = 0; i < w->napps; i++)
    programs += w->apps[i].path != NULL;
  if (w->no_sandbox) {
    if (programs)
      CAIRN_WARN(&w->log, "--no-sandbox: program apps run unsandboxed, seeing all that this "
                 "user sees (DIR/credentials.json, $HOME, the network, other processes)");
    return CAIRN_OK;
  }
  if (!programs)
    return CAIRN_OK;
  char why[400];
  cairn__sandbox_host(&w->sandbox);
  if (cairn__sandbox_probe(&w->sandbox, w->projects[0].run_dir, why, sizeof why) != 0)
    return cairn__error_set(err, CAIRN_EINVAL,
                            "the task sandbox does not work here: %s. Install bubblewrap (apt "
                            "install bubblewrap) and allow unprivileged user namespaces (sysctl "
                            "kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0, "
                            "kernel.apparmor_restrict_unprivileged_userns=0), or run programs "
                            "unsandboxed with --no-sandbox", why);
  w->sandboxed = 1;
  CAIRN_INFO(&w->log, "program apps run in a bubblewrap sandbox (%s)%s", w->sandbox.bwrap,
             w->sandbox.allow_network ? "; tasks that ask may use the network" : "");
  return CAIRN_OK;
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void) { cairn__http_global_init(); }

void cairn__worker_fatal(cairn_worker *w, cairn_status st, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&w->mu);
  if (w->error.status == CAIRN_OK)
    cairn__error_set(&w->error, st == CAIRN_OK ? CAIRN_EINTERNAL : st, "%s", text);
  pthread_mutex_unlock(&w->mu);
  CAIRN_ERR(&w->log, "%s", text);
  cairn__stopper_stop(&w->stopper);
}

void cairn__worker_distrust(cairn_worker *w, cairn__project *p, const char *why) {
  size_t left = 0;
  if (!w->several)
    cairn__worker_fatal(w, CAIRN_EFORBIDDEN, "%s", why);
  else if (!cairn__ledger_retire(&w->ledger, p->k, &left))
    return; /* said already */
  else if (left == 0)
    cairn__worker_fatal(w, CAIRN_EFORBIDDEN, "no project left to ask for work: %s", why);
  else
    CAIRN_WARN(&p->log, "this project is asked for no more work (its audit log is "
               "inconsistent); %zu other%s go%s on", left, left == 1 ? "" : "s",
               left == 1 ? "es" : "");
}

const cairn__app *cairn__worker_app(const cairn_worker *w, const char *name) {
  for (size_t i = 0; i < w->napps; i++)
    if (strcmp(w->apps[i].name, name) == 0)
      return &w->apps[i];
  return NULL;
}

static char *dup_or_null(const char *s, int *oom) {
  char *d = s ? strdup(s) : NULL;
  if (s && !d)
    *oom = 1;
  return d;
}

static int valid_label(const char *s) {
  return s && s[0] && strlen(s) <= CAIRN_MAX_NAME && !strpbrk(s, "\n\r");
}

/* A host name or address to put in a URL: no spaces, slashes or user part. */
static int valid_host(const char *s) {
  return s && s[0] && strlen(s) < 254 && !strpbrk(s, " \t\n\r/@?#[]");
}

void cairn_worker_config_init(cairn_worker_config *cfg) {
  memset(cfg, 0, sizeof *cfg); /* every zero or NULL field is "the default" */
}

/* Checks the worker-wide settings; NULL when good, else the problem. */
static const char *config_problem(const cairn_worker_config *cfg, cairn__hours *hours) {
  if (!cfg)
    return "no configuration";
  if (cfg->projects && cfg->server_url)
    return "give either server_url or projects, not both";
  if (!cfg->projects && !cfg->server_url)
    return "server URL must start with http:// or https://";
  if (cfg->projects && (cfg->nprojects < 1 || cfg->nprojects > CAIRN__MAX_PROJECTS))
    return "projects must number 1 to 16";
  if (cfg->projects && (cfg->project_key || cfg->account_key || cfg->invitation))
    return "with projects, give each project its project key, account key and invitation";
  if (cfg->share_half_life > MAX_HALF_LIFE)
    return "share half-life must be from 1 to 31536000 seconds";
  if (cfg->slots > MAX_SLOTS)
    return "slots must be between 1 and 1024";
  if (cfg->prefetch > CAIRN_MAX_PREFETCH)
    return "prefetch must be between 0 and 16";
  if (cfg->name && !valid_label(cfg->name))
    return "name must be 1 to 256 characters on one line";
  if (cfg->cluster && !valid_label(cfg->cluster))
    return "cluster must be 1 to 256 characters on one line";
  if (cfg->team && !cairn__team_valid(cfg->team))
    return "team must be 1 to 64 printable ASCII characters, without quotes or backslashes";
  if (cfg->dir && !cfg->dir[0])
    return "dir must not be empty";
  if (cfg->peer_listen && strcmp(cfg->peer_listen, "off") != 0 &&
      cairn__peer_parse_listen(cfg->peer_listen) != 0)
    return "peer listen address must be HOST:PORT (numeric IPv4 or [IPv6]) or off";
  if (cfg->peer_address && !valid_host(cfg->peer_address))
    return "peer address must be a host name or address";
  if (cfg->cores > CAIRN_MAX_CORES)
    return "cores must be between 1 and 4096";
  if (cfg->memory_mib > (unsigned long long)CAIRN_MAX_RES_MIB ||
      cfg->disk_mib > (unsigned long long)CAIRN_MAX_RES_MIB)
    return "memory and disk must be at most 1073741824 MiB";
  if (cfg->peer_max > CAIRN_MAX_PEER_MAX)
    return "peer transfers at once must be between 1 and 1024";
  if (cfg->log_level < CAIRN_LOG_DEFAULT || cfg->log_level > CAIRN_LOG_DEBUG)
    return "unknown log level";
  if (cfg->max_disk_mib > (unsigned long long)CAIRN_MAX_RES_MIB)
    return "max disk must be at most 1073741824 MiB";
  if (cfg->cpu_limit > 100)
    return "cpu limit must be a percentage from 1 to 100";
  if (cfg->idle_threshold > MAX_IDLE_THRESHOLD)
    return "idle threshold must be a percentage of one core from 1 to 409600";
  if (cfg->idle_settle > MAX_IDLE_SETTLE)
    return "idle settle time must be from 1 to 86400 seconds";
  if (cfg->hours && cairn__hours_parse(cfg->hours, hours) != 0)
    return "hours must be A-B[,A-B...] with A and B as H or H:MM (0-24), at most 8 "
           "windows, e.g. 22-07";
  return NULL;
}

/* Sets up the worker's projects from cfg (server_url: one, in DIR itself;
 * projects: each in DIR/projects/<id>, none twice). */
static cairn_status init_projects(cairn_worker *w, const cairn_worker_config *cfg,
                                  cairn_error *err) {
  cairn_worker_project one = {cfg->server_url, 0, 0, cfg->project_key, cfg->account_key,
                              cfg->invitation};
  const cairn_worker_project *list = cfg->projects ? cfg->projects : &one;
  size_t n = cfg->projects ? cfg->nprojects : 1;
  w->several = cfg->projects != NULL;
  w->projects = calloc(n, sizeof *w->projects);
  if (!w->projects)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t k = 0; k < n; k++) {
    cairn__project *p = &w->projects[k];
    w->nprojects = k + 1; /* destroyed by delete, even half set up */
    cairn_status rc = cairn__project_init(p, k, &list[k], &w->log, w->several, w->peer_address,
                                          err);
    p->owner = w;
    if (rc != CAIRN_OK)
      return rc;
    for (size_t j = 0; j < k; j++)
      if (strcmp(w->projects[j].id, p->id) == 0)
        return cairn__error_set(err, CAIRN_EINVAL, "project %s is listed twice", p->server);
  }
  return CAIRN_OK;
}

/* Sets the division of the slots among the projects up (ledger.h). */
static void open_ledger(cairn_worker *w) {
  unsigned shares[CAIRN__MAX_PROJECTS];
  const cairn__logger *logs[CAIRN__MAX_PROJECTS];
  for (size_t k = 0; k < w->nprojects; k++) {
    shares[k] = w->projects[k].share;
    logs[k] = &w->projects[k].log;
  }
  cairn__ledger_init(&w->ledger, w->nprojects, shares, w->half_life_s, logs, cairn__now_ms());
  cairn__cpids_init(&w->cpids, w->nprojects);
  w->ledger_ok = 1;
}

cairn_worker *cairn_worker_create(const cairn_worker_config *cfg, cairn_error *err) {
  cairn__hours hours = {0};
  char host[256];
  int oom = 0;
  const char *problem = config_problem(cfg, &hours);
  char bind_why[320];
  if (!problem)
    problem = binds_problem(cfg, bind_why, sizeof bind_why);
  if (problem) {
    cairn__error_set(err, CAIRN_EINVAL, "%s", problem);
    return NULL;
  }
  pthread_once(&global_once, global_init);
  cairn_worker *w = calloc(1, sizeof *w);
  if (!w)
    goto oom;
  pthread_mutex_init(&w->mu, NULL);
  cairn__logger_init(&w->log, cfg->log_level, cfg->log_fn, cfg->log_userdata);
  w->lock_fd = -1;
  cairn__app_platform(w->platform);
  if (cairn__stopper_init(&w->stopper) != 0) {
    cairn_worker_delete(w);
    goto oom;
  }
  w->dir = dup_or_null(cfg->dir ? cfg->dir : DEFAULT_DIR, &oom);
  if (!cfg->name && gethostname(host, sizeof host) == 0) {
    host[sizeof host - 1] = '\0';
    w->name = dup_or_null(host, &oom);
  } else
    w->name = dup_or_null(cfg->name, &oom);
  w->cluster = dup_or_null(cfg->cluster, &oom);
  w->team = dup_or_null(cfg->team, &oom);
  w->slots_cfg = cfg->slots;
  w->slots = cfg->slots ? cfg->slots : 1;
  w->cfg_offer = (cairn__resources){cfg->cores, (int64_t)cfg->memory_mib, (int64_t)cfg->disk_mib};
  w->exit_when_idle = cfg->exit_when_idle;
  w->prefetch = cfg->prefetch;
  w->max_tasks = cfg->max_tasks;
  w->half_life_s = cfg->share_half_life ? cfg->share_half_life : CAIRN__DEFAULT_HALF_LIFE_S;
  if (!cfg->peer_listen || strcmp(cfg->peer_listen, "off") != 0)
    w->peer_listen = dup_or_null(cfg->peer_listen ? cfg->peer_listen : DEFAULT_PEER_LISTEN, &oom);
  w->peer_address = dup_or_null(cfg->peer_address, &oom);
  w->peer_max = cfg->peer_max ? cfg->peer_max : CAIRN_DEFAULT_PEER_MAX;
  w->stall_ms = cfg->stall_ms ? cfg->stall_ms : DEFAULT_STALL_MS;
  w->download_kib = cfg->download_kib;
  w->throttle_cfg = (cairn__throttle_cfg){cfg->idle_only != 0, cfg->idle_threshold,
                                          cfg->idle_settle, cfg->cpu_limit, cfg->hours != NULL,
                                          hours};
  w->max_disk_mib = cfg->max_disk_mib;
  if (copy_sandbox(w, cfg) != 0)
    oom = 1;
  if (oom) {
    cairn_worker_delete(w);
    goto oom;
  }
  cairn_status rc = init_projects(w, cfg, err);
  if (rc != CAIRN_OK) {
    cairn_worker_delete(w);
    return NULL;
  }
  open_ledger(w); /* before any thread may read the projects' figures */
  return w;
oom:
  cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  return NULL;
}

static cairn_status add_app(cairn_worker *w, const char *name, const char *path,
                            cairn_task_fn fn, void *userdata, cairn_error *err) {
  if (w->started)
    return cairn__error_set(err, CAIRN_ECONFLICT, "apps must be added before cairn_worker_run()");
  if (!valid_label(name) || strchr(name, '=') || strchr(name, '/'))
    return cairn__error_set(err, CAIRN_EINVAL, "app name \"%.100s\" must be 1 to 256 characters "
                           "without '=', '/' or newline", name ? name : "");
  if (cairn__worker_app(w, name))
    return cairn__error_set(err, CAIRN_EINVAL, "app \"%s\" is registered twice", name);
  if (w->napps >= CAIRN_MAX_APPS)
    return cairn__error_set(err, CAIRN_EINVAL, "at most %u apps per worker (the protocol's cap)",
                           CAIRN_MAX_APPS);
  char *abs = NULL;
  if (path) {
    abs = realpath(path, NULL);
    if (!abs || access(abs, X_OK) != 0 || cairn__file_size(abs) < 0) {
      int e = errno ? errno : EACCES;
      cairn__error_set(err, CAIRN_EINVAL, "app %s: %s is not an executable file: %s", name, path,
                      abs && cairn__file_size(abs) < 0 ? "not a regular file" : strerror(e));
      free(abs);
      return CAIRN_EINVAL;
    }
  }
  cairn__app *apps = realloc(w->apps, (w->napps + 1) * sizeof *apps);
  const char **names = apps ? realloc(w->app_names, (w->napps + 1) * sizeof *names) : NULL;
  if (apps)
    w->apps = apps;
  if (names)
    w->app_names = names;
  char *dup = names ? strdup(name) : NULL;
  if (!dup) {
    free(abs);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  w->apps[w->napps] = (cairn__app){dup, abs, fn, userdata, NULL};
  w->app_names[w->napps] = dup;
  w->napps++;
  return CAIRN_OK;
}

cairn_status cairn_worker_add_exec_app(cairn_worker *w, const char *name, const char *path,
                                       cairn_error *err) {
  if (!path)
    return cairn__error_set(err, CAIRN_EINVAL, "app %s: no program path", name ? name : "");
  return add_app(w, name, path, NULL, NULL, err);
}

cairn_status cairn_worker_add_callback_app(cairn_worker *w, const char *name, cairn_task_fn fn,
                                           void *userdata, cairn_error *err) {
  if (!fn)
    return cairn__error_set(err, CAIRN_EINVAL, "app %s: no callback", name ? name : "");
  return add_app(w, name, NULL, fn, userdata, err);
}

/* Project p's part of --max-disk: the cap times its share over the
 * shares' sum (a backup project counting a share of 1), at least 1 MiB. */
static unsigned long long disk_part(const cairn_worker *w, const cairn__project *p) {
  double sum = 0;
  if (!w->max_disk_mib || w->nprojects == 1)
    return w->max_disk_mib;
  for (size_t k = 0; k < w->nprojects; k++)
    sum += w->projects[k].share ? w->projects[k].share : 1;
  double part = (double)w->max_disk_mib * (p->share ? p->share : 1) / sum;
  return part < 1 ? 1 : (unsigned long long)part;
}

/* Creates DIR, takes DIR/lock, then each project's directory and parts. */
static cairn_status setup_dir(cairn_worker *w, cairn_error *err) {
  cairn_status rc = cairn__mkdirs(w->dir, 0700, err);
  if (rc != CAIRN_OK)
    return rc;
  char *abs = realpath(w->dir, NULL);
  if (!abs)
    return cairn__error_set(err, CAIRN_EIO, "%s: %s", w->dir, strerror(errno));
  free(w->dir);
  w->dir = abs;
  w->lock_path = cairn__path_join(w->dir, "lock");
  if (!w->lock_path)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  w->lock_fd = open(w->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (w->lock_fd < 0)
    return cairn__error_set(err, CAIRN_EIO, "cannot open %s: %s", w->lock_path, strerror(errno));
  if (flock(w->lock_fd, LOCK_EX | LOCK_NB) != 0)
    return cairn__error_set(err, CAIRN_EIO, "%s is used by another cairn-worker", w->dir);
  for (size_t k = 0; k < w->nprojects && rc == CAIRN_OK; k++)
    rc = cairn__project_setup_dir(&w->projects[k], w->dir, w->several,
                                  disk_part(w, &w->projects[k]), err);
  return rc;
}

static int app_runs(void *ud, const char *name) { return cairn__worker_app(ud, name) != NULL; }

/* Keeps the tasks recorded in each project's run directory that may run
 * again, clears the rest (resume.h). */
static cairn_status resume_scan(cairn_worker *w, cairn_error *err) {
  for (size_t k = 0; k < w->nprojects; k++) {
    cairn__project *p = &w->projects[k];
    size_t pending = 0;
    if (cairn__resume_init(&p->resume, p->run_dir, w->slots, &p->log) != 0)
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    p->resume_ok = 1;
    cairn_status rc = cairn__resume_scan(&p->resume, app_runs, w, &pending, err);
    if (rc != CAIRN_OK)
      return rc;
    if (pending)
      CAIRN_INFO(&p->log, "%zu task%s recorded in %s may run again", pending,
                 pending == 1 ? "" : "s", p->run_dir);
  }
  return CAIRN_OK;
}

static int stopping_cb(void *ud) { return cairn__stopper_stopping(ud); }

/* A connection's handle to project p's master. */
static cairn__http *new_http(cairn_worker *w, cairn__project *p) {
  cairn__http *h = cairn__http_create(p->server);
  if (h) {
    cairn__http_set_cancel(h, stopping_cb, &w->stopper);
    cairn__http_set_pace(h, &p->pace);
    cairn__http_set_stall_timeout(h, (long)w->stall_ms);
    cairn__http_set_download_limit(h, (long long)w->download_kib * 1024);
  }
  return h;
}

static void held(void *ud, const char *sha256) { cairn__peerstate_have(ud, sha256); }

/* The peer server's address of project k: --peer-listen, its port plus k
 * when one was given (each project serves its own cache). */
static void listen_of(const cairn_worker *w, size_t k, char *out, size_t cap) {
  const char *colon = strrchr(w->peer_listen, ':');
  long port = colon ? strtol(colon + 1, NULL, 10) : 0;
  if (!colon || port == 0 || k == 0)
    snprintf(out, cap, "%s", w->peer_listen);
  else
    snprintf(out, cap, "%.*s:%ld", (int)(colon - w->peer_listen), w->peer_listen, port + (long)k);
}

/* Lists each project's cache as held and starts its peer server (unless
 * they are off). */
static cairn_status start_peering(cairn_worker *w, cairn_error *err) {
  for (size_t k = 0; k < w->nprojects; k++) {
    cairn__project *p = &w->projects[k];
    char listen[300];
    cairn_status rc = cairn__cache_each(&p->cache, held, &p->peers, err);
    if (rc != CAIRN_OK || !w->peer_listen)
      return rc;
    listen_of(w, k, listen, sizeof listen);
    p->peer = cairn__peer_start_shared(listen, p->cache_dir, w->peer_max, &p->peers,
                                       p->cache.verified, p->cache.relay, &p->log, err);
    if (!p->peer)
      return err->status == CAIRN_ENOMEM ? CAIRN_ENOMEM : CAIRN_EINVAL;
    cairn__peerstate_set_port(&p->peers, cairn__peer_port(p->peer));
    cairn__peerstate_set_peer_max(&p->peers, w->peer_max);
  }
  return CAIRN_OK;
}

/* Decides the offer (configured, else detected) and the task threads:
 * --slots when given (then at least that many cores are offered unless
 * cores were configured, so that N one-core tasks still run at once),
 * else one per offered core. */
static cairn_status decide_offer(cairn_worker *w, cairn_error *err) {
  cairn__resources det;
  cairn__resources_detect(w->dir, &det);
  w->offer = det;
  if (w->cfg_offer.cores)
    w->offer.cores = w->cfg_offer.cores;
  else if (w->slots_cfg > det.cores)
    w->offer.cores = w->slots_cfg;
  if (w->cfg_offer.memory_mib)
    w->offer.memory_mib = w->cfg_offer.memory_mib;
  if (w->cfg_offer.disk_mib)
    w->offer.disk_mib = w->cfg_offer.disk_mib;
  w->slots = w->slots_cfg ? w->slots_cfg
             : w->offer.cores > MAX_SLOTS ? MAX_SLOTS : (unsigned)w->offer.cores;
  if (cairn__respool_init(&w->pool, &w->offer) != 0)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  w->pool_ok = 1;
  return CAIRN_OK;
}

/* Starts slot i's thread with a connection to each project's master. */
static int start_slot(cairn_worker *w, cairn__slot *sl, size_t i) {
  *sl = (cairn__slot){.w = w, .i = i};
  for (size_t k = 0; k < w->nprojects; k++)
    if (!(sl->conns[k].http = new_http(w, &w->projects[k])))
      return -1;
  return pthread_create(&sl->thread, NULL, cairn__slot_main, sl);
}

static void free_slot(cairn_worker *w, cairn__slot *sl) {
  for (size_t k = 0; k < w->nprojects; k++)
    cairn__http_delete(sl->conns[k].http);
}

/* Waits for the slots' threads; with several projects, logging each one's
 * figures every CAIRN__LEDGER_REPORT_MS meanwhile (ledger.h). */
static void join_slots(cairn_worker *w, cairn__slot *slots, size_t started) {
  while (w->several && !cairn__stopper_draining(&w->stopper)) {
    cairn__stopper_sleep(&w->stopper, 1000);
    cairn__ledger_report(&w->ledger, cairn__now_ms(), 0);
  }
  for (size_t i = 0; i < started; i++) {
    pthread_join(slots[i].thread, NULL);
    free_slot(w, &slots[i]);
  }
  if (w->several)
    cairn__ledger_report(&w->ledger, cairn__now_ms(), 1);
}

/* Starts the threads (per project a heartbeat and an outbox; the throttle;
 * the slots), waits for the slots, then for the outboxes, and stops the
 * heartbeats. */
static void run_threads(cairn_worker *w) {
  cairn__slot *slots = calloc(w->slots, sizeof *slots);
  cairn__heartbeat *hb = calloc(w->nprojects, sizeof *hb);
  size_t started = 0, hb_started = 0;
  if (!slots || !hb) {
    cairn__worker_fatal(w, CAIRN_ENOMEM, "out of memory");
    free(slots);
    free(hb);
    return;
  }
  for (size_t k = 0; k < w->nprojects; k++) {
    cairn__project *p = &w->projects[k];
    hb[k] = (cairn__heartbeat){.w = w, .p = p, .conn = {.http = new_http(w, p)}};
    atomic_init(&hb[k].quit, 0);
    if (!hb[k].conn.http || pthread_create(&hb[k].thread, NULL, cairn__heartbeat_main,
                                           &hb[k]) != 0) {
      cairn__worker_fatal(w, CAIRN_EINTERNAL, "cannot start the heartbeat thread");
      break;
    }
    hb_started++;
    if (cairn__outbox_start(&p->outbox, new_http(w, p), cairn__tally_outbox_done, p) != 0)
      cairn__worker_fatal(w, CAIRN_EINTERNAL, "cannot start the outbox thread");
  }
  if (cairn__throttle_start(&w->throttle) != 0)
    cairn__worker_fatal(w, CAIRN_EINTERNAL, "cannot start the throttle thread");
  for (size_t i = 0; i < w->slots && !cairn__stopper_stopping(&w->stopper); i++) {
    if (start_slot(w, &slots[i], i) != 0) {
      free_slot(w, &slots[i]);
      cairn__worker_fatal(w, CAIRN_EINTERNAL, "cannot start task thread %zu", i);
      break;
    }
    started++;
  }
  join_slots(w, slots, started);
  for (size_t k = 0; k < w->nprojects; k++) /* results still waiting for their master */
    cairn__outbox_finish(&w->projects[k].outbox);
  cairn__throttle_stop(&w->throttle);
  for (size_t k = 0; k < w->nprojects; k++) {
    atomic_store(&hb[k].quit, 1);
    if (k < hb_started)
      pthread_join(hb[k].thread, NULL);
    cairn__http_delete(hb[k].conn.http);
  }
  free(slots);
  free(hb);
}

/* The registration project p's master gets (credentials.h). */
static cairn__registration registration(cairn_worker *w, const cairn__project *p) {
  return (cairn__registration){w->name, w->cluster, w->app_names, w->napps, w->slots,
                               {0, 0, 0}, p->invitation, w->team,
                               p->has_project_key ? w->platform : NULL,
                               w->sandboxed ? "bwrap" : "none", p->account_key};
}

/* Opens project p's identity (registers when it has none) and asks its
 * master about the tasks recorded in its directory. A worker of several
 * projects tries each master once and goes on: one that does not answer
 * yet is registered with when its slots or its heartbeat reach it. */
static cairn_status open_project(cairn_worker *w, cairn__project *p, cairn_error *err) {
  cairn__registration reg = registration(w, p);
  cairn_status rc = cairn__project_setup_run(p, w->slots, w->prefetch, &reg, &w->stopper,
                                             &w->offer, err);
  cairn__conn conn = {.http = rc == CAIRN_OK ? new_http(w, p) : NULL};
  if (rc == CAIRN_OK && !conn.http)
    rc = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  if (rc != CAIRN_OK)
    return rc;
  long long now = cairn__now_ms();
  if (w->several)
    p->session.give_up_ms = now; /* one try */
  else if (w->exit_when_idle)
    p->session.give_up_ms = now + (long long)w->exit_when_idle * 1000;
  rc = cairn__session_open(&p->session, &conn, err);
  if (rc == CAIRN_EIO && w->several && !cairn__stopper_stopping(&w->stopper)) {
    CAIRN_WARN(&p->log, "cannot register yet: %s (tried again when its slots ask it for work)",
               err->text);
    rc = CAIRN_OK;
  }
  if (p->distrusted) /* an earlier run found its audit log inconsistent (said) */
    cairn__worker_distrust(w, p, "its audit log was found inconsistent by an earlier run");
  else if (rc == CAIRN_OK) {
    /* audit log: its master's key pinned, or checked (auditlog.h) */
    cairn_error aerr = {0};
    if (cairn__auditlog_pin(&p->audit, conn.http, &aerr) == CAIRN_EFORBIDDEN) {
      if (!w->several) {
        *err = aerr;
        rc = CAIRN_EFORBIDDEN;
      } else
        cairn__worker_distrust(w, p, aerr.text);
    }
  }
  if (rc == CAIRN_OK) {
    if (w->several)
      p->session.give_up_ms = now + RESUME_PATIENCE_MS;
    cairn__heartbeat_resume(w, p, &conn); /* which recorded tasks are still ours */
    if (w->several)
      p->session.give_up_ms = 0;
  }
  cairn__http_delete(conn.http);
  if (rc == CAIRN_OK) {
    long long id, row;
    cairn__session_identity(&p->session, &id, &row);
    if (id > 0)
      CAIRN_INFO(&p->log, "volunteer %lld (row %lld) polling %s with %u slot%s in %s", id, row,
                 p->server, w->slots, w->slots == 1 ? "" : "s", p->dir);
    else
      CAIRN_INFO(&p->log, "not registered yet with %s; state in %s", p->server, p->dir);
    if (w->several)
      CAIRN_INFO(&p->log, "project %s: resource share %u%s", p->id, p->share,
                 p->share ? "" : " (a backup project: asked only while no other has work)");
  }
  return rc;
}

cairn_status cairn_worker_run(cairn_worker *w, cairn_error *out) {
  cairn_error err = {0};
  if (w->started)
    return cairn__error_set(out, CAIRN_ECONFLICT, "cairn_worker_run() was already called");
  w->started = 1;
  int keys = 0;
  for (size_t k = 0; k < w->nprojects; k++)
    keys |= w->projects[k].has_project_key;
  if (w->napps == 0 && !keys)
    return cairn__error_set(out, CAIRN_EINVAL, "no apps registered, and no project key");
  if (w->several)
    CAIRN_INFO(&w->log, "%zu project%s; usage measured with a half-life of %.0f s",
               w->nprojects, w->nprojects == 1 ? "" : "s", w->half_life_s);
  cairn_status rc = setup_dir(w, &err);
  if (rc == CAIRN_OK)
    rc = check_sandbox(w, &err);
  if (rc == CAIRN_OK)
    rc = decide_offer(w, &err);
  if (rc == CAIRN_OK)
    rc = resume_scan(w, &err);
  if (rc == CAIRN_OK && cairn__throttle_init(&w->throttle, &w->throttle_cfg, w->slots, &w->log))
    rc = cairn__error_set(&err, CAIRN_ENOMEM, "out of memory");
  w->throttle_ok = rc == CAIRN_OK;
  if (rc == CAIRN_OK)
    rc = start_peering(w, &err);
  for (size_t k = 0; k < w->nprojects && rc == CAIRN_OK; k++)
    rc = open_project(w, &w->projects[k], &err);
  if (rc == CAIRN_OK) {
    CAIRN_INFO(&w->log, "offering %lld cores, %lld MiB memory, %lld MiB disk",
               (long long)w->offer.cores, (long long)w->offer.memory_mib,
               (long long)w->offer.disk_mib);
    w->last_work_ms = cairn__now_ms();
    run_threads(w);
    for (size_t k = 0; k < w->nprojects; k++)
      cairn__keep_leave(w, &w->projects[k]); /* outputs kept here their master still needs */
  } else if (rc == CAIRN_EIO && w->exit_when_idle && !cairn__stopper_stopping(&w->stopper))
    CAIRN_WARN(&w->log, "no master for %u seconds (--exit-when-idle): %s", w->exit_when_idle, err.text);
  else if (!(rc == CAIRN_EIO && cairn__stopper_stopping(&w->stopper)))
    cairn__worker_fatal(w, rc, "%s", err.text);
  for (size_t k = 0; k < w->nprojects; k++) {
    cairn__peer_stop(w->projects[k].peer);
    w->projects[k].peer = NULL;
  }
  if (w->throttle_ok)
    cairn__throttle_destroy(&w->throttle);
  w->throttle_ok = 0;
  if (w->pool_ok)
    cairn__respool_destroy(&w->pool);
  w->pool_ok = 0;
  pthread_mutex_lock(&w->mu);
  cairn_error fatal = w->error;
  pthread_mutex_unlock(&w->mu);
  if (fatal.status != CAIRN_OK && out)
    *out = fatal;
  return fatal.status;
}

void cairn_worker_stop(cairn_worker *w) {
  if (w)
    cairn__stopper_stop(&w->stopper);
}

void cairn_worker_get_stats(const cairn_worker *w, cairn_worker_stats *out) {
  cairn_worker *mw = (cairn_worker *)w;
  pthread_mutex_lock(&mw->mu);
  *out = w->stats;
  pthread_mutex_unlock(&mw->mu);
}

size_t cairn_worker_project_count(const cairn_worker *w) { return w ? w->nprojects : 0; }

cairn_status cairn_worker_get_project_stats(const cairn_worker *w, size_t i,
                                            cairn_worker_project_stats *out) {
  if (!w || !out || i >= w->nprojects)
    return CAIRN_EINVAL;
  memset(out, 0, sizeof *out);
  if (w->ledger_ok)
    cairn__ledger_stats((cairn__ledger *)&w->ledger, i, cairn__now_ms(), out);
  out->server_url = w->projects[i].server;
  out->share = w->projects[i].share;
  return CAIRN_OK;
}

void cairn_worker_delete(cairn_worker *w) {
  if (!w)
    return;
  for (size_t i = 0; i < w->napps; i++) {
    free(w->apps[i].name);
    free(w->apps[i].path);
  }
  free(w->apps);
  free(w->app_names);
  for (size_t k = 0; k < w->nprojects; k++)
    cairn__project_destroy(&w->projects[k]);
  free(w->projects);
  if (w->ledger_ok) {
    cairn__ledger_destroy(&w->ledger);
    cairn__cpids_destroy(&w->cpids);
  }
  free(w->dir);
  free(w->name);
  free(w->cluster);
  free(w->team);
  free(w->peer_listen);
  free(w->peer_address);
  for (size_t i = 0; i < CAIRN__SANDBOX_MAX_BINDS; i++)
    free(w->sandbox_paths[i]);
  free(w->lock_path);
  if (w->lock_fd >= 0)
    close(w->lock_fd);
  cairn__stopper_destroy(&w->stopper);
  pthread_mutex_destroy(&w->mu);
  free(w);
}
