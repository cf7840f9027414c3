/* launch_ssh.c — the `ssh` backend (launch.h): cairn-worker processes on
 * other hosts, started over `ssh -o BatchMode=yes [--ssh-options] HOST`.
 *
 * On the host, one ssh session makes a private folder D (mktemp -d under the
 * host's $TMPDIR or /tmp, mode 0700), writes the invitation code it reads
 * from the session's stdin into D/invitation (mode 0600; the code is never
 * on a command line), and starts `setsid nohup sh D/run.sh D WORKER ARGS
 * --dir D/w` in the background, its output in D.log. run.sh is the session
 * and group leader: it records its pid (the id's PID, also the group's id),
 * forwards SIGTERM to the worker, writes the worker's exit status to D.exit
 * and removes D. refresh asks each host once a round, for all its workers,
 * whether each pid lives (kill -0), else for its D.exit; remove sends
 * `kill -TERM -- -PID`; fini waits up to SSH_GRACE seconds for the removed
 * ones, then sends SIGKILL to the groups left. Ids are "HOST:PID". Workers
 * go to the host holding the fewest; --cluster defaults to the host's domain
 * part (what follows its first dot), else its name.
 *
 * --ship-worker: before its first worker on a host, one ssh session sends the
 * tarball through its stdin into a private folder S there (mktemp -d, mode
 * 0700, `tar -xzf -`), whose bin/cairn-worker then runs on that host; fini
 * removes S once the host's removed workers are gone. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/launch.h"

#define SSH_MAX_HOSTS 1024
#define SSH_MAX_OPTS 32
/* Seconds an ssh command may take. */
#define SSH_TIMEOUT 30.0
/* Seconds removed workers have to exit before SIGKILL. */
#define SSH_GRACE 10.0
#define SSH_SCRIPT_MAX 16384
/* Seconds sending a worker tarball to one host may take. */
#define SSH_SHIP_TIMEOUT 300.0
/* Largest worker tarball shipped. */
#define SSH_SHIP_MAX (512L << 20)

typedef struct ssh_worker {
  int host;
  long pid;
  char dir[256];
  int state, removed;
} ssh_worker;

typedef struct ssh_state {
  char *hosts[SSH_MAX_HOSTS];
  int nhosts;
  const char *ssh_argv[SSH_MAX_OPTS + 8]; /* ssh -o BatchMode=yes ... (host, script appended) */
  int nssh;
  char *opts_copy;
  const char *remote_worker;
  char *tarball;                  /* --ship-worker's bytes (NULL: none) */
  size_t tarlen;
  char *shipped[SSH_MAX_HOSTS];   /* per host: its folder S (NULL: not yet) */
  ssh_worker *w;
  size_t n, cap;
} ssh_state;

static int add_host(ssh_state *s, const char *h, size_t len, char *err, size_t errlen) {
  while (len && (h[len - 1] == ' ' || h[len - 1] == '\t' || h[len - 1] == '\r'))
    len--;
  while (len && (*h == ' ' || *h == '\t'))
    h++, len--;
  if (!len || *h == '#')
    return 0;
  if (s->nhosts == SSH_MAX_HOSTS)
    return snprintf(err, errlen, "more than %d hosts", SSH_MAX_HOSTS), -1;
  if (*h == '-' || len > 200 || memchr(h, ' ', len))
    return snprintf(err, errlen, "\"%.*s\" is not a host name", (int)(len > 64 ? 64 : len), h),
           -1;
  s->hosts[s->nhosts] = strndup(h, len);
  return s->hosts[s->nhosts++] ? 0 : (snprintf(err, errlen, "out of memory"), -1);
}

static int add_hosts_file(ssh_state *s, const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f)
    return snprintf(err, errlen, "cannot read --hosts-file %s: %s", path, strerror(errno)), -1;
  char line[512];
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f))
    rc = add_host(s, line, strcspn(line, "\n"), err, errlen);
  fclose(f);
  return rc;
}

static void ssh_fini_state(ssh_state *s) {
  for (int i = 0; i < s->nhosts; i++) {
    free(s->hosts[i]);
    free(s->shipped[i]);
  }
  free(s->tarball);
  free(s->opts_copy);
  free(s->w);
  free(s);
}

