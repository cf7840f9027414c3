/* project.c — one project of a worker: its settings, state directory and
 * the parts that live there (project.h). */
#include "worker/project.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "common/sha256.h"
#include "worker/fsutil.h"

void cairn__project_id(const char *url, char id[CAIRN__PROJECT_ID_LEN + 1]) {
  char norm[CAIRN__URL_MAX + 1], hex[65];
  size_t n = strlen(url);
  while (n > 0 && url[n - 1] == '/')
    n--;
  if (n > CAIRN__URL_MAX)
    n = CAIRN__URL_MAX;
  memcpy(norm, url, n);
  norm[n] = '\0';
  /* scheme and host (up to the path) in lower case: the same master */
  char *host = strstr(norm, "://");
  char *end = host ? strchr(host + 3, '/') : NULL;
  for (char *c = norm; *c && (!host || !end || c < end); c++)
    *c = (char)tolower((unsigned char)*c);
  cairn__sha256_hex(norm, strlen(norm), hex);
  memcpy(id, hex, CAIRN__PROJECT_ID_LEN);
  id[CAIRN__PROJECT_ID_LEN] = '\0';
}

static int valid_line(const char *s) {
  return s && s[0] && strlen(s) <= CAIRN_MAX_NAME && !strpbrk(s, "\n\r");
}

/* 1 when s is 64 hexadecimal characters (an account key). */
static int hex64(const char *s) {
  return strlen(s) == 64 && strspn(s, "0123456789abcdefABCDEF") == 64;
}

static char *dup_or_null(const char *s, int *oom) {
  char *d = s ? strdup(s) : NULL;
  if (s && !d)
    *oom = 1;
  return d;
}

cairn_status cairn__project_init(cairn__project *p, size_t k, const cairn_worker_project *cfg,
                                 const cairn__logger *base, int labelled,
                                 const char *peer_address, cairn_error *err) {
  memset(p, 0, sizeof *p);
  p->k = k;
  cairn__pace_init(&p->pace);
  const char *url = cfg->server_url;
  if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
      strlen(url) > CAIRN__URL_MAX || strpbrk(url, " \t\r\n"))
    return cairn__error_set(err, CAIRN_EINVAL, "server URL \"%.200s\" must start with http:// "
                            "or https:// (at most %d characters, no blanks)",
                            url ? url : "", CAIRN__URL_MAX);
  if (cfg->share > CAIRN__MAX_SHARE)
    return cairn__error_set(err, CAIRN_EINVAL, "%s: share must be from 1 to %u", url,
                            CAIRN__MAX_SHARE);
  if (cfg->invitation && !valid_line(cfg->invitation))
    return cairn__error_set(err, CAIRN_EINVAL, "invitation must be 1 to 256 characters on one "
                            "line");
  if (cfg->account_key && !hex64(cfg->account_key))
    return cairn__error_set(err, CAIRN_EINVAL, "account key must be 64 hexadecimal characters");
  if (cfg->project_key) {
    cairn_error kerr = {0};
    if (cairn__app_pubkey_load(cfg->project_key, p->project_key, &kerr) != CAIRN_OK)
      return cairn__error_set(err, CAIRN_EINVAL, "project key: %s", kerr.text);
    p->has_project_key = 1;
  }
  size_t n = strlen(url);
  while (n > 0 && url[n - 1] == '/')
    n--;
  int oom = 0;
  p->server = strndup(url, n);
  oom |= !p->server;
  p->share = cfg->backup ? 0 : cfg->share ? cfg->share : CAIRN__DEFAULT_SHARE;
  p->invitation = dup_or_null(cfg->invitation, &oom);
  p->account_key = dup_or_null(cfg->account_key, &oom);
  if (oom)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn__project_id(p->server, p->id);
  p->log = *base;
  p->log.label = labelled ? p->server : NULL;
  if (cairn__peerstate_init(&p->peers, peer_address) != 0)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  p->peers_ok = 1;
  p->peers.log = &p->log;
  return CAIRN_OK;
}

