/* jrec.c — the journal's typed records: their constructors (journal.h),
 * how each is written in the store's open transaction and each chained
 * kind's audit-chain entry (jrec.h). */
#include "server/store/jrec.h"

#include "common/taskrun.h"
#include "server/store/store_people.h"
#include "server/store/store_sizing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
  J_META, J_VOL, J_BAN, J_PEER, J_FILE, J_HOLD, J_UNHOLD, J_RATE, J_INVITE, J_UNINVITE, J_JOB,
  J_TASK, J_JOBSTATE, J_ALLOC, J_LEASE, J_RESULT, J_OUTCOME, J_OFFER, J_JOBPRIO, J_JOBDEL,
  J_QUAR, J_CREDIT, J_TRUST, J_TRING, J_TRING_CLEAR, J_TEAM, J_KEPT, J_XFER, J_PLAN,
  J_TEAM_CREDIT, J_BAN_DONE, J_APP, J_APP_RETIRE, J_ACCOUNT, J_ACCOUNT_KEY, J_ACCOUNT_CREDIT,
  J_VOL_ACCOUNT, J_PEOPLE, J_SIZING
} jtype;

typedef struct jtask {
  char *name, *args_json, *inputs_json, *run_json; /* run_json: NULL for none */
  char *outputs_json, *parent_files_json; /* task_io row; NULL: none */
  uint32_t *parents;
  uint32_t nparents;
  int has_res;                /* a request other than the default */
  int64_t res[3];             /* cores, memory_mib, disk_mib */
} jtask;

typedef struct jfile {
  char *name;
  char sha256[65];
  int broadcast;
} jfile;

/* Strings are owned by the record; state names point to static tables. */
struct cairn__jrec {
  jtype type;
  union {
    struct { char *key, *value; } meta;
    struct { int64_t id, created; char *name, *cluster, *apps, *team; int slots; char hash[65]; } vol;
    struct { int64_t id; char *text; } ban, peer; /* reason / peer URL / team (NULL: none) */
    struct { char sha256[65]; int64_t size, created; } file;
    struct { int64_t vol, since; char sha256[65]; } hold; /* also J_UNHOLD, J_KEPT (vol: on) */
    struct { char *src, *dst; int64_t bps, samples; } rate;
    cairn__store_xfer_row xfer;
    struct { char sha256[65]; int64_t started_ms, plans; char *body; } plan;
    struct { cairn__store_invite_row row; char hash[65], prefix[17]; char *note; } invite;
    struct { int64_t id; } uninvite;     /* also J_APP_RETIRE */
    struct { cairn__store_app_row row; char *text[5]; char **shas; } app; /* text: name,
                                   version, platform, manifest, signature */
    struct { int64_t id; int on; } quar;
    struct { int64_t id, trust; } trust;    /* J_TRUST; J_TRING_CLEAR uses id; J_VOL_ACCOUNT:
                                               volunteer id, account in trust */
    struct { cairn__store_account_row row; char *text[4]; char hash[65]; } acct; /* J_ACCOUNT:
                                   text name, email, key hash, password hash, hash its
                                   cross-project id; J_ACCOUNT_KEY:
                                   row.id, hash; J_ACCOUNT_CREDIT: row's id and totals */
    cairn__store_trust_row tring;
    struct cairn__prec *people; /* J_PEOPLE: a team of accounts' or a session's change
                                   (store_people.c) */
    struct cairn__zrec *sizing; /* J_SIZING: tasks that size themselves (store_sizing.c) */
    struct {
      int64_t id, created, first_key, priority;
      char *name, *app, *policy, *validator; /* validator: NULL for exact */
      char *app_version;                     /* NULL: none pinned */
      int replication, quorum, lease_seconds, max_attempts, adaptive, keep_workers;
      uint32_t nfiles, ntasks;
      jfile *files;
      jtask *tasks;
    } job;
    struct { int64_t key, accepted, round; const char *state; int attempts; } task;
    struct { int64_t id, finished; const char *state; } jobstate;
    struct { int64_t idx, vol, t, task, issued, expires, round; } alloc;
    struct { int64_t idx, expires; const char *state; } lease;
    struct {
      int64_t idx, task, vol, received;
      int exit_status;
      void *out;
      size_t len;
      char digest[65];
      const char *outcome;
      char reason[CAIRN_REASON_MAX]; /* "" for none */
      void *err_tail;             /* the stderr tail */
      size_t err_len;
      cairn__output_file *files;   /* output files named */
      size_t nfiles;
      double claim, credit;       /* cpu_seconds (-1: none), credit granted */
      char *team;                 /* the team it counts for (NULL: none) */
    } result;
    cairn__store_credit_row credit;
    struct { cairn__store_team_row row; char *name; } team; /* row.team: name */
    struct { int64_t idx; const char *outcome; } outcome;
    struct { int64_t vol, cores, memory_mib, disk_mib; } offer;
    struct { int64_t id, priority; } jobprio;
    struct {
      int64_t id, lo, hi, now;
      int purge, final;
      cairn__store_delete_report *out;
    } jobdel;
  } u;
  cairn__jrec *next;
};


