/* vcmd.c — the command validator's runner (validate.h): a queue of result
 * pairs under c->lock and one thread that runs the job's program on each
 * pair, without c->lock, with a timeout (docs/jobs.md, "Validators").
 *
 * Contract: the program runs as `PROGRAM ARGS... DIR1 DIR2` with the
 * master's privileges and environment, standard input, output and error on
 * /dev/null; each DIR holds one candidate: `stdout` (its output) and
 * `files/NAME` (its output files, links into the file store). Exit status 0
 * means the two agree, 1 that they do not; any other status, a signal or
 * running past CAIRN_VALIDATOR_TIMEOUT_SECONDS (then the program's process
 * group is killed) counts as "do not agree" and is logged. */
#include "server/trust/validate.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

extern char **environ;

struct cairn__vcmd {
  cairn__vpair *q;        /* a ring of pairs waiting */
  size_t head, n, cap;
  pthread_cond_t cv;      /* with c->lock: a pair was queued, or stop */
  pthread_t thread;
  int started;
  int stop;               /* written under c->lock and child_lock, read under either */
  pid_t child;            /* the program running (0: none), for close() */
  pthread_mutex_t child_lock; /* taken alone, or inside c->lock by close() */
};

/* One candidate copied out under the lock. */
typedef struct {
  char *out;
  size_t len;
  cairn__output_file *files;
  uint32_t nfiles;
} cand;

int cairn__vcmd_open(cairn__core *c) {
  struct cairn__vcmd *v = calloc(1, sizeof *v);
  if (!v)
    return -1;
  pthread_cond_init(&v->cv, NULL);
  pthread_mutex_init(&v->child_lock, NULL);
  c->vcmd = v;
  return 0;
}

int cairn__vcmd_push(cairn__core *c, const cairn__vpair *p) {
  struct cairn__vcmd *v = c->vcmd;
  if (v->n == v->cap) {
    size_t ncap = v->cap ? 2 * v->cap : 16;
    cairn__vpair *nq = malloc(ncap * sizeof *nq);
    if (!nq)
      return -1;
    for (size_t i = 0; i < v->n; i++)
      nq[i] = v->q[(v->head + i) % v->cap];
    free(v->q);
    v->q = nq;
    v->head = 0;
    v->cap = ncap;
  }
  v->q[(v->head + v->n++) % v->cap] = *p;
  pthread_cond_signal(&v->cv);
  return 0;
}

static void cand_free(cand *k) {
  free(k->out);
  free(k->files);
}

/* Under c->lock: copies pair p's program and candidates (O(CAIRN_MAX_OUTPUT));
 * 0 when the pair is still wanted. A pair whose results are gone is
 * dropped (its task's count of queued pairs goes down). */
static int fetch(cairn__core *c, const cairn__vpair *p, char ***argv, cand k[2]) {
  mjob *j = p->job >= 1 && (size_t)p->job <= c->njobs ? c->jobs[p->job - 1] : NULL;
  if (!j || p->task >= j->ntasks || j->validator.kind != CAIRN_VALIDATOR_COMMAND)
    return -1;
  mtask *t = &j->tasks[p->task];
  if (t->round != p->round || !t->rep)
    return -1; /* a new round: the old one's count went with it */
  mres *a = cairn__valid_find(t->rep, p->idx[0]), *b = cairn__valid_find(t->rep, p->idx[1]);
  if (!a || !b || !a->out || !b->out || j->state == JS_CANCELLED) {
    c->calls.verdict(c, p, -1);
    return -1;
  }
  mres *m[2] = {a, b};
  *argv = calloc((size_t)j->validator.argc + 3, sizeof **argv);
  for (int i = 0; *argv && i < j->validator.argc; i++)
    (*argv)[i] = j->validator.argv[i]; /* copied below */
  for (int i = 0; i < 2; i++) {
    k[i].len = m[i]->len;
    k[i].out = malloc(k[i].len ? k[i].len : 1);
    k[i].nfiles = m[i]->nfiles;
    k[i].files = k[i].nfiles ? malloc(k[i].nfiles * sizeof *k[i].files) : NULL;
    if (k[i].out)
      memcpy(k[i].out, m[i]->out, k[i].len);
    if (k[i].files)
      memcpy(k[i].files, m[i]->files, k[i].nfiles * sizeof *k[i].files);
  }
  for (int i = 0; *argv && i < j->validator.argc; i++)
    if (!((*argv)[i] = strdup((*argv)[i]))) {
      for (int z = 0; z < i; z++)
        free((*argv)[z]);
      free(*argv);
      *argv = NULL;
    }
  if (!*argv || !k[0].out || !k[1].out || (k[0].nfiles && !k[0].files) ||
      (k[1].nfiles && !k[1].files)) {
    CAIRN_ERR(&c->log, "out of memory validating task %lld", (long long)t->key);
    c->calls.verdict(c, p, 0);
    return -1;
  }
  return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st;
  (void)flag;
  (void)f;
  return remove(path) && errno != ENOENT ? -1 : 0;
}

/* mkdir -p of path's parent folders below root (path starts with root). */
static int make_parents(char *path, size_t root) {
  for (char *s = path + root + 1; (s = strchr(s, '/')); s++) {
    *s = '\0';
    int bad = mkdir(path, 0700) && errno != EEXIST;
    *s = '/';
    if (bad)
      return -1;
  }
  return 0;
}

