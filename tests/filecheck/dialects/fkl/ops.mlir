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
%mulp = fkl.mul %f16, per_plane [0.5, 1.5, 2.5, 3.5] : !fkl.image<?x?x3xf16, planes 4>
%addp = fkl.add %f32, per_plane [1, 2, 3] : !fkl.image<?x?x3xf32, planar>
%divp = fkl.div %f16, per_plane param "div1" : !fkl.image<?x?x3xf16, planes 4>
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
// CHECK-NEXT:   %mulp = fkl.mul %f16, per_plane [0.5, 1.5, 2.5, 3.5] : !fkl.image<?x?x3xf16, planes 4>
// CHECK-NEXT:   %addp = fkl.add %f32, per_plane [1.0, 2.0, 3.0] : !fkl.image<?x?x3xf32, planar>
// CHECK-NEXT:   %divp = fkl.div %f16, per_plane param "div1" : !fkl.image<?x?x3xf16, planes 4>

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

// ---- The catalogue beyond arithmetic: clamps, logic, vector ops, algebra, control, colour. -------
%q = fkl.read "q" : !fkl.image<?x?x3xui8>
%g = fkl.read "g" : !fkl.image<?x?x3xf32>
%sat = fkl.saturate %q, 10, 200 : !fkl.image<?x?x3xui8>
%sat3 = fkl.saturate %g, [0, -1.5, 2], [1, 1.5, 1.0e+3] : !fkl.image<?x?x3xf32>
%sat_slot = fkl.saturate %q, param "saturate1" : !fkl.image<?x?x3xui8>
%satp = fkl.saturate %g, per_plane [-1, 2.5] : !fkl.image<?x?x3xf32>
%satp_slot = fkl.saturate %g, per_plane param "saturate2" : !fkl.image<?x?x3xf32>
%satf = fkl.saturate_float %g : !fkl.image<?x?x3xf32>
%even = fkl.is_even %q : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xi1>
%eq = fkl.equal %g, [0.5, -0.0, 2] : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x3xi1>
%eq_slot = fkl.equal %q, per_plane param "equal1" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xi1>
%all = fkl.vector_and %even : !fkl.image<?x?x3xi1> -> !fkl.image<?x?x1xi1>
%sum = fkl.vector_reduce %q, add : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x1xui8>
%big = fkl.vector_reduce %g, max : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x?xnone>
%two = fkl.discard %g, 2 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x2xf32>
%four = fkl.add_last %q, 255 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x4xui8>
%four_slot = fkl.add_last %g, param "add_last1" : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x4xf32>
%rev = fkl.vector_reorder %q, [2, 1, 0, 0] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x4xui8>
%rt = fkl.vector_reorder_rt %q, [1, 2] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x2xui8>
%rt_slot = fkl.vector_reorder_rt %g, param "vector_reorder_rt1" : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x3xf32>
%mxv = fkl.mxv_float3 %g, [[1, 0, 0], [0.5, 0.25, -2], [0, 0, 1]] : !fkl.image<?x?x3xf32>
%mxv_pp = fkl.mxv_float3 %g, per_plane [[1, 0, 0], [0, 1, 0], [0, 0, 1]] : !fkl.image<?x?x3xf32>
%loop = fkl.static_loop %g, mul 1.5, 3 : !fkl.image<?x?x3xf32>
%loop_slot = fkl.static_loop %q, div param "static_loop1", 2 : !fkl.image<?x?x3xui8>
%gray = fkl.color_conversion %q, RGB2GRAY : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x1xui8>
%bgra = fkl.color_conversion %q, RGB2BGRA : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
// CHECK-NEXT:   %q = fkl.read "q" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %g = fkl.read "g" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %sat = fkl.saturate %q, 10.0, 200.0 : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %sat3 = fkl.saturate %g, [0.0, -1.5, 2.0], [1.0, 1.5, 1000.0] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %sat_slot = fkl.saturate %q, param "saturate1" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %satp = fkl.saturate %g, per_plane [-1.0, 2.5] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %satp_slot = fkl.saturate %g, per_plane param "saturate2" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %satf = fkl.saturate_float %g : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %even = fkl.is_even %q : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xi1>
// CHECK-NEXT:   %eq = fkl.equal %g, [0.5, -0.0, 2.0] : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x3xi1>
// CHECK-NEXT:   %eq_slot = fkl.equal %q, per_plane param "equal1" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xi1>
// CHECK-NEXT:   %all = fkl.vector_and %even : !fkl.image<?x?x3xi1> -> !fkl.image<?x?x1xi1>
// CHECK-NEXT:   %sum = fkl.vector_reduce %q, add : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x1xui8>
// CHECK-NEXT:   %big = fkl.vector_reduce %g, max : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x?xnone>
// CHECK-NEXT:   %two = fkl.discard %g, 2 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x2xf32>
// CHECK-NEXT:   %four = fkl.add_last %q, 255.0 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x4xui8>
// CHECK-NEXT:   %four_slot = fkl.add_last %g, param "add_last1" : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x4xf32>
// CHECK-NEXT:   %rev = fkl.vector_reorder %q, [2, 1, 0, 0] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x4xui8>
// CHECK-NEXT:   %rt = fkl.vector_reorder_rt %q, [1, 2] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x2xui8>
// CHECK-NEXT:   %rt_slot = fkl.vector_reorder_rt %g, param "vector_reorder_rt1" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %mxv = fkl.mxv_float3 %g, {{\[}}[1.0, 0.0, 0.0], [0.5, 0.25, -2.0], [0.0, 0.0, 1.0]] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %mxv_pp = fkl.mxv_float3 %g, per_plane {{\[}}[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %loop = fkl.static_loop %g, mul 1.5, 3 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %loop_slot = fkl.static_loop %q, div param "static_loop1", 2 : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %gray = fkl.color_conversion %q, RGB2GRAY : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x1xui8>
// CHECK-NEXT:   %bgra = fkl.color_conversion %q, RGB2BGRA : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>

