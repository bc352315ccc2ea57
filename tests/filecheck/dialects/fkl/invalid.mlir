// RUN: fklir-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// One chunk per verifier or parser rule. Verifier errors are located (`invalid.mlir:LINE:COL: error:`),
// so every CHECK names the line of its op (`[[# @LINE - 1]]` = the line above the CHECK) and a
// diagnostic cannot be matched in the wrong chunk. Types that fail their own verifier while being
// parsed are reported as parse errors at the op that holds them (see
// tests/filecheck/fklir-opt/errors-type-location.mlir); their messages are unique and followed by the
// chunk separator.

// ---- !fkl.image ---------------------------------------------------------------------------------

%0 = fkl.read "src" : !fkl.image<?x?x5xui8>
// CHECK:      !fkl.image: expected 1 to 4 channels, got 5
// CHECK:      {{//}} -----

// -----

%0 = fkl.read "src" : !fkl.image<?x?x0xui8>
// CHECK:      !fkl.image: expected 1 to 4 channels, got 0
// CHECK:      {{//}} -----

// -----

// f8 is not a type at all: the shape parser stops at it.
%0 = fkl.read "src" : !fkl.image<?x?x3xf8>
// CHECK:      invalid.mlir:[[# @LINE - 1]]:40
// CHECK:      {{//}} -----

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xi64>
// CHECK:      !fkl.image: unsupported element type i64; expected one of ui8, i8, ui16, i16, i32, ui32, f16, bf16, f32, f64, i1
// CHECK:      {{//}} -----

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8, planes 0>
// CHECK:      !fkl.image: planes must be >= 1, got 0
// CHECK:      {{//}} -----

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xf32, interleaved>
// CHECK:      invalid.mlir:[[# @LINE - 1]]:45
// CHECK:      Expected 'planar'

// -----

%0 = fkl.read "src" : !fkl.image<?x3xf32>
// CHECK:      invalid.mlir:[[# @LINE - 1]]:34
// CHECK:      expected HxWxC before the element type, e.g. ?x?x3xui8

// ---- fkl.kernel's chains: read ... write straight lines, one after the other -------------------

// -----

fkl.kernel @k0 params !fkl.params<> {
// CHECK:      invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.kernel' @k0: its chains must follow one another
  %0 = fkl.read "a" : !fkl.image<?x?x3xf32>
  %1 = fkl.read "b" : !fkl.image<?x?x3xf32>
  fkl.write %0, "x" : !fkl.image<?x?x3xf32>
  fkl.write %1, "y" : !fkl.image<?x?x3xf32>
}

// -----

fkl.kernel @k0 params !fkl.params<> {
  %0 = fkl.read "a" : !fkl.image<?x?x3xf32>
  %1 = fkl.add %0, 1.0 : !fkl.image<?x?x3xf32>
// CHECK:      invalid.mlir:[[# @LINE - 1]]:3: error: 'fkl.add' result is never written: a chain must end with fkl.write or fkl.split
}

// ---- !fkl.params --------------------------------------------------------------------------------

// -----

fkl.kernel @k0 params !fkl.params<mul1: f32 x 3, mul1: f32 x 3> {
}
// CHECK:      !fkl.params: slot mul1 appears twice
// CHECK:      {{//}} -----

// -----

fkl.kernel @k0 params !fkl.params<a: f8 x 1> {
}
// CHECK:      !fkl.params: slot a has unknown kind f8
// CHECK:      {{//}} -----

// -----

fkl.kernel @k0 params !fkl.params<a: f32 x 0> {
}
// CHECK:      !fkl.params: slot a must have a count >= 1, got 0
// CHECK:      {{//}} -----

// ---- fkl.read / fkl.write / fkl.split -----------------------------------------------------------

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xnone>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.read' result type must give the element type and channel count

// -----

%0 = fkl.read "src" : !fkl.image<?x?x?xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.read' result type must give the element type and channel count

// -----

%0 = fkl.read "" : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.read' needs non-empty source names

// -----

%0 = fkl.read "s" : f32
// CHECK:      invalid.mlir:[[# @LINE - 1]]:1: error: result 'result' at position 0 does not verify:
// CHECK-NEXT: f32 should be of base attribute fkl.image

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
fkl.write %0, "" : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.write' needs a non-empty destination name

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
  fkl.split %0, "" : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'fkl.split' needs a non-empty destination name

// -----

%0 = fkl.read ["src0", "src1"] : !fkl.image<?x?x3xf32, planes 3>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.read' reads 2 sources into 3 planes

// -----

