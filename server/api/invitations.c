/* invitations.c — invitation codes: create, list, revoke, spend (see
 * invitations.h). */
#include "server/api/invitations.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/limits.h"
#include "common/sha256.h"
#include "server/store/journal.h"
#include "server/store/store.h"

typedef struct invite {
  int64_t id, uses, used, expires, created;
  char hash[65];
  char prefix[CAIRN_INVITATION_PREFIX + 1];
  char *note;
} invite;

struct cairn__invites {
  pthread_mutex_t mu;
  cairn__journal *journal; /* the core's */
  invite *v;               /* n of CAIRN_MAX_INVITATIONS, by id */
  size_t n;
  int64_t next_id;
};

static int load_row(void *ud, const cairn__store_invite_row *r) {
  cairn__invites *iv = ud;
  if (iv->n == CAIRN_MAX_INVITATIONS || strlen(r->code_hash) != 64)
    return -1;
  invite *x = &iv->v[iv->n];
  *x = (invite){.id = r->id, .uses = r->uses, .used = r->used, .expires = r->expires,
                .created = r->created};
  snprintf(x->hash, sizeof x->hash, "%s", r->code_hash);
  snprintf(x->prefix, sizeof x->prefix, "%s", r->prefix);
  if (!(x->note = strdup(r->note)))
    return -1;
  iv->n++;
  if (r->id >= iv->next_id)
    iv->next_id = r->id + 1;
  return 0;
}

cairn__invites *cairn__invites_open(cairn__core *c, cairn_error *err) {
  cairn__invites *iv = calloc(1, sizeof *iv);
  if (!iv || !(iv->v = calloc(CAIRN_MAX_INVITATIONS, sizeof *iv->v))) {
    free(iv);
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&iv->mu, NULL);
  iv->journal = c->journal;
  iv->next_id = 1;
  if (cairn__store_read_invites(c->store, load_row, iv, err) != CAIRN_OK) {
    cairn__invites_close(iv);
    return NULL;
  }
  return iv;
}

void cairn__invites_close(cairn__invites *iv) {
  if (!iv)
    return;
  for (size_t i = 0; i < iv->n; i++)
    free(iv->v[i].note);
  free(iv->v);
  pthread_mutex_destroy(&iv->mu);
  free(iv);
}

/* The invitation with id or code hash (under mu); NULL when none. O(n). */
static invite *find(cairn__invites *iv, int64_t id, const char *hash) {
  for (size_t i = 0; i < iv->n; i++)
    if (hash ? strcmp(iv->v[i].hash, hash) == 0 : iv->v[i].id == id)
      return &iv->v[i];
  return NULL;
}

/* Journals x's row (under mu). */
static void journal_row(cairn__invites *iv, const invite *x) {
  cairn__store_invite_row r = {.id = x->id, .uses = x->uses, .used = x->used,
                              .expires = x->expires, .created = x->created,
                              .code_hash = x->hash, .prefix = x->prefix, .note = x->note};
  cairn__journal_put(iv->journal, cairn__jrec_invite(&r));
}

cairn__invite_verdict cairn__invites_use(cairn__invites *iv, const char *code, int64_t now,
                                         int64_t *id) {
  char hash[65];
  cairn__sha256_hex(code, strlen(code), hash);
  pthread_mutex_lock(&iv->mu);
  invite *x = find(iv, 0, hash);
  cairn__invite_verdict v = !x                  ? CAIRN__INVITE_INVALID
                            : now >= x->expires  ? CAIRN__INVITE_EXPIRED
                            : x->used >= x->uses ? CAIRN__INVITE_USED_UP
                                                 : CAIRN__INVITE_OK;
  if (v == CAIRN__INVITE_OK) {
    x->used++;
    *id = x->id;
    journal_row(iv, x);
  }
  pthread_mutex_unlock(&iv->mu);
  return v;
}

