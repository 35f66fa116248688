/* gpt3d curate: training-data curation as MT-NLG did it, split into stages that a Slurm job
 * array runs: exact and fuzzy (MinHash LSH) deduplication, decontamination against task files
 * with 13-grams, and Gopher/C4-style quality filters.  See docs/curation.md.
 *
 * Every stage reads JSON lines ({"text": ..., other fields kept}) from a list of input shards
 * (one path a line in a shard list) and works on the shards of its task: task t of T takes the
 * shards i with i % T == t, so each shard's output depends on that shard alone (and, for the
 * stages that need them, on the whole-corpus tables of an earlier stage) and the outputs are
 * bitwise the same for any number of tasks.  Shard i's outputs are named OUT/shard-%05d.* after
 * its position in the list.  Every output is written under a temporary name and renamed, the
 * per-shard report (OUT/shard-%05d.report.json) last: a shard whose report exists, names the
 * same input (path and size), the same parameters and an output of the size it records, is
 * done and is skipped (resumable); anything else is redone.
 *
 *   minhash      per shard: OUT/shard-N.mh, one record per document: the line, a 128-bit hash
 *                of the normalised text (exact dedup), the MinHash signature of its word
 *                n-gram shingles.
 *   lsh          once, over every shard's .mh (also as R ranks under srun/mpirun, the LSH
 *                buckets partitioned by hash over the ranks): exact groups (the first in the
 *                shard-list order kept), then LSH bands -> candidate pairs -> verified by the
 *                estimated Jaccard (or, with verify_exact, the exact Jaccard of the two
 *                shingle sets) -> union-find components, one document kept per component.
 *                Writes OUT/duplicates.tsv and OUT/report.json.
 *   dedup        per shard: drops the documents duplicates.tsv names.
 *   contam-count per shard: how many documents hold each task n-gram (OUT/shard-N.ngc).
 *   decontaminate per shard: cuts every task n-gram that is rare in the training data (summed
 *                over all .ngc files) out of the documents, with its margins, and splits there.
 *   filter       per shard: quality heuristics; what fails is dropped, counted per rule.
 *
 * Errors are logged once where detected, naming the file and line ("gpt3d curate: FILE line
 * N: ..."); a failed shard leaves no output under its final names. */
#ifndef G3_CURATE_CURATE_H
#define G3_CURATE_CURATE_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "core/status.h"

#define G3_CURATE_MAX_PERM 1024   /* MinHash permutations                              */

/* The shards this task works on (borrowed strings are the caller's until the run ends). */
typedef struct {
    const char *shard_list;     /* file: one input path a line ('#' comments, blanks skipped) */
    const char *output_dir;     /* created if missing                                     */
    int         task_id;        /* 0 .. num_tasks-1                                       */
    int         num_tasks;      /* >= 1                                                   */
    const char *text_key;       /* the JSON key of the text ("text")                       */
    size_t      max_line_bytes; /* a longer input line is an error                         */
    int         allow_empty;    /* a 0-byte shard is fine (else an error)                  */
    int         force;          /* redo shards whose outputs verify                        */
} g3_curate_io_t;

/* The stages' parameters.  The values in parentheses are the defaults of the matching flags of
 * 'gpt3d curate', set in one place: the option table of curate/flags.c. */
typedef struct {
    int      ngram;             /* words per shingle (5)                                   */
    int      num_perm;          /* MinHash permutations = bands * rows (128)               */
    int      bands, rows;       /* LSH banding (16 x 8: threshold ~ (1/b)^(1/r) = 0.71)     */
    uint64_t seed;              /* the permutations' seed                                  */
    int      lower;             /* exact hash of the lower-cased normalised text           */
} g3_curate_mh_params_t;

typedef enum { G3_CURATE_KEEP_LONGEST = 0, G3_CURATE_KEEP_FIRST } g3_curate_keep_t;

typedef struct {
    double           threshold;     /* Jaccard an LSH candidate pair must reach (0.8)      */
    g3_curate_keep_t keep;          /* which document of a component stays                 */
    int              anchors;       /* a bucket's members are compared with its first
                                       `anchors` members (all pairs up to that size) (256)   */
    int              exact_only;    /* only the exact groups, no LSH                       */
    int              verify_exact;  /* a candidate pair's Jaccard: 0 estimated from the
                                       signatures, 1 exact, of the two shingle sets (the
                                       documents re-read from the shards) (0)              */
} g3_curate_lsh_params_t;

