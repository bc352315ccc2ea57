// RUN: FKL_ROUNDTRIP
// RUN: FKL_GENERIC_ROUNDTRIP --check-prefix=CHECK
// RUN: fklir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Every op and every form of !fkl.image / !fkl.params, printed, parsed again and printed again.
// The second RUN goes through the generic form (`"fkl.mul"(%x) <{value = ...}>`) and back, so the
// same CHECK lines must hold; the GENERIC lines pin the property names of the generic form.
// NaN, infinities and integers of more than 6 digits live in special-floats*.mlir: the generic
// form cannot carry them yet.

// CHECK-LABEL: builtin.module {

// Every element type, 1 to 4 channels, static and dynamic sizes, planes N / planes ?, planar.
%u8 = fkl.read "u8" : !fkl.image<?x?x1xui8>
%i8 = fkl.read "i8" : !fkl.image<?x?x2xi8>
%u16 = fkl.read "u16" : !fkl.image<?x?x3xui16>
%i16 = fkl.read "i16" : !fkl.image<?x?x4xi16>
%i32 = fkl.read "i32" : !fkl.image<480x640x3xi32>
%u32 = fkl.read "u32" : !fkl.image<1x?x1xui32>
%f16 = fkl.read "f16" : !fkl.image<?x?x3xf16, planes 4>
%bf16 = fkl.read "bf16" : !fkl.image<?x?x3xbf16, planes ?>
%f32 = fkl.read "f32" : !fkl.image<?x?x3xf32, planar>
%f64 = fkl.read "f64" : !fkl.image<?x?x3xf64, planes 64, planar>
%b = fkl.read "b" : !fkl.image<?x?x1xi1>
// `planes 1` and `packed` are the defaults and are not printed.
%d = fkl.read "defaults" : !fkl.image<?x?x2xf32, planes 1>
// CHECK-NEXT:   %u8 = fkl.read "u8" : !fkl.image<?x?x1xui8>
// CHECK-NEXT:   %i8 = fkl.read "i8" : !fkl.image<?x?x2xi8>
// CHECK-NEXT:   %u16 = fkl.read "u16" : !fkl.image<?x?x3xui16>
// CHECK-NEXT:   %i16 = fkl.read "i16" : !fkl.image<?x?x4xi16>
// CHECK-NEXT:   %i32 = fkl.read "i32" : !fkl.image<480x640x3xi32>
// CHECK-NEXT:   %u32 = fkl.read "u32" : !fkl.image<1x?x1xui32>
// CHECK-NEXT:   %f16 = fkl.read "f16" : !fkl.image<?x?x3xf16, planes 4>
// CHECK-NEXT:   %bf16 = fkl.read "bf16" : !fkl.image<?x?x3xbf16, planes ?>
// CHECK-NEXT:   %f32 = fkl.read "f32" : !fkl.image<?x?x3xf32, planar>
// CHECK-NEXT:   %f64 = fkl.read "f64" : !fkl.image<?x?x3xf64, planes 64, planar>
// CHECK-NEXT:   %b = fkl.read "b" : !fkl.image<?x?x1xi1>
// CHECK-NEXT:   %d = fkl.read "defaults" : !fkl.image<?x?x2xf32>

