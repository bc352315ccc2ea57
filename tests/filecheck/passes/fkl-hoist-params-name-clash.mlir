// RUN: fklir-opt %s -p fkl-hoist-params | filecheck %s

// Regression test (was a bug): new slot names are
// `<op><index>` without checking the slots already in the block. Here the existing slot is called
// `max2` and the inline max at index 2 gets `max2` as well, so the pass fails with
// "error: !fkl.params: slot max2 appears twice" (exit 1). Expected: a fresh name for the new slot;
// the existing slot and its value untouched.

fkl.kernel @k0 params !fkl.params<max2: f64 x 1> values {max2 = [3.0]} {
  %0 = fkl.read "src" : !fkl.image<?x?x1xf64>
  %1 = fkl.mul %0, param "max2" : !fkl.image<?x?x1xf64>
  %2 = fkl.max %1, 0.0 : !fkl.image<?x?x1xf64>
  fkl.write %2, "dst" : !fkl.image<?x?x1xf64>
}

// CHECK:      fkl.kernel @k0 params !fkl.params<max2: f64 x 1, [[NEW:[a-z0-9_]+]]: f64 x 1>
// CHECK-SAME:   values {max2 = [3.0], [[NEW]] = [0.0]} {
// CHECK:        %1 = fkl.mul %0, param "max2"
// CHECK-NEXT:   %2 = fkl.max %1, param "[[NEW]]"