/* Fills s->ssh_argv from --ssh-options (split on blanks). */
static int ssh_prefix(ssh_state *s, const char *opts, char *err, size_t errlen) {
  s->ssh_argv[s->nssh++] = "ssh";
  s->ssh_argv[s->nssh++] = "-o";
  s->ssh_argv[s->nssh++] = "BatchMode=yes";
  s->ssh_argv[s->nssh++] = "-o";
  s->ssh_argv[s->nssh++] = "ConnectTimeout=10";
  if (!opts)
    return 0;
  s->opts_copy = strdup(opts);
  if (!s->opts_copy)
    return snprintf(err, errlen, "out of memory"), -1;
  for (char *save = NULL, *t = strtok_r(s->opts_copy, " \t\n", &save); t;
       t = strtok_r(NULL, " \t\n", &save)) {
    if (s->nssh == SSH_MAX_OPTS + 5)
      return snprintf(err, errlen, "--ssh-options has more than %d words", SSH_MAX_OPTS), -1;
    s->ssh_argv[s->nssh++] = t;
  }
  return 0;
}

/* Reads the --ship-worker tarball into s->tarball. */
static int read_tarball(ssh_state *s, const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return snprintf(err, errlen, "cannot read --ship-worker %s: %s", path, strerror(errno)), -1;
  long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (len > 0 && len <= SSH_SHIP_MAX && fseek(f, 0, SEEK_SET) == 0 &&
      (s->tarball = malloc((size_t)len)) && fread(s->tarball, 1, (size_t)len, f) == (size_t)len)
    s->tarlen = (size_t)len;
  fclose(f);
  if (!s->tarlen)
    return snprintf(err, errlen, "--ship-worker %s: empty, unreadable or over %ld MiB", path,
                    SSH_SHIP_MAX >> 20), -1;
  return 0;
}

static int ssh_init(void **st, const cairn__launch_opt *opts, int n,
                    const cairn__launch_spec *spec, char *err, size_t errlen) {
  ssh_state *s = calloc(1, sizeof *s);
  if (!s)
    return snprintf(err, errlen, "out of memory"), -1;
  const char *ssh_opts = NULL;
  s->remote_worker = spec->worker_path;
  int rc = 0;
  for (int i = 0; rc == 0 && i < n; i++) {
    const char *v = opts[i].value;
    if (strcmp(opts[i].name, "hosts") == 0)
      for (const char *p = v; rc == 0 && *p;) {
        size_t len = strcspn(p, ",");
        rc = add_host(s, p, len, err, errlen);
        p += len + (p[len] == ',');
      }
    else if (strcmp(opts[i].name, "hosts-file") == 0)
      rc = add_hosts_file(s, v, err, errlen);
    else if (strcmp(opts[i].name, "ssh-options") == 0)
      ssh_opts = v;
    else if (strcmp(opts[i].name, "remote-worker") == 0)
      s->remote_worker = v;
  }
  if (rc == 0 && !s->nhosts)
    rc = (snprintf(err, errlen, "no hosts: give --hosts h1,h2 or --hosts-file FILE"), -1);
  if (rc == 0)
    rc = ssh_prefix(s, ssh_opts, err, errlen);
  if (rc == 0 && spec->shipped_worker)
    rc = read_tarball(s, spec->shipped_worker, err, errlen);
  if (rc) {
    ssh_fini_state(s);
    return -1;
  }
  *st = s;
  return 0;
}

/* Runs script on host h (stdin: in, may be NULL); its exit status or -1. */
static int on_host(ssh_state *s, int h, const char *script, const char *in, char *out,
                   size_t outsize) {
  const char *argv[SSH_MAX_OPTS + 8];
  int k = 0;
  for (; k < s->nssh; k++)
    argv[k] = s->ssh_argv[k];
  argv[k++] = s->hosts[h];
  argv[k++] = script;
  argv[k] = NULL;
  return cairn__launch_run(argv, in, in ? strlen(in) : 0, out, outsize, SSH_TIMEOUT);
}

/* The wrapper each worker runs under (run.sh; see the top of this file). */
static const char run_sh[] =
  "d=$1; shift\n"
  "echo $$ > \"$d/pid.new\" && mv \"$d/pid.new\" \"$d/pid\"\n"
  "\"$@\" & p=$!\n"
  "trap 'kill -TERM $p 2>/dev/null' TERM INT HUP\n"
  "s=0; wait $p || s=$?\n"
  "while kill -0 $p 2>/dev/null; do s=0; wait $p || s=$?; done\n"
  "echo $s > \"$d.exit\"\n"
  "rm -rf \"$d\"\n";

