// A string literal that never closes is reported at its opening quote, at once: xDSL 0.74's lexer
// regex backtracks over every split of the rest of the line, which took time doubling with each
// character. The 64 characters after the quote below would take years that way; lit's per-test
// timeout fails the test long before. (tests/unit/test_fklir_opt.py times a 10^5-character line.)

// RUN: sh -c 'fklir-opt %s; echo "exit code $?"' 2>&1 | filecheck %s
// RUN: sh -c 'fklir-opt %s --split-input-file --parsing-diagnostics; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=DIAG

%0 = fkl.read "src : xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
fkl.write %0, "dst" : !fkl.image<?x?x3xf32>

// CHECK-NOT:  Traceback
// CHECK:      unterminated-string.mlir:[[# @LINE - 4]]:15: error: unterminated string
// CHECK-NEXT: %0 = fkl.read "src : xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
// CHECK-NEXT: {{^              \^$}}
// CHECK-NOT:  Traceback
// CHECK:      exit code 1

// Each kind of bad string, one per chunk (--parsing-diagnostics prints each error and goes on).
// DIAG:       unterminated-string.mlir:[[# @LINE - 11]]:15
// DIAG-NEXT:  %0 = fkl.read "src : xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
// DIAG-NEXT:  {{^              \^$}}
// DIAG-NEXT:  unterminated string

// -----

// An invalid escape is not an unterminated string: the error points at the backslash.
%0 = fkl.read "a\q" : !fkl.image<?x?x3xf32>
// DIAG:       unterminated-string.mlir:[[# @LINE - 1]]:17
// DIAG-NEXT:  %0 = fkl.read "a\q" : !fkl.image<?x?x3xf32>
// DIAG-NEXT:  {{^                \^\^$}}
// DIAG-NEXT:  invalid escape \q in string: expected \", \n, \t, \\ or two hex digits

// -----

// A quoted symbol name goes through the same lexer path.
fkl.kernel @"k0 params !fkl.params<> {
// DIAG:       unterminated-string.mlir:[[# @LINE - 1]]:13
// DIAG-NEXT:  fkl.kernel @"k0 params !fkl.params<> {
// DIAG-NEXT:  {{^            \^$}}
// DIAG-NEXT:  unterminated string

// -----

// A quote inside a comment starts no string, and an escaped quote does not end one.
%0 = fkl.read "s\"rc" : !fkl.image<?x?x3xf32> // "never closed
fkl.write %0, "dst" : !fkl.image<?x?x3xf32>
// DIAG:       %0 = fkl.read "s\22rc" : !fkl.image<?x?x3xf32>
// DIAG-NOT:   error
// DIAG:       exit code 0
