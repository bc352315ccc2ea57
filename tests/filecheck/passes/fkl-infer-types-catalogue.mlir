// RUN: fklir-opt %s --split-input-file --verify-diagnostics -p fkl-infer-types | filecheck %s

// The type rule of every catalogue op, from placeholder result types (`?x?x?xnone`).

// Channel-wise ops keep the type (is_even gives i1); channel ops set the count they say.
%0 = fkl.read "src" : !fkl.image<?x?x3xi16, planes 2>
%1 = fkl.saturate %0, -5, [1, 2, 3] : !fkl.image<?x?x3xi16, planes 2> -> !fkl.image<?x?x?xnone>
%2 = fkl.static_loop %1, add 7, 2 : !fkl.image<?x?x?xnone>
%3 = fkl.add_last %2, -1 : !fkl.image<?x?x?xnone>
%4 = fkl.vector_reorder %3, [3, 3] : !fkl.image<?x?x?xnone>
%5 = fkl.vector_reorder_rt %4, [1, 0, 1] : !fkl.image<?x?x?xnone>
%6 = fkl.discard %5, 2 : !fkl.image<?x?x?xnone>
%7 = fkl.is_even %6 : !fkl.image<?x?x?xnone>
%8 = fkl.vector_and %7 : !fkl.image<?x?x?xnone>
fkl.write %8, "dst" : !fkl.image<?x?x?xnone>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x3xi16, planes 2>
// CHECK-NEXT:    %1 = fkl.saturate %0, [-5.0, -5.0, -5.0], [1.0, 2.0, 3.0] : !fkl.image<?x?x3xi16, planes 2>
// CHECK-NEXT:    %2 = fkl.static_loop %1, add 7.0, 2 : !fkl.image<?x?x3xi16, planes 2>
// CHECK-NEXT:    %3 = fkl.add_last %2, -1.0 : !fkl.image<?x?x3xi16, planes 2> -> !fkl.image<?x?x4xi16, planes 2>
// CHECK-NEXT:    %4 = fkl.vector_reorder %3, [3, 3] : !fkl.image<?x?x4xi16, planes 2> -> !fkl.image<?x?x2xi16, planes 2>
// CHECK-NEXT:    %5 = fkl.vector_reorder_rt %4, [1, 0, 1] : !fkl.image<?x?x2xi16, planes 2> -> !fkl.image<?x?x3xi16, planes 2>
// CHECK-NEXT:    %6 = fkl.discard %5, 2 : !fkl.image<?x?x3xi16, planes 2> -> !fkl.image<?x?x2xi16, planes 2>
// CHECK-NEXT:    %7 = fkl.is_even %6 : !fkl.image<?x?x2xi16, planes 2> -> !fkl.image<?x?x2xi1, planes 2>
// CHECK-NEXT:    %8 = fkl.vector_and %7 : !fkl.image<?x?x2xi1, planes 2> -> !fkl.image<?x?x1xi1, planes 2>
// CHECK-NEXT:    fkl.write %8, "dst" : !fkl.image<?x?x1xi1, planes 2>

// -----

