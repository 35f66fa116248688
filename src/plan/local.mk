# src/plan: what a model on a parallel layout costs per rank (g3_plan_; gpt3d plan).
src_libgpt3d_a_SOURCES += \
	src/plan/plan.c src/plan/plan.h \
	src/plan/time.c src/plan/time.h \
	src/plan/layout.c src/plan/layout.h \
	src/plan/report.c src/plan/report.h
