"""The JIT driver: compose() and its pipelines, which lower, compile and cache a chain per input
signature on the first call (cold path) and launch the compiled kernel on every call (warm path)."""