// Colour codes set the channel count; gray keeps the element type; reduce gives one channel;
// mxv_float3 and saturate_float keep f32 x 3.
%0 = fkl.read "src" : !fkl.image<?x?x4xui8>
%1 = fkl.color_conversion %0, BGRA2RGB : !fkl.image<?x?x4xui8> -> !fkl.image<?x?x?xnone>
%2 = fkl.cast %1 to f32 : !fkl.image<?x?x?xnone>
%3 = fkl.mxv_float3 %2, [[1, 0, 0], [0, 1, 0], [0, 0, 1]] : !fkl.image<?x?x?xnone>
%4 = fkl.saturate_float %3 : !fkl.image<?x?x?xnone>
%5 = fkl.color_conversion %4, RGB2GRAY : !fkl.image<?x?x?xnone>
%6 = fkl.color_conversion %5, GRAY2BGR : !fkl.image<?x?x?xnone>
%7 = fkl.vector_reduce %6, mul : !fkl.image<?x?x?xnone>
fkl.write %7, "dst" : !fkl.image<?x?x?xnone>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x4xui8>
// CHECK-NEXT:    %1 = fkl.color_conversion %0, BGRA2RGB : !fkl.image<?x?x4xui8> -> !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %2 = fkl.cast %1 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %3 = fkl.mxv_float3 %2, {{\[}}[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %4 = fkl.saturate_float %3 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %5 = fkl.color_conversion %4, RGB2GRAY : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x1xf32>
// CHECK-NEXT:    %6 = fkl.color_conversion %5, GRAY2BGR : !fkl.image<?x?x1xf32> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %7 = fkl.vector_reduce %6, mul : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x1xf32>
// CHECK-NEXT:    fkl.write %7, "dst" : !fkl.image<?x?x1xf32>

// -----

// Geometry: read_set and border keep the type; a crop after a border may start outside; resize
// linear (with a background in f32) and warp give f32; resize nearest keeps the type; deinterlace f32.
%0 = fkl.read "src" : !fkl.image<?x?x2xui16>
%1 = fkl.read_set %0, [1, 65535], size [40, 30] : !fkl.image<?x?x2xui16> -> !fkl.image<?x?x?xnone>
%2 = fkl.border %1, constant 7 : !fkl.image<?x?x?xnone>
%3 = fkl.crop %2, rects [[-3, -4, 50, 60]] : !fkl.image<?x?x?xnone>
%4 = fkl.resize %3, size [16, 16], nearest, preserve_left, background [0, 1] : !fkl.image<?x?x?xnone>
%5 = fkl.border %4, reflect : !fkl.image<?x?x?xnone>
%6 = fkl.warp %5, perspective [[1, 0, 0], [0, 1, 0], [0, 0, 1]], size [9, 7] : !fkl.image<?x?x?xnone>
%7 = fkl.resize %6, size [5, 5], linear, preserve, background 0.5 : !fkl.image<?x?x?xnone>
%8 = fkl.deinterlace %7, blend : !fkl.image<?x?x?xnone>
fkl.tsplit %8, "dst" : !fkl.image<?x?x?xnone>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x2xui16>
// CHECK-NEXT:    %1 = fkl.read_set %0, [1.0, 65535.0], size [40, 30] : !fkl.image<?x?x2xui16>
// CHECK-NEXT:    %2 = fkl.border %1, constant 7.0 : !fkl.image<?x?x2xui16>
// CHECK-NEXT:    %3 = fkl.crop %2, rects {{\[}}[-3, -4, 50, 60]] : !fkl.image<?x?x2xui16>
// CHECK-NEXT:    %4 = fkl.resize %3, size [16, 16], nearest, preserve_left, background [0.0, 1.0] : !fkl.image<?x?x2xui16>
// CHECK-NEXT:    %5 = fkl.border %4, reflect : !fkl.image<?x?x2xui16>
// CHECK-NEXT:    %6 = fkl.warp %5, perspective {{.*}}, size [9, 7] : !fkl.image<?x?x2xui16> -> !fkl.image<?x?x2xf32>
// CHECK-NEXT:    %7 = fkl.resize %6, size [5, 5], linear, preserve, background 0.5 : !fkl.image<?x?x2xf32>
// CHECK-NEXT:    %8 = fkl.deinterlace %7, blend : !fkl.image<?x?x2xf32>
// CHECK-NEXT:    fkl.tsplit %8, "dst" : !fkl.image<?x?x2xf32>

// -----

// A planar read (TensorPack) types like any read; the layout is carried along.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8, planes 4, planar>
%1 = fkl.color_conversion %0, BGR2RGBA : !fkl.image<?x?x3xui8, planes 4, planar> -> !fkl.image<?x?x?xnone>
fkl.split_write %1, "dst" : !fkl.image<?x?x?xnone>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x3xui8, planes 4, planar>
// CHECK-NEXT:    %1 = fkl.color_conversion %0, BGR2RGBA : !fkl.image<?x?x3xui8, planes 4, planar> -> !fkl.image<?x?x4xui8, planes 4, planar>
// CHECK-NEXT:    fkl.split_write %1, "dst" : !fkl.image<?x?x4xui8, planes 4, planar>