%0 = fkl.read ["src0", ""] : !fkl.image<?x?x3xf32, planes 2>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.read' needs non-empty source names

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK: 'fkl.read' without a sample region reads its result type: write `: T` only

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8> sample {
^bb0(%s : !fkl.image<?x?x3xui8>):
  %c = fkl.crop %s, rects [[0, 0, 2, 2]] : !fkl.image<?x?x3xui8>
}
// CHECK: invalid.mlir:[[# @LINE - 4]]:1: error: 'fkl.read' sample region must end with fkl.yield

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32> sample {
^bb0(%s : !fkl.image<?x?x3xui8>):
  %c = fkl.crop %s, rects [[0, 0, 2, 2]] : !fkl.image<?x?x3xui8>
  fkl.yield %c : !fkl.image<?x?x3xui8>
}
// CHECK: invalid.mlir:[[# @LINE - 5]]:1: error: 'fkl.read' yields !fkl.image<?x?x3xui8> but its result type is !fkl.image<?x?x3xf32>

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8> sample {
^bb0(%s : !fkl.image<?x?x3xui8>):
  %c = fkl.add %s, 1 : !fkl.image<?x?x3xui8>
  fkl.yield %c : !fkl.image<?x?x3xui8>
}
// CHECK: invalid.mlir:[[# @LINE - 5]]:1: error: 'fkl.read' sample region holds only geometry ops, not 'fkl.add'

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8> sample {
^bb0(%s : !fkl.image<?x?x3xui8>, %s2 : !fkl.image<?x?x3xui8>):
  fkl.yield %s : !fkl.image<?x?x3xui8>
}
// CHECK: invalid.mlir:[[# @LINE - 4]]:1: error: 'fkl.read' sample region takes one !fkl.image argument (the source)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
fkl.yield %0 : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.yield' expects parent op 'fkl.read'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
fkl.write %0, "d" planes [1, 1] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.write' planes must be distinct indices >= 0, got [1, 1]

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
fkl.split %0, "d" planes [-1] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.split' planes must be distinct indices >= 0, got [-1]

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
fkl.write %0, "d" planes [] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.write' planes must be distinct indices >= 0, got []

// ---- arithmetic ---------------------------------------------------------------------------------

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.mul %0, [1.0, 2.0] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.mul' has 2 values but the chain has 3 channels (give one value or one per channel)

// -----

%0 = fkl.read "src" : !fkl.image<?x?x1xf32>
%1 = fkl.add %0, [1.0, 2.0, 3.0, 4.0] : !fkl.image<?x?x1xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.add' has 4 values but the chain has 1 channels (give one value or one per channel)

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.mul %0, 0.5 : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.mul' value 0.5 is not representable in the chain's element type uint8; Cast to float first

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.add %0, 300 : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.add' value 300.0 is not representable in the chain's element type uint8; Cast to float first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.sub %0, [0, -1, 0] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.sub' value -1.0 is not representable in the chain's element type uint8; Cast to float first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x2xi8>
%1 = fkl.min %0, [-129, 0] : !fkl.image<?x?x2xi8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.min' value -129.0 is not representable in the chain's element type int8; Cast to float first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x1xi8>
%1 = fkl.max %0, nan : !fkl.image<?x?x1xi8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.max' value nan is not representable in the chain's element type int8; Cast to float first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x1xui16>
%1 = fkl.max %0, 65536 : !fkl.image<?x?x1xui16>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.max' value 65536.0 is not representable in the chain's element type uint16; Cast to float first

// -----

%0 = fkl.read "src" : !fkl.image<?x?x1xi16>
%1 = fkl.div %0, 0 : !fkl.image<?x?x1xi16>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.div' divides an integer chain (int16) by zero

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.div %0, [1, 0, 2] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.div' divides an integer chain (uint8) by zero

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = "fkl.sub"(%0) <{value = array<f64: 1.0>, slot = "s"}> : (!fkl.image<?x?x3xf32>) -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.sub' needs exactly one of an inline value or a parameter slot

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = "fkl.max"(%0) : (!fkl.image<?x?x3xf32>) -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.max' needs exactly one of an inline value or a parameter slot

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = "fkl.add"(%0) <{value = array<f64>}> : (!fkl.image<?x?x3xf32>) -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.add' needs at least one value

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.add %0, 1.0 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x3xf16>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.add' result type !fkl.image<?x?x3xf16> must equal its input type !fkl.image<?x?x3xf32>

// ---- casts --------------------------------------------------------------------------------------

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.cast %0 to ui8 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x3xi8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.cast' result element type must be ui8, got !fkl.image<?x?x3xi8>

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.saturate_cast %0 to ui8 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x1xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.saturate_cast' must keep the channel count (!fkl.image<?x?x3xf32> -> !fkl.image<?x?x1xui8>)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.cast %0 to i64 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x?xnone>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.cast' cannot cast to i64: not an fkl element type

// ---- fkl.crop -----------------------------------------------------------------------------------

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.crop %0, rects [[0, 0, 0, 4]] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' rect [0, 0, 0, 4] must have a positive width and height

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.crop %0, rects [[0, 0, 4, 4], [0, 0, 4, -2]] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 2>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' rect [0, 0, 4, -2] must have a positive width and height

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.crop %0, rects [[-1, 0, 4, 4]] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' rect [-1, 0, 4, 4] starts outside the image

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.crop %0, rects [[1, 2, 3]] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' rects must be groups of [x, y, w, h], got 3 numbers

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.crop %0, rects [] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' rects must be groups of [x, y, w, h], got 0 numbers

// ---- fkl.resize ---------------------------------------------------------------------------------

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.resize %0, size [0, 4], nearest : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' size must be [w, h] with positive values, got [0, 4]

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.resize %0, size [1, 2, 3], nearest : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' size must be [w, h] with positive values, got [1, 2, 3]

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.resize %0, size [4, 4], cubic : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' interpolation must be one of linear, nearest, got 'cubic'

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.resize %0, size [4, 4], linear : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' linear must produce float32, got uint8

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.resize %0, size [2, 3], nearest : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' nearest must produce uint8, got float32

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.resize %0, size [2, 3] : !fkl.image<?x?x3xf32>
// CHECK:      invalid.mlir:[[# @LINE - 1]]:33
// CHECK:      Expected ','

