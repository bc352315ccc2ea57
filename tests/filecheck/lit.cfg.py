"""lit configuration for fklir's FileCheck suite: `lit tests/filecheck -v` from the repository root.

Every `.mlir` file is a test; its RUN lines call `fklir-opt` and `filecheck` from PATH. Two
substitutions mirror xDSL's round-trip habits:

- `FKL_ROUNDTRIP`: print with the custom syntax, parse that again, FileCheck the result.
- `FKL_GENERIC_ROUNDTRIP`: print generically, parse that with the custom printer, FileCheck it
  with the `CHECK-GENERIC` prefix.
"""

# lit injects `config` and `lit_config` into this file's globals.
# ruff: noqa: F821

import os

import lit.formats
import lit.util

config.name = "fklir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["lit.cfg.py", "Output"]
config.test_source_root = os.path.dirname(__file__)
# Output/ directories next to the tests are ignored by git (.gitignore: tests/filecheck/**/Output/).
config.test_exec_root = config.test_source_root

# Substitutions are applied in order, before lit's own `%s`; these expand to text that contains `%s`.
config.substitutions.append(("FKL_ROUNDTRIP", "fklir-opt %s | fklir-opt | filecheck %s"))
config.substitutions.append(
    (
        "FKL_GENERIC_ROUNDTRIP",
        "fklir-opt %s --print-op-generic | fklir-opt | filecheck %s --check-prefix=CHECK-GENERIC",
    )
)

# The tools find their environment (pyenv shims, virtualenvs) through these variables.
for name in ("PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV", "PYTHONPATH"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

# A per-test timeout needs psutil to kill the process tree; without it, lit refuses the option.
if lit.util.killProcessAndChildrenIsSupported()[0]:
    config.maxIndividualTestTime = 20
