/* gpt3d plot: loss curves from metrics files as SVG (plot.h). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "metrics/events.h"
#include "metrics/plot.h"

/* ---- reading a metrics file ------------------------------------------------------------------ */

/* One point read: which curve, the iteration, the value. */
typedef struct {
    int64_t it;
    double  loss;
    int     valid;
    size_t  order;     /* the record's line: the later of one iteration wins */
} g3_plot_pt_t;

/* An iteration and the samples consumed after it, as a record gave them. */
typedef struct {
    int64_t it, samples;
} g3_plot_consumed_t;

typedef struct {
    g3_plot_pt_t       *pts;
    size_t              n, cap;
    g3_plot_consumed_t *c;          /* (nc,) */
    size_t              nc, ccap;
    int64_t       seq;              /* the last "start" record's seq_length (0: none)  */
} g3_plot_run_t;

static int g3_plot_grow(void **p, size_t *cap, size_t n, size_t size)
{
    void *q;
    size_t c;
    if (n < *cap)
        return 1;
    c = *cap ? 2 * *cap : 64;
    q = realloc(*p, c * size);
    if (!q)
        return 0;
    *p = q;
    *cap = c;
    return 1;
}

/* One record of a run's metrics file (g3_ev_file_each): the "start" record's sequence
 * length, any record's iteration and consumed samples, the "train" and validation "eval"
 * records' loss. */
static g3_status_t g3_plot_take(const g3_ev_parsed_t *p, const char *line, size_t len,
                                size_t lineno, void *arg)
{
    g3_plot_run_t *run = arg;
    double it = g3_ev_parsed_num_key(p, "iteration");
    double consumed = g3_ev_parsed_num_key(p, "consumed_samples");
    double loss = g3_ev_parsed_num_key(p, "loss");
    int valid = p->kind == G3_EV_EVAL && p->raw[G3_EVF_EVAL_SPLIT] &&
                p->raw_len[G3_EVF_EVAL_SPLIT] == 7 &&
                !memcmp(p->raw[G3_EVF_EVAL_SPLIT], "\"valid\"", 7);

    (void)line;
    (void)len;
    if (p->kind == G3_EV_START && g3_ev_parsed_num(p, G3_EVF_START_SEQ) > 0)
        run->seq = (int64_t)g3_ev_parsed_num(p, G3_EVF_START_SEQ);
    if (!isfinite(it) || it < 0)
        return G3_OK;
    if (isfinite(consumed) && consumed >= 0) {
        if (!g3_plot_grow((void **)&run->c, &run->ccap, run->nc, sizeof(g3_plot_consumed_t)))
            return G3_ERR_NO_MEMORY;
        run->c[run->nc].it = (int64_t)it;
        run->c[run->nc++].samples = (int64_t)consumed;
    }
    if (isfinite(loss) && (p->kind == G3_EV_TRAIN || valid)) {
        if (!g3_plot_grow((void **)&run->pts, &run->cap, run->n, sizeof(g3_plot_pt_t)))
            return G3_ERR_NO_MEMORY;
        run->pts[run->n].it = (int64_t)it;
        run->pts[run->n].loss = loss;
        run->pts[run->n].valid = valid;
        run->pts[run->n].order = lineno;
        run->n++;
    }
    return G3_OK;
}

static g3_status_t g3_plot_read(const char *path, g3_plot_run_t *run)
{
    g3_status_t st = g3_ev_file_each(path, g3_plot_take, run);

    if (st == G3_ERR_NO_MEMORY)
        g3_error("out of memory reading the metrics file %s", path);
    return st;
}

/* The consumed samples at iteration it: recorded, else interpolated between the nearest two
 * recorded iterations (or from the nearest one at its rate). */
static double g3_plot_samples_at(const g3_plot_run_t *run, int64_t it)
{
    int64_t lo = -1, hi = -1;   /* indexes of the nearest below and above */
    double slo = 0.0, shi = 0.0;

    const g3_plot_consumed_t *c = run->c;
    double exact = NAN;

    /* the last record of the iteration wins (a resumed run's, after the killed one's) */
    for (size_t i = 0; i < run->nc; i++) {
        if (c[i].it == it)
            exact = (double)c[i].samples;
        if (c[i].it < it && (lo < 0 || c[i].it >= c[lo].it))
            lo = (int64_t)i;
        if (c[i].it > it && (hi < 0 || c[i].it <= c[hi].it))
            hi = (int64_t)i;
    }
    if (!isnan(exact))
        return exact;
    if (lo >= 0)
        slo = (double)c[lo].samples;
    if (hi >= 0)
        shi = (double)c[hi].samples;
    if (lo >= 0 && hi >= 0)
        return slo + (shi - slo) * (double)(it - c[lo].it) / (double)(c[hi].it - c[lo].it);
    if (lo >= 0 && c[lo].it > 0)
        return slo / (double)c[lo].it * (double)it;
    if (hi >= 0 && c[hi].it > 0)
        return shi / (double)c[hi].it * (double)it;
    return NAN;
}