// ---- fkl.kernel ---------------------------------------------------------------------------------

// -----

fkl.kernel @k0 params !fkl.params<mul1: f32 x 3> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  %1 = fkl.mul %0, param "mul2" : !fkl.image<?x?x3xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 5]]:1: error: 'fkl.kernel' @k0: 'fkl.mul' uses unknown slot mul2

// -----

fkl.kernel @k1 params !fkl.params<mul1: f32 x 3> values {mul1 = [1.0, 2.0, 3.0], add9 = [1.0]} {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  %1 = fkl.mul %0, param "mul1" : !fkl.image<?x?x3xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 5]]:1: error: 'fkl.kernel' @k1: value for unknown slot add9

// -----

"fkl.kernel"() <{sym_name = "k2", params = !fkl.params<>}> ({
^bb0(%a : i32):
}) : () -> ()
// CHECK: invalid.mlir:[[# @LINE - 3]]:1: error: 'fkl.kernel' body takes no block arguments

// -----

fkl.kernel @k3 params i32 {
}
// CHECK: 'fkl.kernel' expects an !fkl.params type, got i32

// ---- The catalogue: one chunk per verifier rule of each op -------------------------------------

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.saturate %0, [0, 0], [9, 9, 9] : !fkl.image<?x?x3xui8>
// CHECK:      invalid.mlir:[[# @LINE - 1]]:23
// CHECK:      'fkl.saturate' needs lower and upper bounds of one length (or one value), got [0.0, 0.0] and [9.0, 9.0, 9.0]

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.saturate %0, 2.0, 1.0 : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.saturate' lower bound [2.0] is above the upper bound [1.0]

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.saturate %0, 0.5, 9 : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.saturate' value 0.5 is not representable in the chain's element type uint8; Cast to float first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x1xi1>
%1 = fkl.saturate %0, 0, 1 : !fkl.image<?x?x1xi1>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.saturate' clamps on a bool chain; Cast to an integer or float type first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xi16>
%1 = fkl.saturate_float %0 : !fkl.image<?x?x3xi16>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.saturate_float' needs a float chain, got int16

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.is_even %0 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x3xi1>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.is_even' needs an integer chain, got float32

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xi32>
%1 = fkl.is_even %0 : !fkl.image<?x?x3xi32> -> !fkl.image<?x?x3xi32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.is_even' result type must be !fkl.image<?x?x3xi1>, got !fkl.image<?x?x3xi32>

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.equal %0, 7 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.equal' result type must be !fkl.image<?x?x3xi1>, got !fkl.image<?x?x3xui8>

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xi1>
%1 = fkl.equal %0, 1 : !fkl.image<?x?x3xi1> -> !fkl.image<?x?x3xi1>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.equal' computes arithmetic on a bool chain

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.equal %0, 300 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xi1>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.equal'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.vector_and %0 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x1xi1>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.vector_and' needs a bool chain, got uint8

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.vector_reduce %0, sum : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x1xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.vector_reduce' reduction must be one of add, mul, max, min, got 'sum'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xi1>
%1 = fkl.vector_reduce %0, max : !fkl.image<?x?x3xi1> -> !fkl.image<?x?x1xi1>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.vector_reduce' reduces on a bool chain; Cast to an integer or float type first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x2xf32>
%1 = fkl.discard %0, 3 : !fkl.image<?x?x2xf32> -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.discard' keeps 3 channels of a chain of 2 (1 to 2)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x4xui8>
%1 = fkl.add_last %0, 1 : !fkl.image<?x?x4xui8> -> !fkl.image<?x?x?xnone>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.add_last' cannot append a channel to a chain of 4 (at most 4)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x2xui8>
%1 = fkl.add_last %0, 256 : !fkl.image<?x?x2xui8> -> !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.add_last' value 256.0 is not representable in the chain's element type uint8; Cast to float first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.vector_reorder %0, [0, 3] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x2xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.vector_reorder' channel indices [3] are out of range for a chain of 3 channels

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.vector_reorder %0, [0, 1, 2, 0, 1] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.vector_reorder' takes 1 to 4 channel indices, got 5

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.vector_reorder_rt %0, [2, -1] : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x2xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.vector_reorder_rt' channel indices [-1] are out of range for a chain of 3 channels

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.mxv_float3 %0, [[1, 0, 0], [0, 1, 0], [0, 0, 1]] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.mxv_float3' needs a chain of exactly float32 x 3, got uint8 x 3

// -----

