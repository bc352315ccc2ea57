// RUN: fklir-opt %s --split-input-file --verify-diagnostics -p fkl-validate-chain | filecheck %s

// A valid chain passes unchanged: read -> crop -> resize -> arithmetic -> cast -> write.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.crop %0, rects [[1, 2, 8, 8]] : !fkl.image<?x?x3xui8>
%2 = fkl.resize %1, size [4, 4], nearest : !fkl.image<?x?x3xui8>
%3 = fkl.add %2, 1 : !fkl.image<?x?x3xui8>
%4 = fkl.cast %3 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
fkl.write %4, "dst" : !fkl.image<?x?x3xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %1 = fkl.crop %0, rects {{\[}}[1, 2, 8, 8]] : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %2 = fkl.resize %1, size [4, 4], nearest : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %3 = fkl.add %2, 1.0 : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %4 = fkl.cast %3 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:    fkl.write %4, "dst" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:  }
// CHECK-EMPTY:
// CHECK-NEXT:  {{//}} -----

// -----

// Two independent chains, placeholder types (validation does not need them), a planar write, and
// a chain already outlined into a kernel: all valid.
%0 = fkl.read "a" : !fkl.image<?x?x1xf32>
%1 = fkl.mul %0, 2.0 : !fkl.image<?x?x1xf32> -> !fkl.image<?x?x?xnone>
fkl.split %1, "a_out" : !fkl.image<?x?x?xnone>
%2 = fkl.read "b" : !fkl.image<?x?x3xui8>
fkl.write %2, "b_out" : !fkl.image<?x?x3xui8>
fkl.kernel @k0 params !fkl.params<crop1: rect x 1> {
  %3 = fkl.read "c" : !fkl.image<?x?x3xui8>
  %4 = fkl.crop %3, param "crop1" : !fkl.image<?x?x3xui8>
  fkl.write %4, "c_out" : !fkl.image<?x?x3xui8>
}

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "a" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    %1 = fkl.mul %0, 2.0 : !fkl.image<?x?x1xf32> -> !fkl.image<?x?x?xnone>
// CHECK-NEXT:    fkl.split %1, "a_out" : !fkl.image<?x?x?xnone>
// CHECK-NEXT:    %2 = fkl.read "b" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    fkl.write %2, "b_out" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<crop1: rect x 1> {
// CHECK-NEXT:      %3 = fkl.read "c" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      %4 = fkl.crop %3, param "crop1" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      fkl.write %4, "c_out" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-EMPTY:
// CHECK-NEXT:  {{//}} -----

// -----

// Geometry after arithmetic: a crop cannot fold into the read once a value was computed.
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.mul %0, 2.0 : !fkl.image<?x?x3xf32>
%2 = fkl.crop %1, rects [[1, 2, 8, 8]] : !fkl.image<?x?x3xf32>
// CHECK:      fkl-validate-chain.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' must come right after the read or another geometry op (it follows 'fkl.mul'): geometry folds into the read
fkl.write %2, "dst" : !fkl.image<?x?x3xf32>

// CHECK-NEXT: {{//}} -----

// -----

// Geometry after a cast, inside a kernel.
fkl.kernel @k0 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  %1 = fkl.cast %0 to f16 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x3xf16>
  %2 = fkl.resize %1, size [4, 4], linear : !fkl.image<?x?x3xf16> -> !fkl.image<?x?x3xf32>
// CHECK:      fkl-validate-chain.mlir:[[# @LINE - 1]]:3: error: 'fkl.resize' must come right after the read or another geometry op (it follows 'fkl.cast'): geometry folds into the read
  fkl.split %2, "dst" : !fkl.image<?x?x3xf32>
}

// CHECK-NEXT: {{//}} -----

// -----

// A dead end: the product is never written.
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.mul %0, 2.0 : !fkl.image<?x?x3xf32>
// CHECK:      fkl-validate-chain.mlir:[[# @LINE - 1]]:1: error: 'fkl.mul' result is never written: a chain must end with fkl.write or fkl.split

// CHECK-NEXT: {{//}} -----

// -----

// A read that nothing consumes is a dead end too.
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
// CHECK:      fkl-validate-chain.mlir:[[# @LINE - 1]]:1: error: 'fkl.read' result is never written: a chain must end with fkl.write or fkl.split

// CHECK-NEXT: {{//}} -----

// -----

// Fan-out: one value written twice is a graph of two outputs (SPEC §8's MidWrite): valid, unchanged.
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.sub %0, 2.0 : !fkl.image<?x?x3xf32>
fkl.write %1, "a" : !fkl.image<?x?x3xf32>
fkl.write %1, "b" : !fkl.image<?x?x3xf32>
// CHECK-LABEL: builtin.module {
// CHECK:         fkl.write %1, "a" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    fkl.write %1, "b" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:  }
// CHECK-EMPTY:
// CHECK-NEXT: {{//}} -----

// -----

// Fan-out inside a kernel, where the second user is itself a dead end.
fkl.kernel @k0 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  %1 = fkl.crop %0, rects [[0, 0, 2, 2]] : !fkl.image<?x?x3xf32>
  %2 = fkl.add %1, 2.0 : !fkl.image<?x?x3xf32>
  %3 = fkl.max %1, 0.0 : !fkl.image<?x?x3xf32>
// CHECK:      fkl-validate-chain.mlir:[[# @LINE - 1]]:3: error: 'fkl.max' result is never used: every value of a graph must reach a write
  fkl.write %2, "dst" : !fkl.image<?x?x3xf32>
}

// -----

// A DAG (SPEC §8): two reads joined, the join forked into two writes. Valid, unchanged.
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.read "in1" : !fkl.image<?x?x3xf32>
%2 = fkl.resize %1, size [4, 4], linear : !fkl.image<?x?x3xf32>
%3 = fkl.join absdiff %0, %2 : !fkl.image<?x?x3xf32>
fkl.write %3, "out0" : !fkl.image<?x?x3xf32>
%4 = fkl.threshold %3, 25.0 : !fkl.image<?x?x3xf32>
fkl.write %4, "out1" : !fkl.image<?x?x3xf32>

// CHECK-LABEL: builtin.module {
// CHECK:         %3 = fkl.join absdiff %0, %2 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    fkl.write %3, "out0" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %4 = fkl.threshold %3, 25.0 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    fkl.write %4, "out1" : !fkl.image<?x?x3xf32>

// -----

// A DAG whose value forks before geometry: the geometry could not fold into the read.
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.resize %0, size [4, 4], linear : !fkl.image<?x?x3xf32>
// CHECK: fkl-validate-chain.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' reads a value that other ops use too: geometry folds into its read, so a branch that needs other geometry reads the input again (fkl.Input)
%2 = fkl.join add %0, %1 : !fkl.image<?x?x3xf32>
fkl.write %2, "out0" : !fkl.image<?x?x3xf32>

// -----

// A DAG value that reaches no write.
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.read "in1" : !fkl.image<?x?x3xf32>
%2 = fkl.join add %0, %1 : !fkl.image<?x?x3xf32>
%3 = fkl.join sub %0, %1 : !fkl.image<?x?x3xf32>
// CHECK: fkl-validate-chain.mlir:[[# @LINE - 1]]:1: error: 'fkl.join' result is never used: every value of a graph must reach a write
fkl.write %2, "out0" : !fkl.image<?x?x3xf32>

// CHECK-NOT:  {{.}}
