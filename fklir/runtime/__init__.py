"""Run-time support that knows nothing about the IR: the CUDA driver (contexts, streams, memory, launches),
launch plans, device buffers and array/stream interop."""
