# src/metrics: the metrics' one schema and sink (events: metrics.jsonl, TensorBoard, the
# progress lines), the TensorBoard event files, and the readers: the records through the
# schema (gpt3d metrics) and the loss curves (gpt3d plot).  Depends on core and data (JSON).
src_libgpt3d_a_SOURCES += \
	src/metrics/events.c src/metrics/events.h \
	src/metrics/query.c src/metrics/query.h \
	src/metrics/tensorboard.c src/metrics/tensorboard.h \
	src/metrics/plot.c src/metrics/plot.h
