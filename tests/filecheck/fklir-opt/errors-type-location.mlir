// RUN: sh -c 'fklir-opt %s; echo "exit code $?"' 2>&1 | filecheck %s

// A type whose own verify() fails while it is parsed (5 channels, planes 0, a duplicated
// !fkl.params slot) is reported like every other error: `file:line:col: error:` at the op holding it.

%0 = fkl.read "src" : !fkl.image<?x?x5xui8>

// CHECK-NOT:  Traceback
// CHECK:      errors-type-location.mlir:[[# @LINE - 3]]:{{[0-9]+}}: error: !fkl.image: expected 1 to 4 channels, got 5
// CHECK-NOT:  Traceback
// CHECK:      exit code 1
