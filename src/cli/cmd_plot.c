/* gpt3d plot: draw the loss curves of runs as one SVG, from their metrics files.
 *
 *   gpt3d plot [--output FILE.svg] [--x iteration|samples|tokens] [--log-y] RUN...
 *
 * RUN: a metrics.jsonl, a run directory (gpt3d train --run-dir, gpt3d-submit's RUN_DIR), or
 * an ablation directory of gpt3d-submit --ablations (every variant).  The reading and the
 * drawing are metrics/plot.h's; docs/training.md shows a plot. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/log.h"
#include "core/opt.h"
#include "metrics/plot.h"

static const g3_opt_spec_t g3_cmd_plot_specs[] = {
    { "output", G3_OPT_STRING, "loss.svg", "The SVG file to write ('-': stdout).", NULL, 0, 0, "FILE" },
    { "x", G3_OPT_CHOICE, "iteration", "The x axis: iterations, consumed samples or tokens (samples x sequence length).", "iteration|samples|tokens", 0, 0, NULL },
    { "log-y", G3_OPT_BOOL, NULL, "The loss on a log scale.", NULL, 0, 0, NULL },
    { "curves", G3_OPT_CHOICE, "both", "Which losses: training, validation or both.", "both|training|validation", 0, 0, NULL },
    { "title", G3_OPT_STRING, NULL, "The title (default: lm loss).", NULL, 0, 0, "TEXT" },
    { "width", G3_OPT_INT, "760", "Width in pixels.", NULL, 0, 0, NULL },
    { "height", G3_OPT_INT, "440", "Height in pixels.", NULL, 0, 0, NULL },
    { NULL, 0, NULL, NULL, NULL, 0, 0, NULL }
};

static const g3_opt_cmd_t g3_cmd_plot_cmd = {
    "plot", "Draw the loss curves of runs or of an ablation study as an SVG.", "RUN...", 1, -1,
    g3_cmd_plot_specs
};

int g3_cmd_plot(int argc, char **argv)
{
    g3_opts_t *o = NULL;
    g3_plot_t p = { NULL, 0 };
    g3_plot_opts_t po;
    const char *out, *x, *curves;
    FILE *f = NULL;
    int rc = G3_EXIT_OK;
    g3_status_t st = G3_OK;
    int go = g3_cli_args_parse(&g3_cmd_plot_cmd, argc, argv, &o);

    if (go != G3_CLI_ARGS_GO_ON)
        return go;
    memset(&po, 0, sizeof(po));
    x = g3_opts_str(o, "x");
    po.x = !strcmp(x, "samples") ? G3_PLOT_X_SAMPLES
           : !strcmp(x, "tokens") ? G3_PLOT_X_TOKENS : G3_PLOT_X_ITERATION;
    po.log_y = g3_opts_bool(o, "log-y");
    curves = g3_opts_str(o, "curves");
    po.train = strcmp(curves, "validation") != 0;
    po.valid = strcmp(curves, "training") != 0;
    po.title = g3_opts_str(o, "title");
    if (g3_opts_int(o, "width") < 200 || g3_opts_int(o, "width") > 10000 ||
        g3_opts_int(o, "height") < 150 || g3_opts_int(o, "height") > 10000) {
        g3_error("gpt3d plot: --width must be 200 .. 10000 and --height 150 .. 10000 pixels");
        g3_opts_free(o);
        return G3_EXIT_USAGE;
    }
    po.width = (int)g3_opts_int(o, "width");
    po.height = (int)g3_opts_int(o, "height");

    for (int i = 0; i < g3_opts_npos(o) && st == G3_OK; i++)
        st = g3_plot_add_path(&p, g3_opts_pos(o, i), NULL, po.x);
    if (st != G3_OK) {
        rc = G3_EXIT_FAILURE;
        goto out;
    }
    out = g3_opts_str(o, "output");
    f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
    if (!f) {
        g3_error("gpt3d plot: cannot create %s: %s; pass a writable --output", out,
                 strerror(errno));
        rc = G3_EXIT_FAILURE;
        goto out;
    }
    st = g3_plot_write_svg(&p, &po, f);
    if (f != stdout ? fclose(f) != 0 : fflush(f) != 0)
        st = st == G3_OK ? G3_ERR_IO : st;
    if (st == G3_ERR_IO)
        g3_error("gpt3d plot: could not write %s: %s", out, strerror(errno));
    if (st != G3_OK)
        rc = G3_EXIT_FAILURE;
    else if (f != stdout) {
        int n = 0;
        for (int i = 0; i < p.nseries; i++)
            n += p.series[i].valid ? po.valid : po.train;
        g3_info("gpt3d plot: wrote %s (%d curve%s)", out, n, n == 1 ? "" : "s");
    }
out:
    g3_plot_free(&p);
    g3_opts_free(o);
    return rc;
}
