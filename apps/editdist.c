/* editdist.c — the demo DAG computation: edit distance of two strings computed
 * block by block over an evolving-mesh dag (a wavefront dynamic program).
 *
 *   cairn-app-editdist --make-strings N M SEED > strings.txt
 *   cairn-app-editdist --make-job strings.txt BS [APP] > job.json
 *   cairn-app-editdist I J BS            (run as a task, inside a task directory)
 *   cairn-app-editdist --direct strings.txt
 *   cairn-app-editdist --check strings.txt BS I J OUTPUT_FILE
 *
 * D[r][c] is the edit distance of A[0..r) and B[0..c). Task "I,J" computes
 * rows I*BS+1 .. min((I+1)*BS, |A|) and columns J*BS+1 .. min((J+1)*BS, |B|).
 * It reads inputs/strings.txt, its top boundary from parents/I-1,J (that
 * block's bottom row) and its left boundary from parents/I,J-1 (that block's
 * right column), and prints two lines: "bottom D[r1][c0..c1]" and
 * "right D[r0..r1][c1]". The last block's bottom row ends with the distance.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct strings {
  char *a, *b;
  long na, nb;
} strings;

static int die(const char *msg) {
  fprintf(stderr, "editdist: %s\n", msg);
  return 2;
}

static char *read_line(FILE *f, long *n) {
  size_t cap = 0;
  char *line = NULL;
  ssize_t k = getline(&line, &cap, f);
  if (k < 0) {
    free(line);
    return NULL;
  }
  while (k > 0 && (line[k - 1] == '\n' || line[k - 1] == '\r'))
    line[--k] = '\0';
  *n = (long)k;
  return line;
}

static int load_strings(const char *path, strings *s) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  s->a = read_line(f, &s->na);
  s->b = read_line(f, &s->nb);
  fclose(f);
  return s->a && s->b ? 0 : -1;
}

static long minl(long a, long b) { return a < b ? a : b; }

/* Fills the block given its top boundary (c1-c0+1 values) and left boundary
 * (r1-r0+1 values); writes bottom row and right column. */
static void block(const strings *s, long r0, long r1, long c0, long c1, const long *top,
                  const long *left, long *bottom, long *right) {
  long w = c1 - c0 + 1;
  long *prev = malloc((size_t)w * sizeof *prev), *cur = malloc((size_t)w * sizeof *cur);
  memcpy(prev, top, (size_t)w * sizeof *prev);
  right[0] = top[w - 1];
  for (long r = r0 + 1; r <= r1; r++) {
    cur[0] = left[r - r0];
    for (long c = c0 + 1; c <= c1; c++) {
      long k = c - c0;
      long sub = prev[k - 1] + (s->a[r - 1] != s->b[c - 1]);
      long del = prev[k] + 1, ins = cur[k - 1] + 1;
      cur[k] = minl(sub, minl(del, ins));
    }
    right[r - r0] = cur[w - 1];
    long *t = prev;
    prev = cur;
    cur = t;
  }
  memcpy(bottom, prev, (size_t)w * sizeof *prev);
  free(prev);
  free(cur);
}

/* Reads the numbers after the word on the line starting with word. */
static int read_vector(const char *path, const char *word, long *v, long n) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char *line = NULL;
  size_t cap = 0;
  int found = -1;
  while (found && getline(&line, &cap, f) >= 0) {
    size_t wl = strlen(word);
    if (strncmp(line, word, wl) != 0 || line[wl] != ' ')
      continue;
    char *p = line + wl, *end;
    found = 0;
    for (long i = 0; i < n; i++) {
      v[i] = strtol(p, &end, 10);
      if (end == p)
        found = -1;
      p = end;
    }
  }
  free(line);
  fclose(f);
  return found;
}

static void print_vec(FILE *out, const char *word, const long *v, long n) {
  fputs(word, out);
  for (long i = 0; i < n; i++)
    fprintf(out, " %ld", v[i]);
  fputc('\n', out);
}

/* Computes block (i, j) from the full table (for --check and --direct). */
static long **full_table(const strings *s) {
  long **d = malloc((size_t)(s->na + 1) * sizeof *d);
  for (long r = 0; r <= s->na; r++) {
    d[r] = malloc((size_t)(s->nb + 1) * sizeof **d);
    for (long c = 0; c <= s->nb; c++) {
      if (r == 0 || c == 0)
        d[r][c] = r + c;
      else
        d[r][c] = minl(d[r - 1][c - 1] + (s->a[r - 1] != s->b[c - 1]),
                       minl(d[r - 1][c] + 1, d[r][c - 1] + 1));
    }
  }
  return d;
}

