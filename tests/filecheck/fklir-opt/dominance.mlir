// A value used above its definition is a verifier error, at top level as inside fkl.kernel
// (tests/filecheck/dialects/fkl/invalid.mlir has the kernel and sample-region cases): passes and
// emitters take ops in text order, so such IR would give wrong math or C++ that does not compile.

// RUN: sh -c 'fklir-opt %s --split-input-file; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=TOP
// RUN: sh -c 'fklir-opt %s --split-input-file -p fkl-default-pipeline -t cpp; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=TOP
// RUN: sh -c 'fklir-opt %s --split-input-file --verify-diagnostics; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=DIAG

// Top level: the mul reads %0 before the read defines it. The error comes before any pass runs.
%1 = fkl.mul %0, 2.0 : !fkl.image<?x?x3xf32>
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
fkl.write %1, "dst" : !fkl.image<?x?x3xf32>

// TOP-NOT:  Traceback
// TOP:      dominance.mlir:[[# @LINE - 5]]:1: error: 'fkl.mul' operand #0 is used before it is defined (defined by 'fkl.read' at line [[# @LINE - 4]]:1)
// TOP-NOT:  Traceback
// TOP:      exit code 1
// DIAG:     dominance.mlir:[[# @LINE - 8]]:1: error: 'fkl.mul' operand #0 is used before it is defined

// -----

// An outlined kernel whose write comes before the op it writes.
fkl.kernel @k0 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
  %1 = fkl.add %0, 1.0 : !fkl.image<?x?x3xf32>
}
// DIAG:     dominance.mlir:[[# @LINE - 3]]:3: error: 'fkl.write' operand #0 is used before it is defined (defined by 'fkl.add' at line [[# @LINE - 2]]:3)

// -----

// The same ops in order verify, and the module is printed.
fkl.kernel @k1 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  %1 = fkl.add %0, 1.0 : !fkl.image<?x?x3xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
}
// DIAG-NOT: error
// DIAG:     fkl.kernel @k1
// DIAG-NOT: error
// DIAG:     exit code 0