/* ---- constructors ---- */

static cairn__jrec *rec(jtype type) {
  cairn__jrec *r = calloc(1, sizeof *r);
  if (r)
    r->type = type;
  return r;
}

/* Duplicates s into *dst (NULL stays NULL); -1 when out of memory. */
static int copy_str(char **dst, const char *s) {
  *dst = s ? strdup(s) : NULL;
  return s && !*dst ? -1 : 0;
}

static void sha_copy(char dst[65], const char *sha) { snprintf(dst, 65, "%s", sha ? sha : ""); }

/* r, or NULL (freeing r) when failed. */
static cairn__jrec *checked(cairn__jrec *r, int failed) {
  if (failed) {
    cairn__jrec_free(r);
    return NULL;
  }
  return r;
}

cairn__jrec *cairn__jrec_meta(const char *key, const char *value) {
  cairn__jrec *r = rec(J_META);
  return r ? checked(r, copy_str(&r->u.meta.key, key) | copy_str(&r->u.meta.value, value)) : NULL;
}

cairn__jrec *cairn__jrec_volunteer(int64_t id, const char *name, const char *cluster,
                                   const char *apps_json, int slots, const char *token_hash,
                                   int64_t created) {
  cairn__jrec *r = rec(J_VOL);
  if (!r)
    return NULL;
  r->u.vol.id = id;
  r->u.vol.created = created;
  r->u.vol.slots = slots;
  sha_copy(r->u.vol.hash, token_hash);
  return checked(r, copy_str(&r->u.vol.name, name) | copy_str(&r->u.vol.cluster, cluster) |
                      copy_str(&r->u.vol.apps, apps_json));
}

static cairn__jrec *id_text(jtype type, int64_t id, const char *text) {
  cairn__jrec *r = rec(type);
  if (!r)
    return NULL;
  r->u.ban.id = id;
  return checked(r, copy_str(&r->u.ban.text, text));
}

cairn__jrec *cairn__jrec_ban(int64_t id, const char *reason) {
  return id_text(J_BAN, id, reason ? reason : "");
}
cairn__jrec *cairn__jrec_ban_done(int64_t id) { return id_text(J_BAN_DONE, id, NULL); }
cairn__jrec *cairn__jrec_peer(int64_t id, const char *url) { return id_text(J_PEER, id, url); }
cairn__jrec *cairn__jrec_team(int64_t id, const char *team) { return id_text(J_TEAM, id, team); }

cairn__jrec *cairn__jrec_file(const char *sha256, int64_t size, int64_t created) {
  cairn__jrec *r = rec(J_FILE);
  if (r) {
    sha_copy(r->u.file.sha256, sha256);
    r->u.file.size = size;
    r->u.file.created = created;
  }
  return r;
}

static cairn__jrec *holding(jtype type, int64_t vol, const char *sha256, int64_t since) {
  cairn__jrec *r = rec(type);
  if (r) {
    r->u.hold.vol = vol;
    r->u.hold.since = since;
    sha_copy(r->u.hold.sha256, sha256);
  }
  return r;
}

cairn__jrec *cairn__jrec_hold(int64_t vol, const char *sha256, int64_t since) {
  return holding(J_HOLD, vol, sha256, since);
}
cairn__jrec *cairn__jrec_unhold(int64_t vol, const char *sha256) {
  return holding(J_UNHOLD, vol, sha256, 0);
}
cairn__jrec *cairn__jrec_kept(const char *sha256, int on) {
  return holding(J_KEPT, on, sha256, 0);
}

cairn__jrec *cairn__jrec_rate(const char *src, const char *dst, int64_t bps, int64_t samples) {
  cairn__jrec *r = rec(J_RATE);
  if (!r)
    return NULL;
  r->u.rate.bps = bps;
  r->u.rate.samples = samples;
  return checked(r, copy_str(&r->u.rate.src, src) | copy_str(&r->u.rate.dst, dst));
}

cairn__jrec *cairn__jrec_invite(const cairn__store_invite_row *row) {
  cairn__jrec *r = rec(J_INVITE);
  if (!r)
    return NULL;
  r->u.invite.row = *row;
  snprintf(r->u.invite.hash, sizeof r->u.invite.hash, "%s", row->code_hash);
  snprintf(r->u.invite.prefix, sizeof r->u.invite.prefix, "%s", row->prefix);
  r->u.invite.note = strdup(row->note ? row->note : "");
  r->u.invite.row.code_hash = r->u.invite.hash;
  r->u.invite.row.prefix = r->u.invite.prefix;
  r->u.invite.row.note = r->u.invite.note;
  return checked(r, !r->u.invite.note);
}

