/* xmlstats.c — BOINC's XML statistics records (xmlstats.h): the fields,
 * their order and their forms as BOINC's db_dump writes them
 * (docs/references.md [BOINC-stats]), limited to what Cairn has. Each
 * record is gathered in a 512-byte buffer handed to the sink when full
 * and at the record's end. */
#include "common/xmlstats.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/md5.h"

/* A record under way: its sink and the buffer in front of it. */
typedef struct xo {
  cairn__xs_sink *w;
  void *ud;
  int bad;      /* the sink failed: nothing more is written */
  size_t n;     /* bytes in b */
  char b[512];
} xo;

static void flush(xo *o) {
  if (o->n && !o->bad && o->w(o->ud, o->b, o->n))
    o->bad = 1;
  o->n = 0;
}

static void put(xo *o, const char *p, size_t n) {
  while (n && !o->bad) {
    if (o->n == sizeof o->b)
      flush(o);
    size_t k = n < sizeof o->b - o->n ? n : sizeof o->b - o->n;
    memcpy(o->b + o->n, p, k);
    o->n += k;
    p += k;
    n -= k;
  }
}

static void puts_(xo *o, const char *s) { put(o, s, strlen(s)); }

static int done(xo *o) {
  flush(o);
  return o->bad ? -1 : 0;
}

/* The length of the valid UTF-8 sequence at s (1 to 4) whose character
 * XML 1.0 allows, or 0 (RFC 3629 §4: no overlong forms, no surrogates,
 * nothing above U+10FFFF). */
static size_t utf8_char(const unsigned char *s) {
  unsigned c = s[0];
  if (c < 0x80)
    return c >= 0x20 || c == '\t' || c == '\n' || c == '\r';
  size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  uint32_t cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0; /* a NUL ends the text here too */
    cp = cp << 6 | (s[i] & 0x3f);
  }
  if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff) || cp >= 0xfffe)) ||
      (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return len;
}

static void esc(xo *o, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (p && *p) {
    const unsigned char *run = p; /* characters that go as they are */
    size_t len;
    while (*p && *p != '&' && *p != '<' && *p != '>' && *p != '"' && *p != '\'' &&
           (len = utf8_char(p)) > 0)
      p += len;
    put(o, (const char *)run, (size_t)(p - run));
    if (!*p)
      break;
    switch (*p) {
    case '&': puts_(o, "&amp;"); break;
    case '<': puts_(o, "&lt;"); break;
    case '>': puts_(o, "&gt;"); break;
    case '"': puts_(o, "&quot;"); break;
    case '\'': puts_(o, "&apos;"); break;
    default: put(o, "?", 1); /* not valid UTF-8, or not allowed in XML */
    }
    p++;
  }
}

void cairn__xs_number(double x, char out[48]) {
  if (!isfinite(x))
    x = 0;
  if (fabs(x) < 9e12) { /* x·10^6 fits an int64_t: integer digits, no locale */
    long long r = llround(x * 1e6);
    unsigned long long a = r < 0 ? 0ull - (unsigned long long)r : (unsigned long long)r;
    snprintf(out, 48, "%s%llu.%06llu", r < 0 ? "-" : "", a / 1000000, a % 1000000);
  } else { /* whole credits only: %.0f writes no decimal point */
    snprintf(out, 48, "%.0f.000000", x);
  }
}

static void elem_text(xo *o, const char *tag, const char *s) {
  put(o, " <", 2);
  puts_(o, tag);
  put(o, ">", 1);
  esc(o, s ? s : "");
  put(o, "</", 2);
  puts_(o, tag);
  put(o, ">\n", 2);
}

static void elem_int(xo *o, const char *tag, int64_t v) {
  char line[96];
  int k = snprintf(line, sizeof line, " <%s>%" PRId64 "</%s>\n", tag, v, tag);
  put(o, line, (size_t)k);
}

static void elem_num(xo *o, const char *tag, double v) {
  char num[48], line[128];
  cairn__xs_number(v, num);
  int k = snprintf(line, sizeof line, " <%s>%s</%s>\n", tag, num, tag);
  put(o, line, (size_t)k);
}

void cairn__xs_cpid(const char *id, const char *email, char hex[33]) {
  cairn__md5 c;
  cairn__md5_init(&c);
  cairn__md5_update(&c, id ? id : "", id ? strlen(id) : 0);
  cairn__md5_update(&c, email ? email : "", email ? strlen(email) : 0);
  cairn__md5_final_hex(&c, hex);
}

int cairn__xs_escape(cairn__xs_sink *w, void *ud, const char *s) {
  xo o = {.w = w, .ud = ud};
  esc(&o, s);
  return done(&o);
}