void cairn__invites_unuse(cairn__invites *iv, int64_t id) {
  pthread_mutex_lock(&iv->mu);
  invite *x = find(iv, id, NULL);
  if (x && x->used > 0) {
    x->used--;
    journal_row(iv, x);
  }
  pthread_mutex_unlock(&iv->mu);
}

/* Waits for everything journaled so far (never with mu held). */
static cairn_status durable(cairn__invites *iv, cairn_error *err) {
  return cairn__journal_wait(iv->journal, cairn__journal_last(iv->journal), err);
}

static json_t *row_json(const invite *x, int64_t now) {
  return json_pack("{s:I, s:s, s:I, s:I, s:I, s:I, s:b, s:s, s:I}", "id", (json_int_t)x->id,
                   "prefix", x->prefix, "uses", (json_int_t)x->uses, "used", (json_int_t)x->used,
                   "uses_left", (json_int_t)(x->uses > x->used ? x->uses - x->used : 0),
                   "expires", (json_int_t)x->expires, "expired", now >= x->expires, "note",
                   x->note, "created", (json_int_t)x->created);
}

json_t *cairn__invites_create(cairn__invites *iv, int uses, int64_t seconds, const char *note,
                              int64_t now, cairn_error *err) {
  static const char digits[] = "0123456789abcdef";
  unsigned char raw[CAIRN_INVITATION_LEN / 2];
  char code[CAIRN_INVITATION_LEN + 1];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
    cairn__error_set(err, CAIRN_EIO, "no randomness for a code: %s", strerror(errno));
    return NULL;
  }
  for (size_t i = 0; i < sizeof raw; i++) {
    code[2 * i] = digits[raw[i] >> 4];
    code[2 * i + 1] = digits[raw[i] & 15];
  }
  code[CAIRN_INVITATION_LEN] = '\0';
  invite x = {.uses = uses, .expires = now + seconds, .created = now, .note = strdup(note)};
  if (!x.note) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  cairn__sha256_hex(code, CAIRN_INVITATION_LEN, x.hash);
  memcpy(x.prefix, code, CAIRN_INVITATION_PREFIX);
  pthread_mutex_lock(&iv->mu);
  if (iv->n == CAIRN_MAX_INVITATIONS) {
    pthread_mutex_unlock(&iv->mu);
    free(x.note);
    cairn__error_set(err, CAIRN_ECONFLICT, "there are already %u invitations: revoke some first",
                    CAIRN_MAX_INVITATIONS);
    return NULL;
  }
  x.id = iv->next_id++;
  iv->v[iv->n++] = x;
  journal_row(iv, &x);
  json_t *o = row_json(&x, now);
  pthread_mutex_unlock(&iv->mu);
  if (durable(iv, err) != CAIRN_OK) {
    json_decref(o);
    return NULL;
  }
  if (!o || json_object_set_new(o, "code", json_string(code))) {
    json_decref(o);
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  return o;
}

json_t *cairn__invites_list(cairn__invites *iv, int64_t now) {
  json_t *a = json_array();
  pthread_mutex_lock(&iv->mu);
  for (size_t i = 0; a && i < iv->n; i++)
    if (json_array_append_new(a, row_json(&iv->v[i], now))) {
      json_decref(a);
      a = NULL;
    }
  pthread_mutex_unlock(&iv->mu);
  return a ? json_pack("{s:o}", "invitations", a) : NULL;
}

cairn_status cairn__invites_revoke(cairn__invites *iv, int64_t id, cairn_error *err) {
  pthread_mutex_lock(&iv->mu);
  invite *x = find(iv, id, NULL);
  if (!x) {
    pthread_mutex_unlock(&iv->mu);
    return cairn__error_set(err, CAIRN_ENOTFOUND, "no invitation %lld", (long long)id);
  }
  free(x->note);
  size_t i = (size_t)(x - iv->v);
  memmove(&iv->v[i], &iv->v[i + 1], (iv->n - i - 1) * sizeof *iv->v);
  iv->n--;
  cairn__journal_put(iv->journal, cairn__jrec_invite_delete(id));
  pthread_mutex_unlock(&iv->mu);
  return durable(iv, err);
}
