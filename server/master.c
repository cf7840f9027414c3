/* master.c — the embeddable master handle: configuration, admin token, the
 * HTTP server and the lease checker thread, submit/wait for embedders. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan/jobspec.h"
#include "common/base64.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/protocol.h"
#include "common/appsig.h"
#include "common/termsafe.h"
#include "server/core/apps.h"
#include "server/http/http.h"
#include "server/store/chain.h"
#include "server/store/journal.h"
#include "server/store/tree.h"

/* The audit chain (server/store/chain.h), its key beside the database, and
 * the audit log's tree over it (tree.h) with the reader of its routes,
 * opened once the tree is brought to the chain. */
static cairn_status start_chain(cairn_master *m, cairn_error *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s.audit-key", m->db_path);
  cairn__chain *ch = cairn__chain_open(path, m->cfg.audit_tree >= 0, &m->log, err);
  if (!ch)
    return CAIRN_EIO;
  m->audit_tree = cairn__chain_tree(ch); /* its receipts' table: the journal's life */
  int tree = m->audit_tree != NULL;
  cairn__chain_public_key(ch, m->audit_pk);
  cairn_status st = cairn__journal_set_chain(m->core->journal, ch, err);
  if (st != CAIRN_OK)
    m->audit_tree = NULL; /* closed with ch */
  if (st == CAIRN_OK && tree && (!(m->audit = cairn__tree_reader_open(m->db_path, err)) ||
                                 !(m->audit_own = cairn__tree_reader_open(m->db_path, err))))
    st = err->status;
  return st;
}

void cairn_master_config_init(cairn_master_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->db_path = "cairn.db";
  cfg->listen = "127.0.0.1:8080";
  cfg->threads = 16;
  cfg->durable = 1;
  cfg->lease_check_seconds = 0.5;
  cfg->max_body_memory = CAIRN_DEFAULT_BODY_MEMORY;
  cfg->per_ip_connections = CAIRN_DEFAULT_PER_IP_CONNS;
  cfg->anonymous_connections = (int)CAIRN_DEFAULT_ANON_CONNS;
  cfg->idle_timeout_seconds = CAIRN_DEFAULT_IDLE_SECONDS;
  cfg->request_seconds = CAIRN_DEFAULT_REQUEST_SECONDS;
  cfg->anonymous_per_minute = CAIRN_DEFAULT_ANON_PER_MINUTE;
  cfg->volunteer_per_minute = CAIRN_DEFAULT_VOLUNTEER_PER_MINUTE;
  cfg->registration = "open";
  cfg->max_output_file_mib = CAIRN_DEFAULT_OUTPUT_MIB;
}

static int valid_token(const char *t) {
  size_t n = strlen(t);
  if (n < 16 || n > 128)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (t[i] <= ' ' || t[i] > '~')
      return 0;
  return 1;
}

/* $CAIRN_ADMIN_TOKEN, else the token file, else DB.admin-token (created). */
static cairn_status load_admin_token(cairn_master *m, cairn_error *err) {
  const char *t = m->cfg.admin_token ? m->cfg.admin_token : getenv("CAIRN_ADMIN_TOKEN");
  if (t && *t) {
    if (!valid_token(t)) {
      return cairn__error_set(err, CAIRN_EINVAL,
                             "the admin token must be 16 to 128 printable characters");
    }
    snprintf(m->admin_token, sizeof m->admin_token, "%s", t);
    return CAIRN_OK;
  }
  char path[4200];
  if (m->cfg.admin_token_file)
    snprintf(path, sizeof path, "%s", m->cfg.admin_token_file);
  else
    snprintf(path, sizeof path, "%s.admin-token", m->db_path);
  FILE *f = fopen(path, "r");
  if (f) {
    char buf[256] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
      buf[--n] = '\0';
    if (!valid_token(buf)) {
      return cairn__error_set(err, CAIRN_EINVAL, "%s does not hold a valid admin token", path);
    }
    snprintf(m->admin_token, sizeof m->admin_token, "%.128s", buf);
    return CAIRN_OK;
  }
  if (errno != ENOENT || m->cfg.admin_token_file) {
    return cairn__error_set(err, CAIRN_EIO, "cannot read the admin token file %s: %s", path,
                           strerror(errno));
  }
  unsigned char raw[32];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
    return cairn__error_set(err, CAIRN_EIO, "no randomness for the admin token");
  }
  for (int i = 0; i < 32; i++)
    snprintf(m->admin_token + 2 * i, 3, "%02x", raw[i]);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    return cairn__error_set(err, CAIRN_EIO, "cannot create %s: %s", path, strerror(errno));
  }
  char line[80];
  int n = snprintf(line, sizeof line, "%s\n", m->admin_token);
  int ok = write(fd, line, (size_t)n) == n && fsync(fd) == 0;
  close(fd);
  if (!ok) {
    unlink(path);
    return cairn__error_set(err, CAIRN_EIO, "cannot write %s", path);
  }
  return CAIRN_OK;
}

