// The element-wise ops of tests/op_catalogue.py, generated from it: every op on every chain type it
// takes, printed, parsed again and printed again; each float-only op on an integer chain is the
// verifier's "Cast to float first". (This file's own text is not read: the inputs and the checks
// both come from the catalogue, so a new entry needs no edit here.)
// RUN: cd %S/../../../.. && python3 -m tests.op_catalogue ops > %t.mlir && python3 -m tests.op_catalogue ops-checks > %t.ops
// RUN: fklir-opt %t.mlir | fklir-opt | filecheck %t.ops
// RUN: cd %S/../../../.. && python3 -m tests.op_catalogue invalid > %t.bad.mlir && python3 -m tests.op_catalogue invalid-checks > %t.bad
// RUN: fklir-opt %t.bad.mlir --split-input-file --verify-diagnostics | filecheck %t.bad