int cairn__xs_open(cairn__xs_sink *w, void *ud, const char *tag) {
  xo o = {.w = w, .ud = ud};
  puts_(&o, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<");
  puts_(&o, tag);
  put(&o, ">\n", 2);
  return done(&o);
}

int cairn__xs_close(cairn__xs_sink *w, void *ud, const char *tag) {
  xo o = {.w = w, .ud = ud};
  put(&o, "</", 2);
  puts_(&o, tag);
  put(&o, ">\n", 2);
  return done(&o);
}

/* BOINC's user record: id, name, create_time, the credits, cpid, then
 * country and teamid when there are (no url, no has_profile: Cairn's
 * accounts have neither). */
int cairn__xs_user_write(cairn__xs_sink *w, void *ud, const cairn__xs_user *u) {
  xo o = {.w = w, .ud = ud};
  char cpid[33];
  cairn__xs_cpid(u->cross_project_id, u->email, cpid);
  puts_(&o, "<user>\n");
  elem_int(&o, "id", u->id);
  elem_text(&o, "name", u->name);
  elem_int(&o, "create_time", u->create_time);
  elem_num(&o, "total_credit", u->total_credit);
  elem_num(&o, "expavg_credit", u->expavg_credit);
  elem_num(&o, "expavg_time", u->expavg_time);
  elem_text(&o, "cpid", cpid);
  if (u->country && *u->country)
    elem_text(&o, "country", u->country);
  if (u->teamid > 0)
    elem_int(&o, "teamid", u->teamid);
  puts_(&o, "</user>\n");
  return done(&o);
}

/* BOINC's team record: id, name, userid (the founder), the credits,
 * founder_name, create_time, url and description when not empty, country
 * always (no type, no name_html: Cairn's teams have neither). */
int cairn__xs_team_write(cairn__xs_sink *w, void *ud, const cairn__xs_team *t) {
  xo o = {.w = w, .ud = ud};
  puts_(&o, "<team>\n");
  elem_int(&o, "id", t->id);
  elem_text(&o, "name", t->name);
  elem_int(&o, "userid", t->founder);
  elem_num(&o, "total_credit", t->total_credit);
  elem_num(&o, "expavg_credit", t->expavg_credit);
  elem_num(&o, "expavg_time", t->expavg_time);
  if (t->founder_name)
    elem_text(&o, "founder_name", t->founder_name);
  elem_int(&o, "create_time", t->create_time);
  if (t->url && *t->url)
    elem_text(&o, "url", t->url);
  if (t->description && *t->description)
    elem_text(&o, "description", t->description);
  elem_text(&o, "country", t->country);
  puts_(&o, "</team>\n");
  return done(&o);
}

/* BOINC's detailed host record, the fields Cairn has: id, userid when
 * attached, the credits, the processor and system fields (only os_name
 * known, from a signed-app worker's platform; the others empty, as BOINC
 * writes an unknown one), create_time, ncpus, m_nbytes, d_total and
 * host_cpid. */
int cairn__xs_host_write(cairn__xs_sink *w, void *ud, const cairn__xs_host *h) {
  xo o = {.w = w, .ud = ud};
  char cpid[33];
  cairn__xs_cpid(h->host_cpid, h->email, cpid);
  puts_(&o, "<host>\n");
  elem_int(&o, "id", h->id);
  if (h->userid > 0)
    elem_int(&o, "userid", h->userid);
  elem_num(&o, "total_credit", h->total_credit);
  elem_num(&o, "expavg_credit", h->expavg_credit);
  elem_num(&o, "expavg_time", h->expavg_time);
  elem_text(&o, "p_vendor", "");
  elem_text(&o, "p_model", "");
  elem_text(&o, "os_name", h->os_name);
  elem_text(&o, "os_version", "");
  elem_int(&o, "create_time", h->create_time);
  elem_int(&o, "ncpus", h->ncpus);
  elem_num(&o, "m_nbytes", h->m_nbytes);
  elem_num(&o, "d_total", h->d_total);
  elem_text(&o, "host_cpid", cpid);
  puts_(&o, "</host>\n");
  return done(&o);
}

int cairn__xs_tables_head(cairn__xs_sink *w, void *ud, const cairn__xs_tables *t) {
  xo o = {.w = w, .ud = ud};
  puts_(&o, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<tables>\n");
  elem_int(&o, "update_time", t->update_time);
  elem_int(&o, "nusers_total", t->nusers);
  elem_int(&o, "nteams_total", t->nteams);
  elem_int(&o, "nhosts_total", t->nhosts);
  elem_num(&o, "total_credit", t->total_credit);
  puts_(&o, " <applications>\n");
  return done(&o);
}

int cairn__xs_tables_app(cairn__xs_sink *w, void *ud, const char *name) {
  xo o = {.w = w, .ud = ud};
  puts_(&o, "  <application>\n ");
  elem_text(&o, "name", name);
  puts_(&o, "  </application>\n");
  return done(&o);
}

int cairn__xs_tables_end(cairn__xs_sink *w, void *ud) {
  xo o = {.w = w, .ud = ud};
  puts_(&o, " </applications>\n</tables>\n");
  return done(&o);
}
