# tests/backend: the backend module's parts that need no device.  test_cudnn_select (every
# build): the choice between cuDNN and the native attention, plan keys, scratch sizes.
# test_cudnn_graph (builds with cuDNN): every descriptor of both attention graphs, created and
# finalized for several shapes without a GPU (src/backend/cudnn_att.c).
G3_C_TESTS += tests/backend/test_cudnn_select
if HAVE_CUDNN
G3_C_TESTS += tests/backend/test_cudnn_graph
endif