/* Writes candidate k into dir: stdout and files/NAME -> the stored file. */
static int write_cand(const char *dir, const char *files_dir, const cand *k) {
  char path[8192];
  if (mkdir(dir, 0700))
    return -1;
  snprintf(path, sizeof path, "%s/stdout", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  size_t off = 0;
  while (off < k->len) {
    ssize_t w = write(fd, k->out + off, k->len - off);
    if (w <= 0 && errno != EINTR)
      break;
    off += w > 0 ? (size_t)w : 0;
  }
  if (close(fd) || off != k->len)
    return -1;
  for (uint32_t i = 0; i < k->nfiles; i++) {
    char target[8192];
    int n = snprintf(path, sizeof path, "%s/files/%s", dir, k->files[i].name);
    snprintf(target, sizeof target, "%s/%s", files_dir, k->files[i].sha256);
    if (n >= (int)sizeof path || make_parents(path, strlen(dir)) || symlink(target, path))
      return -1;
  }
  return 0;
}

/* Runs argv (program, its arguments, then room for two folders) on k;
 * 1 agree, 0 not (logged when the program did not say 1). No lock held. */
static int run(cairn__core *c, char **argv, const cand k[2], int64_t key) {
  struct cairn__vcmd *v = c->vcmd;
  const char *tmp = getenv("TMPDIR");
  char dir[4096], d1[4200], d2[4200];
  snprintf(dir, sizeof dir, "%s/cairn-validate-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    CAIRN_ERR(&c->log, "validator for task %lld: no temporary folder: %s", (long long)key,
              strerror(errno));
    return 0;
  }
  snprintf(d1, sizeof d1, "%s/1", dir);
  snprintf(d2, sizeof d2, "%s/2", dir);
  int agree = 0, argc = 0;
  while (argv[argc])
    argc++;
  argv[argc] = d1;
  argv[argc + 1] = d2;
  if (write_cand(d1, c->files_dir, &k[0]) || write_cand(d2, c->files_dir, &k[1])) {
    CAIRN_ERR(&c->log, "validator for task %lld: cannot write its candidates in %s: %s",
              (long long)key, dir, strerror(errno));
    goto out;
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  for (int fd = 0; fd < 3; fd++)
    posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd ? O_WRONLY : O_RDONLY, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);
  pid_t pid;
  pthread_mutex_lock(&v->child_lock);
  int rc = v->stop ? ECANCELED : posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
  if (!rc)
    v->child = pid;
  pthread_mutex_unlock(&v->child_lock);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (rc) {
    if (rc != ECANCELED)
        CAIRN_ERR(&c->log, "validator for task %lld: cannot run %s: %s", (long long)key, argv[0],
                strerror(rc));
    goto out;
  }
  struct timespec t0, now, nap = {0, 10 * 1000 * 1000};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int status = 0, timed_out = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR))
      break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - t0.tv_sec >= CAIRN_VALIDATOR_TIMEOUT_SECONDS && !timed_out) {
      timed_out = 1;
      kill(-pid, SIGKILL);
    }
    nanosleep(&nap, NULL);
  }
  pthread_mutex_lock(&v->child_lock);
  v->child = 0;
  pthread_mutex_unlock(&v->child_lock);
  if (WIFEXITED(status) && WEXITSTATUS(status) <= 1 && !timed_out)
    agree = WEXITSTATUS(status) == 0;
  else
    CAIRN_WARN(&c->log, "validator for task %lld: %s %s %d; counted as disagreeing",
               (long long)key, argv[0], timed_out ? "timed out after" :
               WIFSIGNALED(status) ? "killed by signal" : "exited with status",
               timed_out ? CAIRN_VALIDATOR_TIMEOUT_SECONDS :
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
out:
  argv[argc] = NULL;
  if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS))
    CAIRN_WARN(&c->log, "validator: cannot remove %s", dir);
  return agree;
}

static void *runner(void *arg) {
  cairn__core *c = arg;
  struct cairn__vcmd *v = c->vcmd;
  pthread_mutex_lock(&c->lock);
  while (!v->stop) {
    if (!v->n) {
      pthread_cond_wait(&v->cv, &c->lock); /* nothing was put since the last seal */
      continue;
    }
    cairn__vpair p = v->q[v->head];
    v->head = (v->head + 1) % v->cap;
    v->n--;
    char **argv = NULL;
    cand k[2] = {{0}};
    int64_t key = 0;
    int wanted = fetch(c, &p, &argv, k) == 0;
    if (wanted)
      key = c->jobs[p.job - 1]->tasks[p.task].key;
    cairn__core_unlock(c);
    int agree = wanted ? run(c, argv, k, key) : 0;
    for (int i = 0; argv && argv[i]; i++)
      free(argv[i]);
    free(argv);
    cand_free(&k[0]);
    cand_free(&k[1]);
    pthread_mutex_lock(&c->lock);
    if (wanted && !v->stop) /* a stop killed it: a restart queues the pair again */
      c->calls.verdict(c, &p, agree);
    cairn__core_unlock(c);
    pthread_mutex_lock(&c->lock);
  }
  cairn__core_unlock(c);
  return NULL;
}

int cairn__vcmd_start(cairn__core *c) {
  if (pthread_create(&c->vcmd->thread, NULL, runner, c))
    return -1;
  c->vcmd->started = 1;
  return 0;
}

void cairn__vcmd_close(cairn__core *c) {
  struct cairn__vcmd *v = c ? c->vcmd : NULL;
  if (!v)
    return;
  pthread_mutex_lock(&c->lock); /* then child_lock: the only time both are held */
  pthread_mutex_lock(&v->child_lock);
  v->stop = 1; /* read under either */
  if (v->child > 0)
    kill(-v->child, SIGKILL);
  pthread_mutex_unlock(&v->child_lock);
  pthread_cond_broadcast(&v->cv);
  pthread_mutex_unlock(&c->lock);
  if (v->started)
    pthread_join(v->thread, NULL);
  pthread_cond_destroy(&v->cv);
  pthread_mutex_destroy(&v->child_lock);
  free(v->q);
  free(v);
  c->vcmd = NULL;
}
