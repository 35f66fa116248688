/* The metrics' TensorBoard event files (gpt3d train --tensorboard-dir), written from C with no
 * library: what metrics/events.h sends a record's TensorBoard tags to.
 *
 * A file is a sequence of TFRecord records, each
 *     uint64 length | uint32 masked CRC-32C of the 8 length bytes | length bytes of data |
 *     uint32 masked CRC-32C of the data
 * (little-endian; mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8), whose data is one
 * tensorflow.Event protocol buffer (tensorflow/core/util/event.proto): wall_time (double,
 * field 1), step (int64, field 2), and either file_version (string, field 3: "brain.Event:2",
 * the first record of every file) or summary (Summary, field 5) holding one Summary.Value
 * (summary.proto: repeated field 1) with tag (string, field 1) and simple_value (float,
 * field 2): what torch.utils.tensorboard's add_scalar writes, and what TensorBoard 2.x reads
 * as a scalar.  The CRC is the checkpoints' CRC-32C (core/crc32c.h).
 *
 * The file is named events.out.tfevents.TIMESTAMP.HOST.PID.0 (torch's SummaryWriter's
 * pattern, TIMESTAMP the Unix time in 10 digits): every opening makes a new file, so a
 * resumed run adds one beside those of the runs before it in the same directory, and
 * TensorBoard, which reads a directory's files in name order, shows one curve (a step that
 * goes back, after a resume from an earlier checkpoint, replaces the later points).  So that
 * name order is time order even for a run resumed within the same second, TIMESTAMP is one
 * more than the newest one there when that is not older than now.
 *
 * Every record is flushed when written: a job killed at any moment leaves a file readable up
 * to its last whole record.  A write that fails is reported once as a warning and the writer
 * stops writing (the training goes on: the events are a view of the metrics file).
 * Ownership: g3_tb_open gives a writer freed with g3_tb_close. */
#ifndef G3_METRICS_TENSORBOARD_H
#define G3_METRICS_TENSORBOARD_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct g3_tb g3_tb_t;

/* Create dir if missing and a new events file in it, with its file_version record.
 * RET: G3_ERR_IO (logged, naming the directory or file), G3_ERR_NO_MEMORY.  OUT: *tb_p. */
g3_status_t g3_tb_open(const char *dir, g3_tb_t **tb_p);

/* Append one Event: the scalar value (stored as a float) of tag at step.  A NULL writer
 * does nothing. */
void g3_tb_scalar(g3_tb_t *tb, const char *tag, int64_t step, double value);

void g3_tb_close(g3_tb_t *tb);

#endif
