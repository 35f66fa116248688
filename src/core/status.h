/* gpt3d core: the one status type every library function returns.
 *
 * Library code never calls exit(); it logs the cause once, where it is first
 * detected, and returns one of these codes.  Only main() and the subcommand
 * drivers turn a status into a process exit code (see g3_exit_code_t). */
#ifndef G3_CORE_STATUS_H
#define G3_CORE_STATUS_H

typedef enum {
    G3_OK = 0,
    G3_ERR_INVALID_ARG,   /* a bad flag value, config entry or argument     */
    G3_ERR_USAGE,         /* a command line that cannot be parsed           */
    G3_ERR_NO_MEMORY,     /* malloc/mmap failed                             */
    G3_ERR_IO,            /* open/read/write/fsync/rename failed            */
    G3_ERR_FORMAT,        /* a file we read is corrupt, truncated or foreign */
    G3_ERR_VERSION,       /* a file carries a version we do not understand  */
    G3_ERR_NOT_FOUND,     /* a named thing (file, tensor, key) is missing    */
    G3_ERR_UNSUPPORTED,   /* valid request this build or layout cannot do   */
    G3_ERR_COMM,          /* a PMIx/UCX/NCCL call failed                    */
    G3_ERR_TIMEOUT,       /* a blocking distributed operation timed out     */
    G3_ERR_NUMERIC,       /* NaN/Inf where a finite number was required     */
    G3_ERR_DEVICE,        /* a CUDA/cuBLAS call failed                      */
    G3_ERR_INTERRUPTED,   /* stopped on request (signal, exit duration)     */
    G3_ERR_INTERNAL,      /* a broken invariant: a bug in gpt3d             */
    G3_STATUS_COUNT
} g3_status_t;

/* RET: a static, human-readable name for the status (never NULL). */
const char *g3_status_string(g3_status_t status);

/* Process exit codes, documented in gpt3d(1) and docs/exit-codes.md. */
typedef enum {
    G3_EXIT_OK          = 0,   /* success                                        */
    G3_EXIT_FAILURE     = 1,   /* any failure not listed below                   */
    G3_EXIT_USAGE       = 2,   /* bad command line, flag or config file          */
    G3_EXIT_REQUEUE     = 75,  /* checkpoint saved on request: requeue the job   */
    G3_EXIT_COMM_TIMEOUT= 76,  /* a distributed operation hit its timeout        */
    G3_EXIT_CKPT_LOAD   = 78,  /* the checkpoint to resume from cannot be loaded */
    G3_EXIT_NONFINITE   = 79   /* training stopped on a NaN or infinite loss     */
} g3_exit_code_t;

/* RET: the process exit code a driver should use for a failed status. */
int g3_status_exit_code(g3_status_t status);

#endif
