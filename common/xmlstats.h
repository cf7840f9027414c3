/* xmlstats.h — the records of BOINC's XML statistics exports (XmlStats,
 * docs/references.md [BOINC-stats]; docs/project.md, "Statistics
 * exports"): an account as a <user>, a team of accounts as a <team>, a
 * volunteer as a <host>, and tables.xml, written as BOINC's db_dump
 * writes them, with the fields Cairn has.
 *
 * Pure functions over plain structs: each record goes out through a sink
 * (a gzip stream, a buffer in a test) in pieces of at most 512 bytes, so
 * writing one costs O(its text) time and O(1) memory, whatever the length
 * of its names. Text is XML-escaped; bytes that are not valid UTF-8 and
 * characters XML 1.0 forbids (controls but tab, line feed and carriage
 * return; U+FFFE, U+FFFF) become '?', so that a statistics site's parser
 * never meets a malformed file. Numbers are written without the locale
 * (a decimal point, six decimals, as BOINC's "%f"). */
#ifndef CAIRN_XMLSTATS_H
#define CAIRN_XMLSTATS_H

#include <stddef.h>
#include <stdint.h>

/* Takes n bytes of text: 0, or -1 when they could not be written (the
 * record's writer then returns -1 at once). */
typedef int cairn__xs_sink(void *ud, const char *p, size_t n);

/* An account (table accounts). cross_project_id and email only make the
 * cpid: neither is ever written. */
typedef struct cairn__xs_user {
  int64_t id, create_time;
  int64_t teamid;                /* 0: in no team (no <teamid>) */
  const char *name;
  const char *country;           /* "": none (no <country>) */
  double total_credit, expavg_credit, expavg_time;
  const char *cross_project_id;  /* its 32 random hex digits */
  const char *email;             /* its e-mail in lower case (accounts.email_key) */
} cairn__xs_user;

/* A team of accounts (table teams, its credit from the team ledger). */
typedef struct cairn__xs_team {
  int64_t id, founder, create_time;
  const char *name;
  const char *founder_name;      /* NULL: the founder's account is gone (no <founder_name>) */
  const char *url, *description; /* "": none (no <url>, <description>) */
  const char *country;           /* written as it is, "" too */
  double total_credit, expavg_credit, expavg_time;
} cairn__xs_team;

/* A host (a volunteer). host_cpid and email only make the exported
 * host_cpid: neither is written as it is. */
typedef struct cairn__xs_host {
  int64_t id, create_time;
  int64_t userid;                /* its account; 0: none (no <userid>) */
  double total_credit, expavg_credit, expavg_time;
  const char *os_name;           /* "": unknown (an empty element) */
  int64_t ncpus;                 /* cores it offers, else its slots */
  double m_nbytes, d_total;      /* memory and disk it offers, bytes; 0: unknown */
  const char *host_cpid;         /* its own 32 random hex digits (volunteers.host_cpid) */
  const char *email;             /* its account's e-mail in lower case; "": none */
} cairn__xs_host;

/* What tables.xml says besides the application names. */
typedef struct cairn__xs_tables {
  int64_t update_time;           /* Unix seconds of the snapshot exported */
  int64_t nusers, nteams, nhosts;
  double total_credit;           /* the credit of every host exported */
} cairn__xs_tables;

/* BOINC's cross-project digest: MD5 of id followed by email, as 32
 * lowercase hex digits ("cpid" of a user, "host_cpid" of a host). */
void cairn__xs_cpid(const char *id, const char *email, char hex[33]);

/* The text s, XML-escaped (&, <, >, ", ' as entities) and made valid (see
 * above). */
int cairn__xs_escape(cairn__xs_sink *w, void *ud, const char *s);
/* A file's start (the XML declaration and <tag>) and end (</tag>). */
int cairn__xs_open(cairn__xs_sink *w, void *ud, const char *tag);
int cairn__xs_close(cairn__xs_sink *w, void *ud, const char *tag);
/* One record. */
int cairn__xs_user_write(cairn__xs_sink *w, void *ud, const cairn__xs_user *u);
int cairn__xs_team_write(cairn__xs_sink *w, void *ud, const cairn__xs_team *t);
int cairn__xs_host_write(cairn__xs_sink *w, void *ud, const cairn__xs_host *h);
/* tables.xml: its head (the declaration, the counts and the opening of
 * <applications>), one application name, its end. */
int cairn__xs_tables_head(cairn__xs_sink *w, void *ud, const cairn__xs_tables *t);
int cairn__xs_tables_app(cairn__xs_sink *w, void *ud, const char *name);
int cairn__xs_tables_end(cairn__xs_sink *w, void *ud);

/* x as BOINC's "%f" writes it (six decimals), with a '.' whatever the
 * locale; a value that is not finite is written 0.000000. out[48]. */
void cairn__xs_number(double x, char out[48]);

#endif
