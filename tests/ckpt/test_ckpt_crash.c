/* Atomic commit under SIGKILL: a child process saves checkpoints and is killed
 * (a) at every step of the commit protocol, through the fault hook, and (b) at
 * random moments, many times.  After every kill, `latest` must name a
 * checkpoint that loads bitwise with the values of its own iteration, every
 * directory carrying a committed name must verify, and the next save must
 * succeed (cleaning up the debris). */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "core/hook.h"
#include "core/log.h"
#include "synth.h"
#include "tap.h"

static char dir[300];
static const char *kill_point;
static int kill_count;

static void kill_hook(const char *point)
{
    if (kill_point && strcmp(point, kill_point) == 0 && --kill_count <= 0)
        raise(SIGKILL);
}

static synth_cfg_t cfg_at(int64_t it)
{
    synth_cfg_t c = { 4, 16, 4, 64, 50, 64, 32, G3_CKPT_F32, 1, it };
    return c;
}

static g3_ckpt_save_opts_t save_opts = { "crashtest", 2, 0 };

/* Child: save iterations first, first+1, ... (forever when loop). */
static void child_run(int64_t first, int loop)
{
    g3_log_set_level(G3_LOG_ERROR);
    for (int64_t it = first;; it++) {
        synth_cfg_t c = cfg_at(it);
        if (synth_save(dir, &c, 2, 1, 2, &save_opts) != G3_OK)
            _exit(3);
        if (!loop)
            _exit(0);
    }
}

/* Invariants after a crash.  RET: 1 if they hold; *latest_p */
static int check_dir(int64_t *latest_p, const char *what)
{
    int64_t latest = -1, *iters = NULL;
    int n = 0, ok = 1, bad = -1, faults = 0;
    g3_status_t st = g3_ckpt_latest(dir, &latest);

    if (st == G3_ERR_NOT_FOUND) {
        *latest_p = -1;          /* killed before the first commit: nothing promised yet */
        return g3_ckpt_list(dir, &iters, &n) != G3_OK || n <= 1;
    }
    if (st != G3_OK) {
        tap_diag("%s: latest unreadable", what);
        return 0;
    }
    {
        synth_cfg_t c = cfg_at(latest);
        st = synth_check(dir, &c, 1, 1, 1, NULL, &bad);
        if (st != G3_OK || bad != 0) {
            tap_diag("%s: latest (iteration %lld) does not load bitwise: %s", what, (long long)latest,
                     g3_status_string(st));
            ok = 0;
        }
    }
    if (g3_ckpt_list(dir, &iters, &n) == G3_OK) {
        for (int i = 0; i < n; i++) {
            char p[400];
            g3_ckpt_iter_path(dir, iters[i], p, sizeof(p));
            if (g3_ckpt_verify(p, &faults) != G3_OK) {
                tap_diag("%s: committed directory %s does not verify (%d faults)", what, p, faults);
                ok = 0;
            }
        }
        free(iters);
    }
    *latest_p = latest;
    return ok;
}

static int run_child(int64_t first, int loop, const char *point, int count, long kill_after_us)
{
    pid_t pid;
    int status = 0;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        kill_point = point;
        kill_count = count;
        g3_hook_fault_fn = point ? kill_hook : NULL;
        child_run(first, loop);
    }
    if (kill_after_us >= 0) {
        usleep((useconds_t)kill_after_us);
        kill(pid, SIGKILL);
    }
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        return 1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(void)
{
    static const struct { const char *point; int count; int64_t expect_delta; } points[] = {
        { "shard-written", 1, 0 },  { "shard-written", 4, 0 },  { "shard-written", 6, 0 },
        { "index-written", 1, 0 },  { "renamed", 1, 0 },        { "latest-written", 1, 0 },
        { "latest-renamed", 1, 1 }, { "pruning", 1, 1 },
    };
    const char *t = getenv("TMPDIR");
    int64_t latest = -1, it = 1;
    int all = 1, killed_random = 0, rounds = 40;

    snprintf(dir, sizeof(dir), "%s/gpt3d-ckpt-crash.XXXXXX", t ? t : "/tmp");
    tap_mkdtemp(dir);
    g3_log_set_level(G3_LOG_ERROR);

    /* Two good checkpoints first, so that pruning has something to do. */
    tap_ok(run_child(it++, 0, NULL, 0, -1) == 0 && run_child(it++, 0, NULL, 0, -1) == 0,
           "two checkpoints saved without faults");
    tap_ok(check_dir(&latest, "start") && latest == 2, "latest names iteration 2 and everything verifies");

    /* (a) a kill at each step of the protocol */
    for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
        int64_t before = latest, now = -1;
        int r = run_child(it, 0, points[i].point, points[i].count, -1);
        int ok = r == 1 && check_dir(&now, points[i].point);
        ok = ok && now == (points[i].expect_delta ? it : before);
        tap_ok(ok, "SIGKILL at '%s' #%d: latest names iteration %lld (was %lld), it loads bitwise, all committed checkpoints verify",
               points[i].point, points[i].count, (long long)now, (long long)before);
        all &= ok;
        latest = now;
        it++;
        /* the next save cleans up and commits */
        ok = run_child(it, 0, NULL, 0, -1) == 0 && check_dir(&now, "after") && now == it;
        tap_ok(ok, "  ... the next save (iteration %lld) succeeds and is latest", (long long)it);
        latest = now;
        it++;
    }

    /* (b) kills at random moments of a loop of saves */
    srand((unsigned)time(NULL));
    for (int round = 0; round < rounds; round++) {
        int64_t now = -1;
        long delay = 2000 + rand() % 60000;
        int r = run_child(it, 1, NULL, 0, delay);
        int ok = r == 1 && check_dir(&now, "random");
        if (!ok) {
            tap_diag("random round %d (kill after %ld us): latest %lld", round, delay, (long long)now);
            all = 0;
        }
        killed_random += r == 1;
        if (now >= it)
            it = now + 1;
        it += 1000;     /* a fresh iteration range for the next loop */
    }
    tap_ok(all && killed_random == rounds,
           "%d random SIGKILLs during a loop of saves: latest always loads bitwise, no partial checkpoint is ever accepted",
           killed_random);
    {
        int64_t *iters = NULL;
        int n = 0;
        g3_ckpt_list(dir, &iters, &n);
        tap_ok(n <= 3, "--keep-last 2 keeps the directory small across crashes (%d committed)", n);
        free(iters);
    }
    tap_rmtree(dir);
    return tap_exit();
}