cairn__jrec *cairn__jrec_app(const cairn__store_app_row *row) {
  cairn__jrec *r = rec(J_APP);
  if (!r)
    return NULL;
  r->u.app.row = *row;
  const char *src[5] = {row->name, row->version, row->platform, row->manifest, row->signature};
  int bad = !(r->u.app.shas = calloc(row->nshas ? row->nshas : 1, sizeof(char *)));
  for (int i = 0; i < 5; i++)
    bad |= copy_str(&r->u.app.text[i], src[i]);
  for (size_t i = 0; !bad && i < row->nshas; i++)
    bad |= copy_str(&r->u.app.shas[i], row->shas[i]);
  r->u.app.row.name = r->u.app.text[0];
  r->u.app.row.version = r->u.app.text[1];
  r->u.app.row.platform = r->u.app.text[2];
  r->u.app.row.manifest = r->u.app.text[3];
  r->u.app.row.signature = r->u.app.text[4];
  r->u.app.row.shas = (const char *const *)r->u.app.shas;
  return checked(r, bad);
}

cairn__jrec *cairn__jrec_app_retire(int64_t id) {
  cairn__jrec *r = rec(J_APP_RETIRE);
  if (r)
    r->u.uninvite.id = id;
  return r;
}

cairn__jrec *cairn__jrec_account(const cairn__store_account_row *row) {
  cairn__jrec *r = rec(J_ACCOUNT);
  if (!r)
    return NULL;
  const char *src[4] = {row->name, row->email, row->key_hash, row->password_hash};
  int bad = 0;
  for (int i = 0; i < 4; i++)
    bad |= copy_str(&r->u.acct.text[i], src[i]);
  r->u.acct.row = *row;
  r->u.acct.row.name = r->u.acct.text[0];
  r->u.acct.row.email = r->u.acct.text[1];
  r->u.acct.row.key_hash = r->u.acct.text[2];
  r->u.acct.row.password_hash = r->u.acct.text[3];
  snprintf(r->u.acct.hash, sizeof r->u.acct.hash, "%s", row->cpid ? row->cpid : "");
  r->u.acct.row.cpid = r->u.acct.hash; /* "": the table's trigger draws one */
  return checked(r, bad);
}

cairn__jrec *cairn__jrec_account_key(int64_t id, const char *key_hash) {
  cairn__jrec *r = rec(J_ACCOUNT_KEY);
  if (r) {
    r->u.acct.row.id = id;
    sha_copy(r->u.acct.hash, key_hash);
  }
  return r;
}

cairn__jrec *cairn__jrec_account_credit(const cairn__store_account_row *row) {
  cairn__jrec *r = rec(J_ACCOUNT_CREDIT);
  if (r) {
    r->u.acct.row = *row;
    r->u.acct.row.name = r->u.acct.row.email = r->u.acct.row.cpid = NULL;
    r->u.acct.row.key_hash = r->u.acct.row.password_hash = NULL;
  }
  return r;
}

cairn__jrec *cairn__jrec_volunteer_account(int64_t vol, int64_t account) {
  cairn__jrec *r = rec(J_VOL_ACCOUNT);
  if (r) {
    r->u.trust.id = vol;
    r->u.trust.trust = account;
  }
  return r;
}

cairn__jrec *cairn__jrec_people(struct cairn__prec *p) {
  cairn__jrec *r = p ? rec(J_PEOPLE) : NULL;
  if (r)
    r->u.people = p;
  else
    cairn__prec_free(p);
  return r;
}

cairn__jrec *cairn__jrec_sizing(struct cairn__zrec *p) {
  cairn__jrec *r = p ? rec(J_SIZING) : NULL;
  if (r)
    r->u.sizing = p;
  else
    cairn__zrec_free(p);
  return r;
}

void cairn__jrec_sizing_keys(cairn__jrec *r, int64_t first_key) {
  if (r && r->type == J_SIZING)
    cairn__zrec_keys(r->u.sizing, first_key);
}

cairn__jrec *cairn__jrec_invite_delete(int64_t id) {
  cairn__jrec *r = rec(J_UNINVITE);
  if (r)
    r->u.uninvite.id = id;
  return r;
}

cairn__jrec *cairn__jrec_quarantine(int64_t id, int on) {
  cairn__jrec *r = rec(J_QUAR);
  if (r)
    r->u.quar.id = id, r->u.quar.on = on;
  return r;
}

cairn__jrec *cairn__jrec_trust(int64_t id, int64_t trust) {
  cairn__jrec *r = rec(J_TRUST);
  if (r)
    r->u.trust.id = id, r->u.trust.trust = trust;
  return r;
}

cairn__jrec *cairn__jrec_tring(const cairn__store_trust_row *row) {
  cairn__jrec *r = rec(J_TRING);
  if (r)
    r->u.tring = *row;
  return r;
}

cairn__jrec *cairn__jrec_tring_clear(int64_t vol) {
  cairn__jrec *r = rec(J_TRING_CLEAR);
  if (r)
    r->u.trust.id = vol;
  return r;
}

cairn__jrec *cairn__jrec_job_adaptive(cairn__jrec *r, int adaptive) {
  if (r && r->type == J_JOB)
    r->u.job.adaptive = adaptive;
  return r;
}

cairn__jrec *cairn__jrec_job_keep(cairn__jrec *r, int keep_workers) {
  if (r && r->type == J_JOB)
    r->u.job.keep_workers = keep_workers;
  return r;
}

