/* A small TAP (Test Anything Protocol) helper for gpt3d's C tests.
 *
 *   tap_plan(n);                      "1..n" (or tap_done() at the end)
 *   tap_ok(cond, "what %d", x);       "ok 1 - what 3" / "not ok 1 - what 3"
 *   tap_skip_all("no GPU: ...");      "1..0 # SKIP no GPU: ..." and exit 0
 *   tap_skip("why");                  "ok N # SKIP why"
 *   tap_close_f(a, b, rel, abs, ...)  ok when |a-b| <= abs + rel*|b|
 *   tap_mkdtemp(tmpl);                a scratch directory (none: skip the test)
 *   tap_rmtree(dir);                  rm -rf a scratch directory (a failure: a comment)
 *   return tap_exit();                exit status: 0 if all passed
 *
 * Header-only; each test program includes it once. */
#ifndef G3_TESTS_TAP_H
#define G3_TESTS_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_count_run = 0;
static int tap_count_failed = 0;
static int tap_planned = -1;

static inline void tap_plan(int n)
{
    tap_planned = n;
    printf("1..%d\n", n);
    fflush(stdout);
}

static inline void tap_vreport(int ok, const char *directive, const char *fmt, va_list ap)
{
    tap_count_run++;
    if (!ok)
        tap_count_failed++;
    printf("%s %d - ", ok ? "ok" : "not ok", tap_count_run);
    vprintf(fmt, ap);
    if (directive)
        printf(" # %s", directive);
    printf("\n");
    fflush(stdout);
}

static inline int tap_ok(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int tap_ok(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_vreport(ok, NULL, fmt, ap);
    va_end(ap);
    return ok;
}

static inline void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tap_diag(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static inline void tap_skip(const char *why)
{
    tap_count_run++;
    printf("ok %d # SKIP %s\n", tap_count_run, why);
    fflush(stdout);
}

static inline void tap_skip_all(const char *why)
{
    printf("1..0 # SKIP %s\n", why);
    fflush(stdout);
    exit(0);
}

/* mkdtemp(tmpl) (tmpl ends in XXXXXX and receives the name), or skip the whole test. */
static inline void tap_mkdtemp(char *tmpl)
{
    if (mkdtemp(tmpl) == NULL)
        tap_skip_all("cannot create a temporary directory");
}

/* Remove a test's scratch directory dir and all it holds (rm -rf); a failure is a TAP
 * comment, not a result. */
static inline void tap_rmtree(const char *dir)
{
    char cmd[4400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
}

/* ok when |got - want| <= abs_tol + rel_tol * |want|; reports both values. */
static inline int tap_close_f(double got, double want, double rel_tol, double abs_tol,
                              const char *what)
{
    double err = fabs(got - want);
    int ok = isfinite(got) && err <= abs_tol + rel_tol * fabs(want);
    tap_ok(ok, "%s (got %.9g, want %.9g, |diff| %.3g)", what, got, want, err);
    return ok;
}

static inline int tap_exit(void)
{
    if (tap_planned < 0)
        printf("1..%d\n", tap_count_run);
    else if (tap_planned != tap_count_run) {
        printf("# planned %d tests but ran %d\n", tap_planned, tap_count_run);
        return 1;
    }
    return tap_count_failed ? 1 : 0;
}

#endif
