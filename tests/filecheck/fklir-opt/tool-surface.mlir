// fklir-opt offers what fkl IR uses: fkl passes, the mlir/cpp/cuda targets, the builtin and fkl
// dialects. xDSL's own targets and passes take no fkl op (`-t wgsl` used to print nothing with exit
// code 0, `-t llvm` to fail importing a module), so they are unknown names: a one-line error, exit 1.

// RUN: env COLUMNS=1000 fklir-opt --help | filecheck %s --check-prefix=HELP
// RUN: fklir-opt --version | filecheck %s --check-prefix=VERSION
// RUN: sh -c 'fklir-opt %s -t wgsl; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=WGSL
// RUN: sh -c 'fklir-opt %s -t llvm; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: sh -c 'fklir-opt %s -p canonicalize,fkl-infer-types; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=XDSLPASS
// RUN: sh -c 'fklir-opt %s -p "fkl-infer-types{"; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=BADSPEC
// RUN: sh -c 'fklir-opt %s --no-such-flag; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=BADFLAG
// RUN: sh -c 'fklir-opt %s; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=DIALECT

"arith.constant"() <{value = 1 : i32}> : () -> i32

// HELP:      Available targets are: mlir,cuda,cpp{{$}}
// HELP:      Available passes are:
// HELP-SAME: fkl-
// HELP-NOT:  wgsl
// HELP-NOT:  convert-
// HELP-NOT:  riscv
// HELP:      -v, --version

// VERSION:   {{^}}fklir-opt (fklir {{[0-9][^ ,]*}}, xdsl 0.{{[0-9]+}}.{{[0-9]+}})

// WGSL-NOT:  Traceback
// WGSL:      fklir-opt: error: argument -t/--target: invalid choice: 'wgsl' (choose from mlir, cuda, cpp)
// WGSL-NOT:  Traceback
// WGSL:      exit code 1
// LLVM-NOT:  Traceback
// LLVM-NOT:  ModuleNotFoundError
// LLVM:      fklir-opt: error: argument -t/--target: invalid choice: 'llvm'
// LLVM:      exit code 1

// XDSLPASS-NOT: Traceback
// XDSLPASS:     fklir-opt: error: Unrecognized passes: ['canonicalize']
// XDSLPASS:     exit code 1

// A malformed pass spec was an uncaught BaseException (a traceback) in xDSL's driver.
// BADSPEC-NOT:  Traceback
// BADSPEC:      fklir-opt: error: Error parsing pass pipeline specification:
// BADSPEC:      exit code 1

// BADFLAG-NOT:  Traceback
// BADFLAG:      fklir-opt: error: unrecognized arguments: --no-such-flag
// BADFLAG:      exit code 1

// Only the builtin and fkl dialects are registered: an op of another xDSL dialect is unknown.
// DIALECT-NOT:  Traceback
// DIALECT:      tool-surface.mlir:[[# @LINE - 36]]:{{[0-9]+}}: error: Operation arith.constant is not registered
// DIALECT:      exit code 1
