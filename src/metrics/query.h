/* gpt3d metrics: the records of a metrics file, read through the schema (metrics/events.h)
 * and printed as tab-separated values, one line per matching record (docs/training.md,
 * "Reading the metrics").
 *
 * A query: the event (NULL: any), the fields (NAME or NAME.MEMBER of an object field, e.g.
 * metrics.acc; "event" names the record's event; none: the records' JSON lines whole),
 * conditions KEY=VALUE (each field's text, as printed, equals VALUE), and whether only the
 * last matching record is printed.  Every name is checked against the schema before the
 * file is read.
 * Ownership: g3_ev_query_init fills a query freed with g3_ev_query_free. */
#ifndef G3_METRICS_QUERY_H
#define G3_METRICS_QUERY_H

#include <stdio.h>

#include "core/status.h"

#define G3_EV_QUERY_MAX 32   /* fields, and conditions */

typedef struct {
    int   kind;                          /* the event (g3_ev_kind_t), or -1: any      */
    int   nfields, nwhere;
    char *fields[G3_EV_QUERY_MAX];       /* (nfields,) "key" or "key.member"          */
    char *where_key[G3_EV_QUERY_MAX];    /* (nwhere,)                                 */
    char *where_val[G3_EV_QUERY_MAX];    /* (nwhere,)                                 */
    int   last;                          /* only the last matching record             */
} g3_ev_query_t;

/* event: NULL or an event's name; fields: NULL or "a,b,c"; where: nwhere "KEY=VALUE" words.
 * RET: G3_ERR_USAGE (logged: an unknown event or field, with the schema's names; a malformed
 * condition), G3_ERR_NO_MEMORY.  OUT: *q (free it with g3_ev_query_free in any case). */
g3_status_t g3_ev_query_init(g3_ev_query_t *q, const char *event, const char *fields,
                             char *const *where, int nwhere, int last);
void g3_ev_query_free(g3_ev_query_t *q);

/* Print the records of path (a metrics file, or a run directory: its metrics.jsonl) that
 * match q to out.  RET: G3_ERR_NOT_FOUND, G3_ERR_IO, G3_ERR_FORMAT (a malformed line or
 * value, named by file and line), G3_ERR_NO_MEMORY, all logged. */
g3_status_t g3_ev_query_run(const g3_ev_query_t *q, const char *path, FILE *out);

#endif