%0 = fkl.read "s" : !fkl.image<?x?x4xf32>
%1 = fkl.mxv_float3 %0, [[1, 0, 0], [0, 1, 0], [0, 0, 1]] : !fkl.image<?x?x4xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.mxv_float3' needs a chain of exactly float32 x 3, got float32 x 4

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.mxv_float3 %0, [[1, 0], [0, 1]] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.mxv_float3' needs a 3x3 matrix, got 4 numbers

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.static_loop %0, pow 2.0, 3 : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.static_loop' body must be one of add, sub, mul, div, max, min (a binary op), got 'pow'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.static_loop %0, mul 2.0, 0 : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.static_loop' applies its op n >= 1 times, got 0

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xi16>
%1 = fkl.static_loop %0, div [1, 0, 2], 2 : !fkl.image<?x?x3xi16>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.static_loop' divides an integer chain (int16) by zero

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.static_loop %0, mul 0.5, 2 : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.static_loop' value 0.5 is not representable in the chain's element type uint8; Cast to float first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x4xui8>
%1 = fkl.color_conversion %0, RGB2GRAY : !fkl.image<?x?x4xui8> -> !fkl.image<?x?x1xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.color_conversion' RGB2GRAY needs 3 channels, the chain has 4

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.color_conversion %0, RGB2HSV : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.color_conversion' code must be one of RGB2BGR, BGR2RGB, RGB2RGBA, BGR2BGRA, RGBA2RGB, BGRA2BGR, RGB2BGRA, BGR2RGBA, RGBA2BGR, BGRA2RGB, RGBA2BGRA, BGRA2RGBA, RGB2GRAY, BGR2GRAY, RGBA2GRAY, BGRA2GRAY, GRAY2RGB, GRAY2BGR, got 'RGB2HSV'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xi1>
%1 = fkl.color_conversion %0, BGR2GRAY : !fkl.image<?x?x3xi1> -> !fkl.image<?x?x1xi1>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.color_conversion' computes gray on a bool chain; Cast to an integer or float type first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.border %0, mirror : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.border' mode must be one of constant, replicate, reflect, reflect101, wrap, got 'mirror'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = "fkl.border"(%0) <{mode = "wrap", value = array<f64: 1.0>}> : (!fkl.image<?x?x3xui8>) -> !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.border' takes a value only in constant mode, not wrap

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = "fkl.border"(%0) <{mode = "constant"}> : (!fkl.image<?x?x3xui8>) -> !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.border' needs exactly one of an inline value or a parameter slot

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.border %0, constant [1, 2] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.border' has 2 values but the chain has 3 channels (give one value or one per channel)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.resize %0, size [8, 8], linear, stretch, background 0 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' aspect ratio must be one of ignore, preserve, preserve_left, preserve_even, got 'stretch'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = "fkl.resize"(%0) <{interp = "linear", value = array<i64: 8, 8>, aspect_ratio = "preserve"}> : (!fkl.image<?x?x3xui8>) -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' aspect ratio 'preserve' needs a background value (background=...)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = "fkl.resize"(%0) <{interp = "linear", value = array<i64: 8, 8>, background = array<f64: 0.0>}> : (!fkl.image<?x?x3xui8>) -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' background is used only with a preserve aspect-ratio mode, not 'ignore'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.resize %0, size [8, 8], nearest, preserve, background [0, 0] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' has 2 values but the chain has 3 channels (give one value or one per channel)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x1xi1>
%1 = fkl.resize %0, size [8, 8], linear : !fkl.image<?x?x1xi1> -> !fkl.image<?x?x1xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' interpolates linearly on a bool chain; Cast to an integer or float type first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.warp %0, affine [[1, 0, 0], [0, 1, 0], [0, 0, 1]], size [8, 8] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.warp' affine needs a 2x3 matrix, got 9 numbers

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.warp %0, shear [[1, 0, 0], [0, 1, 0]], size [8, 8] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.warp' kind must be one of affine, perspective, got 'shear'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.warp %0, affine [[1, 0, 0], [0, 1, 0]], size [8, 0] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.warp' size must be [w, h] with positive values, got [8, 0]

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.warp %0, affine [[1, 0, inf], [0, 1, 0]], size [8, 8] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.warp' affine matrix must be finite, got [1.0, 0.0, inf, 0.0, 1.0, 0.0]

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.warp %0, affine [[1, 0, 0], [0, 1, 0]], size [8, 8] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.warp' result type must be !fkl.image<?x?x3xf32>, got !fkl.image<?x?x3xui8>

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.deinterlace %0, bob : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.deinterlace' mode must be one of blend, linear, got 'bob'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.deinterlace %0, blend : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.deinterlace' result type must be !fkl.image<?x?x3xf32>, got !fkl.image<?x?x3xui8>

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.flip %0, sideways : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.flip' mode must be one of vertical, horizontal, both, got 'sideways'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.flip %0, both : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.flip' result type must be !fkl.image<?x?x3xui8>, got !fkl.image<?x?x3xf32>

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.rotate %0, clockwise : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.rotate' code must be one of clockwise_90, turn_180, counterclockwise_90, got 'clockwise'

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.rotate %0, turn_180 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x1xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.rotate' result type must be !fkl.image<?x?x3xui8>, got !fkl.image<?x?x1xui8>

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.read_set %0, [1.0, 2.0], size [4, 4] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.read_set' has 2 values but the chain has 3 channels (give one value or one per channel)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.mul %0, 2.0 : !fkl.image<?x?x3xf32>
%2 = fkl.read_set %1, 1.0, size [4, 4] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.read_set' must directly follow fkl.read (it replaces what is read)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = "fkl.read_set"(%0) <{value = array<f64: 1.0>}> : (!fkl.image<?x?x3xf32>) -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.read_set' needs exactly one of an inline size or a parameter slot