// Arithmetic: scalar and per-channel values, negative, exponents, integers written without a dot,
// the extremes of each integer type, a parameter slot, placeholder result types.
%add = fkl.add %f32, 1 : !fkl.image<?x?x3xf32, planar> -> !fkl.image<?x?x?xnone>
%sub = fkl.sub %f64, [-1.5, 1.0E20, 3.25e-07] : !fkl.image<?x?x3xf64, planes 64, planar>
%mul = fkl.mul %f32, [-0.0, 0.1, 1.0e-300] : !fkl.image<?x?x3xf32, planar>
%mul2 = fkl.mul %f16, [0.123456789, 1.0000001, 3.141592653589793] : !fkl.image<?x?x3xf16, planes 4>
%div = fkl.div %u8, 255 : !fkl.image<?x?x1xui8>
%max = fkl.max %i8, [-128, 127] : !fkl.image<?x?x2xi8>
%min = fkl.min %u16, param "min1" : !fkl.image<?x?x3xui16>
%add4 = fkl.add %i16, [-32768, 0, 1, 32767] : !fkl.image<?x?x4xi16>
%addu32 = fkl.add %u32, 65536 : !fkl.image<1x?x1xui32>
%subi32 = fkl.sub %i32, -100000 : !fkl.image<480x640x3xi32>
%maxb = fkl.max %b, 1 : !fkl.image<?x?x1xi1>
%maxbf = fkl.max %bf16, param "max1" : !fkl.image<?x?x3xbf16, planes ?> -> !fkl.image<?x?x3xnone>
%minbf = fkl.min %bf16, 2.5e+3 : !fkl.image<?x?x3xbf16, planes ?> -> !fkl.image<?x?x?xbf16>
// CHECK-NEXT:   %add = fkl.add %f32, 1.0 : !fkl.image<?x?x3xf32, planar> -> !fkl.image<?x?x?xnone>
// CHECK-NEXT:   %sub = fkl.sub %f64, [-1.5, 1.0e+20, 3.25e-07] : !fkl.image<?x?x3xf64, planes 64, planar>
// CHECK-NEXT:   %mul = fkl.mul %f32, [-0.0, 0.1, 1.0e-300] : !fkl.image<?x?x3xf32, planar>
// CHECK-NEXT:   %mul2 = fkl.mul %f16, [0.123456789, 1.0000001, 3.141592653589793] : !fkl.image<?x?x3xf16, planes 4>
// CHECK-NEXT:   %div = fkl.div %u8, 255.0 : !fkl.image<?x?x1xui8>
// CHECK-NEXT:   %max = fkl.max %i8, [-128.0, 127.0] : !fkl.image<?x?x2xi8>
// CHECK-NEXT:   %min = fkl.min %u16, param "min1" : !fkl.image<?x?x3xui16>
// CHECK-NEXT:   %add4 = fkl.add %i16, [-32768.0, 0.0, 1.0, 32767.0] : !fkl.image<?x?x4xi16>
// CHECK-NEXT:   %addu32 = fkl.add %u32, 65536.0 : !fkl.image<1x?x1xui32>
// CHECK-NEXT:   %subi32 = fkl.sub %i32, -100000.0 : !fkl.image<480x640x3xi32>
// CHECK-NEXT:   %maxb = fkl.max %b, 1.0 : !fkl.image<?x?x1xi1>
// CHECK-NEXT:   %maxbf = fkl.max %bf16, param "max1" : !fkl.image<?x?x3xbf16, planes ?> -> !fkl.image<?x?x3xnone>
// CHECK-NEXT:   %minbf = fkl.min %bf16, 2500.0 : !fkl.image<?x?x3xbf16, planes ?> -> !fkl.image<?x?x?xbf16>

// Casts to every element type; the result type is elided when it equals the input's.
%c_u8 = fkl.cast %u8 to f32 : !fkl.image<?x?x1xui8> -> !fkl.image<?x?x1xf32>
%c_f32 = fkl.saturate_cast %f32 to ui8 : !fkl.image<?x?x3xf32, planar> -> !fkl.image<?x?x3xui8, planar>
%c_i8 = fkl.cast %i8 to bf16 : !fkl.image<?x?x2xi8> -> !fkl.image<?x?x?xnone>
%c_u16 = fkl.saturate_cast %u16 to i8 : !fkl.image<?x?x3xui16> -> !fkl.image<?x?x3xi8>
%c_i16 = fkl.cast %i16 to ui16 : !fkl.image<?x?x4xi16> -> !fkl.image<?x?x4xui16>
%c_i32 = fkl.saturate_cast %i32 to i16 : !fkl.image<480x640x3xi32> -> !fkl.image<480x640x3xi16>
%c_u32 = fkl.cast %u32 to i32 : !fkl.image<1x?x1xui32> -> !fkl.image<1x?x1xi32>
%c_f16 = fkl.cast %f16 to ui32 : !fkl.image<?x?x3xf16, planes 4> -> !fkl.image<?x?x3xui32, planes 4>
%c_bf16 = fkl.saturate_cast %bf16 to f16 : !fkl.image<?x?x3xbf16, planes ?> -> !fkl.image<?x?x3xf16, planes ?>
%c_f64 = fkl.cast %f64 to i1 : !fkl.image<?x?x3xf64, planes 64, planar> -> !fkl.image<?x?x3xi1, planes 64, planar>
%c_b = fkl.cast %b to f64 : !fkl.image<?x?x1xi1> -> !fkl.image<?x?x1xf64>
%c_same = fkl.cast %d to f32 : !fkl.image<?x?x2xf32> -> !fkl.image<?x?x2xf32>
// CHECK-NEXT:   %c_u8 = fkl.cast %u8 to f32 : !fkl.image<?x?x1xui8> -> !fkl.image<?x?x1xf32>
// CHECK-NEXT:   %c_f32 = fkl.saturate_cast %f32 to ui8 : !fkl.image<?x?x3xf32, planar> -> !fkl.image<?x?x3xui8, planar>
// CHECK-NEXT:   %c_i8 = fkl.cast %i8 to bf16 : !fkl.image<?x?x2xi8> -> !fkl.image<?x?x?xnone>
// CHECK-NEXT:   %c_u16 = fkl.saturate_cast %u16 to i8 : !fkl.image<?x?x3xui16> -> !fkl.image<?x?x3xi8>
// CHECK-NEXT:   %c_i16 = fkl.cast %i16 to ui16 : !fkl.image<?x?x4xi16> -> !fkl.image<?x?x4xui16>
// CHECK-NEXT:   %c_i32 = fkl.saturate_cast %i32 to i16 : !fkl.image<480x640x3xi32> -> !fkl.image<480x640x3xi16>
// CHECK-NEXT:   %c_u32 = fkl.cast %u32 to i32 : !fkl.image<1x?x1xui32> -> !fkl.image<1x?x1xi32>
// CHECK-NEXT:   %c_f16 = fkl.cast %f16 to ui32 : !fkl.image<?x?x3xf16, planes 4> -> !fkl.image<?x?x3xui32, planes 4>
// CHECK-NEXT:   %c_bf16 = fkl.saturate_cast %bf16 to f16 : !fkl.image<?x?x3xbf16, planes ?> -> !fkl.image<?x?x3xf16, planes ?>
// CHECK-NEXT:   %c_f64 = fkl.cast %f64 to i1 : !fkl.image<?x?x3xf64, planes 64, planar> -> !fkl.image<?x?x3xi1, planes 64, planar>
// CHECK-NEXT:   %c_b = fkl.cast %b to f64 : !fkl.image<?x?x1xi1> -> !fkl.image<?x?x1xf64>
// CHECK-NEXT:   %c_same = fkl.cast %d to f32 : !fkl.image<?x?x2xf32>

