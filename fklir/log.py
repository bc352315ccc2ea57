"""fklir's log: the "fklir" logger of the standard logging module.

INFO: one line per kernel compile (the chain, target, compiler, seconds, cache entry), and a line while a
compile runs longer than SLOW_COMPILE_S. DEBUG: kernels found in the in-process or the disk cache.

Like any library, fklir adds no handler of its own, so nothing shows until the application configures
logging, except that FKLIR_LOG=info (or debug) in the environment adds one stderr handler, once, so that
a script can be watched without changing its code.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

LOGGER = logging.getLogger("fklir")
ENV_VARIABLE = "FKLIR_LOG"
SLOW_COMPILE_S = 2.0  # a compile longer than this says so while it runs: nvcc's are often a few seconds
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
_FORMAT = "%(asctime)s fklir %(levelname)s: %(message)s"


class _EnvironmentHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler FKLIR_LOG adds (its own class, so that it is recognised and never added twice)."""


def configure_from_environment() -> None:
    """Add a stderr handler at FKLIR_LOG's level when the variable is set; does nothing otherwise, or when
    the handler is there already. An unknown level is a warning, not an error: logging is optional."""
    value = os.environ.get(ENV_VARIABLE, "").strip().lower()
    if not value:
        return
    level = _LEVELS.get(value)
    if level is None:
        warnings.warn(f"{ENV_VARIABLE}={value!r} is not a log level; use one of {', '.join(_LEVELS)}", stacklevel=2)
        return
    LOGGER.setLevel(level)
    if any(isinstance(handler, _EnvironmentHandler) for handler in LOGGER.handlers):
        return
    handler = _EnvironmentHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(_FORMAT))
    LOGGER.addHandler(handler)


def cache_hit(where: str, key: str, describe: Callable[[], str]) -> None:
    """DEBUG: kernel `key` was found in the `where` cache ("memory" or "disk"); `describe` runs only when
    the line is logged, so that a hit costs nothing more with logging off."""
    if LOGGER.isEnabledFor(logging.DEBUG):
        LOGGER.debug("%s cache hit: %s (kernel %s)", where, describe(), key[:16])


@contextlib.contextmanager
def compiling(chain: str, target: str, compiler: str, entry: Path) -> Iterator[None]:
    """Time the compile of `chain` in the block: INFO when it ends, and INFO while it runs once it has
    taken SLOW_COMPILE_S (from a timer thread, cancelled when the block ends)."""
    if not LOGGER.isEnabledFor(logging.INFO):
        yield
        return
    start = time.perf_counter()
    timer = threading.Timer(
        SLOW_COMPILE_S,
        LOGGER.info,
        ("still compiling %s for %s with %s (%.0f s so far) ...", chain, target, compiler, SLOW_COMPILE_S),
    )
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
    seconds = time.perf_counter() - start
    LOGGER.info("compiled %s for %s with %s in %.2f s: %s", chain, target, compiler, seconds, entry)


configure_from_environment()