// -----

%0 = fkl.read "s" : !fkl.image<?x?x1xi1>
%1 = fkl.add %0, 1 : !fkl.image<?x?x1xi1>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.add' computes arithmetic on a bool chain; Cast to an integer or float type first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.crop %0, rects [[-1, 0, 4, 4]] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' rect [-1, 0, 4, 4] starts outside the image; only a crop right after fkl.border may leave it

// ---- fkl.kernel: SSA dominance ------------------------------------------------------------------
// A kernel body is a sequence (emitters take its ops in text order): a value must be defined above
// its first use. The error points at the use and names the definition.

// -----

fkl.kernel @k4 params !fkl.params<> {
  %1 = fkl.mul %0, 2.0 : !fkl.image<?x?x3xf32>
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 4]]:3: error: 'fkl.mul' operand #0 is used before it is defined (defined by 'fkl.read' at line [[# @LINE - 3]]:3)

// -----

fkl.kernel @k5 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  fkl.write %2, "dst" : !fkl.image<?x?x3xf32>
  %1 = fkl.add %0, 1.0 : !fkl.image<?x?x3xf32>
  %2 = fkl.mul %1, 2.0 : !fkl.image<?x?x3xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 4]]:3: error: 'fkl.write' operand #0 is used before it is defined (defined by 'fkl.mul' at line [[# @LINE - 2]]:3)

// -----

// Inside a read's sample region, nested in a kernel: the same rule, at the nested use.
fkl.kernel @k6 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8> sample {
  ^bb0(%src: !fkl.image<?x?x3xui8>):
    %2 = fkl.resize %1, size [2, 2], nearest : !fkl.image<?x?x3xui8>
    %1 = fkl.crop %src, rects [[0, 0, 4, 4]] : !fkl.image<?x?x3xui8>
    fkl.yield %2 : !fkl.image<?x?x3xui8>
  }
  fkl.write %0, "dst" : !fkl.image<?x?x3xui8>
}
// CHECK: invalid.mlir:[[# @LINE - 6]]:5: error: 'fkl.resize' operand #0 is used before it is defined (defined by 'fkl.crop' at line [[# @LINE - 5]]:5)

// ---- fkl.kernel: parameter slots fit their uses (fkl.param_slot) --------------------------------
// A slot has the kind the op computes in and at least the elements it reads: a wrong kind is C++
// that does not compile, a short slot a read past its end. The error points at the op that reads it.

// -----