cairn_status cairn__project_setup_dir(cairn__project *p, const char *wdir, int own,
                                      unsigned long long max_disk_mib, cairn_error *err) {
  char sub[32 + CAIRN__PROJECT_ID_LEN];
  snprintf(sub, sizeof sub, "projects/%s", p->id);
  p->dir = own ? cairn__path_join(wdir, sub) : strdup(wdir);
  if (!p->dir)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn_status rc = cairn__mkdirs(p->dir, 0700, err);
  if (rc != CAIRN_OK)
    return rc;
  p->cred_path = cairn__path_join(p->dir, "credentials.json");
  p->run_dir = cairn__path_join(p->dir, "run");
  p->cache_dir = cairn__path_join(p->dir, "cache");
  if (!p->cred_path || !p->run_dir || !p->cache_dir)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  rc = cairn__mkdirs(p->run_dir, 0700, err); /* its leftovers: the worker's resume scan */
  if (rc == CAIRN_OK)
    rc = cairn__cache_init(&p->cache, p->cache_dir, err);
  p->cache.log = &p->log;
  if (rc == CAIRN_OK && p->has_project_key) {
    char *apps = cairn__path_join(p->dir, "apps");
    rc = apps ? cairn__appver_init(&p->appver, apps, p->project_key, &p->cache, &p->log, err)
              : cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    p->appver_ok = rc == CAIRN_OK;
    free(apps);
  }
  if (rc == CAIRN_OK && !p->diskcap_ok) {
    cairn__diskcap_init(&p->diskcap, max_disk_mib, p->cache_dir, p->run_dir, &p->log);
    p->diskcap_ok = 1;
  }
  if (rc == CAIRN_OK && !p->audit_ok) {
    rc = cairn__auditlog_init(&p->audit, p->dir, &p->log, err);
    p->audit_ok = 1;
    if (rc == CAIRN_EFORBIDDEN && own) { /* the other projects go on */
      CAIRN_ERR(&p->log, "%s", err->text);
      p->distrusted = 1;
      rc = CAIRN_OK;
    }
  }
  return rc;
}

cairn_status cairn__project_setup_run(cairn__project *p, size_t slots, size_t prefetch,
                                      const cairn__registration *reg, cairn__stopper *stopper,
                                      const cairn__resources *offer, cairn_error *err) {
  if (cairn__leases_init(&p->leases, slots, prefetch, CAIRN__OUTBOX_MAX) != 0)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  p->leases_ok = 1;
  p->leases.log = &p->log;
  cairn_status rc = cairn__session_init(&p->session, p->cred_path, reg, stopper, err);
  if (rc != CAIRN_OK)
    return rc;
  p->session_ok = 1;
  p->session.peers = &p->peers;
  p->session.log = &p->log;
  p->session.offer = *offer;
  if (cairn__outbox_init(&p->outbox, &p->session, &p->leases, stopper, &p->log,
                         p->audit_ok ? &p->audit : NULL) != 0)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  p->outbox_ok = 1;
  return CAIRN_OK;
}

void cairn__project_destroy(cairn__project *p) {
  cairn__peer_stop(p->peer);
  p->peer = NULL;
  if (p->outbox_ok)
    cairn__outbox_destroy(&p->outbox);
  if (p->session_ok)
    cairn__session_destroy(&p->session);
  if (p->leases_ok)
    cairn__leases_destroy(&p->leases);
  if (p->resume_ok)
    cairn__resume_destroy(&p->resume);
  if (p->appver_ok)
    cairn__appver_destroy(&p->appver);
  if (p->diskcap_ok)
    cairn__diskcap_destroy(&p->diskcap);
  if (p->audit_ok)
    cairn__auditlog_destroy(&p->audit);
  cairn__cache_destroy(&p->cache);
  if (p->peers_ok)
    cairn__peerstate_destroy(&p->peers);
  cairn__pace_destroy(&p->pace);
  free(p->server);
  free(p->invitation);
  free(p->account_key);
  free(p->dir);
  free(p->cred_path);
  free(p->run_dir);
  free(p->cache_dir);
  memset(p, 0, sizeof *p);
}