static int g3_plot_pt_cmp(const void *a, const void *b)
{
    const g3_plot_pt_t *p = a, *q = b;
    if (p->valid != q->valid)
        return p->valid - q->valid;
    if (p->it != q->it)
        return p->it < q->it ? -1 : 1;
    return p->order < q->order ? -1 : p->order > q->order;
}

/* The run's points as series of p (the last record of an iteration kept). */
static g3_status_t g3_plot_series_add(g3_plot_t *p, g3_plot_run_t *run, const char *name,
                                      g3_plot_x_t xk)
{
    qsort(run->pts, run->n, sizeof(g3_plot_pt_t), g3_plot_pt_cmp);
    for (int valid = 0; valid <= 1; valid++) {
        g3_plot_series_t s;
        g3_plot_series_t *ns;
        memset(&s, 0, sizeof(s));
        s.valid = valid;
        s.x = malloc(sizeof(double) * (run->n + 1));
        s.y = malloc(sizeof(double) * (run->n + 1));
        s.name = strdup(name);
        if (!s.x || !s.y || !s.name)
            goto oom;
        for (size_t i = 0; i < run->n; i++) {
            const g3_plot_pt_t *pt = &run->pts[i];
            double x;
            if (pt->valid != valid)
                continue;
            if (i + 1 < run->n && run->pts[i + 1].valid == valid && run->pts[i + 1].it == pt->it)
                continue;   /* a later record of this iteration follows */
            x = (double)pt->it;
            if (xk != G3_PLOT_X_ITERATION) {
                x = g3_plot_samples_at(run, pt->it);
                if (xk == G3_PLOT_X_TOKENS)
                    x *= (double)run->seq;
            }
            if (!isfinite(x))
                continue;
            s.x[s.n] = x;
            s.y[s.n++] = pt->loss;
        }
        if (s.n == 0) {
            free(s.x);
            free(s.y);
            free(s.name);
            continue;
        }
        ns = realloc(p->series, sizeof(*ns) * (size_t)(p->nseries + 1));
        if (!ns)
            goto oom;
        p->series = ns;
        p->series[p->nseries++] = s;
        continue;
oom:
        free(s.x);
        free(s.y);
        free(s.name);
        g3_error("out of memory for the curves of %s", name);
        return G3_ERR_NO_MEMORY;
    }
    return G3_OK;
}

static g3_status_t g3_plot_add_metrics(g3_plot_t *p, const char *file, const char *name,
                                       g3_plot_x_t x)
{
    g3_plot_run_t run;
    int before = p->nseries;
    g3_status_t st;

    memset(&run, 0, sizeof(run));
    st = g3_plot_read(file, &run);
    if (st == G3_OK && x == G3_PLOT_X_TOKENS && run.seq <= 0 && run.n > 0) {
        g3_error("metrics file %s has no \"start\" record with the sequence length: plot it by --x iteration or samples", file);
        st = G3_ERR_FORMAT;
    }
    if (st == G3_OK)
        st = g3_plot_series_add(p, &run, name, x);
    if (st == G3_OK && p->nseries == before)
        g3_warn("%s has no loss yet: run '%s' is left out of the plot", file, name);
    free(run.pts);
    free(run.c);
    return st;
}

static int g3_plot_is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int g3_plot_is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The base name of path, without trailing slashes, into buf. */
static const char *g3_plot_base(const char *path, char *buf, size_t size)
{
    size_t n = strlen(path);
    const char *b;
    while (n > 1 && path[n - 1] == '/')
        n--;
    b = path + n;
    while (b > path && b[-1] != '/')
        b--;
    snprintf(buf, size, "%.*s", (int)(path + n - b), b);
    return buf;
}

