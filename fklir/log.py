"""fklir's log: the "fklir" logger of the standard logging module.

INFO: one line per kernel compile (the chain, target, compiler, seconds, cache entry), and a line while a
compile runs longer than SLOW_COMPILE_S. DEBUG: kernels found in the in-process or the disk cache.

Like any library, fklir adds no handler of its own, so nothing shows until the application configures
logging, except that FKLIR_LOG=info (or debug) in the environment adds one stderr handler, once, so that
a script can be watched without changing its code.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging
    from pathlib import Path

ENV_VARIABLE = "FKLIR_LOG"
SLOW_COMPILE_S = 2.0  # a compile longer than this says so while it runs: nvcc's are often a few seconds
# logging's own levels, by value: the logging module is imported only when something is logged
_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
_FORMAT = "%(asctime)s fklir %(levelname)s: %(message)s"


def __getattr__(name: str) -> Any:
    """LOGGER and _EnvironmentHandler, made on first use: importing logging would weigh on every fresh
    process, and one that configured no logging never logs a compile or a cache hit."""
    if name == "LOGGER":
        return _logger()
    if name == "_EnvironmentHandler":
        return _environment_handler()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _logger() -> logging.Logger:
    import logging

    return logging.getLogger("fklir")


@functools.cache
def _environment_handler() -> type[logging.StreamHandler[Any]]:
    import logging

    class _EnvironmentHandler(logging.StreamHandler):  # type: ignore[type-arg]
        """The handler FKLIR_LOG adds (its own class, so that it is recognised and never added twice)."""

    return _EnvironmentHandler


def _enabled_logger(level: int) -> logging.Logger | None:
    """The "fklir" logger when it logs at `level`, else None. Until some module imports logging, no
    application has configured it (FKLIR_LOG imports it at fklir's import), so nothing is logged."""
    if "logging" not in sys.modules:
        return None
    logger = _logger()
    return logger if logger.isEnabledFor(level) else None


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
    import logging

    logger = _logger()
    logger.setLevel(level)
    handler_type = _environment_handler()
    if any(isinstance(handler, handler_type) for handler in logger.handlers):
        return
    handler = handler_type(sys.stderr)
    handler.setFormatter(logging.Formatter(_FORMAT))
    logger.addHandler(handler)


def cache_hit(where: str, key: str, describe: Callable[[], str]) -> None:
    """DEBUG: kernel `key` was found in the `where` cache ("memory" or "disk"); `describe` runs only when
    the line is logged, so that a hit costs nothing more with logging off."""
    if (logger := _enabled_logger(_LEVELS["debug"])) is not None:
        logger.debug("%s cache hit: %s (kernel %s)", where, describe(), key[:16])


@contextlib.contextmanager
def compiling(chain: str, target: str, compiler: str, entry: Path) -> Iterator[None]:
    """Time the compile of `chain` in the block: INFO when it ends, and INFO while it runs once it has
    taken SLOW_COMPILE_S (from a timer thread, cancelled when the block ends)."""
    logger = _enabled_logger(_LEVELS["info"])
    if logger is None:
        yield
        return
    start = time.perf_counter()
    timer = threading.Timer(
        SLOW_COMPILE_S,
        logger.info,
        ("still compiling %s for %s with %s (%.0f s so far) ...", chain, target, compiler, SLOW_COMPILE_S),
    )
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
    seconds = time.perf_counter() - start
    logger.info("compiled %s for %s with %s in %.2f s: %s", chain, target, compiler, seconds, entry)


configure_from_environment()
