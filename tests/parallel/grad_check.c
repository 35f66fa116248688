/* grad_check: assemble the gradient dumps of a parallel run (gpt3d train --debug-grad-dump,
 * one file per rank, format in src/parallel/dump.c) into whole tensors by their global
 * element indices, and compare them with a reference run's.
 *
 *   grad_check [--tol T] [--what grads|params] [--key-bias-abs A] REF_DIR RUN_DIR
 *
 * Checks, for the run: every element of every tensor of the reference is present; copies
 * of one element held by several ranks (replicated over TP or DP, the tied embedding on
 * the first and last stage) are bitwise equal; and per tensor
 * max |run - ref| / max |ref| <= T (default 1e-5).  Prints one line per tensor and a summary;
 * exit 0 when everything holds, 1 otherwise, 2 for unreadable input.
 *
 * --key-bias-abs A: in each *.attention.qkv.bias (3C,) = [q | k | v], the key third is held
 * to max |run - ref| <= A instead, and the query and value thirds to T relative to their own
 * largest value.  The key bias adds one constant to every score of a softmax row, so its
 * gradient is zero up to rounding: the data does not determine it, and AdamW, which divides
 * by the gradient's own scale, turns that rounding noise into steps of up to about lr. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char     name[128];
    int64_t  shape[2];
    size_t   n;
    float   *v;          /* (n,) */
    uint8_t *have;       /* (n,) copies seen */
    size_t   conflicts;  /* copies that differ */
} tensor_t;

typedef struct {
    tensor_t *t;
    int       n, cap;
} set_t;

static tensor_t *find(set_t *s, const char *name, const int64_t *shape)
{
    tensor_t *t;
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->t[i].name, name) == 0)
            return &s->t[i];
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->t = realloc(s->t, sizeof(*s->t) * (size_t)s->cap);
        if (!s->t)
            return NULL;
    }
    t = &s->t[s->n++];
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", name);
    t->shape[0] = shape[0];
    t->shape[1] = shape[1];
    t->n = (size_t)(shape[0] * shape[1]);
    t->v = calloc(t->n, sizeof(float));
    t->have = calloc(t->n, 1);
    return t->v && t->have ? t : NULL;
}

static int read_file(set_t *s, const char *path)
{
    FILE *f = fopen(path, "rb");
    char magic[16];
    uint32_t head[2];
    int rc = 0;

    if (!f) {
        fprintf(stderr, "grad_check: cannot open %s\n", path);
        return -1;
    }
    if (fread(magic, 1, 16, f) != 16 || memcmp(magic, "gpt3d-grad-dump\n", 16) != 0 ||
        fread(head, sizeof(head), 1, f) != 1 || head[0] != 1) {
        fprintf(stderr, "grad_check: %s is not a version 1 gradient dump\n", path);
        fclose(f);
        return -1;
    }
    for (;;) {
        uint32_t nlen, ndim;
        int64_t shape[2];
        uint64_t count, *idx;
        float *val;
        char name[128];
        tensor_t *t;

        if (fread(&nlen, 4, 1, f) != 1)
            break;   /* end of file */
        if (nlen >= sizeof(name) || fread(name, 1, nlen, f) != nlen ||
            fread(&ndim, 4, 1, f) != 1 || fread(shape, 8, 2, f) != 2 ||
            fread(&count, 8, 1, f) != 1) {
            rc = -1;
            break;
        }
        name[nlen] = '\0';
        idx = malloc(8 * (count ? count : 1));
        val = malloc(4 * (count ? count : 1));
        t = find(s, name, shape);
        if (!idx || !val || !t || fread(idx, 8, count, f) != count ||
            fread(val, 4, count, f) != count) {
            free(idx);
            free(val);
            rc = -1;
            break;
        }
        for (uint64_t i = 0; i < count; i++) {
            if (idx[i] >= t->n) {
                fprintf(stderr, "grad_check: %s: index %llu outside %s (%zu elements)\n",
                        path, (unsigned long long)idx[i], name, t->n);
                rc = -1;
                break;
            }
            if (t->have[idx[i]] && memcmp(&t->v[idx[i]], &val[i], 4) != 0)
                t->conflicts++;
            t->v[idx[i]] = val[i];
            t->have[idx[i]] = 1;
        }
        free(idx);
        free(val);
        if (rc)
            break;
    }
    if (rc)
        fprintf(stderr, "grad_check: %s is truncated or corrupt\n", path);
    fclose(f);
    return rc;
}