static int g3_plot_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* An ablation directory: its variants file's names, else its subdirectories with metrics. */
static g3_status_t g3_plot_add_ablation(g3_plot_t *p, const char *dir, g3_plot_x_t x)
{
    char vpath[4200], mpath[4400];
    char **names = NULL;
    size_t n = 0, cap = 0;
    g3_status_t st = G3_OK;
    FILE *f;

    snprintf(vpath, sizeof(vpath), "%s/variants", dir);
    f = fopen(vpath, "r");
    if (f) {
        char line[4096];
        while (st == G3_OK && fgets(line, sizeof(line), f)) {
            line[strcspn(line, "\t\n")] = '\0';
            if (!line[0])
                continue;
            if (!g3_plot_grow((void **)&names, &cap, n, sizeof(char *)) ||
                !(names[n++] = strdup(line)))
                st = G3_ERR_NO_MEMORY;
        }
        fclose(f);
    } else {
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && st == G3_OK && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            snprintf(mpath, sizeof(mpath), "%s/%s/metrics.jsonl", dir, e->d_name);
            if (!g3_plot_is_file(mpath))
                continue;
            if (!g3_plot_grow((void **)&names, &cap, n, sizeof(char *)) ||
                !(names[n++] = strdup(e->d_name)))
                st = G3_ERR_NO_MEMORY;
        }
        if (d)
            closedir(d);
        if (n > 1)
            qsort(names, n, sizeof(char *), g3_plot_name_cmp);
    }
    if (st != G3_OK)
        g3_error("out of memory listing the runs of %s", dir);
    if (st == G3_OK && n == 0) {
        g3_error("%s holds no metrics.jsonl, no run directory with one and no variants file: pass a run directory, an ablation directory or a metrics file", dir);
        st = G3_ERR_NOT_FOUND;
    }
    for (size_t i = 0; i < n && st == G3_OK; i++) {
        snprintf(mpath, sizeof(mpath), "%s/%s/metrics.jsonl", dir, names[i]);
        if (!g3_plot_is_file(mpath)) {
            g3_warn("variant %s of %s has no metrics.jsonl yet: left out of the plot", names[i], dir);
            continue;
        }
        st = g3_plot_add_metrics(p, mpath, names[i], x);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return st;
}

g3_status_t g3_plot_add_path(g3_plot_t *p, const char *path, const char *name, g3_plot_x_t x)
{
    char base[1024], mpath[4200];

    if (g3_plot_is_file(path))
        return g3_plot_add_metrics(p, path, name ? name : path, x);
    if (!g3_plot_is_dir(path)) {
        g3_error("%s: no such metrics file or directory (%s); pass a metrics.jsonl, a run directory or an ablation directory", path, strerror(errno));
        return G3_ERR_NOT_FOUND;
    }
    snprintf(mpath, sizeof(mpath), "%s/metrics.jsonl", path);
    if (g3_plot_is_file(mpath))
        return g3_plot_add_metrics(p, mpath, name ? name : g3_plot_base(path, base, sizeof(base)),
                                   x);
    return g3_plot_add_ablation(p, path, x);
}

void g3_plot_free(g3_plot_t *p)
{
    for (int i = 0; i < p->nseries; i++) {
        free(p->series[i].name);
        free(p->series[i].x);
        free(p->series[i].y);
    }
    free(p->series);
    p->series = NULL;
    p->nseries = 0;
}

/* ---- drawing ------------------------------------------------------------------------------- */

/* Tableau's ten colours: distinct, and readable for most colour-blind viewers. */
static const char *const g3_plot_colors[] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                              "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                              "#bcbd22", "#17becf" };
#define G3_PLOT_NCOLORS ((int)(sizeof(g3_plot_colors) / sizeof(g3_plot_colors[0])))
#define G3_PLOT_MAXTICKS 64

/* A "nice" number near x (1, 2, 5 x 10^k): rounded, or the next above. */
static double g3_plot_nice(double x, int round)
{
    double e = floor(log10(x)), f = x / pow(10.0, e), nf;
    if (round)
        nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else
        nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * pow(10.0, e);
}

/* About `want` ticks over [lo, hi], multiples of a nice step.  OUT: t (at most
 * G3_PLOT_MAXTICKS), *step.  RET: the count. */
