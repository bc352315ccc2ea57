// RUN: fklir-opt %s --split-input-file --verify-diagnostics -p fkl-hoist-params | filecheck %s

// Every inline value moves into the kernel's parameter block. Slot names are `<op><index in the
// kernel body>`; kinds follow the chain's element type at that op (ui8 for an add on a ui8 chain,
// i16 after a cast to i16, f32 after a cast to f32), `rect` for crop rects and `i32` for resize
// sizes; a scalar is broadcast to one value per channel.
fkl.kernel @k0 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  %1 = fkl.crop %0, rects [[30, 12, 60, 40], [40, 12, 60, 40]] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 2>
  %2 = fkl.resize %1, size [16, 8], nearest : !fkl.image<?x?x3xui8, planes 2>
  %3 = fkl.add %2, 7 : !fkl.image<?x?x3xui8, planes 2>
  %4 = fkl.cast %3 to i16 : !fkl.image<?x?x3xui8, planes 2> -> !fkl.image<?x?x3xi16, planes 2>
  %5 = fkl.sub %4, [-1, 2, -3] : !fkl.image<?x?x3xi16, planes 2>
  %6 = fkl.cast %5 to f32 : !fkl.image<?x?x3xi16, planes 2> -> !fkl.image<?x?x3xf32, planes 2>
  %7 = fkl.div %6, 2.5 : !fkl.image<?x?x3xf32, planes 2>
  fkl.write %7, "dst" : !fkl.image<?x?x3xf32, planes 2>
}

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<crop1: rect x 2, resize2: i32 x 2, add3: ui8 x 3, sub5: i16 x 3, div7: f32 x 3>
// CHECK-SAME:      values {crop1 = [30, 12, 60, 40, 40, 12, 60, 40], resize2 = [16, 8],
// CHECK-SAME:        add3 = [7.0, 7.0, 7.0],
// CHECK-SAME:        sub5 = [-1.0, 2.0, -3.0],
// CHECK-SAME:        div7 = [2.5, 2.5, 2.5]} {
// CHECK-NEXT:      %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      %1 = fkl.crop %0, param "crop1" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 2>
// CHECK-NEXT:      %2 = fkl.resize %1, param "resize2", nearest : !fkl.image<?x?x3xui8, planes 2>
// CHECK-NEXT:      %3 = fkl.add %2, param "add3" : !fkl.image<?x?x3xui8, planes 2>
// CHECK-NEXT:      %4 = fkl.cast %3 to i16 : !fkl.image<?x?x3xui8, planes 2> -> !fkl.image<?x?x3xi16, planes 2>
// CHECK-NEXT:      %5 = fkl.sub %4, param "sub5" : !fkl.image<?x?x3xi16, planes 2>
// CHECK-NEXT:      %6 = fkl.cast %5 to f32 : !fkl.image<?x?x3xi16, planes 2> -> !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:      %7 = fkl.div %6, param "div7" : !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:      fkl.write %7, "dst" : !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// -----