// ---- More geometry: border modes, a crop leaving the image after a border, resize with an aspect
// ratio and background, warps (affine, perspective, inverse, slots), deinterlace, flips, rotations,
// read_set. ------------------------------------------------------------------------------------------
%bc = fkl.border %q, constant [0, 0, 255] : !fkl.image<?x?x3xui8>
%bc_crop = fkl.crop %bc, rects [[-10, -20, 300, 400]] : !fkl.image<?x?x3xui8>
%br = fkl.border %g, reflect101 : !fkl.image<?x?x3xf32>
%bw_slot = fkl.border %g, constant param "border1" : !fkl.image<?x?x3xf32>
%pres = fkl.resize %q, size [224, 224], linear, preserve, background [114.0, 114.0, 114.0] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
%pres_slot = fkl.resize %q, param "resize1", nearest, preserve_even, background param "resize1_background" : !fkl.image<?x?x3xui8>
%wa = fkl.warp %g, affine [[1, 0.5, 3], [0, 1, -2]], size [64, 48] : !fkl.image<?x?x3xf32>
%wp = fkl.warp %q, perspective [[1, 0, 0], [0, 1, 0], [0.001, 0, 1]], inverse, size [8, 8] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
%w_slot = fkl.warp %br, affine param "warp1", inverse, size param "warp1_size" : !fkl.image<?x?x3xf32>
%bpp = fkl.border %g, constant per_plane [0, 1, 2] : !fkl.image<?x?x3xf32>
%rpp = fkl.resize %q, size [8, 8], linear, preserve, background per_plane [5] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
%wpp = fkl.warp %g, affine per_plane [[1, 0, 0], [0, 1, 0]], size [8, 8] : !fkl.image<?x?x3xf32>
%wpp_slot = fkl.warp %g, perspective per_plane param "warp2", inverse, size param "warp2_size" : !fkl.image<?x?x3xf32>
%dl = fkl.deinterlace %q, linear : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
%fv = fkl.flip %q, vertical : !fkl.image<?x?x3xui8>
%fh = fkl.flip %g, horizontal : !fkl.image<?x?x3xf32>
%fb = fkl.flip %bc, both : !fkl.image<?x?x3xui8>
%rcw = fkl.rotate %q, clockwise_90 : !fkl.image<?x?x3xui8>
%rh = fkl.rotate %fh, turn_180 : !fkl.image<?x?x3xf32>
%rccw = fkl.rotate %q, counterclockwise_90 : !fkl.image<?x?x3xui8>
%set = fkl.read_set %g, [1, 2, 3], size [16, 9] : !fkl.image<?x?x3xf32>
%set_slot = fkl.read_set %q, param "read_set1", size param "read_set1_size" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %bc = fkl.border %q, constant [0.0, 0.0, 255.0] : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %bc_crop = fkl.crop %bc, rects {{\[}}[-10, -20, 300, 400]] : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %br = fkl.border %g, reflect101 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %bw_slot = fkl.border %g, constant param "border1" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %pres = fkl.resize %q, size [224, 224], linear, preserve, background [114.0, 114.0, 114.0] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %pres_slot = fkl.resize %q, param "resize1", nearest, preserve_even, background param "resize1_background" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %wa = fkl.warp %g, affine {{\[}}[1.0, 0.5, 3.0], [0.0, 1.0, -2.0]], size [64, 48] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %wp = fkl.warp %q, perspective {{\[}}[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.001, 0.0, 1.0]], inverse, size [8, 8] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %w_slot = fkl.warp %br, affine param "warp1", inverse, size param "warp1_size" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %bpp = fkl.border %g, constant per_plane [0.0, 1.0, 2.0] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %rpp = fkl.resize %q, size [8, 8], linear, preserve, background per_plane 5.0 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %wpp = fkl.warp %g, affine per_plane {{\[}}[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], size [8, 8] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %wpp_slot = fkl.warp %g, perspective per_plane param "warp2", inverse, size param "warp2_size" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %dl = fkl.deinterlace %q, linear : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %fv = fkl.flip %q, vertical : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %fh = fkl.flip %g, horizontal : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %fb = fkl.flip %bc, both : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %rcw = fkl.rotate %q, clockwise_90 : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %rh = fkl.rotate %fh, turn_180 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %rccw = fkl.rotate %q, counterclockwise_90 : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   %set = fkl.read_set %g, [1.0, 2.0, 3.0], size [16, 9] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   %set_slot = fkl.read_set %q, param "read_set1", size param "read_set1_size" : !fkl.image<?x?x3xui8>

// ---- The other writes: channel-major [C][B][H][W] and one buffer per channel. --------------------
fkl.tsplit %sat3, "t_out" : !fkl.image<?x?x3xf32>
fkl.split_write %sat, "channels_out" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   fkl.tsplit %sat3, "t_out" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:   fkl.split_write %sat, "channels_out" : !fkl.image<?x?x3xui8>

// Kernels: no slots; every slot kind, with and without values.
fkl.kernel @empty params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  fkl.write %0, "dst" : !fkl.image<?x?x3xui8>
}
// CHECK-NEXT:   fkl.kernel @empty params !fkl.params<> {
// CHECK-NEXT:     %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:     fkl.write %0, "dst" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:   }

