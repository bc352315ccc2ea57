// RUN: fklir-opt %s --split-input-file --verify-diagnostics -p fkl-backward-fusion | filecheck %s

// Every geometry op right after a read folds into the read's sample region, in order, whatever the
// depth (resize, crop, resize here); the read then produces what the last one produced, and the
// compute chain reads it.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.resize %0, size [8, 8], nearest : !fkl.image<?x?x3xui8>
%2 = fkl.crop %1, rects [[0, 0, 4, 4], [4, 4, 4, 4]] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 2>
%3 = fkl.resize %2, size [2, 2], linear : !fkl.image<?x?x3xui8, planes 2> -> !fkl.image<?x?x3xf32, planes 2>
%4 = fkl.mul %3, 2.0 : !fkl.image<?x?x3xf32, planes 2>
fkl.write %4, "dst" : !fkl.image<?x?x3xf32, planes 2>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32, planes 2> sample {
// CHECK-NEXT:    ^bb0(%src: !fkl.image<?x?x3xui8>):
// CHECK-NEXT:      %1 = fkl.resize %src, size [8, 8], nearest : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      %2 = fkl.crop %1, rects {{\[}}[0, 0, 4, 4], [4, 4, 4, 4]] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 2>
// CHECK-NEXT:      %3 = fkl.resize %2, size [2, 2], linear : !fkl.image<?x?x3xui8, planes 2> -> !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:      fkl.yield %3 : !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:    }
// CHECK-NEXT:    %4 = fkl.mul %0, 2.0 : !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:    fkl.write %4, "dst" : !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:  }

// -----

// No geometry: nothing to fold, the read keeps no region.
%0 = fkl.read "src" : !fkl.image<?x?x1xf32>
%1 = fkl.mul %0, 2.0 : !fkl.image<?x?x1xf32>
fkl.write %1, "dst" : !fkl.image<?x?x1xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    %1 = fkl.mul %0, 2.0 : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    fkl.write %1, "dst" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:  }

// -----

// Inside a kernel, with a pointer-table read (its sources are kept) and a planar write.
fkl.kernel @k0 params !fkl.params<crop1: rect x 2> {
  %0 = fkl.read ["a", "b"] : !fkl.image<?x?x1xf32, planes 2>
  %1 = fkl.crop %0, param "crop1" : !fkl.image<?x?x1xf32, planes 2>
  fkl.split %1, "dst" : !fkl.image<?x?x1xf32, planes 2>
}

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<crop1: rect x 2> {
// CHECK-NEXT:      %0 = fkl.read ["a", "b"] : !fkl.image<?x?x1xf32, planes 2> sample {
// CHECK-NEXT:      ^bb0(%src: !fkl.image<?x?x1xf32, planes 2>):
// CHECK-NEXT:        %1 = fkl.crop %src, param "crop1" : !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:        fkl.yield %1 : !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:      }
// CHECK-NEXT:      fkl.split %0, "dst" : !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// -----

// Geometry after arithmetic is not folded (fkl-validate-chain rejects it; this pass leaves it).
%0 = fkl.read "src" : !fkl.image<?x?x1xf32>
%1 = fkl.add %0, 1.0 : !fkl.image<?x?x1xf32>
%2 = fkl.crop %1, rects [[0, 0, 2, 2]] : !fkl.image<?x?x1xf32>
fkl.write %2, "dst" : !fkl.image<?x?x1xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    %1 = fkl.add %0, 1.0 : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    %2 = fkl.crop %1, rects {{\[}}[0, 0, 2, 2]] : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    fkl.write %2, "dst" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:  }

// -----

// A geometry result with two users: the fused read feeds both the write and the next (unfolded)
// resize, so nothing is lost.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.crop %0, rects [[0, 0, 4, 4]] : !fkl.image<?x?x3xui8>
%2 = fkl.resize %1, size [2, 2], nearest : !fkl.image<?x?x3xui8>
fkl.write %1, "a" : !fkl.image<?x?x3xui8>
fkl.write %2, "b" : !fkl.image<?x?x3xui8>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x3xui8> sample {
// CHECK-NEXT:    ^bb0(%src: !fkl.image<?x?x3xui8>):
// CHECK-NEXT:      %1 = fkl.crop %src, rects {{\[}}[0, 0, 4, 4]] : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      fkl.yield %1 : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    }
// CHECK-NEXT:    %2 = fkl.resize %0, size [2, 2], nearest : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    fkl.write %0, "a" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    fkl.write %2, "b" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:  }

// -----

// A DAG: each branch's geometry folds into its own read (backwards vertical fusion per branch).
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.resize %0, size [8, 8], nearest : !fkl.image<?x?x3xf32>
%2 = fkl.read "in1" : !fkl.image<?x?x3xf32>
%3 = fkl.crop %2, rects [[1, 1, 8, 8]] : !fkl.image<?x?x3xf32>
%4 = fkl.join sub %1, %3 : !fkl.image<?x?x3xf32>
fkl.write %4, "out0" : !fkl.image<?x?x3xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x3xf32> sample {
// CHECK-NEXT:    ^bb0(%src: !fkl.image<?x?x3xf32>):
// CHECK-NEXT:      %1 = fkl.resize %src, size [8, 8], nearest : !fkl.image<?x?x3xf32>
// CHECK-NEXT:      fkl.yield %1 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %2 = fkl.read "in1" : !fkl.image<?x?x3xf32> sample {
// CHECK-NEXT:    ^bb0(%src_1: !fkl.image<?x?x3xf32>):
// CHECK-NEXT:      %3 = fkl.crop %src_1, rects {{\[}}[1, 1, 8, 8]] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:      fkl.yield %3 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %4 = fkl.join sub %0, %2 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    fkl.write %4, "out0" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:  }
