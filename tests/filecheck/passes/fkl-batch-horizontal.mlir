// RUN: fklir-opt %s --split-input-file --verify-diagnostics -p fkl-batch-horizontal | filecheck %s

// Per-rect chains (one per plane of "dst", same ops and values) become one chain with one crop of
// all the rects, in plane order, and one write of every plane.
%b0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%b1 = fkl.crop %b0, rects [[5, 5, 4, 4]] : !fkl.image<?x?x3xui8>
%b2 = fkl.mul %b1, 2 : !fkl.image<?x?x3xui8>
fkl.write %b2, "dst" planes [1] : !fkl.image<?x?x3xui8>
%a0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%a1 = fkl.crop %a0, rects [[0, 0, 4, 4]] : !fkl.image<?x?x3xui8>
%a2 = fkl.mul %a1, 2 : !fkl.image<?x?x3xui8>
fkl.write %a2, "dst" planes [0] : !fkl.image<?x?x3xui8>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %{{[a-z0-9]+}} = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %{{[a-z0-9]+}} = fkl.crop %{{[a-z0-9]+}}, rects {{\[}}[0, 0, 4, 4], [5, 5, 4, 4]] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 2>
// CHECK-NEXT:    %{{[a-z0-9]+}} = fkl.mul %{{[a-z0-9]+}}, 2.0 : !fkl.image<?x?x3xui8, planes 2>
// CHECK-NEXT:    fkl.write %{{[a-z0-9]+}}, "dst" : !fkl.image<?x?x3xui8, planes 2>
// CHECK-NEXT:  }

// -----

// Per-image chains (same ops, different sources) become one chain over a pointer table.
%a0 = fkl.read "img0" : !fkl.image<?x?x1xf32>
%a1 = fkl.add %a0, 1.0 : !fkl.image<?x?x1xf32>
fkl.split %a1, "dst" planes [0] : !fkl.image<?x?x1xf32>
%b0 = fkl.read "img1" : !fkl.image<?x?x1xf32>
%b1 = fkl.add %b0, 1.0 : !fkl.image<?x?x1xf32>
fkl.split %b1, "dst" planes [1] : !fkl.image<?x?x1xf32>
%c0 = fkl.read "img2" : !fkl.image<?x?x1xf32>
%c1 = fkl.add %c0, 1.0 : !fkl.image<?x?x1xf32>
fkl.split %c1, "dst" planes [2] : !fkl.image<?x?x1xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %a0 = fkl.read ["img0", "img1", "img2"] : !fkl.image<?x?x1xf32, planes 3>
// CHECK-NEXT:    %a1 = fkl.add %a0, 1.0 : !fkl.image<?x?x1xf32, planes 3>
// CHECK-NEXT:    fkl.split %a1, "dst" : !fkl.image<?x?x1xf32, planes 3>
// CHECK-NEXT:  }

// -----

// Different sources AND different rects: a pointer table and one rect per plane.
%a0 = fkl.read "s0" : !fkl.image<?x?x3xui8>
%a1 = fkl.crop %a0, rects [[0, 0, 4, 4]] : !fkl.image<?x?x3xui8>
fkl.write %a1, "dst" planes [0] : !fkl.image<?x?x3xui8>
%b0 = fkl.read "s1" : !fkl.image<?x?x3xui8>
%b1 = fkl.crop %b0, rects [[5, 5, 4, 4]] : !fkl.image<?x?x3xui8>
fkl.write %b1, "dst" planes [1] : !fkl.image<?x?x3xui8>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %a0 = fkl.read ["s0", "s1"] : !fkl.image<?x?x3xui8, planes 2>
// CHECK-NEXT:    %a1 = fkl.crop %a0, rects {{\[}}[0, 0, 4, 4], [5, 5, 4, 4]] : !fkl.image<?x?x3xui8, planes 2>
// CHECK-NEXT:    fkl.write %a1, "dst" : !fkl.image<?x?x3xui8, planes 2>
// CHECK-NEXT:  }

// -----

