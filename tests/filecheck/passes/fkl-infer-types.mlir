// RUN: fklir-opt %s --split-input-file --verify-diagnostics -p fkl-infer-types | filecheck %s

// Placeholder result types (`?x?x?xnone`) are filled from the read: u8 -> cast f32 -> mul ->
// saturate_cast back to u8.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.cast %0 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
%2 = fkl.mul %1, [1.0, 2.0, 3.0] : !fkl.image<?x?x?xnone>
%3 = fkl.saturate_cast %2 to ui8 : !fkl.image<?x?x?xnone>
fkl.write %3, "dst" : !fkl.image<?x?x?xnone>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %1 = fkl.cast %0 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %2 = fkl.mul %1, [1.0, 2.0, 3.0] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %3 = fkl.saturate_cast %2 to ui8 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x3xui8>
// CHECK-NEXT:    fkl.write %3, "dst" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:  }

// -----

// A crop with 3 rects gives 3 planes; resize linear gives f32 with the same channels and planes.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.crop %0, rects [[0, 0, 4, 4], [1, 1, 4, 4], [2, 2, 4, 4]] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
%2 = fkl.resize %1, size [2, 2], linear : !fkl.image<?x?x?xnone>
fkl.write %2, "dst" : !fkl.image<?x?x?xnone>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %1 = fkl.crop %0, rects {{\[}}[0, 0, 4, 4], [1, 1, 4, 4], [2, 2, 4, 4]] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 3>
// CHECK-NEXT:    %2 = fkl.resize %1, size [2, 2], linear : !fkl.image<?x?x3xui8, planes 3> -> !fkl.image<?x?x3xf32, planes 3>
// CHECK-NEXT:    fkl.write %2, "dst" : !fkl.image<?x?x3xf32, planes 3>
// CHECK-NEXT:  }

// -----