cairn__jrec *cairn__jrec_job(const char *name, const char *app, const char *policy,
                             int replication, int quorum, int lease_seconds, int max_attempts,
                             int64_t created, uint32_t nfiles, uint32_t ntasks) {
  cairn__jrec *r = rec(J_JOB);
  if (!r)
    return NULL;
  r->u.job.created = created;
  r->u.job.replication = replication;
  r->u.job.quorum = quorum;
  r->u.job.lease_seconds = lease_seconds;
  r->u.job.max_attempts = max_attempts;
  r->u.job.nfiles = nfiles;
  r->u.job.ntasks = ntasks;
  r->u.job.files = calloc(nfiles ? nfiles : 1, sizeof *r->u.job.files);
  r->u.job.tasks = calloc(ntasks ? ntasks : 1, sizeof *r->u.job.tasks);
  return checked(r, !r->u.job.files || !r->u.job.tasks || copy_str(&r->u.job.name, name) ||
                      copy_str(&r->u.job.app, app) || copy_str(&r->u.job.policy, policy));
}

cairn__jrec *cairn__jrec_job_priority(cairn__jrec *r, int64_t priority) {
  if (r && r->type == J_JOB)
    r->u.job.priority = priority;
  return r;
}

cairn__jrec *cairn__jrec_job_validator(cairn__jrec *r, const char *validator_json) {
  if (r && r->type == J_JOB && validator_json)
    return checked(r, copy_str(&r->u.job.validator, validator_json));
  return r;
}

cairn__jrec *cairn__jrec_job_app_version(cairn__jrec *r, const char *version) {
  if (r && r->type == J_JOB && version)
    return checked(r, copy_str(&r->u.job.app_version, version));
  return r;
}

cairn__jrec *cairn__jrec_priority(int64_t id, int64_t priority) {
  cairn__jrec *r = rec(J_JOBPRIO);
  if (r)
    r->u.jobprio = (__typeof__(r->u.jobprio)){id, priority};
  return r;
}

cairn__jrec *cairn__jrec_delete(int64_t id, int purge, int64_t lo, int64_t hi, int final,
                                int64_t now, cairn__store_delete_report *out) {
  cairn__jrec *r = rec(J_JOBDEL);
  if (r)
    r->u.jobdel = (__typeof__(r->u.jobdel)){id, lo, hi, now, purge, final, out};
  return r;
}

cairn__jrec *cairn__jrec_job_keys(cairn__jrec *r, int64_t id, int64_t first_key) {
  if (r && r->type == J_JOB) {
    r->u.job.id = id;
    r->u.job.first_key = first_key;
  }
  return r;
}

cairn__jrec *cairn__jrec_job_file(cairn__jrec *r, uint32_t i, const char *name,
                                  const char *sha256, int broadcast) {
  if (!r || r->type != J_JOB || i >= r->u.job.nfiles)
    return checked(r, 1);
  jfile *f = &r->u.job.files[i];
  sha_copy(f->sha256, sha256);
  f->broadcast = broadcast;
  return checked(r, copy_str(&f->name, name));
}

/* "[i0,i1,...]" */
static char *index_list(const uint32_t *v, uint32_t n) {
  size_t cap = 3 + (size_t)n * 11, len = 0;
  char *s = malloc(cap);
  if (!s)
    return NULL;
  s[len++] = '[';
  for (uint32_t k = 0; k < n; k++)
    len += (size_t)snprintf(s + len, cap - len, k ? ",%u" : "%u", v[k]);
  s[len++] = ']';
  s[len] = '\0';
  return s;
}

cairn__jrec *cairn__jrec_job_task(cairn__jrec *r, uint32_t i, const char *name,
                                  const char *args_json, const char *run_json,
                                  const uint32_t *inputs, uint32_t ninputs,
                                  const uint32_t *parents, uint32_t nparents) {
  if (!r || r->type != J_JOB || i >= r->u.job.ntasks)
    return checked(r, 1);
  jtask *t = &r->u.job.tasks[i];
  t->inputs_json = index_list(inputs, ninputs);
  t->parents = malloc((nparents ? nparents : 1) * sizeof *t->parents);
  if (t->parents && nparents)
    memcpy(t->parents, parents, nparents * sizeof *parents);
  t->nparents = nparents;
  return checked(r, !t->inputs_json || !t->parents || copy_str(&t->name, name) ||
                      copy_str(&t->args_json, args_json) ||
                      (run_json && copy_str(&t->run_json, run_json)));
}

cairn__jrec *cairn__jrec_job_task_res(cairn__jrec *r, uint32_t i, int64_t cores,
                                      int64_t memory_mib, int64_t disk_mib) {
  if (!r || r->type != J_JOB || i >= r->u.job.ntasks)
    return checked(r, 1);
  jtask *t = &r->u.job.tasks[i];
  t->has_res = 1;
  t->res[0] = cores;
  t->res[1] = memory_mib;
  t->res[2] = disk_mib;
  return r;
}