// Geometry: one rect, many rects, a rect slot; resize linear / nearest / slot.
%crop1 = fkl.crop %u16, rects [[0, 0, 1, 1]] : !fkl.image<?x?x3xui16>
%crop3 = fkl.crop %u16, rects [[30, 12, 60, 40], [40, 12, 60, 40], [53, 27, 60, 40]] : !fkl.image<?x?x3xui16> -> !fkl.image<?x?x3xui16, planes 3>
%crop_slot = fkl.crop %u16, param "crop1" : !fkl.image<?x?x3xui16> -> !fkl.image<?x?x?xnone>
%lin = fkl.resize %u16, size [224, 224], linear : !fkl.image<?x?x3xui16> -> !fkl.image<?x?x3xf32>
%near = fkl.resize %u16, size [7, 5], nearest : !fkl.image<?x?x3xui16>
%rs_slot = fkl.resize %crop3, param "resize1", linear : !fkl.image<?x?x3xui16, planes 3> -> !fkl.image<?x?x?xnone>
// CHECK-NEXT:   %crop1 = fkl.crop %u16, rects {{\[}}[0, 0, 1, 1]] : !fkl.image<?x?x3xui16>
// CHECK-NEXT:   %crop3 = fkl.crop %u16, rects {{\[}}[30, 12, 60, 40], [40, 12, 60, 40], [53, 27, 60, 40]] : !fkl.image<?x?x3xui16> -> !fkl.image<?x?x3xui16, planes 3>
// CHECK-NEXT:   %crop_slot = fkl.crop %u16, param "crop1" : !fkl.image<?x?x3xui16> -> !fkl.image<?x?x?xnone>
// CHECK-NEXT:   %lin = fkl.resize %u16, size [224, 224], linear : !fkl.image<?x?x3xui16> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %near = fkl.resize %u16, size [7, 5], nearest : !fkl.image<?x?x3xui16>
// CHECK-NEXT:   %rs_slot = fkl.resize %crop3, param "resize1", linear : !fkl.image<?x?x3xui16, planes 3> -> !fkl.image<?x?x?xnone>

// Writes: packed and planar.
fkl.write %c_f32, "out" : !fkl.image<?x?x3xui8, planar>
fkl.split %sub, "planar_out" : !fkl.image<?x?x3xf64, planes 64, planar>
// CHECK-NEXT:   fkl.write %c_f32, "out" : !fkl.image<?x?x3xui8, planar>
// CHECK-NEXT:   fkl.split %sub, "planar_out" : !fkl.image<?x?x3xf64, planes 64, planar>