/* The start script for one worker on host h into out. 0, or -1 too long. */
static int start_script(ssh_state *s, const cairn__launch_spec *spec, int h, int invitation,
                        char *out, size_t size) {
  const char *cluster = spec->cluster;
  if (!cluster) {
    const char *dot = strchr(s->hosts[h], '.');
    cluster = dot && dot[1] ? dot + 1 : s->hosts[h];
  }
  cairn__launch_spec remote = *spec;
  char shipped[256];
  remote.worker_path = s->remote_worker;
  if (s->shipped[h]) {
    snprintf(shipped, sizeof shipped, "%s/bin/cairn-worker", s->shipped[h]);
    remote.worker_path = shipped;
  }
  const char *argv[128];
  char buf[256];
  if (cairn__launch_worker_argv(&remote, cluster, NULL, NULL, argv, 128, buf, sizeof buf) < 0)
    return -1;
  int n = snprintf(out, size,
                   "set -e; umask 077\n"
                   "d=$(mktemp -d \"${TMPDIR:-/tmp}/cairn-worker.XXXXXX\")\n"
                   "%s"
                   "cat > \"$d/run.sh\" <<'CAIRN_RUN_SH'\n%sCAIRN_RUN_SH\n"
                   "setsid nohup sh \"$d/run.sh\" \"$d\"",
                   invitation ? "IFS= read -r code; printf '%s\\n' \"$code\" > \"$d/invitation\"\n"
                              : "",
                   run_sh);
  if (n < 0 || (size_t)n >= size)
    return -1;
  for (int i = 0; argv[i]; i++)
    if ((strlen(out) + 2 > size) || (strcat(out, " "), cairn__launch_shell_quote(out, size, argv[i])))
      return -1;
  const char *tail =
    invitation ? " --dir \"$d/w\" --invitation-file \"$d/invitation\"" : " --dir \"$d/w\"";
  n = snprintf(out + strlen(out), size - strlen(out),
               "%s </dev/null >\"$d.log\" 2>&1 &\n"
               "i=0; while [ ! -s \"$d/pid\" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n"
               "echo \"$(cat \"$d/pid\") $d\"\n",
               tail);
  return n < 0 || (size_t)n >= size - strlen(out) ? -1 : 0;
}

/* The host with the fewest workers alive. */
static int pick_host(ssh_state *s) {
  int best = 0, best_n = -1;
  for (int h = 0; h < s->nhosts; h++) {
    int k = 0;
    for (size_t i = 0; i < s->n; i++)
      k += s->w[i].host == h && s->w[i].state <= CAIRN_LAUNCH_RUNNING;
    if (best_n < 0 || k < best_n)
      best = h, best_n = k;
  }
  return best;
}

/* Reads the invitation file's first line into code (with its newline). */
static int read_code(const char *path, char *code, size_t size) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  int ok = fgets(code, (int)size, f) != NULL && strchr(code, '\n');
  fclose(f);
  return ok ? 0 : -1;
}

/* Sends the tarball to host h once; 0, or -1 with err. */
static int ship(ssh_state *s, int h, char *err, size_t errlen) {
  if (s->shipped[h])
    return 0;
  static const char script[] =
    "set -e; umask 077; d=$(mktemp -d \"${TMPDIR:-/tmp}/cairn-ship.XXXXXX\"); "
    "tar -xzf - -C \"$d\" --strip-components=1 --no-same-owner; "
    "test -x \"$d/bin/cairn-worker\"; echo \"$d\"";
  const char *argv[SSH_MAX_OPTS + 8];
  int k = 0;
  for (; k < s->nssh; k++)
    argv[k] = s->ssh_argv[k];
  argv[k++] = s->hosts[h];
  argv[k++] = script;
  argv[k] = NULL;
  char out[512];
  int rc = cairn__launch_run(argv, s->tarball, s->tarlen, out, sizeof out, SSH_SHIP_TIMEOUT);
  out[strcspn(out, "\n")] = '\0';
  if (rc != 0 || out[0] != '/' || strlen(out) > 200 || strpbrk(out, "'\"\\$` "))
    return snprintf(err, errlen, "could not ship the worker to %s (ssh: %s)", s->hosts[h],
                    rc < 0 ? "failed or timed out" : "the remote unpack failed"), -1;
  s->shipped[h] = strdup(out);
  return s->shipped[h] ? 0 : (snprintf(err, errlen, "out of memory"), -1);
}