/* 1 when the n bytes of s are UTF-8 text (common/termsafe.h) with line
 * ends and tabs. */
static int text_lines(const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t k = cairn__text_char(s + i, n - i);
    if (!k && s[i] != '\n' && s[i] != '\r' && s[i] != '\t')
      return 0;
    i += k ? k : 1;
  }
  return 1;
}

/* The public pages' project name and description: cfg's, checked and
 * copied into m (docs/project.md). */
static cairn_status project_text(cairn_master *m, const cairn_master_config *cfg,
                                 cairn_error *err) {
  const char *name = cfg->project_name ? cfg->project_name : "Cairn";
  const char *text = cfg->project_description ? cfg->project_description : "";
  size_t n = strlen(name), d = strlen(text);
  if (n == 0 || n > 256 || !cairn__text_valid(name, n))
    return cairn__error_set(err, CAIRN_EINVAL, "the project's name must be 1 to 256 bytes of "
                            "UTF-8 text without control characters");
  if (d > 16384 || !text_lines(text, d))
    return cairn__error_set(err, CAIRN_EINVAL, "the project's description must be UTF-8 text "
                            "(lines allowed, no other control characters) of at most 16 KiB");
  m->project_name = strdup(name);
  m->project_description = strdup(text);
  m->cfg.project_name = m->cfg.project_description = NULL; /* use the copies */
  if (!m->project_name || !m->project_description)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  return CAIRN_OK;
}