cairn__jrec *cairn__jrec_offer(int64_t vol, int64_t cores, int64_t memory_mib,
                               int64_t disk_mib) {
  cairn__jrec *r = rec(J_OFFER);
  if (r)
    r->u.offer = (__typeof__(r->u.offer)){vol, cores, memory_mib, disk_mib};
  return r;
}

cairn__jrec *cairn__jrec_job_task_io(cairn__jrec *r, uint32_t i, const char *outputs_json,
                                     const char *parent_files_json) {
  if (!r || r->type != J_JOB || i >= r->u.job.ntasks)
    return checked(r, 1);
  jtask *t = &r->u.job.tasks[i];
  return checked(r, copy_str(&t->outputs_json, outputs_json) |
                      copy_str(&t->parent_files_json, parent_files_json));
}

cairn__jrec *cairn__jrec_task(int64_t key, const char *state, int attempts, int64_t accepted,
                              int64_t round) {
  cairn__jrec *r = rec(J_TASK);
  if (r)
    r->u.task = (__typeof__(r->u.task)){key, accepted, round, state, attempts};
  return r;
}

cairn__jrec *cairn__jrec_job_state(int64_t id, const char *state, int64_t finished) {
  cairn__jrec *r = rec(J_JOBSTATE);
  if (r)
    r->u.jobstate = (__typeof__(r->u.jobstate)){id, finished, state};
  return r;
}

cairn__jrec *cairn__jrec_alloc(int64_t idx, int64_t vol, int64_t t, int64_t task, int64_t issued,
                               int64_t expires, int64_t round) {
  cairn__jrec *r = rec(J_ALLOC);
  if (r)
    r->u.alloc = (__typeof__(r->u.alloc)){idx, vol, t, task, issued, expires, round};
  return r;
}

cairn__jrec *cairn__jrec_lease(int64_t idx, int64_t expires, const char *state) {
  cairn__jrec *r = rec(J_LEASE);
  if (r)
    r->u.lease = (__typeof__(r->u.lease)){idx, expires, state};
  return r;
}

cairn__jrec *cairn__jrec_result(int64_t idx, int64_t task, int64_t vol, int exit_status,
                                const void *output, size_t len, const char *digest,
                                int64_t received, const char *outcome, const char *reason,
                                const void *err_tail, size_t err_len,
                                const cairn__output_file *files, size_t nfiles) {
  cairn__jrec *r = rec(J_RESULT);
  if (!r)
    return NULL;
  r->u.result.idx = idx;
  r->u.result.claim = -1;
  r->u.result.task = task;
  r->u.result.vol = vol;
  r->u.result.received = received;
  r->u.result.exit_status = exit_status;
  r->u.result.outcome = outcome;
  snprintf(r->u.result.reason, sizeof r->u.result.reason, "%s", reason ? reason : "");
  sha_copy(r->u.result.digest, digest);
  r->u.result.len = len;
  r->u.result.out = malloc(len ? len : 1);
  if (r->u.result.out && len)
    memcpy(r->u.result.out, output, len);
  r->u.result.err_len = err_len;
  r->u.result.err_tail = malloc(err_len ? err_len : 1);
  if (r->u.result.err_tail && err_len)
    memcpy(r->u.result.err_tail, err_tail, err_len);
  r->u.result.nfiles = nfiles;
  r->u.result.files = malloc((nfiles ? nfiles : 1) * sizeof *files);
  if (r->u.result.files && nfiles)
    memcpy(r->u.result.files, files, nfiles * sizeof *files);
  return checked(r, !r->u.result.out || !r->u.result.err_tail || !r->u.result.files);
}

cairn__jrec *cairn__jrec_result_credit(cairn__jrec *r, double claim, double credit,
                                       const char *team) {
  if (!r)
    return NULL;
  r->u.result.claim = claim;
  r->u.result.credit = credit;
  return checked(r, copy_str(&r->u.result.team, team));
}

cairn__jrec *cairn__jrec_credit(const cairn__store_credit_row *row) {
  cairn__jrec *r = rec(J_CREDIT);
  if (r)
    r->u.credit = *row;
  return r;
}

cairn__jrec *cairn__jrec_team_credit(const cairn__store_team_row *row) {
  cairn__jrec *r = rec(J_TEAM_CREDIT);
  if (!r || copy_str(&r->u.team.name, row->team ? row->team : ""))
    return checked(r, 1);
  r->u.team.row = *row;
  r->u.team.row.team = r->u.team.name;
  return r;
}

cairn__jrec *cairn__jrec_volunteer_team(cairn__jrec *r, const char *team) {
  if (r && team)
    return checked(r, copy_str(&r->u.vol.team, team));
  return r;
}

cairn__jrec *cairn__jrec_outcome(int64_t idx, const char *outcome) {
  cairn__jrec *r = rec(J_OUTCOME);
  if (r)
    r->u.outcome = (__typeof__(r->u.outcome)){idx, outcome};
  return r;
}

cairn__jrec *cairn__jrec_xfer(const cairn__store_xfer_row *row) {
  cairn__jrec *r = rec(J_XFER);
  if (r)
    r->u.xfer = *row;
  return r;
}

