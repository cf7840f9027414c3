/* old_master.c — see old_master.h. */
#include "tests/support/old_master.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "worker/session.h"
#include "worker/transport.h"

typedef struct upload {
  char data[16384];
  size_t n;
} upload;

/* The first report field of body that m does not take, or NULL. */
static const char *unknown_field(const old_master *m, const char *body) {
  static const char *const names[CAIRN_FEATURE_COUNT] = CAIRN_FEATURE_NAMES;
  unsigned takes = m->features < 0 ? CAIRN_FEATURES_BASELINE : (unsigned)m->features;
  json_t *o = json_loads(body, 0, NULL);
  const char *field = NULL;
  for (int i = 0; i < CAIRN_FEATURE_COUNT && !field; i++)
    if (!(takes & (1u << i)) && json_object_get(o, names[i]))
      field = names[i];
  if (!field && !(takes & CAIRN_FEAT_CPU)) /* the fields of "cpu" have their own names */
    field = json_object_get(o, CAIRN_TEAM_KEY) ? CAIRN_TEAM_KEY
            : json_object_get(o, CAIRN_CPU_KEY) ? CAIRN_CPU_KEY : NULL;
  json_decref(o);
  return field;
}

/* 200 {"extended": []}, with m's feature list when it has one. */
static char *answer(const old_master *m) {
  json_t *o = json_pack("{s:[]}", "extended");
  if (m->features >= 0)
    json_object_set_new(o, CAIRN_FEATURES_KEY, cairn__features_json((unsigned)m->features));
  char *text = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  return text;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **ctx) {
  old_master *m = cls;
  upload *u = *ctx;
  (void)url;
  (void)method;
  (void)version;
  if (!u) {
    *ctx = calloc(1, sizeof *u);
    return *ctx ? MHD_YES : MHD_NO;
  }
  if (*size) {
    size_t k = *size < sizeof u->data - 1 - u->n ? *size : sizeof u->data - 1 - u->n;
    memcpy(u->data + u->n, data, k);
    u->n += k;
    *size = 0;
    return MHD_YES;
  }
  u->data[u->n] = '\0';
  pthread_mutex_lock(&m->mu);
  if (m->n < 8)
    m->bodies[m->n++] = strdup(u->data);
  pthread_mutex_unlock(&m->mu);
  const char *field = unknown_field(m, u->data);
  char *text = NULL;
  unsigned status = 400;
  if (field) {
    if (asprintf(&text, "{\"error\": {\"code\": \"bad_request\", \"message\": "
                        "\"unknown field \\\"%s\\\"\"}}", field) < 0)
      text = NULL;
  } else {
    status = 200;
    text = answer(m);
  }
  if (!text)
    return MHD_NO;
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text,
                                                           MHD_RESPMEM_MUST_FREE);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static void on_done(void *cls, struct MHD_Connection *c, void **ctx,
                    enum MHD_RequestTerminationCode why) {
  (void)cls;
  (void)c;
  (void)why;
  free(*ctx);
  *ctx = NULL;
}

int old_master_start(old_master *m, int features) {
  memset(m, 0, sizeof *m);
  m->features = features;
  pthread_mutex_init(&m->mu, NULL);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, m,
                          MHD_OPTION_SOCK_ADDR, &a, MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
                          MHD_OPTION_END);
  if (!m->d)
    return -1;
  m->port = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT)->port;
  return 0;
}

void old_master_stop(old_master *m) {
  MHD_stop_daemon(m->d);
  for (int i = 0; i < m->n; i++)
    free(m->bodies[i]);
  pthread_mutex_destroy(&m->mu);
}

int old_master_heartbeat(old_master *m, cairn__peerstate *ps, const int64_t *running,
                         size_t nrunning) {
  char base[64], dir[4096], cred[4200];
  cairn__session s;
  cairn__registration reg = {0};
  cairn_error err = {0};
  cairn__http_response resp = {0};
  snprintf(base, sizeof base, "http://127.0.0.1:%u", m->port);
  harness_tmpdir(dir, sizeof dir);
  snprintf(cred, sizeof cred, "%s/credentials.json", dir);
  if (cairn__session_init(&s, cred, &reg, NULL, &err) != CAIRN_OK)
    return -1;
  s.peers = ps;
  s.offer = m->offer;
  cairn__conn c = {cairn__http_create(base), 0, 0};
  int rc = -1;
  if (c.http && cairn__session_report(&s, &c, "/v1/heartbeat", CAIRN_HEARTBEAT_FIELDS, running,
                                      nrunning, NULL, 0, 1 << 20, &resp, &err) == CAIRN_OK &&
      resp.status == 200) {
    json_t *answer = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, NULL);
    cairn__peerstate_set_features(
      ps, cairn__features_parse(json_object_get(answer, CAIRN_FEATURES_KEY)));
    json_decref(answer);
    rc = 0;
  }
  cairn__buf_free(&resp.body);
  cairn__http_delete(c.http);
  cairn__session_destroy(&s);
  rmdir(dir);
  return rc;
}