static int start_one(ssh_state *s, const cairn__launch_spec *spec, char id[CAIRN_LAUNCH_ID_MAX],
                     char *err, size_t errlen) {
  char code[512], out[512];
  char *script = malloc(SSH_SCRIPT_MAX);
  int h = pick_host(s), inv = spec->invitation_file != NULL;
  if (!script)
    return snprintf(err, errlen, "out of memory"), -1;
  if (inv && read_code(spec->invitation_file, code, sizeof code)) {
    free(script);
    return snprintf(err, errlen, "cannot read %s", spec->invitation_file), -1;
  }
  if (s->tarball && ship(s, h, err, errlen)) {
    free(script);
    return -1;
  }
  int rc = start_script(s, spec, h, inv, script, SSH_SCRIPT_MAX);
  if (rc)
    snprintf(err, errlen, "the worker's command line is too long");
  else
    rc = on_host(s, h, script, inv ? code : NULL, out, sizeof out);
  free(script);
  long pid = 0;
  char dir[256];
  if (rc == 0 && (sscanf(out, "%ld %255s", &pid, dir) != 2 || pid <= 1))
    rc = -1;
  if (rc) {
    snprintf(err, errlen, "could not start a worker on %s (ssh: %s)", s->hosts[h],
             rc < 0 ? "failed or timed out" : "the remote script failed");
    return -1;
  }
  s->w[s->n++] = (ssh_worker){h, pid, "", CAIRN_LAUNCH_RUNNING, 0};
  snprintf(s->w[s->n - 1].dir, sizeof s->w[s->n - 1].dir, "%s", dir);
  snprintf(id, CAIRN_LAUNCH_ID_MAX, "%.40s:%ld", s->hosts[h], pid);
  return 0;
}

static int ssh_submit(void *st, const cairn__launch_spec *spec, int n,
                      char ids[][CAIRN_LAUNCH_ID_MAX], char *err, size_t errlen) {
  ssh_state *s = st;
  int k = 0;
  for (; k < n; k++) {
    if (s->n == s->cap) {
      size_t cap = s->cap ? 2 * s->cap : 16;
      ssh_worker *w = realloc(s->w, cap * sizeof *w);
      if (!w)
        return snprintf(err, errlen, "out of memory"), k ? k : -1;
      s->w = w;
      s->cap = cap;
    }
    if (start_one(s, spec, ids[k], err, errlen))
      break;
  }
  return k ? k : -1;
}

/* One ssh to host h: the state of each of its workers still running. */
static void refresh_host(ssh_state *s, int h) {
  char script[SSH_SCRIPT_MAX] = "for x in", out[8192];
  int any = 0;
  for (size_t i = 0; i < s->n; i++) {
    ssh_worker *w = &s->w[i];
    if (w->host != h || w->state != CAIRN_LAUNCH_RUNNING || w->removed)
      continue;
    char item[300];
    snprintf(item, sizeof item, "%ld:%s", w->pid, w->dir);
    if (strlen(script) + strlen(item) + 512 > sizeof script)
      break;
    strcat(script, " ");
    cairn__launch_shell_quote(script, sizeof script, item);
    any = 1;
  }
  if (!any)
    return;
  strcat(script, "; do p=${x%%:*}; d=${x#*:}; if kill -0 $p 2>/dev/null; then echo \"$p R\"; "
                 "elif [ -f \"$d.exit\" ]; then echo \"$p $(cat \"$d.exit\")\"; "
                 "rm -f \"$d.exit\"; else echo \"$p L\"; fi; done");
  if (on_host(s, h, script, NULL, out, sizeof out) != 0)
    return; /* unknown this round: the last state stands */
  for (char *save = NULL, *line = strtok_r(out, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    long pid;
    char what[16];
    if (sscanf(line, "%ld %15s", &pid, what) != 2)
      continue;
    for (size_t i = 0; i < s->n; i++)
      if (s->w[i].host == h && s->w[i].pid == pid && !s->w[i].removed)
        s->w[i].state = what[0] == 'R'   ? CAIRN_LAUNCH_RUNNING
                        : what[0] == 'L' ? CAIRN_LAUNCH_FAILED
                        : atoi(what) == 0 ? CAIRN_LAUNCH_DONE
                                          : CAIRN_LAUNCH_FAILED;
  }
}

static void ssh_refresh(void *st) {
  ssh_state *s = st;
  for (int h = 0; h < s->nhosts; h++)
    refresh_host(s, h);
}

static ssh_worker *find(ssh_state *s, const char *id) {
  const char *colon = strrchr(id, ':');
  if (!colon)
    return NULL;
  long pid = atol(colon + 1);
  for (size_t i = 0; i < s->n; i++)
    if (s->w[i].pid == pid && strncmp(s->hosts[s->w[i].host], id, (size_t)(colon - id)) == 0 &&
        s->hosts[s->w[i].host][colon - id] == '\0')
      return &s->w[i];
  return NULL;
}

static int ssh_poll(void *st, const char *id) {
  ssh_worker *w = find(st, id);
  return w ? w->state : CAIRN_LAUNCH_FAILED;
}

/* Asks host h which of its removed workers live, marks the others gone and
 * returns how many live; sig "KILL": also SIGKILLs their groups. */
static int signal_removed(ssh_state *s, int h, const char *sig) {
  char script[SSH_SCRIPT_MAX] = "for p in", out[4096];
  int any = 0;
  for (size_t i = 0; i < s->n; i++)
    if (s->w[i].host == h && s->w[i].removed == 1 && strlen(script) + 64 < sizeof script) {
      snprintf(script + strlen(script), sizeof script - strlen(script), " %ld", s->w[i].pid);
      any = 1;
    }
  if (!any)
    return 0;
  snprintf(script + strlen(script), sizeof script - strlen(script),
           "; do if kill -0 $p 2>/dev/null; then %s echo $p; fi; done",
           sig ? (strcmp(sig, "KILL") == 0 ? "kill -KILL -- -$p 2>/dev/null;" : "") : "");
  out[0] = '\n'; /* every pid in out is then found as "\nPID\n" */
  if (on_host(s, h, script, NULL, out + 1, sizeof out - 1) != 0)
    return 1; /* cannot tell: count it as alive */
  int alive = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (s->w[i].host != h || s->w[i].removed != 1)
      continue;
    char pat[32];
    snprintf(pat, sizeof pat, "\n%ld\n", s->w[i].pid);
    int still = strstr(out, pat) != NULL;
    if (still)
      alive++;
    else
      s->w[i].removed = 2; /* gone */
  }
  return alive;
}