// Slot kinds for the other element types (one channel, so the count is 1), a 4-channel broadcast,
// one crop rect, and a linear resize.
fkl.kernel @kinds params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x1xi8>
  %1 = fkl.crop %0, rects [[1, 2, 3, 4]] : !fkl.image<?x?x1xi8>
  %2 = fkl.resize %1, size [5, 6], linear : !fkl.image<?x?x1xi8> -> !fkl.image<?x?x1xf32>
  %3 = fkl.cast %2 to i8 : !fkl.image<?x?x1xf32> -> !fkl.image<?x?x1xi8>
  %4 = fkl.max %3, -3 : !fkl.image<?x?x1xi8>
  %5 = fkl.cast %4 to ui16 : !fkl.image<?x?x1xi8> -> !fkl.image<?x?x1xui16>
  %6 = fkl.min %5, 65535 : !fkl.image<?x?x1xui16>
  %7 = fkl.cast %6 to i32 : !fkl.image<?x?x1xui16> -> !fkl.image<?x?x1xi32>
  %8 = fkl.mul %7, -4 : !fkl.image<?x?x1xi32>
  %9 = fkl.cast %8 to ui32 : !fkl.image<?x?x1xi32> -> !fkl.image<?x?x1xui32>
  %10 = fkl.add %9, 9 : !fkl.image<?x?x1xui32>
  %11 = fkl.cast %10 to f16 : !fkl.image<?x?x1xui32> -> !fkl.image<?x?x1xf16>
  %12 = fkl.mul %11, 0.5 : !fkl.image<?x?x1xf16>
  %13 = fkl.cast %12 to bf16 : !fkl.image<?x?x1xf16> -> !fkl.image<?x?x1xbf16>
  %14 = fkl.sub %13, 0.25 : !fkl.image<?x?x1xbf16>
  %15 = fkl.cast %14 to f64 : !fkl.image<?x?x1xbf16> -> !fkl.image<?x?x1xf64>
  %16 = fkl.div %15, 3.0 : !fkl.image<?x?x1xf64>
  %17 = fkl.cast %16 to i1 : !fkl.image<?x?x1xf64> -> !fkl.image<?x?x1xi1>
  %18 = fkl.max %17, 1 : !fkl.image<?x?x1xi1>
  %19 = fkl.cast %18 to f32 : !fkl.image<?x?x1xi1> -> !fkl.image<?x?x1xf32>
  fkl.write %19, "dst" : !fkl.image<?x?x1xf32>
}
fkl.kernel @four params !fkl.params<> {
  %20 = fkl.read "src" : !fkl.image<?x?x4xf32>
  %21 = fkl.min %20, 1.5 : !fkl.image<?x?x4xf32>
  fkl.write %21, "dst" : !fkl.image<?x?x4xf32>
}

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @kinds params !fkl.params<crop1: rect x 1, resize2: i32 x 2, max4: i8 x 1, min6: ui16 x 1, mul8: i32 x 1, add10: ui32 x 1, mul12: f16 x 1, sub14: bf16 x 1, div16: f64 x 1, max18: i1 x 1>
// CHECK-SAME:      values {crop1 = [1, 2, 3, 4], resize2 = [5, 6],
// CHECK-SAME:        max4 = [-3.0], min6 = [65535.0], mul8 = [-4.0],
// CHECK-SAME:        add10 = [9.0], mul12 = [0.5], sub14 = [0.25],
// CHECK-SAME:        div16 = [3.0], max18 = [1.0]} {
// CHECK:           %2 = fkl.resize %1, param "resize2", linear : !fkl.image<?x?x1xi8> -> !fkl.image<?x?x1xf32>
// CHECK:         fkl.kernel @four params !fkl.params<min1: f32 x 4> values {min1 = [1.5, 1.5, 1.5, 1.5]} {
// CHECK-NEXT:      %0 = fkl.read "src" : !fkl.image<?x?x4xf32>
// CHECK-NEXT:      %1 = fkl.min %0, param "min1" : !fkl.image<?x?x4xf32>

// -----

// Slots that exist already are kept, with their values; only the inline values are added. Running
// the pass again changes nothing. Ops outside a kernel are not touched.
fkl.kernel @k0 params !fkl.params<mul1: f64 x 1> values {mul1 = [3.0]} {
  %0 = fkl.read "src" : !fkl.image<?x?x1xf64>
  %1 = fkl.mul %0, param "mul1" : !fkl.image<?x?x1xf64>
  %2 = fkl.max %1, 0.0 : !fkl.image<?x?x1xf64>
  fkl.write %2, "dst" : !fkl.image<?x?x1xf64>
}
%t0 = fkl.read "top" : !fkl.image<?x?x1xf64>
%t1 = fkl.add %t0, 1.0 : !fkl.image<?x?x1xf64>
fkl.write %t1, "top_out" : !fkl.image<?x?x1xf64>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<mul1: f64 x 1, max2: f64 x 1> values {mul1 = [3.0], max2 = [0.0]} {
// CHECK-NEXT:      %0 = fkl.read "src" : !fkl.image<?x?x1xf64>
// CHECK-NEXT:      %1 = fkl.mul %0, param "mul1" : !fkl.image<?x?x1xf64>
// CHECK-NEXT:      %2 = fkl.max %1, param "max2" : !fkl.image<?x?x1xf64>
// CHECK-NEXT:      fkl.write %2, "dst" : !fkl.image<?x?x1xf64>
// CHECK-NEXT:    }
// CHECK-NEXT:    %t0 = fkl.read "top" : !fkl.image<?x?x1xf64>
// CHECK-NEXT:    %t1 = fkl.add %t0, 1.0 : !fkl.image<?x?x1xf64>
// CHECK-NEXT:    fkl.write %t1, "top_out" : !fkl.image<?x?x1xf64>
// CHECK-NEXT:  }

// -----

// Hoisting needs the inferred types (the slot kind and count come from them).
fkl.kernel @k0 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  %1 = fkl.cast %0 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
  %2 = fkl.mul %1, 2.0 : !fkl.image<?x?x?xnone>
  fkl.write %2, "dst" : !fkl.image<?x?x?xnone>
}

// CHECK:      error: 'fkl.mul' must have inferred types before hoisting (run fkl-infer-types)
// CHECK-NOT:  {{.}}