cairn__jrec *cairn__jrec_plan(const char *sha256, int64_t started_ms, int64_t plans,
                              const char *body) {
  cairn__jrec *r = rec(J_PLAN);
  if (!r)
    return NULL;
  sha_copy(r->u.plan.sha256, sha256);
  r->u.plan.started_ms = started_ms;
  r->u.plan.plans = plans;
  return checked(r, copy_str(&r->u.plan.body, body));
}

void cairn__jrec_free(cairn__jrec *r) {
  if (!r)
    return;
  switch (r->type) {
  case J_META: free(r->u.meta.key); free(r->u.meta.value); break;
  case J_VOL:
    free(r->u.vol.name);
    free(r->u.vol.cluster);
    free(r->u.vol.apps);
    free(r->u.vol.team);
    break;
  case J_BAN: case J_BAN_DONE: case J_PEER: case J_TEAM: free(r->u.ban.text); break;
  case J_TEAM_CREDIT: free(r->u.team.name); break;
  case J_ACCOUNT:
    for (int i = 0; i < 4; i++)
      free(r->u.acct.text[i]);
    break;
  case J_PEOPLE: cairn__prec_free(r->u.people); break;
  case J_SIZING: cairn__zrec_free(r->u.sizing); break;
  case J_RATE: free(r->u.rate.src); free(r->u.rate.dst); break;
  case J_PLAN: free(r->u.plan.body); break;
  case J_INVITE: free(r->u.invite.note); break;
  case J_APP:
    for (int i = 0; i < 5; i++)
      free(r->u.app.text[i]);
    for (size_t i = 0; r->u.app.shas && i < r->u.app.row.nshas; i++)
      free(r->u.app.shas[i]);
    free(r->u.app.shas);
    break;
  case J_JOB:
    for (uint32_t i = 0; r->u.job.files && i < r->u.job.nfiles; i++)
      free(r->u.job.files[i].name);
    for (uint32_t i = 0; r->u.job.tasks && i < r->u.job.ntasks; i++) {
      jtask *t = &r->u.job.tasks[i];
      free(t->name);
      free(t->args_json);
      free(t->inputs_json);
      free(t->run_json);
      free(t->outputs_json);
      free(t->parent_files_json);
      free(t->parents);
    }
    free(r->u.job.files);
    free(r->u.job.tasks);
    free(r->u.job.name);
    free(r->u.job.app);
    free(r->u.job.policy);
    free(r->u.job.validator);
    free(r->u.job.app_version);
    break;
  case J_RESULT:
    free(r->u.result.out);
    free(r->u.result.err_tail);
    free(r->u.result.files);
    free(r->u.result.team);
    break;
  default: break;
  }
  free(r);
}

/* ---- writing ---- */

static cairn_status write_job(cairn__store *s, const cairn__jrec *r, cairn_error *err) {
  const __typeof__(r->u.job) *j = &r->u.job;
  cairn_status st = cairn__store_job_insert(s, j->id, j->name, j->app, j->policy, j->replication,
                                           j->quorum, j->lease_seconds, j->max_attempts,
                                           j->created, j->priority, err);
  if (st == CAIRN_OK && j->validator)
    st = cairn__store_job_validator(s, j->id, j->validator, err);
  if (st == CAIRN_OK && j->adaptive)
    st = cairn__store_job_adaptive(s, j->id, err);
  if (st == CAIRN_OK && j->app_version)
    st = cairn__store_job_app_version(s, j->id, j->app_version, err);
  if (st == CAIRN_OK && j->keep_workers)
    st = cairn__store_job_keep(s, j->id, err);
  for (uint32_t i = 0; st == CAIRN_OK && i < j->nfiles; i++)
    st = cairn__store_job_file_insert(s, j->id, (int)i, j->files[i].name, j->files[i].sha256,
                                     j->files[i].broadcast, err);
  for (uint32_t i = 0; st == CAIRN_OK && i < j->ntasks; i++) {
    const jtask *t = &j->tasks[i];
    int64_t key = j->first_key + i;
    st = cairn__store_task_insert(s, key, j->id, i, t->name, t->args_json, t->inputs_json,
                                 t->nparents ? "waiting" : "eligible", t->run_json, err);
    for (uint32_t p = 0; st == CAIRN_OK && p < t->nparents; p++)
      st = cairn__store_task_parent_insert(s, key, j->first_key + t->parents[p], p, err);
    if (st == CAIRN_OK && t->has_res) {
      cairn__store_res_row row = {key, t->res[0], t->res[1], t->res[2]};
      st = cairn__store_task_resources_insert(s, &row, err);
    }
    if (st == CAIRN_OK && t->outputs_json)
      st = cairn__store_task_io_insert(s, key, t->outputs_json, t->parent_files_json, err);
  }
  return st;
}