cairn_master *cairn_master_create(const cairn_master_config *cfg, cairn_error *err) {
  cairn_master *m = calloc(1, sizeof *m);
  if (!m) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  m->cfg = *cfg;
  m->stop_pipe[0] = m->stop_pipe[1] = -1;
  pthread_mutex_init(&m->stats_lock, NULL);
  if (cfg->log_level < CAIRN_LOG_DEFAULT || cfg->log_level > CAIRN_LOG_DEBUG) {
    cairn__error_set(err, CAIRN_EINVAL, "unknown log level %d", (int)cfg->log_level);
    goto fail;
  }
  cairn__logger_init(&m->log, cfg->log_level, cfg->log_fn, cfg->log_userdata);
  const char *reg = cfg->registration ? cfg->registration : "open";
  m->registration = !strcmp(reg, "open")     ? CAIRN__REG_OPEN
                    : !strcmp(reg, "invite") ? CAIRN__REG_INVITE
                    : !strcmp(reg, "closed") ? CAIRN__REG_CLOSED
                                             : -1;
  m->cfg.registration = NULL; /* m->registration says it */
  if (m->registration < 0) {
    cairn__error_set(err, CAIRN_EINVAL, "registration must be open, invite or closed, not \"%.64s\"",
                    reg);
    goto fail;
  }
  if (!(cfg->keep_finished_days >= 0) || cfg->keep_finished_days > 36500) {
    cairn__error_set(err, CAIRN_EINVAL, "keep_finished_days must be from 0 to 36500");
    goto fail;
  }
  if (m->cfg.threads <= 0)
    m->cfg.threads = 16;
  if (m->cfg.lease_check_seconds <= 0)
    m->cfg.lease_check_seconds = 0.5;
  if (m->cfg.max_body_memory == 0)
    m->cfg.max_body_memory = CAIRN_DEFAULT_BODY_MEMORY;
  if (m->cfg.per_ip_connections == 0)
    m->cfg.per_ip_connections = CAIRN_DEFAULT_PER_IP_CONNS;
  if (m->cfg.anonymous_connections <= 0 ||
      m->cfg.anonymous_connections > (int)CAIRN_MAX_CONNECTIONS)
    m->cfg.anonymous_connections = (int)CAIRN_DEFAULT_ANON_CONNS;
  if (m->cfg.idle_timeout_seconds <= 0)
    m->cfg.idle_timeout_seconds = CAIRN_DEFAULT_IDLE_SECONDS;
  if (m->cfg.request_seconds <= 0)
    m->cfg.request_seconds = CAIRN_DEFAULT_REQUEST_SECONDS;
  if (m->cfg.anonymous_per_minute == 0)
    m->cfg.anonymous_per_minute = CAIRN_DEFAULT_ANON_PER_MINUTE;
  if (m->cfg.max_output_file_mib <= 0 || m->cfg.max_output_file_mib > CAIRN_MAX_OUTPUT_MIB)
    m->cfg.max_output_file_mib = CAIRN_DEFAULT_OUTPUT_MIB;
  if (m->cfg.max_pending_upload_mib <= 0 ||
      m->cfg.max_pending_upload_mib > CAIRN_OUTPUT_LEASE_FACTOR * CAIRN_MAX_OUTPUT_MIB)
    m->cfg.max_pending_upload_mib = CAIRN_OUTPUT_LEASE_FACTOR * m->cfg.max_output_file_mib;
  if (m->cfg.anonymous_per_minute > 0 &&
      !(m->anon = cairn__rl_create(m->cfg.anonymous_per_minute / 60.0,
                                   (double)m->cfg.anonymous_per_minute, CAIRN_RATELIMIT_SLOTS))) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto fail;
  }
  if (m->cfg.volunteer_per_minute == 0)
    m->cfg.volunteer_per_minute = CAIRN_DEFAULT_VOLUNTEER_PER_MINUTE;
  if (m->cfg.volunteer_per_minute > 0 &&
      !(m->vrate = cairn__rl_create(m->cfg.volunteer_per_minute / 60.0,
                                    m->cfg.volunteer_per_minute >= 6
                                      ? m->cfg.volunteer_per_minute / 6.0 : 1.0,
                                    CAIRN_VOLUNTEER_RATE_SLOTS))) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto fail;
  }
  m->db_path = strdup(cfg->db_path ? cfg->db_path : "cairn.db");
  m->listen = strdup(cfg->listen ? cfg->listen : "127.0.0.1:8080");
  m->web_dir = cfg->web_dir ? strdup(cfg->web_dir) : NULL;
  m->cfg.db_path = m->cfg.listen = m->cfg.web_dir = NULL; /* use the copies above */
  if (!m->db_path || !m->listen || (cfg->web_dir && !m->web_dir) ||
      pipe2(m->stop_pipe, O_CLOEXEC)) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of resources");
    goto fail;
  }
  fcntl(m->stop_pipe[1], F_SETFL, O_NONBLOCK);
  if (project_text(m, cfg, err) != CAIRN_OK || load_admin_token(m, err) != CAIRN_OK)
    goto fail;
  m->core = cairn__core_open(m->db_path, cfg->durable, cfg->ataf_family, &m->log,
                             m->stop_pipe[1], err);
  if (m->core) /* peer keys from the admin token: stable, and never in the database */
    cairn__core_set_peer_seed(m->core, m->admin_token);
  if (m->core && cfg->store_and_forward)
    cairn__core_set_cut_through(m->core, 0);
  if (!m->core || (cfg->audit_chain >= 0 && start_chain(m, err) != CAIRN_OK) ||
      (cfg->broadcast_plan && cairn__core_set_bplan(m->core, cfg->broadcast_plan, err)) ||
      (cfg->multicast_plan && cairn__core_set_mcast(m->core, cfg->multicast_plan, err)) ||
      !(m->invites = cairn__invites_open(m->core, err)))
    goto fail;
  int64_t ceiling[CAIRN_LIMIT_COUNT] = {cfg->max_wall_seconds, cfg->max_cpu_seconds,
                                        cfg->max_memory_mib, cfg->max_disk_mib,
                                        cfg->max_output_mib};
  if (cairn__core_set_limits(m->core, ceiling, cfg->wall_grace_seconds, err) != CAIRN_OK)
    goto fail;
  /* quarantine thresholds: 0 the default, negative off (docs/accountability.md) */
  double qi = cfg->quarantine_invalid, qe = cfg->quarantine_errors;
  cairn__quar_configure(m->core, qi < 0 ? 0 : qi > 0 ? qi : 0.5, qe < 0 ? 0 : qe > 0 ? qe : 0.8);
  /* adaptive replication (trust.c): 0 the defaults, a negative spot check never */
  if (cfg->ban_slice > 0)
    cairn__ban_set_slice(m->core, (uint32_t)(cfg->ban_slice < 65536 ? cfg->ban_slice : 65536));
  if (cfg->trust_threshold > 0)
    cairn__trust_set_threshold(m->core, cfg->trust_threshold);
  if (cfg->spot_check != 0)
    cairn__trust_set_spot_check(m->core,
                                cfg->spot_check < 0 ? 0 : cfg->spot_check > 1 ? 1 : cfg->spot_check);
  if (cfg->app_key) { /* signed app versions (core/apps.h) */
    uint8_t pk[32];
    if (cairn__app_pubkey_load(cfg->app_key, pk, err) != CAIRN_OK)
      goto fail;
    cairn__core_set_app_key(m->core, pk);
    cairn__base64_encode(pk, sizeof pk, m->app_key_b64);
  }
  /* a ban a stop interrupted is finished before serving, its steps chained */
  if (cairn__core_ban_resume(m->core, err) != CAIRN_OK)
    goto fail;
  return m;
