// XFAIL: *
// RUN: sh -c 'fklir-opt %s; echo "exit code $?"' 2>&1 | filecheck %s

// KNOWN BUG (reported to the lead; remove the XFAIL line once fixed): a type whose own verify()
// fails while it is parsed (5 channels, planes 0, a duplicated !fkl.params slot) raises a
// VerifyException out of the parser, and fklir-opt prints the bare message
// ("!fkl.image: expected 1 to 4 channels, got 5") with no `file:line:col: error:` prefix, unlike
// every other error (SPEC §4). Expected: the location of the type, as for parse errors.

%0 = fkl.read "src" : !fkl.image<?x?x5xui8>

// CHECK-NOT:  Traceback
// CHECK:      errors-type-location.mlir:[[# @LINE - 3]]:{{[0-9]+}}: error: !fkl.image: expected 1 to 4 channels, got 5
// CHECK-NOT:  Traceback
// CHECK:      exit code 1