cairn_status cairn__jrec_apply(cairn__store *s, const cairn__jrec *r, cairn_error *err) {
  switch (r->type) {
  case J_META: return cairn__store_meta_set(s, r->u.meta.key, r->u.meta.value, err);
  case J_VOL: {
    cairn_status st = cairn__store_volunteer_insert(s, r->u.vol.id, r->u.vol.name,
                                                   r->u.vol.cluster, r->u.vol.apps,
                                                   r->u.vol.slots, r->u.vol.hash,
                                                   r->u.vol.created, err);
    if (st == CAIRN_OK && r->u.vol.team)
      st = cairn__store_volunteer_team(s, r->u.vol.id, r->u.vol.team, err);
    return st;
  }
  case J_BAN: {
    cairn_status st = cairn__store_volunteer_ban(s, r->u.ban.id, r->u.ban.text, err);
    return st == CAIRN_OK ? cairn__store_holders_forget(s, r->u.ban.id, err) : st;
  }
  case J_BAN_DONE: return cairn__store_volunteer_ban(s, r->u.ban.id, NULL, err);
  case J_PEER: return cairn__store_volunteer_peer(s, r->u.peer.id, r->u.peer.text, err);
  case J_TEAM: return cairn__store_volunteer_team(s, r->u.ban.id, r->u.ban.text, err);
  case J_FILE:
    return cairn__store_file_insert(s, r->u.file.sha256, r->u.file.size, r->u.file.created, err);
  case J_HOLD:
    return cairn__store_holder_insert(s, r->u.hold.sha256, r->u.hold.vol, r->u.hold.since, err);
  case J_UNHOLD: return cairn__store_holder_delete(s, r->u.hold.sha256, r->u.hold.vol, err);
  case J_KEPT: return cairn__store_kept(s, r->u.hold.sha256, (int)r->u.hold.vol, err);
  case J_RATE:
    return cairn__store_rate_put(s, r->u.rate.src, r->u.rate.dst, r->u.rate.bps,
                                r->u.rate.samples, err);
  case J_XFER: return cairn__store_xfer_put(s, &r->u.xfer, err);
  case J_PLAN:
    return cairn__store_plan_put(s, r->u.plan.sha256, r->u.plan.started_ms, r->u.plan.plans,
                                r->u.plan.body, err);
  case J_INVITE: return cairn__store_invite_put(s, &r->u.invite.row, err);
  case J_UNINVITE: return cairn__store_invite_delete(s, r->u.uninvite.id, err);
  case J_APP: return cairn__store_app_put(s, &r->u.app.row, err);
  case J_APP_RETIRE: return cairn__store_app_retire(s, r->u.uninvite.id, err);
  case J_ACCOUNT: return cairn__store_account_put(s, &r->u.acct.row, err);
  case J_ACCOUNT_KEY: return cairn__store_account_key(s, r->u.acct.row.id, r->u.acct.hash, err);
  case J_ACCOUNT_CREDIT: return cairn__store_account_credit(s, &r->u.acct.row, err);
  case J_VOL_ACCOUNT:
    return cairn__store_volunteer_account(s, r->u.trust.id, r->u.trust.trust, err);
  case J_PEOPLE: return cairn__prec_apply(s, r->u.people, err);
  case J_SIZING: return cairn__zrec_apply(s, r->u.sizing, err);
  case J_JOB: return write_job(s, r, err);
  case J_TASK:
    return cairn__store_task_update(s, r->u.task.key, r->u.task.state, r->u.task.attempts,
                                   r->u.task.accepted, r->u.task.round, err);
  case J_JOBSTATE:
    return cairn__store_job_update(s, r->u.jobstate.id, r->u.jobstate.state,
                                  r->u.jobstate.finished, err);
  case J_ALLOC: {
    const __typeof__(r->u.alloc) *a = &r->u.alloc;
    return cairn__store_alloc_insert(s, a->idx, a->vol, a->t, a->task, a->issued, a->expires,
                                    a->round, err);
  }
  case J_LEASE:
    return cairn__store_alloc_update(s, r->u.lease.idx, r->u.lease.expires, r->u.lease.state, err);
  case J_RESULT: {
    const __typeof__(r->u.result) *x = &r->u.result;
    cairn_status st = cairn__store_result_insert(s, x->idx, x->task, x->vol, x->exit_status,
                                                x->out, x->len, x->digest, x->received,
                                                x->outcome, x->reason, x->err_tail, x->err_len,
                                                err);
    for (size_t i = 0; st == CAIRN_OK && i < x->nfiles; i++)
      st = cairn__store_result_file_insert(s, x->idx, x->files[i].name, x->files[i].sha256,
                                          x->files[i].size, err);
    if (st == CAIRN_OK && (x->claim >= 0 || x->credit != 0)) {
      cairn__store_credit_row c = {.idx = x->idx, .claim = x->claim, .result_credit = x->credit};
      st = cairn__store_credit(s, &c, err);
    }
    if (st == CAIRN_OK && x->team) {
      cairn__store_team_row t = {.idx = x->idx, .team = x->team, .granted = 1};
      st = cairn__store_result_team(s, &t, err);
    }
    return st;
  }
  case J_CREDIT: return cairn__store_credit(s, &r->u.credit, err);
  case J_TEAM_CREDIT: return cairn__store_team_credit(s, &r->u.team.row, err);
  case J_OUTCOME: return cairn__store_result_outcome(s, r->u.outcome.idx, r->u.outcome.outcome, err);
  case J_OFFER: {
    cairn__store_res_row row = {r->u.offer.vol, r->u.offer.cores, r->u.offer.memory_mib,
                               r->u.offer.disk_mib};
    return cairn__store_volunteer_offer(s, &row, err);
  }
  case J_QUAR: return cairn__store_volunteer_quarantine(s, r->u.quar.id, r->u.quar.on, err);
  case J_TRUST: return cairn__store_volunteer_trust(s, r->u.trust.id, r->u.trust.trust, err);
  case J_TRING: return cairn__store_trust_put(s, &r->u.tring, err);
  case J_TRING_CLEAR: return cairn__store_trust_clear(s, r->u.trust.id, err);
  case J_JOBPRIO: return cairn__store_job_priority(s, r->u.jobprio.id, r->u.jobprio.priority, err);
  case J_JOBDEL: {
    const __typeof__(r->u.jobdel) *d = &r->u.jobdel;
    cairn__store_delete_report scratch = {0}, *out = d->out ? d->out : &scratch;
    cairn_status st = d->final ? cairn__store_job_delete_finish(s, d->id, d->now, out, err)
                               : cairn__store_job_delete_range(s, d->id, d->purge, d->lo, d->hi,
                                                              out, err);
    free(scratch.removed);
    return st;
  }
  }
  return cairn__error_set(err, CAIRN_EINTERNAL, "journal: unknown record %d", (int)r->type);
}