fail:
  cairn_master_delete(m);
  return NULL;
}

static void *reaper(void *arg) {
  cairn_master *m = arg;
  int ms = (int)(m->cfg.lease_check_seconds * 1000);
  int64_t next_retain = 0;
  for (;;) {
    struct pollfd p = {.fd = m->stop_pipe[0], .events = POLLIN};
    if (poll(&p, 1, ms) > 0 || m->stop_requested ||
        cairn__core_health(m->core, NULL) != CAIRN_OK)
      break;
    int64_t now = cairn__now();
    cairn__core_expire(m->core, now);
    if (m->cfg.keep_finished_days > 0 && now >= next_retain) { /* at most once a second */
      cairn__core_retain(m->core, now, (int64_t)(m->cfg.keep_finished_days * 86400.0 + 0.5));
      next_retain = now + 1;
    }
  }
  return NULL;
}

cairn_status cairn_master_start(cairn_master *m, cairn_error *err) {
  cairn_status st = m->standings ? CAIRN_OK : cairn__stats_start(m, err); /* before HTTP */
  if (st == CAIRN_OK && !m->statsexport)
    st = cairn__statsexport_start(m, err);
  if (st == CAIRN_OK)
    st = cairn__http_start(m, err);
  if (st != CAIRN_OK)
    return st;
  if (pthread_create(&m->reaper, NULL, reaper, m)) {
    cairn__http_stop(m);
    return cairn__error_set(err, CAIRN_EINTERNAL, "cannot start the lease checker");
  }
  m->reaper_running = 1;
  return CAIRN_OK;
}

void cairn_master_stop(cairn_master *m) {
  m->stop_requested = 1;
  if (m->stop_pipe[1] >= 0) {
    char b = 1;
    ssize_t w = write(m->stop_pipe[1], &b, 1);
    (void)w;
  }
}

cairn_status cairn_master_run(cairn_master *m, cairn_error *err) {
  /* the stop pipe is written by cairn_master_stop() and by a failing journal */
  for (;;) {
    cairn_status st = cairn__core_health(m->core, err);
    if (st != CAIRN_OK || m->stop_requested)
      return st;
    struct pollfd p = {.fd = m->stop_pipe[0], .events = POLLIN};
    if (poll(&p, 1, 1000) > 0) {
      char b[16];
      ssize_t r = read(m->stop_pipe[0], b, sizeof b);
      (void)r;
    }
  }
}

cairn_status cairn_master_failed(cairn_master *m, cairn_error *err) {
  return cairn__core_health(m->core, err);
}