typedef struct {
    const char *const *task_files;  /* (num_task_files,) JSON lines or text, an item a line */
    int                num_task_files;
    const char        *task_key;    /* JSON key of an item's text ("text")                 */
    int                ngram;       /* words per n-gram (13)                               */
    int                margin;      /* characters removed on each side of a match (200)    */
    int                min_piece;   /* pieces shorter than this (characters) dropped (200) */
    int                max_splits;  /* a document split more often is dropped (10)         */
    int                frequent;    /* n-grams in >= this many training docs are ignored (10) */
    const char        *counts_dir;  /* decontaminate: the contam-count stage's output      */
} g3_curate_decon_params_t;

typedef struct {
    int64_t min_words, max_words;    /* whitespace-separated words (50, 100000)             */
    double  min_mean_word, max_mean_word;   /* mean word length in characters (3, 10)      */
    double  max_symbol_ratio;        /* ('#' + ellipses) / words (0.1)                     */
    double  max_bullet_lines;        /* share of lines starting with a bullet (0.9)        */
    double  max_ellipsis_lines;      /* share of lines ending in an ellipsis (0.3)         */
    double  max_dup_lines;           /* share of lines that repeat an earlier line (0.3)   */
    double  max_dup_line_chars;      /* their share of the characters (0.2)                */
    double  max_top_ngram[3];        /* n = 2..4: chars of the top n-gram (0.2, 0.18, 0.16)  */
    double  max_dup_ngram[6];        /* n = 5..10: chars in repeated n-grams (0.15 .. 0.10) */
    int     min_stop_words;          /* distinct English stop words a document needs (2)   */
    double  min_alpha_words;         /* share of words with a letter (0.8)                  */
} g3_curate_filter_params_t;

/* What a task did (summed over its shards), for the driver's summary line. */
typedef struct {
    uint64_t shards_done, shards_skipped;
    uint64_t docs_in, docs_out;
    uint64_t bytes_in;
    double   seconds;
} g3_curate_counts_t;

/* The per-shard stages.  RET: G3_OK, G3_ERR_INVALID_ARG (bad parameters, logged),
 * G3_ERR_NOT_FOUND (a shard missing), G3_ERR_FORMAT (bad input: file and line logged),
 * G3_ERR_IO, G3_ERR_NO_MEMORY.  OUT: *c (also on failure: what was done before it). */
g3_status_t g3_curate_minhash(const g3_curate_io_t *io, const g3_curate_mh_params_t *p,
                              g3_curate_counts_t *c);
g3_status_t g3_curate_dedup(const g3_curate_io_t *io, const char *lsh_dir,
                            g3_curate_counts_t *c);
g3_status_t g3_curate_contam_count(const g3_curate_io_t *io, const g3_curate_decon_params_t *p,
                                   g3_curate_counts_t *c);
g3_status_t g3_curate_decontaminate(const g3_curate_io_t *io, const g3_curate_decon_params_t *p,
                                    g3_curate_counts_t *c);
g3_status_t g3_curate_filter(const g3_curate_io_t *io, const g3_curate_filter_params_t *p,
                             g3_curate_counts_t *c);

/* The lsh stage over every shard of io->shard_list (io's task fields are ignored): reads
 * mh_dir/shard-N.mh (made with mp's num_perm and seed; mp's bands x rows = num_perm), writes
 * io->output_dir/duplicates.tsv and report.json (rank 0).  With p->verify_exact it also reads
 * the shards themselves (io->text_key, io->max_line_bytes), which must be those minhash read.
 * comm: the group of the ranks that share the work (NULL: alone); every member calls it with
 * the same arguments.  RET: as above, or comm errors.  OUT: *c on rank 0. */
g3_status_t g3_curate_lsh(const g3_curate_io_t *io, const char *mh_dir,
                          const g3_curate_lsh_params_t *p, const g3_curate_mh_params_t *mp,
                          g3_comm_t *comm,
                          g3_curate_counts_t *c);

/* Normalise text for hashing: Unicode NFC, every run of white space -> one ' ', none at the
 * ends; lower: also simple (one to one) lower-casing.  s must be valid UTF-8.
 * OUT: *out_p (malloc'd, NUL-terminated), *out_len_p.  RET: G3_OK or G3_ERR_NO_MEMORY. */
g3_status_t g3_curate_normalize(const char *s, size_t n, int lower, char **out_p,
                                size_t *out_len_p);

/* The Unicode version of the NFC and case tables. */
const char *g3_curate_unicode_version(void);

#endif