/* The audit chain's entry for r (chain.h's field orders); 0 when r is not
 * chained. */
int cairn__jrec_chain_entry(const cairn__jrec *r, cairn__centry *e) {
  switch (r->type) {
  case J_ALLOC: {
    const __typeof__(r->u.alloc) *a = &r->u.alloc;
    cairn__centry_begin(e, CAIRN_CK_ALLOC, a->vol, a->task, a->idx);
    int64_t v[] = {a->idx, a->vol, a->t, a->task, a->issued, a->expires, a->round};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
      cairn__centry_i64(e, v[i]);
    return 1;
  }
  case J_RESULT: {
    const __typeof__(r->u.result) *x = &r->u.result;
    cairn__centry_begin(e, CAIRN_CK_RESULT, x->vol, x->task, x->idx);
    int64_t v[] = {x->idx, x->task, x->vol, x->exit_status, x->received};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
      cairn__centry_i64(e, v[i]);
    cairn__centry_str(e, x->digest);
    cairn__centry_str(e, x->outcome);
    cairn__centry_str(e, x->reason);
    cairn__centry_f64(e, x->claim);
    cairn__centry_f64(e, x->credit);
    return 1;
  }
  case J_OUTCOME:
    cairn__centry_begin(e, CAIRN_CK_OUTCOME, 0, 0, r->u.outcome.idx);
    cairn__centry_i64(e, r->u.outcome.idx);
    cairn__centry_str(e, r->u.outcome.outcome);
    return 1;
  case J_BAN:
    cairn__centry_begin(e, CAIRN_CK_BAN, r->u.ban.id, 0, 0);
    cairn__centry_i64(e, r->u.ban.id);
    cairn__centry_str(e, r->u.ban.text);
    return 1;
  case J_QUAR:
    cairn__centry_begin(e, CAIRN_CK_QUARANTINE, r->u.quar.id, 0, 0);
    cairn__centry_i64(e, r->u.quar.id);
    cairn__centry_i64(e, r->u.quar.on);
    return 1;
  case J_TRUST:
    if (r->u.trust.trust != 0)
      return 0; /* only resets are chained */
    cairn__centry_begin(e, CAIRN_CK_TRUST_RESET, r->u.trust.id, 0, 0);
    cairn__centry_i64(e, r->u.trust.id);
    return 1;
  case J_CREDIT: {
    const cairn__store_credit_row *c = &r->u.credit;
    cairn__centry_begin(e, CAIRN_CK_CREDIT, c->vol, 0, c->idx);
    cairn__centry_i64(e, c->idx);
    cairn__centry_i64(e, c->vol);
    cairn__centry_f64(e, c->claim);
    cairn__centry_f64(e, c->result_credit);
    cairn__centry_f64(e, c->credit);
    cairn__centry_f64(e, c->cpu_seconds);
    cairn__centry_i64(e, c->credited);
    return 1;
  }
  case J_TEAM_CREDIT: {
    const cairn__store_team_row *t = &r->u.team.row;
    cairn__centry_begin(e, CAIRN_CK_TEAM_CREDIT, 0, 0, t->idx);
    cairn__centry_i64(e, t->idx);
    cairn__centry_f64(e, t->credit);
    cairn__centry_f64(e, t->cpu_seconds);
    cairn__centry_i64(e, t->results);
    cairn__centry_str(e, t->team);
    return 1;
  }
  default: return 0;
  }
}

cairn__jrec **cairn__jrec_next(cairn__jrec *r) { return &r->next; }

int cairn__jrec_reclaims(const cairn__jrec *r) { return r->type == J_JOBDEL && r->u.jobdel.final; }