fkl.kernel @k0 params !fkl.params<crop1: rect x 2, resize2: i32 x 2, add3: ui8 x 1, mul4: f32 x 3, s1: i8 x 1, s2: ui16 x 1, s3: i16 x 2, s4: ui32 x 1, s5: f16 x 1, s6: bf16 x 1, s7: f64 x 4, s8: i1 x 1> values {crop1 = [0, 0, 4, 4, 1, 1, 4, 4], resize2 = [16, 8], add3 = [7.0], mul4 = [1.0, -2.5, 1.0e+30]} {
  %img = fkl.read "src" : !fkl.image<?x?x1xui8>
  %roi = fkl.crop %img, param "crop1" : !fkl.image<?x?x1xui8> -> !fkl.image<?x?x1xui8, planes 2>
  %rs = fkl.resize %roi, param "resize2", linear : !fkl.image<?x?x1xui8, planes 2> -> !fkl.image<?x?x1xf32, planes 2>
  %m = fkl.mul %rs, param "mul4" : !fkl.image<?x?x1xf32, planes 2>
  fkl.split %m, "dst" : !fkl.image<?x?x1xf32, planes 2>
}
// CHECK-NEXT:   fkl.kernel @k0 params !fkl.params<crop1: rect x 2, resize2: i32 x 2, add3: ui8 x 1, mul4: f32 x 3, s1: i8 x 1, s2: ui16 x 1, s3: i16 x 2, s4: ui32 x 1, s5: f16 x 1, s6: bf16 x 1, s7: f64 x 4, s8: i1 x 1> values {crop1 = [0, 0, 4, 4, 1, 1, 4, 4], resize2 = [16, 8], add3 = [7.0], mul4 = [1.0, -2.5, 1.0e+30]} {
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
// GENERIC:      "fkl.saturate"(%q) <{value = array<f64: 1.000000e+01, 2.000000e+02>}>
// GENERIC:      "fkl.saturate"(%g) <{per_plane, value = array<f64: -1.000000e+00, 2.500000e+00>}>
// GENERIC:      "fkl.is_even"(%q) : (!fkl.image<?x?x3xui8>) -> !fkl.image<?x?x3xi1>
// GENERIC:      "fkl.equal"(%g) <{value = array<f64: 5.000000e-01, -0.000000e+00, 2.000000e+00>}>
// GENERIC:      "fkl.vector_reduce"(%q) <{word = "add"}>
// GENERIC:      "fkl.discard"(%g) <{keep = 2 : i64}>
// GENERIC:      "fkl.vector_reorder"(%q) <{order = array<i64: 2, 1, 0, 0>}>
// GENERIC:      "fkl.vector_reorder_rt"(%q) <{value = array<i64: 1, 2>}>
// GENERIC:      "fkl.static_loop"(%g) <{value = array<f64: 1.500000e+00>, body = "mul", count = 3 : i64}>
// GENERIC:      "fkl.color_conversion"(%q) <{word = "RGB2GRAY"}>
// GENERIC:      "fkl.border"(%q) <{value = array<f64: 0.000000e+00, 0.000000e+00, 2.550000e+02>, mode = "constant"}>
// GENERIC:      "fkl.resize"(%q) <{interp = "linear", value = array<i64: 224, 224>, aspect_ratio = "preserve", background = array<f64: 1.140000e+02, 1.140000e+02, 1.140000e+02>}>
// GENERIC:      "fkl.warp"(%g) <{value = array<f64: {{.*}}>, size = array<i64: 64, 48>, kind = "affine"}>
// GENERIC:      "fkl.warp"(%q) <{value = array<f64: {{.*}}>, size = array<i64: 8, 8>, kind = "perspective", inverse}>
// GENERIC:      "fkl.warp"(%br) <{slot = "warp1", size_slot = "warp1_size", kind = "affine", inverse}>
// GENERIC:      "fkl.read_set"(%g) <{value = array<f64: 1.000000e+00, 2.000000e+00, 3.000000e+00>, size = array<i64: 16, 9>}>
// GENERIC:      "fkl.tsplit"(%sat3) <{dest = "t_out"}>
// GENERIC:      "fkl.split_write"(%sat) <{dest = "channels_out"}>
// GENERIC:      "fkl.kernel"() <{sym_name = "empty", params = !fkl.params<>}> ({
// GENERIC:      "fkl.kernel"() <{sym_name = "k0", params = !fkl.params<crop1: rect x 2, {{.*}}>, values = {crop1 = array<i64: 0, 0, 4, 4, 1, 1, 4, 4>, {{.*}}}}> ({
