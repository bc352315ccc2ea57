// RUN: fklir-opt %s -p fkl-backward-fusion | filecheck %s

// Regression test (was a bug): folding a geometry op into a
// read that ALREADY has a sample region (parsed, or left by an earlier run) fails with
// "fklir-opt: error: Operation insertion point must have a parent block" (exit 1). The pattern
// walker has the region's old fkl.yield on its worklist, and FoldGeometryIntoRead erases that
// yield with `block.erase_op` behind the rewriter's back; the walker then visits the detached op.
// Expected: the resize joins the existing region after the crop.

%0 = fkl.read "src" : !fkl.image<?x?x1xui8, planes 2> sample {
^bb0(%src : !fkl.image<?x?x1xui8, planes 2>):
  %1 = fkl.crop %src, param "crop1" : !fkl.image<?x?x1xui8, planes 2>
  fkl.yield %1 : !fkl.image<?x?x1xui8, planes 2>
}
%2 = fkl.resize %0, size [5, 5], linear : !fkl.image<?x?x1xui8, planes 2> -> !fkl.image<?x?x1xf32, planes 2>
%3 = fkl.sub %2, 1.0 : !fkl.image<?x?x1xf32, planes 2>
fkl.write %3, "dst" : !fkl.image<?x?x1xf32, planes 2>

// CHECK:        %0 = fkl.read "src" : !fkl.image<?x?x1xui8, planes 2> -> !fkl.image<?x?x1xf32, planes 2> sample {
// CHECK-NEXT:   ^bb0(%src: !fkl.image<?x?x1xui8, planes 2>):
// CHECK-NEXT:     %1 = fkl.crop %src, param "crop1" : !fkl.image<?x?x1xui8, planes 2>
// CHECK-NEXT:     %2 = fkl.resize %1, size [5, 5], linear : !fkl.image<?x?x1xui8, planes 2> -> !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:     fkl.yield %2 : !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:   }
// CHECK-NEXT:   %3 = fkl.sub %0, 1.0 : !fkl.image<?x?x1xf32, planes 2>
