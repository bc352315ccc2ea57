// RUN: fklir-opt %s -p fkl-default-pipeline | fklir-opt | filecheck %s
// RUN: fklir-opt %s -p fkl-default-pipeline --print-op-generic | fklir-opt | filecheck %s

// Regression test (was a bug): a chain without values
// (read -> cast -> write) leaves the kernel with `values = {}`, and `fkl.kernel`'s printer writes
// an empty dictionary as nothing at all: `fkl.kernel @k0 params !fkl.params<> values {` -- the
// body's `{` is then read as the dictionary and the output does not parse back ("Expected bare-id
// or string-literal here as part of attribute entry!"). Expected: `values {}` printed (or no
// `values` at all), and the IR round-trips.

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.cast %0 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
fkl.write %1, "dst" : !fkl.image<?x?x?xnone>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<> {{(values \{\} )?}}{
// CHECK-NEXT:      %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      %1 = fkl.cast %0 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:      fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