static int run_task(long i, long j, long bs) {
  strings s;
  if (load_strings("inputs/strings.txt", &s))
    return die("cannot read inputs/strings.txt");
  long r0 = i * bs, r1 = minl((i + 1) * bs, s.na), c0 = j * bs, c1 = minl((j + 1) * bs, s.nb);
  if (r0 >= s.na || c0 >= s.nb || i < 0 || j < 0)
    return die("block outside the table");
  long w = c1 - c0 + 1, h = r1 - r0 + 1;
  long *top = malloc((size_t)w * sizeof *top), *left = malloc((size_t)h * sizeof *left);
  long *bottom = malloc((size_t)w * sizeof *bottom), *right = malloc((size_t)h * sizeof *right);
  char path[256];
  if (i == 0) {
    for (long k = 0; k < w; k++)
      top[k] = c0 + k;
  } else {
    snprintf(path, sizeof path, "parents/%ld,%ld", i - 1, j);
    if (read_vector(path, "bottom", top, w))
      return die("cannot read the top boundary from the parent above");
  }
  if (j == 0) {
    for (long k = 0; k < h; k++)
      left[k] = r0 + k;
  } else {
    snprintf(path, sizeof path, "parents/%ld,%ld", i, j - 1);
    if (read_vector(path, "right", left, h))
      return die("cannot read the left boundary from the parent on the left");
  }
  block(&s, r0, r1, c0, c1, top, left, bottom, right);
  print_vec(stdout, "bottom", bottom, w);
  print_vec(stdout, "right", right, h);
  free(top);
  free(left);
  free(bottom);
  free(right);
  free(s.a);
  free(s.b);
  return 0;
}

static int make_job(const char *path, long bs, const char *app) {
  strings s;
  if (load_strings(path, &s) || bs <= 0)
    return die("cannot read the strings file (or bad block size)");
  long rows = (s.na + bs - 1) / bs, cols = (s.nb + bs - 1) / bs;
  printf("{\"name\": \"editdist-%ldx%ld\", \"app\": \"%s\", \"lease_seconds\": 60,\n"
         " \"files\": [{\"name\": \"strings.txt\", \"path\": \"strings.txt\"}],\n \"tasks\": [",
         s.na, s.nb, app);
  for (long i = 0; i < rows; i++)
    for (long j = 0; j < cols; j++) {
      printf("%s\n  {\"id\": \"%ld,%ld\", \"args\": [\"%ld\", \"%ld\", \"%ld\"], "
             "\"inputs\": [\"strings.txt\"]",
             i || j ? "," : "", i, j, i, j, bs);
      if (i || j) {
        printf(", \"after\": [");
        if (i)
          printf("\"%ld,%ld\"%s", i - 1, j, j ? ", " : "");
        if (j)
          printf("\"%ld,%ld\"", i, j - 1);
        printf("]");
      }
      printf("}");
    }
  printf("\n]}\n");
  free(s.a);
  free(s.b);
  return 0;
}

static int check(const char *path, long bs, long i, long j, const char *out) {
  strings s;
  if (load_strings(path, &s))
    return die("cannot read the strings file");
  long **d = full_table(&s);
  long r0 = i * bs, r1 = minl((i + 1) * bs, s.na), c0 = j * bs, c1 = minl((j + 1) * bs, s.nb);
  long w = c1 - c0 + 1, h = r1 - r0 + 1;
  long *bottom = malloc((size_t)w * sizeof *bottom), *right = malloc((size_t)h * sizeof *right);
  int bad = read_vector(out, "bottom", bottom, w) || read_vector(out, "right", right, h);
  for (long k = 0; !bad && k < w; k++)
    bad = bottom[k] != d[r1][c0 + k];
  for (long k = 0; !bad && k < h; k++)
    bad = right[k] != d[r0 + k][c1];
  for (long r = 0; r <= s.na; r++)
    free(d[r]);
  free(d);
  free(bottom);
  free(right);
  free(s.a);
  free(s.b);
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "--make-strings") == 0) {
    long n = atol(argv[2]), m = atol(argv[3]);
    unsigned long long x = strtoull(argv[4], NULL, 10) * 2654435761ull + 1;
    static const char alpha[] = "ACGT";
    for (int which = 0; which < 2; which++) {
      for (long k = 0; k < (which ? m : n); k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        putchar(alpha[(x >> 33) & 3]);
      }
      putchar('\n');
    }
    return 0;
  }
  if ((argc == 4 || argc == 5) && strcmp(argv[1], "--make-job") == 0)
    return make_job(argv[2], atol(argv[3]), argc == 5 ? argv[4] : "editdist");
  if (argc == 3 && strcmp(argv[1], "--direct") == 0) {
    strings s;
    if (load_strings(argv[2], &s))
      return die("cannot read the strings file");
    long **d = full_table(&s);
    printf("%ld\n", d[s.na][s.nb]);
    for (long r = 0; r <= s.na; r++)
      free(d[r]);
    free(d);
    free(s.a);
    free(s.b);
    return 0;
  }
  if (argc == 7 && strcmp(argv[1], "--check") == 0)
    return check(argv[2], atol(argv[3]), atol(argv[4]), atol(argv[5]), argv[6]);
  if (argc == 4)
    return run_task(atol(argv[1]), atol(argv[2]), atol(argv[3]));
  fprintf(stderr, "usage: see the header of apps/editdist.c\n");
  return 2;
}