// Chains that differ in anything else are left alone: a value, an element type, the destination,
// or planes that leave a gap.
%a0 = fkl.read "src" : !fkl.image<?x?x1xf32>
%a1 = fkl.add %a0, 1.0 : !fkl.image<?x?x1xf32>
fkl.write %a1, "v" planes [0] : !fkl.image<?x?x1xf32>
%b0 = fkl.read "src" : !fkl.image<?x?x1xf32>
%b1 = fkl.add %b0, 2.0 : !fkl.image<?x?x1xf32>
fkl.write %b1, "v" planes [1] : !fkl.image<?x?x1xf32>
%c0 = fkl.read "s0" : !fkl.image<?x?x3xui8>
fkl.write %c0, "t" planes [0] : !fkl.image<?x?x3xui8>
%d0 = fkl.read "s1" : !fkl.image<?x?x3xf32>
fkl.write %d0, "t" planes [1] : !fkl.image<?x?x3xf32>
%e0 = fkl.read "s0" : !fkl.image<?x?x3xui8>
fkl.write %e0, "d0" planes [0] : !fkl.image<?x?x3xui8>
%f0 = fkl.read "s1" : !fkl.image<?x?x3xui8>
fkl.write %f0, "d1" planes [0] : !fkl.image<?x?x3xui8>
%g0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%g1 = fkl.crop %g0, rects [[0, 0, 4, 4]] : !fkl.image<?x?x3xui8>
fkl.write %g1, "gap" planes [0] : !fkl.image<?x?x3xui8>
%h0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%h1 = fkl.crop %h0, rects [[5, 5, 4, 4]] : !fkl.image<?x?x3xui8>
fkl.write %h1, "gap" planes [2] : !fkl.image<?x?x3xui8>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %a0 = fkl.read "src" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    %a1 = fkl.add %a0, 1.0 : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    fkl.write %a1, "v" planes [0] : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    %b0 = fkl.read "src" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    %b1 = fkl.add %b0, 2.0 : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    fkl.write %b1, "v" planes [1] : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    %c0 = fkl.read "s0" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    fkl.write %c0, "t" planes [0] : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %d0 = fkl.read "s1" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    fkl.write %d0, "t" planes [1] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %e0 = fkl.read "s0" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    fkl.write %e0, "d0" planes [0] : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %f0 = fkl.read "s1" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    fkl.write %f0, "d1" planes [0] : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %g0 = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %g1 = fkl.crop %g0, rects {{\[}}[0, 0, 4, 4]] : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    fkl.write %g1, "gap" planes [0] : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %h0 = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %h1 = fkl.crop %h0, rects {{\[}}[5, 5, 4, 4]] : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    fkl.write %h1, "gap" planes [2] : !fkl.image<?x?x3xui8>
// CHECK-NEXT:  }

// -----

// Per-image values (`per_plane`, one row each) may differ between the chains: their rows join in plane
// order into one per-plane op.
%b0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%b1 = fkl.crop %b0, rects [[5, 5, 4, 4]] : !fkl.image<?x?x3xf32>
%b2 = fkl.mul %b1, per_plane [3.0, 5.0, 6.0] : !fkl.image<?x?x3xf32>
%b3 = fkl.saturate %b2, per_plane [0.0, 1.0] : !fkl.image<?x?x3xf32>
fkl.write %b3, "dst" planes [1] : !fkl.image<?x?x3xf32>
%a0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%a1 = fkl.crop %a0, rects [[0, 0, 4, 4]] : !fkl.image<?x?x3xf32>
%a2 = fkl.mul %a1, per_plane [1.0, 2.0, 4.0] : !fkl.image<?x?x3xf32>
%a3 = fkl.saturate %a2, per_plane [-1.0, 9.0] : !fkl.image<?x?x3xf32>
fkl.write %a3, "dst" planes [0] : !fkl.image<?x?x3xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %{{[a-z0-9]+}} = fkl.read "src" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %{{[a-z0-9]+}} = fkl.crop %{{[a-z0-9]+}}, rects {{\[}}[0, 0, 4, 4], [5, 5, 4, 4]] : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:    %{{[a-z0-9]+}} = fkl.mul %{{[a-z0-9]+}}, per_plane [1.0, 2.0, 4.0, 3.0, 5.0, 6.0] : !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:    %{{[a-z0-9]+}} = fkl.saturate %{{[a-z0-9]+}}, per_plane [-1.0, 9.0, 0.0, 1.0] : !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:    fkl.write %{{[a-z0-9]+}}, "dst" : !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:  }

// -----

// A Crop list on a batch: each rect's chain crops every image of the batch (planes 2) and writes its own plane,
// its per-plane op holding a row for each of its planes (the frontend repeats the chain's row); the merged op
// takes from each chain the row of the plane it writes.
%b0 = fkl.read "src" : !fkl.image<?x?x1xf32, planes 2>
%b1 = fkl.crop %b0, rects [[5, 5, 4, 4]] : !fkl.image<?x?x1xf32, planes 2>
%b2 = fkl.mul %b1, per_plane [3.0, 3.0] : !fkl.image<?x?x1xf32, planes 2>
fkl.write %b2, "dst" planes [1] : !fkl.image<?x?x1xf32, planes 2>
%a0 = fkl.read "src" : !fkl.image<?x?x1xf32, planes 2>
%a1 = fkl.crop %a0, rects [[0, 0, 4, 4]] : !fkl.image<?x?x1xf32, planes 2>
%a2 = fkl.mul %a1, per_plane [1.0, 2.0] : !fkl.image<?x?x1xf32, planes 2>
fkl.write %a2, "dst" planes [0] : !fkl.image<?x?x1xf32, planes 2>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %{{[a-z0-9]+}} = fkl.read "src" : !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:    %{{[a-z0-9]+}} = fkl.crop %{{[a-z0-9]+}}, rects {{\[}}[0, 0, 4, 4], [5, 5, 4, 4]] : !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:    %{{[a-z0-9]+}} = fkl.mul %{{[a-z0-9]+}}, per_plane [1.0, 3.0] : !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:    fkl.write %{{[a-z0-9]+}}, "dst" : !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:  }