/* Removes the exit files of host h's removed workers (their logs stay). */
static void forget_exits(ssh_state *s, int h) {
  char script[SSH_SCRIPT_MAX] = "rm -f";
  int any = 0;
  for (size_t i = 0; i < s->n; i++)
    if (s->w[i].host == h && s->w[i].removed &&
        strlen(script) + strlen(s->w[i].dir) + 16 < sizeof script) {
      char item[300];
      snprintf(item, sizeof item, "%s.exit", s->w[i].dir);
      strcat(script, " ");
      cairn__launch_shell_quote(script, sizeof script, item);
      any = 1;
    }
  if (any)
    on_host(s, h, script, NULL, NULL, 0);
}

static int ssh_remove(void *st, const char *id) {
  ssh_state *s = st;
  ssh_worker *w = find(s, id);
  if (!w)
    return -1;
  w->removed = 1;
  char script[64];
  snprintf(script, sizeof script, "kill -TERM -- -%ld 2>/dev/null; true", w->pid);
  return on_host(s, w->host, script, NULL, NULL, 0) == 0 ? 0 : -1;
}

static void ssh_fini(void *st) {
  ssh_state *s = st;
  struct timespec half = {0, 500 * 1000 * 1000};
  for (int round = 0; round < (int)(SSH_GRACE / 0.5); round++) {
    int alive = 0;
    for (int h = 0; h < s->nhosts; h++)
      alive += signal_removed(s, h, NULL);
    if (!alive)
      break;
    nanosleep(&half, NULL);
  }
  for (int h = 0; h < s->nhosts; h++) {
    signal_removed(s, h, "KILL");
    forget_exits(s, h);
    if (s->shipped[h]) {
      char script[320] = "rm -rf ";
      cairn__launch_shell_quote(script, sizeof script, s->shipped[h]);
      on_host(s, h, script, NULL, NULL, 0);
    }
  }
  ssh_fini_state(s);
}

const cairn__launch_backend cairn__launch_ssh = {
  .name = "ssh",
  .summary = "cairn-worker processes on other hosts over ssh",
  .options = (const char *const[]){"hosts", "hosts-file", "ssh-options", "remote-worker", NULL},
  .help = "    --hosts h1,h2,...      hosts to start workers on (fewest workers first)\n"
          "    --hosts-file FILE      the same, one a line (# comments)\n"
          "    --ssh-options \"...\"    extra ssh flags, e.g. \"-F ~/.ssh/grid -p 2222\"\n"
          "    --remote-worker PATH   cairn-worker on the hosts (default cairn-worker on\n"
          "                           their PATH; also --worker)\n"
          "    --cluster default: the host's domain part, else its name; --ship-worker:\n"
          "    sent to each host once, over ssh, and run from there\n",
  .init = ssh_init,
  .refresh = ssh_refresh,
  .submit = ssh_submit,
  .poll = ssh_poll,
  .remove = ssh_remove,
  .fini = ssh_fini,
};
