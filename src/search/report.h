/* gpt3d plan: what it prints (docs/plan.md shows each).  Glossary in plan.h. */
#ifndef G3_SEARCH_REPORT_H
#define G3_SEARCH_REPORT_H

#include "search/layout.h"
#include "plan/time.h"

/* RET: bytes in GiB. */
double g3_plan_gib(double bytes);

/* The tables of one layout: the model, batches, FLOPs, bubble, memory per stage. */
void g3_plan_print_human(const g3_plan_flags_t *f, const g3_plan_layout_t *lay);

/* The time table: the layout (lay, t) and each of --sizes (sizes, stimes; nsizes). */
void g3_plan_print_time(const g3_plan_machine_t *mc, const g3_plan_layout_t *lay,
                        const g3_plan_time_t *t, const g3_plan_layout_t *sizes,
                        const g3_plan_time_t *stimes, int nsizes);

/* One JSON object: the layout, its stages, and (mc given) its time and each size's; without a
 * machine "seconds_per_iteration" is null. */
void g3_plan_print_json(const g3_plan_flags_t *f, const g3_plan_layout_t *lay,
                        const g3_plan_machine_t *mc, const g3_plan_time_t *t,
                        const g3_plan_layout_t *sizes, const g3_plan_time_t *stimes, int nsizes);

/* --search's list (or its JSON object): the layouts that fit, in s's order. */
void g3_plan_print_search(const g3_plan_flags_t *f, const g3_plan_search_t *s,
                          const g3_plan_machine_t *mc, int json);

#endif