fkl.kernel @k0 params !fkl.params<max2: f16 x 1> values {max2 = [3.0]} {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf64>
  %1 = fkl.mul %0, param "max2" : !fkl.image<?x?x3xf64>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf64>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'fkl.mul' reads param "max2" as f64 x 3, but slot max2 of @k0 is f16 x 1

// -----

fkl.kernel @k0 params !fkl.params<mul1: f32 x 2> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  %1 = fkl.mul %0, param "mul1" : !fkl.image<?x?x3xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'fkl.mul' reads param "mul1" as f32 x 3, but slot mul1 of @k0 is f32 x 2

// -----

// Two ops share a slot: it must fit both (here the second, a ui8 chain, does not).
fkl.kernel @k0 params !fkl.params<s: f32 x 3> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  %1 = fkl.mul %0, param "s" : !fkl.image<?x?x3xf32>
  %2 = fkl.saturate_cast %1 to ui8 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x3xui8>
  %3 = fkl.add %2, param "s" : !fkl.image<?x?x3xui8>
  fkl.write %3, "dst" : !fkl.image<?x?x3xui8>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'fkl.add' reads param "s" as ui8 x 3, but slot s of @k0 is f32 x 3

// -----

// Saturate reads the C lower bounds, then the C upper ones.
fkl.kernel @k0 params !fkl.params<sat1: i16 x 2> {
  %0 = fkl.read "src" : !fkl.image<?x?x2xi16>
  %1 = fkl.saturate %0, param "sat1" : !fkl.image<?x?x2xi16>
  fkl.write %1, "dst" : !fkl.image<?x?x2xi16>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'fkl.saturate' reads param "sat1" as i16 x 4, but slot sat1 of @k0 is i16 x 2

// -----

fkl.kernel @k0 params !fkl.params<resize1: f32 x 2> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  %1 = fkl.resize %0, param "resize1", nearest : !fkl.image<?x?x3xui8>
  fkl.write %1, "dst" : !fkl.image<?x?x3xui8>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'fkl.resize' reads param "resize1" as i32 x 2, but slot resize1 of @k0 is f32 x 2

// -----

// The background is in the result's element type (f32 after a linear resize), not the chain's.
fkl.kernel @k0 params !fkl.params<rs: i32 x 2, bg: ui8 x 3> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  %1 = fkl.resize %0, param "rs", linear, preserve, background param "bg" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'fkl.resize' reads param "bg" as f32 x 3, but slot bg of @k0 is ui8 x 3

// -----

fkl.kernel @k0 params !fkl.params<w1: f64 x 6, w1_size: i32 x 2> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  %1 = fkl.warp %0, perspective param "w1", inverse, size param "w1_size" : !fkl.image<?x?x3xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'fkl.warp' reads param "w1" as f64 x 9, but slot w1 of @k0 is f64 x 6

// -----

fkl.kernel @k0 params !fkl.params<r1: i32 x 2> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  %1 = fkl.vector_reorder_rt %0, param "r1" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8>
  fkl.write %1, "dst" : !fkl.image<?x?x3xui8>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'fkl.vector_reorder_rt' reads param "r1" as i32 x 3, but slot r1 of @k0 is i32 x 2

// -----

// A crop reads one rect per output plane, or one rect that every plane shares.
fkl.kernel @k0 params !fkl.params<crop1: rect x 2> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  %1 = fkl.crop %0, param "crop1" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 3>
  fkl.split %1, "dst" : !fkl.image<?x?x3xui8, planes 3>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'fkl.crop' reads param "crop1" as rect x 3 (or rect x 1, shared by every plane), but slot crop1 of @k0 is rect x 2

// -----

fkl.kernel @k0 params !fkl.params<crop1: f32 x 4> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  %1 = fkl.crop %0, param "crop1" : !fkl.image<?x?x3xui8>
  fkl.write %1, "dst" : !fkl.image<?x?x3xui8>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'fkl.crop' reads param "crop1" as rect x 1 (or rect x 1, shared by every plane), but slot crop1 of @k0 is f32 x 4

// -----

// Per-plane rects need a known plane count: with `planes ?` only a shared rect fits.
fkl.kernel @k0 params !fkl.params<crop1: rect x 2> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8, planes ?>
  %1 = fkl.crop %0, param "crop1" : !fkl.image<?x?x3xui8, planes ?>
  fkl.split %1, "dst" : !fkl.image<?x?x3xui8, planes ?>
}
// CHECK: invalid.mlir:[[# @LINE - 3]]:3: error: 'fkl.crop' reads param "crop1" as rect x planes (or rect x 1, shared by every plane), but slot crop1 of @k0 is rect x 2

// -----

// Slot counts: at most int32 (a kernel indexes a slot with an int32), written without wrapping.
fkl.kernel @k0 params !fkl.params<max2: f64 x 99999999999999999999999> {
}
// CHECK:      !fkl.params: slot max2 count 99999999999999999999999 exceeds the limit 2147483647 (the kernel's int32 index)
// CHECK:      {{//}} -----

// -----

fkl.kernel @k0 params !fkl.params<crop1: rect x 2147483648> {
}
// CHECK:      !fkl.params: slot crop1 count 2147483648 exceeds the limit 2147483647 (the kernel's int32 index)
// CHECK:      {{//}} -----

// -----

// The values the host packs: one number per element (4 per rect), in the kind's range.
fkl.kernel @k0 params !fkl.params<crop1: rect x 2> values {crop1 = [0, 0, 4, 4]} {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  %1 = fkl.crop %0, param "crop1" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 2>
  fkl.split %1, "dst" : !fkl.image<?x?x3xui8, planes 2>
}
// CHECK: invalid.mlir:[[# @LINE - 5]]:1: error: 'fkl.kernel' @k0: slot crop1 (rect x 2) needs 8 numbers, got 4 numbers

// -----

fkl.kernel @k0 params !fkl.params<add1: ui8 x 3> values {add1 = [1.0, 300.0, 2.0]} {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  %1 = fkl.add %0, param "add1" : !fkl.image<?x?x3xui8>
  fkl.write %1, "dst" : !fkl.image<?x?x3xui8>
}
// CHECK: invalid.mlir:[[# @LINE - 5]]:1: error: 'fkl.kernel' @k0: slot add1 (ui8 x 3) holds [300.0], not integers in [0, 255]

// -----

fkl.kernel @k0 params !fkl.params<crop1: rect x 1> values {crop1 = [2147483648, 0, 4, 4]} {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  %1 = fkl.crop %0, param "crop1" : !fkl.image<?x?x3xui8>
  fkl.write %1, "dst" : !fkl.image<?x?x3xui8>
}
// CHECK: invalid.mlir:[[# @LINE - 5]]:1: error: 'fkl.kernel' @k0: slot crop1 (rect x 1) holds [2147483648], not integers in [-2147483648, 2147483647]

// -----

// A kernel value of 2^63 would wrap to -2^63 in its i64 array: refused where it is written.
fkl.kernel @k0 params !fkl.params<crop1: rect x 1> values {crop1 = [9223372036854775808, 0, 4, 4]} {
}
// CHECK:      invalid.mlir:[[# @LINE - 2]]:69
// CHECK:      'fkl.kernel' integer 9223372036854775808 exceeds the limit 9223372036854775807 (int64)

// -----

// A divergent kernel runs chain planemap[z] on plane z: an i32 slot whose values name its chains.
fkl.kernel @k0 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  fkl.write %0, "dst" : !fkl.image<?x?x3xf32>
  %1 = fkl.read "src" : !fkl.image<?x?x3xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 6]]:1: error: 'fkl.kernel' @k0 has 2 chains but no slot planemap (i32 x planes)

// -----