void cairn_master_delete(cairn_master *m) {
  if (!m)
    return;
  cairn_master_stop(m);
  cairn__http_stop(m);
  cairn__stats_stop(m); /* after HTTP: no request reads the standings */
  cairn__statsexport_stop(m); /* after HTTP: no request reads its state */
  if (m->reaper_running)
    pthread_join(m->reaper, NULL);
  /* after HTTP (no request reads the log), before the store: its writer,
   * the last connection to close, folds the WAL back into the database */
  cairn__tree_reader_close(m->audit);
  cairn__tree_reader_close(m->audit_own);
  m->audit = m->audit_own = NULL;
  cairn__core_close(m->core); /* its journal's last batch holds the invitations' records too */
  cairn__waiters_destroy(m->waiters); /* after every thread that wakes them */
  cairn__slow_destroy(m->slow);        /* stopped with the HTTP daemon */
  cairn__conns_destroy(m->conns);      /* every connection closed with the daemon */
  cairn__invites_close(m->invites);
  if (m->stop_pipe[0] >= 0)
    close(m->stop_pipe[0]);
  if (m->stop_pipe[1] >= 0)
    close(m->stop_pipe[1]);
  pthread_mutex_destroy(&m->stats_lock);
  cairn__rl_destroy(m->anon);
  cairn__rl_destroy(m->vrate);
  free(m->db_path);
  free(m->listen);
  free(m->web_dir);
  free(m->project_name);
  free(m->project_description);
  free(m);
}

const char *cairn_master_url(const cairn_master *m) { return m->url; }
const char *cairn_master_admin_token(const cairn_master *m) { return m->admin_token; }

cairn_status cairn_master_submit(cairn_master *m, const char *job_json, size_t len,
                                 long long *job_id, cairn_error *err) {
  cairn_status st = cairn__core_health(m->core, err);
  if (st != CAIRN_OK)
    return st;
  cairn__jobspec *spec = cairn__jobspec_parse(job_json, len, CAIRN_JOBSPEC_CLIENT, err);
  if (!spec)
    return err ? err->status : CAIRN_EINVAL;
  for (uint32_t i = 0; i < spec->nfiles; i++) {
    cairn__jobspec_file *f = &spec->files[i];
    if (f->sha256)
      continue;
    char sha[65];
    int64_t size;
    cairn_error ferr = {0};
    st = cairn__files_import(m->core, f->path, sha, &size, &ferr);
    if (st == CAIRN_OK && !(f->sha256 = strdup(sha)))
      st = cairn__error_set(&ferr, CAIRN_ENOMEM, "out of memory");
    if (st != CAIRN_OK) {
      cairn__error_set(err, st, "file \"%s\": %s", f->name, ferr.text);
      cairn__jobspec_free(spec);
      return st;
    }
    f->size = size;
  }
  int64_t id = 0;
  st = cairn__core_submit(m->core, spec, &id, err); /* takes spec */
  if (st == CAIRN_OK)
    *job_id = id;
  return st;
}

cairn_status cairn_master_wait(cairn_master *m, long long job_id, double timeout_seconds,
                               cairn_job_state *state, cairn_error *err) {
  int js = JS_RUNNING;
  cairn_status st = cairn__core_wait_job(
    m->core, job_id, timeout_seconds < 0 ? -1 : (long)(timeout_seconds * 1000), &js, err);
  if (state)
    *state = js == JS_DONE        ? CAIRN_JOB_DONE
             : js == JS_FAILED    ? CAIRN_JOB_FAILED
             : js == JS_CANCELLED ? CAIRN_JOB_CANCELLED
                                  : CAIRN_JOB_RUNNING;
  return st;
}

cairn_status cairn_master_results_json(cairn_master *m, long long job_id, char **json,
                                       cairn_error *err) {
  *json = NULL;
  json_t *all = json_array(), *page = NULL;
  int64_t after = 0;
  do { /* page by page: each hold of the core's lock stays O(chunk) */
    cairn_error perr = {0};
    json_decref(page);
    page = all ? cairn__core_tasks_json(m->core, job_id, after, CAIRN_TASKS_PAGE_MAX, &perr)
               : NULL;
    if (!page || json_array_extend(all, json_object_get(page, "tasks"))) {
      json_decref(page);
      json_decref(all);
      if (perr.status != CAIRN_OK) /* unknown job, or the store's error */
        return cairn__error_set(err, perr.status, "%s", perr.text);
      return cairn__error_set(err, CAIRN_ENOMEM, "results of job %lld: out of memory", job_id);
    }
    after = json_integer_value(json_object_get(page, "next"));
  } while (after > 0);
  json_decref(page);
  json_t *o = json_pack("{s:o}", "tasks", all);
  *json = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (!*json)
    return cairn__error_set(err, CAIRN_ENOMEM, "results of job %lld: out of memory", job_id);
  return CAIRN_OK;
}