static int g3_plot_ticks(double lo, double hi, int want, double *t, double *step_p)
{
    double step, a;
    int n = 0;

    if (!(hi > lo))
        hi = lo + (lo != 0.0 ? fabs(lo) * 0.1 : 1.0);
    step = g3_plot_nice(g3_plot_nice(hi - lo, 0) / (want - 1), 1);
    for (a = ceil(lo / step - 1e-9) * step; a <= hi + step * 1e-9 && n < G3_PLOT_MAXTICKS;
         a += step)
        t[n++] = fabs(a) < step * 1e-9 ? 0.0 : a;
    *step_p = step;
    return n;
}

/* A tick label: with k/M/G/T for large values. */
static void g3_plot_label(double v, double step, char *buf, size_t size)
{
    static const char suffix[] = " kMGT";
    int k = 0;
    double a = fabs(v) > fabs(step) ? fabs(v) : fabs(step);

    if (v == 0.0) {
        snprintf(buf, size, "0");
        return;
    }
    while (a >= 1e4 && k < 4 && fmod(fabs(step), 1000.0) == 0.0) {
        v /= 1000.0;
        step /= 1000.0;
        a /= 1000.0;
        k++;
    }
    {
        int dec = step >= 1.0 ? 0 : (int)ceil(-log10(step) - 1e-9);
        if (dec > 6)
            dec = 6;
        snprintf(buf, size, "%.*f", dec, v);
    }
    if (k > 0) {
        size_t l = strlen(buf);
        if (l + 1 < size) {
            buf[l] = suffix[k];
            buf[l + 1] = '\0';
        }
    }
}

/* Text for SVG: & < > " escaped. */
static void g3_plot_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

typedef struct {
    double left, top, w, h;          /* the plot area in pixels                   */
    double x0, x1, y0, y1;           /* its data bounds (y in log10 with log_y)   */
    int    log_y;
} g3_plot_frame_t;

static double g3_plot_px(const g3_plot_frame_t *fr, double x)
{
    return fr->left + (x - fr->x0) / (fr->x1 - fr->x0) * fr->w;
}

static double g3_plot_py(const g3_plot_frame_t *fr, double y)
{
    double v = fr->log_y ? log10(y) : y;
    return fr->top + fr->h - (v - fr->y0) / (fr->y1 - fr->y0) * fr->h;
}

static int g3_plot_drawn(const g3_plot_series_t *s, const g3_plot_opts_t *o)
{
    return s->valid ? o->valid : o->train;
}

/* The y ticks: nice linear values, or on a log axis decades (with 2 and 5 when there are few
 * decades, nice linear values within less than one).  OUT: t.  RET: the count. */
static int g3_plot_yticks(const g3_plot_frame_t *fr, double ymin, double ymax, double *t,
                          double *step_p)
{
    int n = 0;
    if (!fr->log_y || log10(ymax) - log10(ymin) < 1.0)
        return g3_plot_ticks(ymin, ymax, 8, t, step_p);
    *step_p = 1.0;
    for (double e = floor(log10(ymin)); e <= ceil(log10(ymax)) && n < G3_PLOT_MAXTICKS - 3;
         e++) {
        static const double m[] = { 1, 2, 5 };
        for (int k = 0; k < 3; k++) {
            double v = m[k] * pow(10.0, e);
            if ((k == 0 || log10(ymax) - log10(ymin) < 3.0) && v >= ymin && v <= ymax)
                t[n++] = v;
        }
        if (pow(10.0, e) < 1.0 && -e > -log10(*step_p))
            *step_p = pow(10.0, e);
    }
    return n;
}

/* The grid, the ticks (xt: (nxt) x ticks labelled at xstep; the y ticks from ymin .. ymax),
 * the frame and the axis names. */