fkl.kernel @k0 params !fkl.params<planemap: f32 x 2> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  fkl.write %0, "dst" : !fkl.image<?x?x3xf32>
  %1 = fkl.read "src" : !fkl.image<?x?x3xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 6]]:1: error: 'fkl.kernel' @k0: slot planemap must be i32 (a chain index per plane), got f32

// -----

fkl.kernel @k0 params !fkl.params<planemap: i32 x 3> values {planemap = [0, 2, 1]} {
  %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  fkl.write %0, "dst" : !fkl.image<?x?x3xf32>
  %1 = fkl.read "src" : !fkl.image<?x?x3xf32>
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 6]]:1: error: 'fkl.kernel' @k0: planemap values [2] name no chain (it has 2)

// ---- int32: rects, sizes, counts and planes as the kernels hold them -----------------------------

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.crop %0, rects [[2147483648, 0, 4, 4]] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' rect [2147483648, 0, 4, 4]: x = 2147483648 exceeds the limit 2147483647 (the kernel's int32 index)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.crop %0, rects [[2147483647, 0, 1, 4], [2147483647, 0, 2, 4]] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' rect [2147483647, 0, 2, 4]: x + w - 1 = 2147483648 exceeds the limit 2147483647 (the kernel's int32 index)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.crop %0, rects [[0, 0, 4, 4294967299]] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' rect [0, 0, 4, 4294967299]: h = 4294967299 exceeds the limit 2147483647 (the kernel's int32 index)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%b = fkl.border %0, reflect : !fkl.image<?x?x3xui8>
%1 = fkl.crop %b, rects [[-2, -2147483649, 4, 4]] : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' rect [-2, -2147483649, 4, 4]: y = -2147483649 is below the limit -2147483648

// -----

// 2^63 does not fit the i64 array (xDSL would store -2^63): refused at the number.
%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%b = fkl.border %0, reflect : !fkl.image<?x?x3xui8>
%1 = fkl.crop %b, rects [[9223372036854775808, 0, 4, 4]] : !fkl.image<?x?x3xui8>
// CHECK:      invalid.mlir:[[# @LINE - 1]]:27
// CHECK:      'fkl.crop' integer 9223372036854775808 exceeds the limit 9223372036854775807 (int64)

// -----

// The generic form goes through xDSL's own array parser, which stores 2^63 as -2^63: that value
// is below int32, and refused by the verifier.
%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%b = fkl.border %0, reflect : !fkl.image<?x?x3xui8>
%1 = "fkl.crop"(%b) <{value = array<i64: 9223372036854775808, 0, 4, 4>}> : (!fkl.image<?x?x3xui8>) -> !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.crop' rect [-9223372036854775808, 0, 4, 4]: x = -9223372036854775808 is below the limit -2147483648

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8>
%1 = fkl.resize %0, size [4294967299, 1], nearest : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' size [4294967299, 1]: w = 4294967299 exceeds the limit 2147483647 (the kernel's int32 index)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.read_set %0, 1.0, size [7, 2147483648] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.read_set' size [7, 2147483648]: h = 2147483648 exceeds the limit 2147483647 (the kernel's int32 index)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.warp %0, affine [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], size [4294967296, 8] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.warp' size [4294967296, 8]: w = 4294967296 exceeds the limit 2147483647 (the kernel's int32 index)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.static_loop %0, mul 2.0, 2147483648 : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.static_loop': n = 2147483648 exceeds the limit 2147483647 (the kernel's int32 index)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
fkl.write %0, "d" planes [0, 2147483648] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.write' planes: plane = 2147483648 exceeds the limit 2147483647 (the kernel's int32 index)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.mul %0, 1000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000 : !fkl.image<?x?x3xf32>
// CHECK:      invalid.mlir:[[# @LINE - 1]]:18
// CHECK:      integer literal beyond the f64 range (+-1.79769e+308)

// -----

// Per-plane values (fkl.per_image): one row per plane, each a value or one per channel.
%0 = fkl.read "s" : !fkl.image<?x?x3xf32, planes 2>
%1 = fkl.mul %0, per_plane [1.0, 2.0, 3.0] : !fkl.image<?x?x3xf32, planes 2>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.mul' has 3 per-plane values for 2 planes (give one row of values per plane)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32, planes 2>
%1 = fkl.mul %0, per_plane [1.0, 2.0, 3.0, 4.0] : !fkl.image<?x?x3xf32, planes 2>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.mul' has 2 values but the chain has 3 channels (give one value or one per channel)

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xf32>
%1 = fkl.saturate %0, per_plane [5.0, 1.0] : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.saturate' needs per-plane rows of lo then hi, lo <= hi; got [5.0, 1.0]

// -----

fkl.kernel @k0 params !fkl.params<mul1: f32 x 3> {
  %0 = fkl.read "s" : !fkl.image<?x?x3xf32, planes 2>
  %1 = fkl.mul %0, per_plane param "mul1" : !fkl.image<?x?x3xf32, planes 2>
// CHECK: invalid.mlir:[[# @LINE - 1]]:3: error: 'fkl.mul' reads param "mul1" as f32 x 6, but slot mul1 of @k0 is f32 x 3
  fkl.write %1, "dst" : !fkl.image<?x?x3xf32, planes 2>
}

// -----

