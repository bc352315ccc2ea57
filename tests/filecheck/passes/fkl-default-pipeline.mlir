// RUN: fklir-opt %s --split-input-file --verify-diagnostics -p fkl-default-pipeline | filecheck %s

// The canonical ROI chain (SPEC §4) as the frontend emits it, result types unknown: after the
// default pipeline it is exactly ONE fkl.kernel: every type is inferred, the crop and the resize
// are folded into the read's sample region, and every value sits in the parameter block.
%img = fkl.read "src" : !fkl.image<?x?x3xui8>
%roi = fkl.crop %img, rects [[30, 12, 60, 40], [40, 12, 60, 40], [53, 27, 60, 40]] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
%rs = fkl.resize %roi, size [16, 16], linear : !fkl.image<?x?x?xnone>
%m = fkl.mul %rs, [2.0, 2.0, 2.0] : !fkl.image<?x?x?xnone>
%s = fkl.sub %m, [1.0, 2.0, 3.0] : !fkl.image<?x?x?xnone>
%u8 = fkl.saturate_cast %s to ui8 : !fkl.image<?x?x?xnone>
fkl.write %u8, "dst" : !fkl.image<?x?x?xnone>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<crop1: rect x 3, resize2: i32 x 2, mul4: f32 x 3, sub5: f32 x 3>
// CHECK-SAME:      values {crop1 = [30, 12, 60, 40, 40, 12, 60, 40, 53, 27, 60, 40], resize2 = [16, 16],
// CHECK-SAME:        mul4 = [2.0, 2.0, 2.0],
// CHECK-SAME:        sub5 = [1.0, 2.0, 3.0]} {
// CHECK-NEXT:      %img = fkl.read "src" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32, planes 3> sample {
// CHECK-NEXT:      ^bb0(%src: !fkl.image<?x?x3xui8>):
// CHECK-NEXT:        %roi = fkl.crop %src, param "crop1" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 3>
// CHECK-NEXT:        %rs = fkl.resize %roi, param "resize2", linear : !fkl.image<?x?x3xui8, planes 3> -> !fkl.image<?x?x3xf32, planes 3>
// CHECK-NEXT:        fkl.yield %rs : !fkl.image<?x?x3xf32, planes 3>
// CHECK-NEXT:      }
// CHECK-NEXT:      %m = fkl.mul %img, param "mul4" : !fkl.image<?x?x3xf32, planes 3>
// CHECK-NEXT:      %s = fkl.sub %m, param "sub5" : !fkl.image<?x?x3xf32, planes 3>
// CHECK-NEXT:      %u8 = fkl.saturate_cast %s to ui8 : !fkl.image<?x?x3xf32, planes 3> -> !fkl.image<?x?x3xui8, planes 3>
// CHECK-NEXT:      fkl.write %u8, "dst" : !fkl.image<?x?x3xui8, planes 3>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NOT:   fkl.kernel
// CHECK:       {{//}} -----

// -----

// Two chains: one kernel per launch, so two kernels.
%a0 = fkl.read "a" : !fkl.image<?x?x1xf32>
%a1 = fkl.max %a0, 0.0 : !fkl.image<?x?x1xf32> -> !fkl.image<?x?x?xnone>
fkl.split %a1, "a_out" : !fkl.image<?x?x?xnone>
%b0 = fkl.read "b" : !fkl.image<?x?x4xi16>
%b1 = fkl.resize %b0, size [3, 3], nearest : !fkl.image<?x?x4xi16> -> !fkl.image<?x?x?xnone>
fkl.write %b1, "b_out" : !fkl.image<?x?x?xnone>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<max1: f32 x 1> values {max1 = [0.0]} {
// CHECK-NEXT:      %a0 = fkl.read "a" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      %a1 = fkl.max %a0, param "max1" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      fkl.split %a1, "a_out" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    fkl.kernel @k1 params !fkl.params<resize1: i32 x 2> values {resize1 = [3, 3]} {
// CHECK-NEXT:      %b0 = fkl.read "b" : !fkl.image<?x?x4xi16> sample {
// CHECK-NEXT:      ^bb0(%src: !fkl.image<?x?x4xi16>):
// CHECK-NEXT:        %b1 = fkl.resize %src, param "resize1", nearest : !fkl.image<?x?x4xi16>
// CHECK-NEXT:        fkl.yield %b1 : !fkl.image<?x?x4xi16>
// CHECK-NEXT:      }
// CHECK-NEXT:      fkl.write %b0, "b_out" : !fkl.image<?x?x4xi16>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NOT:   fkl.kernel
// CHECK:       {{//}} -----

// -----

// SPEC §8's background subtraction: one kernel, two reads, two writes; Threshold's value hoisted.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.cast %0 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
%2 = fkl.read "in1" : !fkl.image<?x?x3xui8>
%3 = fkl.cast %2 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
%4 = fkl.join absdiff %1, %3 : !fkl.image<?x?x?xnone>
fkl.write %4, "out0" : !fkl.image<?x?x?xnone>
%5 = fkl.vector_reduce %4, max : !fkl.image<?x?x?xnone>
%6 = fkl.threshold %5, 25.0 : !fkl.image<?x?x?xnone>
%7 = fkl.saturate_cast %6 to ui8 : !fkl.image<?x?x?xnone>
fkl.write %7, "out1" : !fkl.image<?x?x?xnone>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<threshold7: f32 x 1> values {threshold7 = [25.0]} {
// CHECK-NEXT:      %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      %1 = fkl.cast %0 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:      %2 = fkl.read "in1" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      %3 = fkl.cast %2 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:      %4 = fkl.join absdiff %1, %3 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:      fkl.write %4, "out0" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:      %5 = fkl.vector_reduce %4, max : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x1xf32>
// CHECK-NEXT:      %6 = fkl.threshold %5, param "threshold7" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      %7 = fkl.saturate_cast %6 to ui8 : !fkl.image<?x?x1xf32> -> !fkl.image<?x?x1xui8>
// CHECK-NEXT:      fkl.write %7, "out1" : !fkl.image<?x?x1xui8>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// -----

// The pipeline stops at the first broken rule: a structural error (validate) ...
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.mul %0, 2.0 : !fkl.image<?x?x3xf32>
%2 = fkl.add %1, 1.0 : !fkl.image<?x?x3xf32>
fkl.write %1, "b" : !fkl.image<?x?x3xf32>

// CHECK:      fkl-default-pipeline.mlir:[[# @LINE - 3]]:1: error: 'fkl.add' result is never used: every value of a graph must reach a write
// CHECK-NEXT: {{//}} -----

// -----

// ... or a type error (infer-types): 0.5 on a chain that turns out to be ui8.
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.saturate_cast %0 to ui8 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x?xnone>
%2 = fkl.mul %1, 0.5 : !fkl.image<?x?x?xnone>
fkl.write %2, "dst" : !fkl.image<?x?x?xnone>

// CHECK:      fkl-default-pipeline.mlir:[[# @LINE - 3]]:1: error: 'fkl.mul' value 0.5 is not representable in the chain's element type uint8; Cast to float first
// CHECK-NOT:  {{.}}