// -----

// Rules that need the chain type fail during inference, naming the op and the rule.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.cast %0 to f64 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
%2 = fkl.mxv_float3 %1, [[1, 0, 0], [0, 1, 0], [0, 0, 1]] : !fkl.image<?x?x?xnone>
fkl.write %2, "dst" : !fkl.image<?x?x?xnone>
// CHECK: fkl-infer-types-catalogue.mlir:[[# @LINE - 2]]:1: error: 'fkl.mxv_float3' needs a chain of exactly float32 x 3, got float64 x 3

// -----

%0 = fkl.read "src" : !fkl.image<?x?x2xf32>
%1 = fkl.discard %0, 4 : !fkl.image<?x?x2xf32> -> !fkl.image<?x?x?xnone>
fkl.write %1, "dst" : !fkl.image<?x?x?xnone>
// CHECK: fkl-infer-types-catalogue.mlir:[[# @LINE - 2]]:1: error: 'fkl.discard' keeps 4 channels of a chain of 2 (1 to 2)

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xi8>
%1 = fkl.add_last %0, -129 : !fkl.image<?x?x3xi8> -> !fkl.image<?x?x?xnone>
fkl.write %1, "dst" : !fkl.image<?x?x?xnone>
// CHECK: fkl-infer-types-catalogue.mlir:[[# @LINE - 2]]:1: error: 'fkl.add_last' value -129.0 is not representable in the chain's element type int8; Cast to float first

// -----

%0 = fkl.read "src" : !fkl.image<?x?x1xui8>
%1 = fkl.color_conversion %0, RGBA2GRAY : !fkl.image<?x?x1xui8> -> !fkl.image<?x?x?xnone>
fkl.write %1, "dst" : !fkl.image<?x?x?xnone>
// CHECK: fkl-infer-types-catalogue.mlir:[[# @LINE - 2]]:1: error: 'fkl.color_conversion' RGBA2GRAY needs 4 channels, the chain has 1

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.resize %0, size [8, 8], linear, preserve, background [0, 0] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
fkl.write %1, "dst" : !fkl.image<?x?x?xnone>
// CHECK: fkl-infer-types-catalogue.mlir:[[# @LINE - 2]]:1: error: 'fkl.resize' has 2 values but the chain has 3 channels (give one value or one per channel)

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.resize %0, size [8, 8], nearest, preserve, background 256 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
fkl.write %1, "dst" : !fkl.image<?x?x?xnone>
// CHECK: fkl-infer-types-catalogue.mlir:[[# @LINE - 2]]:1: error: 'fkl.resize' value 256.0 is not representable in the chain's element type uint8; Cast to float first

// -----

%0 = fkl.read "src" : !fkl.image<?x?x2xi32>
%1 = fkl.static_loop %0, div 0, 3 : !fkl.image<?x?x2xi32> -> !fkl.image<?x?x?xnone>
fkl.write %1, "dst" : !fkl.image<?x?x?xnone>
// CHECK: fkl-infer-types-catalogue.mlir:[[# @LINE - 2]]:1: error: 'fkl.static_loop' divides an integer chain (int32) by zero

// -----

%0 = fkl.read "src" : !fkl.image<?x?x1xi1>
%1 = fkl.deinterlace %0, linear : !fkl.image<?x?x1xi1> -> !fkl.image<?x?x?xnone>
fkl.write %1, "dst" : !fkl.image<?x?x?xnone>
// CHECK: fkl-infer-types-catalogue.mlir:[[# @LINE - 2]]:1: error: 'fkl.deinterlace' averages rows on a bool chain; Cast to an integer or float type first