// Pointer-table reads (one source per plane), reads with geometry folded into a sample region,
// writes to chosen planes of the destination.
%table = fkl.read ["src0", "src1"] : !fkl.image<?x?x3xf32, planes 2>
%table_dyn = fkl.read ["a", "b", "c"] : !fkl.image<?x?x1xui8, planes ?>
%px = fkl.read "src" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32, planes 3> sample {
^bb0(%s : !fkl.image<?x?x3xui8>):
  %sc = fkl.crop %s, param "crop1" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 3>
  %sr = fkl.resize %sc, param "resize2", linear : !fkl.image<?x?x3xui8, planes 3> -> !fkl.image<?x?x3xf32, planes 3>
  fkl.yield %sr : !fkl.image<?x?x3xf32, planes 3>
}
%same = fkl.read ["x", "y"] : !fkl.image<?x?x1xui8, planes 2> sample {
^bb0(%t : !fkl.image<?x?x1xui8, planes 2>):
  %tr = fkl.resize %t, size [4, 4], nearest : !fkl.image<?x?x1xui8, planes 2>
  fkl.yield %tr : !fkl.image<?x?x1xui8, planes 2>
}
fkl.write %table, "dst" planes [0, 2] : !fkl.image<?x?x3xf32, planes 2>
fkl.split %px, "dst2" planes [5, 1, 3] : !fkl.image<?x?x3xf32, planes 3>
// CHECK-NEXT:   %table = fkl.read ["src0", "src1"] : !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:   %table_dyn = fkl.read ["a", "b", "c"] : !fkl.image<?x?x1xui8, planes ?>
// CHECK-NEXT:   %px = fkl.read "src" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32, planes 3> sample {
// CHECK-NEXT:   ^bb0(%s: !fkl.image<?x?x3xui8>):
// CHECK-NEXT:     %sc = fkl.crop %s, param "crop1" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 3>
// CHECK-NEXT:     %sr = fkl.resize %sc, param "resize2", linear : !fkl.image<?x?x3xui8, planes 3> -> !fkl.image<?x?x3xf32, planes 3>
// CHECK-NEXT:     fkl.yield %sr : !fkl.image<?x?x3xf32, planes 3>
// CHECK-NEXT:   }
// CHECK-NEXT:   %same = fkl.read ["x", "y"] : !fkl.image<?x?x1xui8, planes 2> sample {
// CHECK-NEXT:   ^bb0(%t: !fkl.image<?x?x1xui8, planes 2>):
// CHECK-NEXT:     %tr = fkl.resize %t, size [4, 4], nearest : !fkl.image<?x?x1xui8, planes 2>
// CHECK-NEXT:     fkl.yield %tr : !fkl.image<?x?x1xui8, planes 2>
// CHECK-NEXT:   }
// CHECK-NEXT:   fkl.write %table, "dst" planes [0, 2] : !fkl.image<?x?x3xf32, planes 2>
// CHECK-NEXT:   fkl.split %px, "dst2" planes [5, 1, 3] : !fkl.image<?x?x3xf32, planes 3>

// Kernels: no slots; every slot kind, with and without values.
fkl.kernel @empty params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  fkl.write %0, "dst" : !fkl.image<?x?x3xui8>
}
// CHECK-NEXT:   fkl.kernel @empty params !fkl.params<> {
// CHECK-NEXT:     %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:     fkl.write %0, "dst" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   }