%0 = fkl.read "s" : !fkl.image<?x?x1xf32, planes 3>
%1 = fkl.warp %0, affine per_plane [[1, 0, 0], [0, 1, 0], [2, 0, 0], [0, 2, 0]], size [8, 8] : !fkl.image<?x?x1xf32, planes 3>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.warp' affine needs a 2x3 matrix per plane, got 4 numbers each

// -----

%0 = fkl.read "s" : !fkl.image<?x?x1xui8, planes 2>
%1 = fkl.border %0, constant per_plane [0, 256] : !fkl.image<?x?x1xui8, planes 2>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.border' value 256.0 is not representable in the chain's element type uint8; Cast to float first

// -----

%0 = fkl.read "s" : !fkl.image<?x?x3xui8, planes 2>
%1 = fkl.resize %0, size [8, 8], linear, preserve, background per_plane [1, 2, 3] : !fkl.image<?x?x3xui8, planes 2> -> !fkl.image<?x?x3xf32, planes 2>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.resize' has 3 per-plane values for 2 planes (give one row of values per plane)

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.read "in1" : !fkl.image<?x?x1xf32>
%2 = fkl.cast %1 to f32 : !fkl.image<?x?x1xf32> -> !fkl.image<?x?x1xf32>
%3 = "fkl.join"(%0, %2) <{kind = "add"}> : (!fkl.image<?x?x3xf32>, !fkl.image<?x?x1xf32>) -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.join' joins !fkl.image<?x?x3xf32> (the result of 'fkl.read') and !fkl.image<?x?x1xf32> (the result of 'fkl.cast'): the images must have one element type, channel count and plane count

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.read "in1" : !fkl.image<?x?x3xui8>
%2 = fkl.join div %0, %1 : !fkl.image<?x?x3xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.join' div of two uint8 images: an integer divisor may be 0; Cast to float first

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.join pow %0, %0 : !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.join' kind must be one of add, sub, mul, div, max, min, absdiff, equal, got 'pow'

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xi1>
%1 = fkl.join add %0, %0 : !fkl.image<?x?x3xi1>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.join' computes add

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = "fkl.blend"(%0, %0) <{value = array<f64: 0.5, 0.25>}> : (!fkl.image<?x?x3xf32>, !fkl.image<?x?x3xf32>) -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.blend' takes one alpha, a number (not NaN), got [0.5, 0.25]

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.read "in1" : !fkl.image<?x?x2xui8>
%2 = fkl.composite %0, %0, %1 : !fkl.image<?x?x3xui8>, !fkl.image<?x?x2xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.composite' mask !fkl.image<?x?x2xui8> (the result of 'fkl.read'): a mask has 1 channel or one per channel of the image (3)

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.read "in1" : !fkl.image<?x?x1xi16>
%2 = fkl.composite %0, %0, %1 : !fkl.image<?x?x3xui8>, !fkl.image<?x?x1xi16>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.composite' mask !fkl.image<?x?x1xi16> (the result of 'fkl.read'): a mask is uint8 (m = mask / 255), bool or float, not int16

// -----

fkl.kernel @k0 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x1xf32>
  %1 = fkl.join add %0, %0 : !fkl.image<?x?x1xf32>
  %2 = fkl.join sub %0, %0 : !fkl.image<?x?x1xf32>
  fkl.write %2, "out0" : !fkl.image<?x?x1xf32>
}
// CHECK: invalid.mlir:[[# @LINE - 4]]:3: error: 'fkl.join' result is never used: every value of a graph must reach a write

// -----

fkl.kernel @k0 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x1xf32>
  %1 = fkl.join add %0, %0 : !fkl.image<?x?x1xf32>
  fkl.write %1, "out0" : !fkl.image<?x?x1xf32>
  %2 = fkl.read "b" : !fkl.image<?x?x1xf32>
  fkl.write %2, "b_out" : !fkl.image<?x?x1xf32>
}
// CHECK: error: 'fkl.kernel' @k0: a kernel with a graph (joined or forked values) holds that one graph only

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xi1>
%1 = fkl.blend %0, %0, 0.5 : !fkl.image<?x?x3xi1>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.blend' blends on a bool chain

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8, planes 2>
%1 = fkl.read "in1" : !fkl.image<?x?x1xui8>
%2 = fkl.composite %0, %0, %1 : !fkl.image<?x?x3xui8, planes 2>, !fkl.image<?x?x1xui8>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.composite' mask !fkl.image<?x?x1xui8> (the result of 'fkl.read'): the mask must have the image's 2 plane(s)

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.read "in1" : !fkl.image<?x?x3xf32, planes 2>
%2 = "fkl.blend"(%0, %1) <{value = array<f64: 0.5>}> : (!fkl.image<?x?x3xf32>, !fkl.image<?x?x3xf32, planes 2>) -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.blend' joins !fkl.image<?x?x3xf32> (the result of 'fkl.read') and !fkl.image<?x?x3xf32, planes 2> (the result of 'fkl.read'): the images must have one element type, channel count and plane count

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = "fkl.blend"(%0, %0) : (!fkl.image<?x?x3xf32>, !fkl.image<?x?x3xf32>) -> !fkl.image<?x?x3xf32>
// CHECK: invalid.mlir:[[# @LINE - 1]]:1: error: 'fkl.blend' needs exactly one of an inline value or a parameter slot
