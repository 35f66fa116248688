/* gpt3d backend: the rows of the table of kinds (backend.h, g3_be_kind_info_t).  kinds.c
 * holds the table and is the only file that names the rows; each row lives beside its
 * backend: cpu.c, and cuda_kind.c (compiled in every build, so that gpt3d plan sizes a CUDA
 * run on a machine without CUDA) whose open is cuda.c's (HAVE_CUDA only).  The rows and
 * backends call shared.c, never backend.c or kinds.c (docs/design.md, "Backend kinds"). */
#ifndef G3_BACKEND_KINDS_H
#define G3_BACKEND_KINDS_H

#include "backend/backend.h"

extern const g3_be_kind_info_t g3_be_cpu_kind;
extern const g3_be_kind_info_t g3_be_cuda_kind;

/* The CUDA backend's open (cuda.c; the row's open in builds with CUDA): device o->device,
 * or, when it is < 0, the node-local rank (LOCAL_RANK, SLURM_LOCALID,
 * OMPI_COMM_WORLD_LOCAL_RANK, else 0) modulo the visible devices.  See g3_be_open. */
g3_status_t g3_be_cuda_open(g3_be_opts_t *o, g3_backend_t **be_p);

#endif