// Resize nearest keeps ui8; a single rect keeps the plane count; a 2-plane input with 2 rects
// keeps 2 planes (one rect per plane); a hoisted crop keeps the planes already written.
%0 = fkl.read "src" : !fkl.image<?x?x1xui8, planes 2>
%1 = fkl.resize %0, size [2, 2], nearest : !fkl.image<?x?x1xui8, planes 2> -> !fkl.image<?x?x?xnone>
%2 = fkl.crop %1, rects [[0, 0, 1, 1]] : !fkl.image<?x?x?xnone>
%3 = fkl.crop %2, rects [[0, 0, 1, 1], [1, 1, 1, 1]] : !fkl.image<?x?x?xnone>
fkl.write %3, "dst" : !fkl.image<?x?x?xnone>
fkl.kernel @k0 params !fkl.params<crop1: rect x 4> {
  %4 = fkl.read "src" : !fkl.image<?x?x2xi16>
  %5 = fkl.crop %4, param "crop1" : !fkl.image<?x?x2xi16> -> !fkl.image<?x?x2xi16, planes 4>
  %6 = fkl.sub %5, [-5, 5] : !fkl.image<?x?x2xi16, planes 4> -> !fkl.image<?x?x?xnone>
  fkl.write %6, "dst" : !fkl.image<?x?x?xnone>
}

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x1xui8, planes 2>
// CHECK-NEXT:    %1 = fkl.resize %0, size [2, 2], nearest : !fkl.image<?x?x1xui8, planes 2>
// CHECK-NEXT:    %2 = fkl.crop %1, rects {{\[}}[0, 0, 1, 1]] : !fkl.image<?x?x1xui8, planes 2>
// CHECK-NEXT:    %3 = fkl.crop %2, rects {{\[}}[0, 0, 1, 1], [1, 1, 1, 1]] : !fkl.image<?x?x1xui8, planes 2>
// CHECK-NEXT:    fkl.write %3, "dst" : !fkl.image<?x?x1xui8, planes 2>
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<crop1: rect x 4> {
// CHECK-NEXT:      %4 = fkl.read "src" : !fkl.image<?x?x2xi16>
// CHECK-NEXT:      %5 = fkl.crop %4, param "crop1" : !fkl.image<?x?x2xi16> -> !fkl.image<?x?x2xi16, planes 4>
// CHECK-NEXT:      %6 = fkl.sub %5, [-5.0, 5.0] : !fkl.image<?x?x2xi16, planes 4>
// CHECK-NEXT:      fkl.write %6, "dst" : !fkl.image<?x?x2xi16, planes 4>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// -----

// Every element type a cast can reach, through a chain of casts; planar layout and `planes ?` carry
// through.
%0 = fkl.read "src" : !fkl.image<?x?x4xf64, planes ?, planar>
%1 = fkl.cast %0 to bf16 : !fkl.image<?x?x4xf64, planes ?, planar> -> !fkl.image<?x?x?xnone>
%2 = fkl.cast %1 to f16 : !fkl.image<?x?x?xnone>
%3 = fkl.cast %2 to ui32 : !fkl.image<?x?x?xnone>
%4 = fkl.cast %3 to i32 : !fkl.image<?x?x?xnone>
%5 = fkl.cast %4 to i16 : !fkl.image<?x?x?xnone>
%6 = fkl.cast %5 to ui16 : !fkl.image<?x?x?xnone>
%7 = fkl.cast %6 to i8 : !fkl.image<?x?x?xnone>
%8 = fkl.cast %7 to i1 : !fkl.image<?x?x?xnone>
%9 = fkl.saturate_cast %8 to ui8 : !fkl.image<?x?x?xnone>
fkl.split %9, "dst" : !fkl.image<?x?x?xnone>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x4xf64, planes ?, planar>
// CHECK-NEXT:    %1 = fkl.cast %0 to bf16 : !fkl.image<?x?x4xf64, planes ?, planar> -> !fkl.image<?x?x4xbf16, planes ?, planar>
// CHECK-NEXT:    %2 = fkl.cast %1 to f16 : !fkl.image<?x?x4xbf16, planes ?, planar> -> !fkl.image<?x?x4xf16, planes ?, planar>
// CHECK-NEXT:    %3 = fkl.cast %2 to ui32 : !fkl.image<?x?x4xf16, planes ?, planar> -> !fkl.image<?x?x4xui32, planes ?, planar>
// CHECK-NEXT:    %4 = fkl.cast %3 to i32 : !fkl.image<?x?x4xui32, planes ?, planar> -> !fkl.image<?x?x4xi32, planes ?, planar>
// CHECK-NEXT:    %5 = fkl.cast %4 to i16 : !fkl.image<?x?x4xi32, planes ?, planar> -> !fkl.image<?x?x4xi16, planes ?, planar>
// CHECK-NEXT:    %6 = fkl.cast %5 to ui16 : !fkl.image<?x?x4xi16, planes ?, planar> -> !fkl.image<?x?x4xui16, planes ?, planar>
// CHECK-NEXT:    %7 = fkl.cast %6 to i8 : !fkl.image<?x?x4xui16, planes ?, planar> -> !fkl.image<?x?x4xi8, planes ?, planar>
// CHECK-NEXT:    %8 = fkl.cast %7 to i1 : !fkl.image<?x?x4xi8, planes ?, planar> -> !fkl.image<?x?x4xi1, planes ?, planar>
// CHECK-NEXT:    %9 = fkl.saturate_cast %8 to ui8 : !fkl.image<?x?x4xi1, planes ?, planar> -> !fkl.image<?x?x4xui8, planes ?, planar>
// CHECK-NEXT:    fkl.split %9, "dst" : !fkl.image<?x?x4xui8, planes ?, planar>
// CHECK-NEXT:  }

// -----

// Arity error: 2 values once the channel count (3) is known.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.cast %0 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
%2 = fkl.mul %1, [1.0, 2.0] : !fkl.image<?x?x?xnone>
fkl.write %2, "dst" : !fkl.image<?x?x?xnone>

// CHECK:      error: 'fkl.mul' has 2 values but the chain has 3 channels (give one value or one per channel)
// CHECK-NEXT: {{//}} -----

// -----

// Representability error: 0.5 on what turns out to be a ui8 chain.
%0 = fkl.read "src" : !fkl.image<?x?x1xf32>
%1 = fkl.cast %0 to ui8 : !fkl.image<?x?x1xf32> -> !fkl.image<?x?x?xnone>
%2 = fkl.div %1, 0.5 : !fkl.image<?x?x?xnone>
fkl.write %2, "dst" : !fkl.image<?x?x?xnone>

// CHECK:      error: 'fkl.div' value 0.5 is not representable in the chain's element type uint8; Cast to float first
// CHECK-NEXT: {{//}} -----

// -----

// 3 rects for a 2-plane input.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8, planes 2>
%1 = fkl.crop %0, rects [[0, 0, 4, 4], [1, 1, 4, 4], [2, 2, 4, 4]] : !fkl.image<?x?x3xui8, planes 2> -> !fkl.image<?x?x?xnone>
fkl.write %1, "dst" : !fkl.image<?x?x?xnone>

// CHECK:      error: 'fkl.crop' has 3 rects for an input of 2 planes (give 1, or one per plane)
// CHECK-NEXT: {{//}} -----

// -----

// A result type already written must agree with the inferred one.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.crop %0, rects [[0, 0, 4, 4], [1, 1, 4, 4]] : !fkl.image<?x?x3xui8>
fkl.write %1, "dst" : !fkl.image<?x?x3xui8>

// CHECK:      error: 'fkl.crop' result type !fkl.image<?x?x3xui8> does not match the inferred !fkl.image<?x?x3xui8, planes 2>
// CHECK-NOT:  {{.}}
