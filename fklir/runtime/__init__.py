"""Run-time support that knows nothing about the IR: device buffers and array/stream interop."""
