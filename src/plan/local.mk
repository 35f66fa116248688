# src/plan: what a model on a parallel layout costs per rank, and its time per iteration
# (g3_plan_): arithmetic on the model and the backends' table, below train (the trainer checks
# a run's memory with it).  gpt3d plan's checks, search and report are src/search.
src_libgpt3d_a_SOURCES += \
	src/plan/plan.c src/plan/plan.h \
	src/plan/time.c src/plan/time.h \
	src/plan/count.c src/plan/count.h \
	src/plan/gpu.c src/plan/gpu.h
