/* gpt3d plot: the training and validation loss curves of runs, from their metrics files
 * (train.h: metrics.jsonl), drawn as one self-contained SVG (docs/training.md).
 *
 * A run's curves: its "train" records' loss and its validation "eval" records' loss, by
 * iteration, consumed samples or tokens (samples x the "start" record's seq_length).  After a
 * resume the metrics file holds the iterations the killed run logged past its checkpoint
 * twice; the later record of an iteration replaces the earlier, as TensorBoard shows it.  An
 * eval record carries no sample count: it is taken from the records that do (train, save,
 * load, exit, end) at that iteration, else interpolated between the nearest two.
 *
 * The SVG: axes with ticks and labels, a light grid, a legend, one <path class="series"> per
 * curve (validation curves dashed, with a marker per point), its points in pixels; the plot
 * area's mapping is on <g id="plot-area"> (data-x-min, data-x-max, data-y-min, data-y-max,
 * data-log-y, data-left, data-top, data-width, data-height) so that a reader can map the
 * points back to the values (the tests do).
 * Ownership: a g3_plot_t starts zeroed, is filled by g3_plot_add_path and freed with
 * g3_plot_free. */
#ifndef G3_METRICS_PLOT_H
#define G3_METRICS_PLOT_H

#include <stddef.h>
#include <stdio.h>

#include "core/status.h"

typedef enum { G3_PLOT_X_ITERATION, G3_PLOT_X_SAMPLES, G3_PLOT_X_TOKENS } g3_plot_x_t;

typedef struct {
    char   *name;      /* the run's name (legend)                                   */
    int     valid;     /* 0: training loss; 1: validation loss                      */
    size_t  n;
    double *x, *y;     /* (n,) by increasing x                                      */
} g3_plot_series_t;

typedef struct {
    g3_plot_series_t *series;   /* (nseries,)                                        */
    int               nseries;
} g3_plot_t;

typedef struct {
    g3_plot_x_t x;
    int         log_y;          /* y on a log scale                                    */
    int         valid;          /* draw the validation curves                          */
    int         train;          /* draw the training curves                            */
    const char *title;          /* NULL: "lm loss"                                     */
    int         width, height;  /* pixels                                              */
} g3_plot_opts_t;

/* Add the curves of path: a metrics file (JSON lines), a run directory (its metrics.jsonl),
 * or an ablation directory of gpt3d-submit (each variant of its "variants" file, in order;
 * or, without one, every subdirectory holding a metrics.jsonl, by name).  name: the run's
 * legend name (NULL: the directory's base name).  A run without any loss yet is skipped with
 * a warning.  RET: G3_ERR_NOT_FOUND (no metrics there), G3_ERR_FORMAT (a bad record: file
 * and line named), G3_ERR_IO, G3_ERR_NO_MEMORY, all logged. */
g3_status_t g3_plot_add_path(g3_plot_t *p, const char *path, const char *name, g3_plot_x_t x);

/* Write the SVG of the curves to f.  RET: G3_ERR_INVALID_ARG (nothing to draw: logged),
 * G3_ERR_IO (f failed: not logged, the caller names the file). */
g3_status_t g3_plot_write_svg(const g3_plot_t *p, const g3_plot_opts_t *o, FILE *f);

void g3_plot_free(g3_plot_t *p);

#endif
