// RUN: fklir-opt %s --split-input-file --verify-diagnostics -p fkl-batch-divergent | filecheck %s

// Chains that fill different planes of one output go into ONE kernel; plane z runs chain
// planemap[z] (a parameter slot, so a new map reuses the binary) and the writes lose their plane
// lists.
%a0 = fkl.read "src" : !fkl.image<?x?x1xf32>
%a1 = fkl.add %a0, 1.0 : !fkl.image<?x?x1xf32>
fkl.write %a1, "dst" planes [0, 2] : !fkl.image<?x?x1xf32>
%b0 = fkl.read "src" : !fkl.image<?x?x1xf32>
%b1 = fkl.mul %b0, 2.0 : !fkl.image<?x?x1xf32>
fkl.write %b1, "dst" planes [1] : !fkl.image<?x?x1xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<planemap: i32 x 3> values {planemap = [0, 1, 0]} {
// CHECK-NEXT:      %a0 = fkl.read "src" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      %a1 = fkl.add %a0, 1.0 : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      fkl.write %a1, "dst" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      %b0 = fkl.read "src" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      %b1 = fkl.mul %b0, 2.0 : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      fkl.write %b1, "dst" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NOT:   fkl.kernel
// CHECK:       {{//}} -----

// -----

// Chains without plane lists are not this pass's business.
%a0 = fkl.read "src" : !fkl.image<?x?x1xf32>
fkl.write %a0, "dst" : !fkl.image<?x?x1xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %a0 = fkl.read "src" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    fkl.write %a0, "dst" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:  }

// -----

// A plane written by two chains.
%a0 = fkl.read "src" : !fkl.image<?x?x1xf32>
fkl.write %a0, "dst" planes [0, 1] : !fkl.image<?x?x1xf32>
%b0 = fkl.read "src" : !fkl.image<?x?x1xf32>
fkl.write %b0, "dst" planes [1] : !fkl.image<?x?x1xf32>
// CHECK: fkl-batch-divergent.mlir:[[# @LINE - 1]]:1: error: 'fkl.write' plane 1 of "dst" is written twice

// -----

// A plane written by no chain.
%a0 = fkl.read "src" : !fkl.image<?x?x1xf32>
fkl.write %a0, "dst" planes [0] : !fkl.image<?x?x1xf32>
%b0 = fkl.read "src" : !fkl.image<?x?x1xf32>
fkl.split %b0, "dst" planes [2] : !fkl.image<?x?x1xf32>
// CHECK: fkl-batch-divergent.mlir:[[# @LINE - 3]]:1: error: 'fkl.write' planes of "dst" leave gaps: [0, 2]