fkl.kernel @k0 params !fkl.params<crop1: rect x 2, resize2: i32 x 2, add3: ui8 x 1, mul4: f32 x 3, s1: i8 x 1, s2: ui16 x 1, s3: i16 x 2, s4: ui32 x 1, s5: f16 x 1, s6: bf16 x 1, s7: f64 x 4, s8: i1 x 1, s9: ptr x 1> values {crop1 = array<i64: 0, 0, 4, 4, 1, 1, 4, 4>, resize2 = array<i64: 16, 8>, add3 = array<f64: 7.0>, mul4 = array<f64: 1.0, -2.5, 1.0e+30>} {
  %img = fkl.read "src" : !fkl.image<?x?x1xui8>
  %roi = fkl.crop %img, param "crop1" : !fkl.image<?x?x1xui8> -> !fkl.image<?x?x1xui8, planes 2>
  %rs = fkl.resize %roi, param "resize2", linear : !fkl.image<?x?x1xui8, planes 2> -> !fkl.image<?x?x1xf32, planes 2>
  %m = fkl.mul %rs, param "mul4" : !fkl.image<?x?x1xf32, planes 2>
  fkl.split %m, "dst" : !fkl.image<?x?x1xf32, planes 2>
}
// CHECK-NEXT:   fkl.kernel @k0 params !fkl.params<crop1: rect x 2, resize2: i32 x 2, add3: ui8 x 1, mul4: f32 x 3, s1: i8 x 1, s2: ui16 x 1, s3: i16 x 2, s4: ui32 x 1, s5: f16 x 1, s6: bf16 x 1, s7: f64 x 4, s8: i1 x 1, s9: ptr x 1> values {crop1 = array<i64: 0, 0, 4, 4, 1, 1, 4, 4>, resize2 = array<i64: 16, 8>, add3 = array<f64: 7.000000e+00>, mul4 = array<f64: 1.000000e+00, -2.500000e+00, 1.000000e+30>} {
// CHECK-NEXT:     %img = fkl.read "src" : !fkl.image<?x?x1xui8>
// CHECK-NEXT:     %roi = fkl.crop %img, param "crop1" : !fkl.image<?x?x1xui8> -> !fkl.image<?x?x1xui8, planes 2>
// CHECK-NEXT:     %rs = fkl.resize %roi, param "resize2", linear : !fkl.image<?x?x1xui8, planes 2> -> !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:     %m = fkl.mul %rs, param "mul4" : !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:     fkl.split %m, "dst" : !fkl.image<?x?x1xf32, planes 2>
// CHECK-NEXT:   }

fkl.kernel @inline_values params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x4xf32>
  %1 = fkl.sub %0, [1, 2, 3, 4] : !fkl.image<?x?x4xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x4xf32>
}
// CHECK-NEXT:   fkl.kernel @inline_values params !fkl.params<> {
// CHECK-NEXT:     %0 = fkl.read "src" : !fkl.image<?x?x4xf32>
// CHECK-NEXT:     %1 = fkl.sub %0, [1.0, 2.0, 3.0, 4.0] : !fkl.image<?x?x4xf32>
// CHECK-NEXT:     fkl.write %1, "dst" : !fkl.image<?x?x4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// The generic form: which property holds what.
// GENERIC:      "fkl.read"() <{source = "u8"}> : () -> !fkl.image<?x?x1xui8>
// GENERIC:      "fkl.add"(%f32) <{value = array<f64: 1.000000e+00>}> : (!fkl.image<?x?x3xf32, planar>) -> !fkl.image<?x?x?xnone>
// GENERIC:      "fkl.min"(%u16) <{slot = "min1"}> : (!fkl.image<?x?x3xui16>) -> !fkl.image<?x?x3xui16>
// GENERIC:      "fkl.cast"(%u8) <{to = f32}> : (!fkl.image<?x?x1xui8>) -> !fkl.image<?x?x1xf32>
// GENERIC:      "fkl.saturate_cast"(%f32) <{to = ui8}>
// GENERIC:      "fkl.crop"(%u16) <{value = array<i64: 30, 12, 60, 40, 40, 12, 60, 40, 53, 27, 60, 40>}>
// GENERIC:      "fkl.crop"(%u16) <{slot = "crop1"}>
// GENERIC:      "fkl.resize"(%u16) <{interp = "linear", value = array<i64: 224, 224>}>
// GENERIC:      "fkl.resize"(%u16) <{interp = "nearest", value = array<i64: 7, 5>}>
// GENERIC:      "fkl.resize"(%crop3) <{interp = "linear", slot = "resize1"}>
// GENERIC:      "fkl.write"(%c_f32) <{dest = "out"}> : (!fkl.image<?x?x3xui8, planar>) -> ()
// GENERIC:      "fkl.split"(%sub) <{dest = "planar_out"}>
// GENERIC:      "fkl.read"() <{source = ["src0", "src1"]}> : () -> !fkl.image<?x?x3xf32, planes 2>
// GENERIC:      "fkl.read"() <{source = "src"}> ({
// GENERIC-NEXT: ^bb0(%s: !fkl.image<?x?x3xui8>):
// GENERIC:        "fkl.yield"(%sr) : (!fkl.image<?x?x3xf32, planes 3>) -> ()
// GENERIC-NEXT: }) : () -> !fkl.image<?x?x3xf32, planes 3>
// GENERIC:      "fkl.write"(%table) <{dest = "dst", planes = array<i64: 0, 2>}>
// GENERIC:      "fkl.kernel"() <{sym_name = "empty", params = !fkl.params<>}> ({
// GENERIC:      "fkl.kernel"() <{sym_name = "k0", params = !fkl.params<crop1: rect x 2, {{.*}}>, values = {crop1 = array<i64: 0, 0, 4, 4, 1, 1, 4, 4>, {{.*}}}}> ({