static void g3_plot_axes(FILE *f, const g3_plot_frame_t *fr, const g3_plot_opts_t *o,
                         const double *xt, int nxt, double xstep, double ymin, double ymax)
{
    static const char *const xname[] = { "iteration", "consumed samples", "tokens" };
    double t[G3_PLOT_MAXTICKS], step;
    int nt;
    char lab[64];

    fprintf(f, "<g id=\"x-axis\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n");
    for (int i = 0; i < nxt; i++) {
        double x = g3_plot_px(fr, xt[i]);
        if (xt[i] < fr->x0 || xt[i] > fr->x1)
            continue;
        g3_plot_label(xt[i], xstep, lab, sizeof(lab));
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>", x, fr->top, x,
                fr->top + fr->h);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000000\"/>",
                x, fr->top + fr->h, x, fr->top + fr->h + 5);
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" stroke=\"none\" fill=\"#000000\">%s</text>\n",
                x, fr->top + fr->h + 18, lab);
    }
    fprintf(f, "</g>\n");
    nt = g3_plot_yticks(fr, ymin, ymax, t, &step);
    fprintf(f, "<g id=\"y-axis\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n");
    for (int i = 0; i < nt; i++) {
        double y = g3_plot_py(fr, t[i]);
        if (y < fr->top - 0.01 || y > fr->top + fr->h + 0.01)
            continue;
        g3_plot_label(t[i], step, lab, sizeof(lab));
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>", fr->left, y,
                fr->left + fr->w, y);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#000000\"/>",
                fr->left - 5, y, fr->left, y);
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\" stroke=\"none\" fill=\"#000000\">%s</text>\n",
                fr->left - 8, y + 4, lab);
    }
    fprintf(f, "</g>\n");
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#000000\"/>\n",
            fr->left, fr->top, fr->w, fr->h);
    fprintf(f, "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", fr->left + fr->w / 2,
            o->height - 14, xname[o->x]);
    fprintf(f, "<text transform=\"translate(18 %.2f) rotate(-90)\" text-anchor=\"middle\">%s</text>\n",
            fr->top + fr->h / 2, o->log_y ? "loss (log scale)" : "loss");
}

/* The curves, clipped to the plot area: one colour per run, validation dashed with a marker
 * at each evaluation. */
static void g3_plot_curves(FILE *f, const g3_plot_t *p, const g3_plot_opts_t *o,
                           const g3_plot_frame_t *fr)
{
    fprintf(f, "<clipPath id=\"clip\"><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"/></clipPath>\n",
            fr->left, fr->top, fr->w, fr->h);
    fprintf(f, "<g id=\"plot-area\" clip-path=\"url(#clip)\" data-x-min=\"%.17g\" data-x-max=\"%.17g\" data-y-min=\"%.17g\" data-y-max=\"%.17g\" data-log-y=\"%d\" data-left=\"%.17g\" data-top=\"%.17g\" data-width=\"%.17g\" data-height=\"%.17g\">\n",
            fr->x0, fr->x1, fr->y0, fr->y1, fr->log_y, fr->left, fr->top, fr->w, fr->h);
    for (int i = 0, run = -1; i < p->nseries; i++) {
        const g3_plot_series_t *s = &p->series[i];
        const char *color;
        int first = 1;
        if (i == 0 || strcmp(s->name, p->series[i - 1].name) != 0)
            run++;
        if (!g3_plot_drawn(s, o))
            continue;
        color = g3_plot_colors[run % G3_PLOT_NCOLORS];
        fprintf(f, "<path class=\"series\" data-run=\"");
        g3_plot_text(f, s->name);
        fprintf(f, "\" data-kind=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s stroke-linejoin=\"round\" d=\"",
                s->valid ? "validation" : "training", color, s->valid ? "2" : "1.5",
                s->valid ? " stroke-dasharray=\"6 4\"" : "");
        for (size_t k = 0; k < s->n; k++) {
            if (!isfinite(s->y[k]) || (o->log_y && !(s->y[k] > 0.0)))
                continue;
            fprintf(f, "%s%.3f,%.3f", first ? "M" : " L", g3_plot_px(fr, s->x[k]),
                    g3_plot_py(fr, s->y[k]));
            first = 0;
        }
        fprintf(f, "\"/>\n");
        if (s->valid) {   /* the evaluations are few: a marker at each */
            fprintf(f, "<g fill=\"%s\">", color);
            for (size_t k = 0; k < s->n; k++)
                if (isfinite(s->y[k]) && (!o->log_y || s->y[k] > 0.0))
                    fprintf(f, "<circle cx=\"%.3f\" cy=\"%.3f\" r=\"3\"/>",
                            g3_plot_px(fr, s->x[k]), g3_plot_py(fr, s->y[k]));
            fprintf(f, "</g>\n");
        }
    }
    fprintf(f, "</g>\n");
}