static const char *what = "grads";

static int read_dir(set_t *s, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int files = 0;

    if (!d) {
        fprintf(stderr, "grad_check: cannot open directory %s\n", dir);
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        char path[4200];
        size_t wl = strlen(what);
        if (strncmp(e->d_name, what, wl) != 0 || strncmp(e->d_name + wl, "-rank", 5) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (read_file(s, path) != 0) {
            closedir(d);
            return -1;
        }
        files++;
    }
    closedir(d);
    if (files == 0)
        fprintf(stderr, "grad_check: no %s-rank*.bin in %s\n", what, dir);
    return files ? 0 : -1;
}

int main(int argc, char **argv)
{
    double tol = 1e-5, worst = 0.0, key_abs = -1.0;
    set_t ref = { 0 }, run = { 0 };
    int a = 1, bad = 0;

    while (argc - a > 2 && argv[a][0] == '-') {
        if (strcmp(argv[a], "--tol") == 0)
            tol = atof(argv[a + 1]);
        else if (strcmp(argv[a], "--key-bias-abs") == 0)
            key_abs = atof(argv[a + 1]);
        else if (strcmp(argv[a], "--what") == 0)
            what = argv[a + 1];
        else
            break;
        a += 2;
    }
    if (argc - a != 2) {
        fprintf(stderr, "usage: grad_check [--tol T] [--what grads|params] [--key-bias-abs A] REF_DIR RUN_DIR\n");
        return 2;
    }
    if (read_dir(&ref, argv[a]) != 0 || read_dir(&run, argv[a + 1]) != 0)
        return 2;
    for (int i = 0; i < ref.n; i++) {
        tensor_t *r = &ref.t[i], *t = NULL;
        double dmax = 0.0, rmax = 0.0, rel;
        size_t missing = 0;

        for (int k = 0; k < run.n; k++)
            if (strcmp(run.t[k].name, r->name) == 0)
                t = &run.t[k];
        if (!t || t->n != r->n) {
            printf("FAIL %s: %s\n", r->name, t ? "different shape" : "missing from the run");
            bad++;
            continue;
        }
        /* the key third of a qkv bias under --key-bias-abs: [k0, k1), else empty */
        size_t k0 = 0, k1 = 0;
        double kmax = 0.0;
        if (key_abs >= 0.0 && r->n % 3 == 0 && strstr(r->name, "attention.qkv.bias")) {
            k0 = r->n / 3;
            k1 = 2 * k0;
        }
        for (size_t j = 0; j < r->n; j++) {
            double d = fabs((double)t->v[j] - (double)r->v[j]);
            if (!t->have[j])
                missing++;
            if (j >= k0 && j < k1) {
                if (d > kmax || isnan(d))
                    kmax = isnan(d) ? INFINITY : d;
                continue;
            }
            if (d > dmax || isnan(d))
                dmax = isnan(d) ? INFINITY : d;
            if (fabs((double)r->v[j]) > rmax)
                rmax = fabs((double)r->v[j]);
        }
        rel = rmax > 0.0 ? dmax / rmax : dmax;
        if (rel > worst)
            worst = rel;
        if (missing || t->conflicts || !(rel <= tol) || !(kmax <= key_abs || k1 == 0)) {
            printf(
                "FAIL %s: relative error %.3g, %zu elements missing, %zu replicated copies differ\n",
                r->name, rel, missing, t->conflicts);
            if (k1 > 0)
                printf("     %s: key third: largest difference %.3g (bound %g)\n", r->name,
                       kmax, key_abs);
            bad++;
        } else if (k1 > 0) {
            printf("ok   %s: relative error %.3g (query and value), key third within %.3g (bound %g)\n",
                   r->name, rel, kmax, key_abs);
        } else {
            printf("ok   %s: relative error %.3g\n", r->name, rel);
        }
    }
    if (run.n != ref.n) {
        printf("FAIL the run has %d tensors, the reference %d\n", run.n, ref.n);
        bad++;
    }
    printf("%s: %d tensors, worst relative error %.3g (tolerance %g)\n",
           bad ? "FAIL" : "PASS", ref.n, worst, tol);
    return bad ? 1 : 0;
}
