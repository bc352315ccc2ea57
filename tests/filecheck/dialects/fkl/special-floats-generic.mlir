// XFAIL: *
// RUN: FKL_GENERIC_ROUNDTRIP
// RUN: fklir-opt %s -p fkl-default-pipeline | fklir-opt | filecheck %s --check-prefix=HOISTED

// KNOWN BUG (reported to the lead; remove the XFAIL line once fixed): values live in an
// `array<f64: ...>` property. xDSL prints an f64 element that has no exact 6-digit decimal form and
// no '.' in its %.17g form -- NaN, +-inf, and integers of more than 6 digits such as 1234567 or
// 4294967295 -- as hex (`0x7FF8000000000000`), and xDSL's dense-array parser rejects hex. So the
// generic form of such an op, and the `values` of every hoisted kernel holding one, do not parse
// back ("Expected float literal").

%f = fkl.read "f" : !fkl.image<?x?x3xf32>
%special = fkl.mul %f, [nan, inf, ninf] : !fkl.image<?x?x3xf32>
%u = fkl.cast %special to ui32 : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x3xui32>
%big = fkl.add %u, [4294967295, 1234567, 7] : !fkl.image<?x?x3xui32>
fkl.write %big, "dst" : !fkl.image<?x?x3xui32>

// CHECK-GENERIC:      %special = fkl.mul %f, [nan, inf, ninf] : !fkl.image<?x?x3xf32>
// CHECK-GENERIC:      %big = fkl.add %u, [4294967295.0, 1234567.0, 7.0] : !fkl.image<?x?x3xui32>

// HOISTED:      fkl.kernel @k0 params !fkl.params<mul1: f32 x 3, add3: ui32 x 3>
// HOISTED-SAME: values {mul1 = [{{.+}}], add3 = [{{.+}}]}
// HOISTED:      %special = fkl.mul %f, param "mul1"
// HOISTED:      %big = fkl.add %u, param "add3"
