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
  size_t programs = w->has_project_key != 0;
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
  if (cairn__sandbox_probe(&w->sandbox, w->run_dir, why, sizeof why) != 0)
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

/* 1 when s is 64 hexadecimal characters (an account key). */
static int hex64(const char *s) {
  return strlen(s) == 64 && strspn(s, "0123456789abcdefABCDEF") == 64;
}

/* A host name or address to put in a URL: no spaces, slashes or user part. */
static int valid_host(const char *s) {
  return s && s[0] && strlen(s) < 254 && !strpbrk(s, " \t\n\r/@?#[]");
}

void cairn_worker_config_init(cairn_worker_config *cfg) {
  memset(cfg, 0, sizeof *cfg); /* every zero or NULL field is "the default" */
}

cairn_worker *cairn_worker_create(const cairn_worker_config *cfg, cairn_error *err) {
  const char *problem = NULL;
  cairn__hours hours = {0};
  char host[256];
  int oom = 0;
  if (!cfg || !cfg->server_url || (strncmp(cfg->server_url, "http://", 7) != 0 &&
                                   strncmp(cfg->server_url, "https://", 8) != 0))
    problem = "server URL must start with http:// or https://";
  else if (cfg->slots > MAX_SLOTS)
    problem = "slots must be between 1 and 1024";
  else if (cfg->prefetch > CAIRN_MAX_PREFETCH)
    problem = "prefetch must be between 0 and 16";
  else if (cfg->name && !valid_label(cfg->name))
    problem = "name must be 1 to 256 characters on one line";
  else if (cfg->cluster && !valid_label(cfg->cluster))
    problem = "cluster must be 1 to 256 characters on one line";
  else if (cfg->team && !cairn__team_valid(cfg->team))
    problem = "team must be 1 to 64 printable ASCII characters, without quotes or backslashes";
  else if (cfg->dir && !cfg->dir[0])
    problem = "dir must not be empty";
  else if (cfg->peer_listen && strcmp(cfg->peer_listen, "off") != 0 &&
           cairn__peer_parse_listen(cfg->peer_listen) != 0)
    problem = "peer listen address must be HOST:PORT (numeric IPv4 or [IPv6]) or off";
  else if (cfg->peer_address && !valid_host(cfg->peer_address))
    problem = "peer address must be a host name or address";
  else if (cfg->cores > CAIRN_MAX_CORES)
    problem = "cores must be between 1 and 4096";
  else if (cfg->memory_mib > (unsigned long long)CAIRN_MAX_RES_MIB ||
           cfg->disk_mib > (unsigned long long)CAIRN_MAX_RES_MIB)
    problem = "memory and disk must be at most 1073741824 MiB";
  else if (cfg->peer_max > CAIRN_MAX_PEER_MAX)
    problem = "peer transfers at once must be between 1 and 1024";
  else if (cfg->log_level < CAIRN_LOG_DEFAULT || cfg->log_level > CAIRN_LOG_DEBUG)
    problem = "unknown log level";
  else if (cfg->invitation && !valid_label(cfg->invitation))
    problem = "invitation must be 1 to 256 characters on one line";
  else if (cfg->account_key && !hex64(cfg->account_key))
    problem = "account key must be 64 hexadecimal characters";
  else if (cfg->max_disk_mib > (unsigned long long)CAIRN_MAX_RES_MIB)
    problem = "max disk must be at most 1073741824 MiB";
  else if (cfg->cpu_limit > 100)
    problem = "cpu limit must be a percentage from 1 to 100";
  else if (cfg->idle_threshold > MAX_IDLE_THRESHOLD)
    problem = "idle threshold must be a percentage of one core from 1 to 409600";
  else if (cfg->idle_settle > MAX_IDLE_SETTLE)
    problem = "idle settle time must be from 1 to 86400 seconds";
  else if (cfg->hours && cairn__hours_parse(cfg->hours, &hours) != 0)
    problem = "hours must be A-B[,A-B...] with A and B as H or H:MM (0-24), at most 8 "
              "windows, e.g. 22-07";
  uint8_t project_key[32];
  cairn_error kerr = {0};
  if (!problem && cfg->project_key &&
      cairn__app_pubkey_load(cfg->project_key, project_key, &kerr) != CAIRN_OK) {
    cairn__error_set(err, CAIRN_EINVAL, "project key: %s", kerr.text);
    return NULL;
  }
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
  cairn__pace_init(&w->pace);
  cairn__logger_init(&w->log, cfg->log_level, cfg->log_fn, cfg->log_userdata);
  w->lock_fd = -1;
  if (cfg->project_key) {
    memcpy(w->project_key, project_key, sizeof project_key);
    w->has_project_key = 1;
    cairn__app_platform(w->platform);
  }
  if (cairn__stopper_init(&w->stopper) != 0) {
    cairn_worker_delete(w);
    goto oom;
  }
  size_t n = strlen(cfg->server_url);
  while (n > 0 && cfg->server_url[n - 1] == '/')
    n--;
  w->server = strndup(cfg->server_url, n);
  w->dir = dup_or_null(cfg->dir ? cfg->dir : DEFAULT_DIR, &oom);
  if (!cfg->name && gethostname(host, sizeof host) == 0) {
    host[sizeof host - 1] = '\0';
    w->name = dup_or_null(host, &oom);
  } else
    w->name = dup_or_null(cfg->name, &oom);
  w->cluster = dup_or_null(cfg->cluster, &oom);
  w->team = dup_or_null(cfg->team, &oom);
  w->invitation = dup_or_null(cfg->invitation, &oom);
  w->account_key = dup_or_null(cfg->account_key, &oom);
  w->slots_cfg = cfg->slots;
  w->slots = cfg->slots ? cfg->slots : 1;
  w->cfg_offer = (cairn__resources){cfg->cores, (int64_t)cfg->memory_mib, (int64_t)cfg->disk_mib};
  w->exit_when_idle = cfg->exit_when_idle;
  w->prefetch = cfg->prefetch;
  w->max_tasks = cfg->max_tasks;
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
  if (!oom && cairn__peerstate_init(&w->peers, w->peer_address) != 0)
    oom = 1;
  else if (!oom) {
    w->peers_ok = 1;
    w->peers.log = &w->log;
  }
  if (!w->server || oom) {
    cairn_worker_delete(w);
    goto oom;
  }
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

/* Creates DIR and its parts, takes DIR/lock. */
static cairn_status setup_dir(cairn_worker *w, cairn_error *err) {
  cairn_status rc = cairn__mkdirs(w->dir, 0700, err);
  if (rc != CAIRN_OK)
    return rc;
  char *abs = realpath(w->dir, NULL);
  if (!abs)
    return cairn__error_set(err, CAIRN_EIO, "%s: %s", w->dir, strerror(errno));
  free(w->dir);
  w->dir = abs;
  w->cred_path = cairn__path_join(w->dir, "credentials.json");
  w->run_dir = cairn__path_join(w->dir, "run");
  w->cache_dir = cairn__path_join(w->dir, "cache");
  w->lock_path = cairn__path_join(w->dir, "lock");
  if (!w->cred_path || !w->run_dir || !w->cache_dir || !w->lock_path)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  w->lock_fd = open(w->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (w->lock_fd < 0)
    return cairn__error_set(err, CAIRN_EIO, "cannot open %s: %s", w->lock_path, strerror(errno));
  if (flock(w->lock_fd, LOCK_EX | LOCK_NB) != 0)
    return cairn__error_set(err, CAIRN_EIO, "%s is used by another cairn-worker", w->dir);
  rc = cairn__mkdirs(w->run_dir, 0700, err); /* its leftovers: resume_scan() */
  if (rc == CAIRN_OK)
    rc = cairn__cache_init(&w->cache, w->cache_dir, err);
  w->cache.log = &w->log;
  if (rc == CAIRN_OK && w->has_project_key) {
    char *apps = cairn__path_join(w->dir, "apps");
    rc = apps ? cairn__appver_init(&w->appver, apps, w->project_key, &w->cache, &w->log, err)
              : cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    w->appver_ok = rc == CAIRN_OK;
    free(apps);
  }
  if (rc == CAIRN_OK && !w->diskcap_ok) {
    cairn__diskcap_init(&w->diskcap, w->max_disk_mib, w->cache_dir, w->run_dir, &w->log);
    w->diskcap_ok = 1;
  }
  if (rc == CAIRN_OK) { /* audit log: DIR/audit (auditlog.h) */
    rc = cairn__auditlog_init(&w->audit, w->dir, &w->log, err);
    w->audit_ok = 1;
  }
  return rc;
}

static int app_runs(void *ud, const char *name) { return cairn__worker_app(ud, name) != NULL; }

/* Keeps the tasks recorded in DIR/run that may run again, clears the rest
 * (resume.h). */
static cairn_status resume_scan(cairn_worker *w, cairn_error *err) {
  size_t pending = 0;
  if (cairn__resume_init(&w->resume, w->run_dir, w->slots, &w->log) != 0)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  w->resume_ok = 1;
  cairn_status rc = cairn__resume_scan(&w->resume, app_runs, w, &pending, err);
  if (rc == CAIRN_OK && pending)
    CAIRN_INFO(&w->log, "%zu task%s recorded in %s may run again", pending,
               pending == 1 ? "" : "s", w->run_dir);
  return rc;
}

static int stopping_cb(void *ud) { return cairn__stopper_stopping(ud); }

static cairn__http *new_http(cairn_worker *w) {
  cairn__http *h = cairn__http_create(w->server);
  if (h) {
    cairn__http_set_cancel(h, stopping_cb, &w->stopper);
    cairn__http_set_pace(h, &w->pace);
    cairn__http_set_stall_timeout(h, (long)w->stall_ms);
    cairn__http_set_download_limit(h, (long long)w->download_kib * 1024);
  }
  return h;
}

static void held(void *ud, const char *sha256) { cairn__peerstate_have(ud, sha256); }

/* Lists the cache as held and starts the peer server (unless it is off). */
static cairn_status start_peering(cairn_worker *w, cairn_error *err) {
  cairn_status rc = cairn__cache_each(&w->cache, held, &w->peers, err);
  if (rc != CAIRN_OK || !w->peer_listen)
    return rc;
  w->peer = cairn__peer_start_shared(w->peer_listen, w->cache_dir, w->peer_max, &w->peers,
                                     w->cache.verified, w->cache.relay, &w->log, err);
  if (!w->peer)
    return err->status == CAIRN_ENOMEM ? CAIRN_ENOMEM : CAIRN_EINVAL;
  cairn__peerstate_set_port(&w->peers, cairn__peer_port(w->peer));
  cairn__peerstate_set_peer_max(&w->peers, w->peer_max);
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

/* Starts the threads, waits for the slots, stops the heartbeat. */
static void run_threads(cairn_worker *w) {
  cairn__slot *slots = calloc(w->slots, sizeof *slots);
  cairn__heartbeat hb = {.w = w};
  size_t started = 0;
  int hb_started = 0;
  atomic_init(&hb.quit, 0);
  if (!slots) {
    cairn__worker_fatal(w, CAIRN_ENOMEM, "out of memory");
    return;
  }
  hb.conn.http = new_http(w);
  if (!hb.conn.http || pthread_create(&hb.thread, NULL, cairn__heartbeat_main, &hb) != 0)
    cairn__worker_fatal(w, CAIRN_EINTERNAL, "cannot start the heartbeat thread");
  else
    hb_started = 1;
  if (cairn__throttle_start(&w->throttle) != 0)
    cairn__worker_fatal(w, CAIRN_EINTERNAL, "cannot start the throttle thread");
  for (size_t i = 0; i < w->slots && !cairn__stopper_stopping(&w->stopper); i++) {
    slots[i] = (cairn__slot){.w = w, .i = i, .conn = {.http = new_http(w)}};
    if (!slots[i].conn.http || pthread_create(&slots[i].thread, NULL, cairn__slot_main,
                                              &slots[i]) != 0) {
      cairn__http_delete(slots[i].conn.http);
      cairn__worker_fatal(w, CAIRN_EINTERNAL, "cannot start task thread %zu", i);
      break;
    }
    started++;
  }
  for (size_t i = 0; i < started; i++) {
    pthread_join(slots[i].thread, NULL);
    cairn__http_delete(slots[i].conn.http);
  }
  cairn__throttle_stop(&w->throttle);
  atomic_store(&hb.quit, 1);
  if (hb_started)
    pthread_join(hb.thread, NULL);
  cairn__http_delete(hb.conn.http);
  free(slots);
}

cairn_status cairn_worker_run(cairn_worker *w, cairn_error *out) {
  cairn_error err = {0};
  cairn__registration reg;
  cairn__conn conn = {0};
  int leases_ok = 0, session_ok = 0;
  if (w->started)
    return cairn__error_set(out, CAIRN_ECONFLICT, "cairn_worker_run() was already called");
  w->started = 1;
  if (w->napps == 0 && !w->has_project_key)
    return cairn__error_set(out, CAIRN_EINVAL, "no apps registered, and no project key");
  cairn_status rc = setup_dir(w, &err);
  if (rc == CAIRN_OK)
    rc = check_sandbox(w, &err);
  if (rc == CAIRN_OK)
    rc = decide_offer(w, &err);
  if (rc == CAIRN_OK)
    rc = resume_scan(w, &err);
  if (rc == CAIRN_OK && cairn__leases_init(&w->leases, w->slots, w->prefetch) != 0)
    rc = cairn__error_set(&err, CAIRN_ENOMEM, "out of memory");
  leases_ok = rc == CAIRN_OK;
  w->leases.log = &w->log;
  if (rc == CAIRN_OK && cairn__throttle_init(&w->throttle, &w->throttle_cfg, w->slots, &w->log))
    rc = cairn__error_set(&err, CAIRN_ENOMEM, "out of memory");
  w->throttle_ok = rc == CAIRN_OK;
  reg = (cairn__registration){w->name, w->cluster, w->app_names, w->napps, w->slots, {0, 0, 0},
                              w->invitation, w->team,
                              w->has_project_key ? w->platform : NULL,
                              w->sandboxed ? "bwrap" : "none", w->account_key};
  if (rc == CAIRN_OK)
    rc = start_peering(w, &err);
  if (rc == CAIRN_OK)
    rc = cairn__session_init(&w->session, w->cred_path, &reg, &w->stopper, &err);
  session_ok = rc == CAIRN_OK;
  if (session_ok) {
    w->session.peers = &w->peers;
    w->session.log = &w->log;
    w->session.offer = w->offer;
  }
  conn.http = rc == CAIRN_OK ? new_http(w) : NULL;
  if (rc == CAIRN_OK && !conn.http)
    rc = cairn__error_set(&err, CAIRN_ENOMEM, "out of memory");
  if (rc == CAIRN_OK) {
    if (w->exit_when_idle)
      w->session.give_up_ms = cairn__now_ms() + (long long)w->exit_when_idle * 1000;
    rc = cairn__session_open(&w->session, &conn, &err);
  }
  if (rc == CAIRN_OK) /* audit log: the master's key pinned, or checked (auditlog.h) */
    rc = cairn__auditlog_pin(&w->audit, conn.http, &err);
  if (rc == CAIRN_OK)
    cairn__heartbeat_resume(w, &conn); /* which recorded tasks are still ours */
  cairn__http_delete(conn.http);
  if (rc == CAIRN_OK) {
    long long id, row;
    cairn__session_identity(&w->session, &id, &row);
    CAIRN_INFO(&w->log, "volunteer %lld (row %lld) polling %s with %u slot%s in %s", id, row, w->server,
               w->slots, w->slots == 1 ? "" : "s", w->dir);
    CAIRN_INFO(&w->log, "offering %lld cores, %lld MiB memory, %lld MiB disk",
               (long long)w->offer.cores, (long long)w->offer.memory_mib,
               (long long)w->offer.disk_mib);
    w->last_work_ms = cairn__now_ms();
    run_threads(w);
    cairn__keep_leave(w); /* outputs kept here that the master still needs */
  } else if (rc == CAIRN_EIO && w->exit_when_idle && !cairn__stopper_stopping(&w->stopper))
    CAIRN_WARN(&w->log, "no master for %u seconds (--exit-when-idle): %s", w->exit_when_idle, err.text);
  else if (!(rc == CAIRN_EIO && cairn__stopper_stopping(&w->stopper)))
    cairn__worker_fatal(w, rc, "%s", err.text);
  cairn__peer_stop(w->peer);
  w->peer = NULL;
  if (session_ok)
    cairn__session_destroy(&w->session);
  if (leases_ok)
    cairn__leases_destroy(&w->leases);
  if (w->resume_ok)
    cairn__resume_destroy(&w->resume);
  w->resume_ok = 0;
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

void cairn_worker_delete(cairn_worker *w) {
  if (!w)
    return;
  for (size_t i = 0; i < w->napps; i++) {
    free(w->apps[i].name);
    free(w->apps[i].path);
  }
  free(w->apps);
  free(w->app_names);
  free(w->server);
  free(w->dir);
  free(w->name);
  free(w->cluster);
  free(w->team);
  free(w->invitation);
  free(w->account_key);
  free(w->peer_listen);
  free(w->peer_address);
  for (size_t i = 0; i < CAIRN__SANDBOX_MAX_BINDS; i++)
    free(w->sandbox_paths[i]);
  if (w->peers_ok)
    cairn__peerstate_destroy(&w->peers);
  free(w->cred_path);
  free(w->run_dir);
  free(w->cache_dir);
  free(w->lock_path);
  if (w->lock_fd >= 0)
    close(w->lock_fd);
  cairn__cache_destroy(&w->cache);
  if (w->appver_ok)
    cairn__appver_destroy(&w->appver);
  if (w->diskcap_ok)
    cairn__diskcap_destroy(&w->diskcap);
  if (w->audit_ok) /* audit log (auditlog.h) */
    cairn__auditlog_destroy(&w->audit);
  cairn__stopper_destroy(&w->stopper);
  cairn__pace_destroy(&w->pace);
  pthread_mutex_destroy(&w->mu);
  free(w);
}