/* The legend, in the top right corner (many: several runs, named in it; ndrawn rows). */
static void g3_plot_legend(FILE *f, const g3_plot_t *p, const g3_plot_opts_t *o,
                           const g3_plot_frame_t *fr, int many, int ndrawn)
{
    double lw = 0.0, lx, ly = fr->top + 10;

    for (int i = 0; i < p->nseries; i++) {
        size_t l = strlen(p->series[i].name) * (size_t)many + 11;
        if (g3_plot_drawn(&p->series[i], o) && l * 7.0 > lw)
            lw = (double)l * 7.0;
    }
    lw += 44;
    lx = fr->left + fr->w - lw - 10;
    fprintf(f, "<g id=\"legend\">\n<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%d\" fill=\"#ffffff\" fill-opacity=\"0.85\" stroke=\"#b0b0b0\"/>\n",
            lx, ly, lw, 8 + 18 * ndrawn);
    for (int i = 0, run = -1, row = 0; i < p->nseries; i++) {
        const g3_plot_series_t *s = &p->series[i];
        double y;
        if (i == 0 || strcmp(s->name, p->series[i - 1].name) != 0)
            run++;
        if (!g3_plot_drawn(s, o))
            continue;
        y = ly + 16 + 18 * row++;
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" stroke-width=\"%s\"%s/>",
                lx + 8, y - 4, lx + 36, y - 4, g3_plot_colors[run % G3_PLOT_NCOLORS],
                s->valid ? "2" : "1.5", s->valid ? " stroke-dasharray=\"6 4\"" : "");
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\">", lx + 42, y);
        if (many) {
            g3_plot_text(f, s->name);
            fputc(' ', f);
        }
        fprintf(f, "%s</text>\n", s->valid ? "validation" : "training");
    }
    fprintf(f, "</g>\n");
}

g3_status_t g3_plot_write_svg(const g3_plot_t *p, const g3_plot_opts_t *o, FILE *f)
{
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    double t[G3_PLOT_MAXTICKS], step;
    int nt, nruns = 0, ndrawn = 0, W = o->width, H = o->height, many;
    g3_plot_frame_t fr;

    for (int i = 0; i < p->nseries; i++) {
        const g3_plot_series_t *s = &p->series[i];
        if (!g3_plot_drawn(s, o))
            continue;
        for (size_t k = 0; k < s->n; k++) {
            if (!isfinite(s->y[k]) || (o->log_y && !(s->y[k] > 0.0)))
                continue;
            xmin = fmin(xmin, s->x[k]);
            xmax = fmax(xmax, s->x[k]);
            ymin = fmin(ymin, s->y[k]);
            ymax = fmax(ymax, s->y[k]);
        }
        ndrawn++;
        if (i == 0 || strcmp(s->name, p->series[i - 1].name) != 0)
            nruns++;
    }
    if (!isfinite(xmin)) {
        g3_error("gpt3d plot: nothing to draw: no loss in the runs given%s", o->log_y ? " (a log scale needs positive losses)" : "");
        return G3_ERR_INVALID_ARG;
    }
    many = nruns > 1;

    /* the frame: x from its nice bounds, y from the data with 4% room */
    fr.left = 72;
    fr.top = 40;
    fr.w = W - fr.left - 24;
    fr.h = H - fr.top - 56;
    fr.log_y = o->log_y;
    /* x from 0 when the data start near it (iteration 1, the first samples) */
    fr.x0 = xmin >= 0.0 && xmin <= 0.15 * (xmax - xmin) ? 0.0 : xmin;
    fr.x1 = xmax > fr.x0 ? xmax : fr.x0 + 1.0;
    nt = g3_plot_ticks(fr.x0, fr.x1, 7, t, &step);
    fr.x1 += 0.01 * (fr.x1 - fr.x0);   /* room for the last marker */
    {
        double a = o->log_y ? log10(ymin) : ymin, b = o->log_y ? log10(ymax) : ymax;
        double pad = b > a ? 0.04 * (b - a) : (a != 0.0 ? 0.05 * fabs(a) : 1.0);
        fr.y0 = a - pad;
        fr.y1 = b + pad;
    }

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, H);
    fprintf(f, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">",
            fr.left + fr.w / 2);
    g3_plot_text(f, o->title ? o->title : "lm loss");
    fprintf(f, "</text>\n");

    g3_plot_axes(f, &fr, o, t, nt, step, ymin, ymax);
    g3_plot_curves(f, p, o, &fr);
    g3_plot_legend(f, p, o, &fr, many, ndrawn);
    fprintf(f, "</svg>\n");
    return ferror(f) ? G3_ERR_IO : G3_OK;
}
