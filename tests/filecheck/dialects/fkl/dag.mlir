// RUN: FKL_ROUNDTRIP
// RUN: FKL_GENERIC_ROUNDTRIP --check-prefix=CHECK
// RUN: fklir-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// SPEC §8's ops that join branches, in a graph of three reads and three writes (a fork after the join).
%f = fkl.read "src" : !fkl.image<?x?x3xui8>
%c = fkl.cast %f to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
%b = fkl.read "in1" : !fkl.image<?x?x3xui8>
%bc = fkl.cast %b to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
%d = fkl.join absdiff %c, %bc : !fkl.image<?x?x3xf32>
fkl.write %d, "out0" : !fkl.image<?x?x3xf32>
%e = fkl.join equal %f, %b : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xi1>
fkl.write %e, "out1" : !fkl.image<?x?x3xi1>
%m = fkl.blend %c, %bc, 0.25 : !fkl.image<?x?x3xf32>
%k = fkl.read "in2" : !fkl.image<?x?x1xui8>
%q = fkl.composite %m, %c, %k : !fkl.image<?x?x3xf32>, !fkl.image<?x?x1xui8>
%s = fkl.join max %q, %d : !fkl.image<?x?x3xf32>
fkl.write %s, "out2" : !fkl.image<?x?x3xf32>
fkl.kernel @k0 params !fkl.params<blend1: f64 x 1> values {blend1 = [0.5]} {
  %x = fkl.read "src" : !fkl.image<?x?x1xf32>
  %y = fkl.read "in1" : !fkl.image<?x?x1xf32>
  %z = fkl.blend %x, %y, param "blend1" : !fkl.image<?x?x1xf32>
  fkl.write %z, "out0" : !fkl.image<?x?x1xf32>
  fkl.write %x, "out1" : !fkl.image<?x?x1xf32>
}

// CHECK:      %d = fkl.join absdiff %c, %bc : !fkl.image<?x?x3xf32>
// CHECK:      %e = fkl.join equal %f, %b : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xi1>
// CHECK:      %m = fkl.blend %c, %bc, 0.25 : !fkl.image<?x?x3xf32>
// CHECK:      %q = fkl.composite %m, %c, %k : !fkl.image<?x?x3xf32>, !fkl.image<?x?x1xui8>
// CHECK:      %s = fkl.join max %q, %d : !fkl.image<?x?x3xf32>
// CHECK:      fkl.kernel @k0 params !fkl.params<blend1: f64 x 1> values {blend1 = [0.5]} {
// CHECK:        %z = fkl.blend %x, %y, param "blend1" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:   fkl.write %z, "out0" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:   fkl.write %x, "out1" : !fkl.image<?x?x1xf32>

// GENERIC: "fkl.join"(%c, %bc) <{kind = "absdiff"}>
// GENERIC: "fkl.blend"(%c, %bc) <{value = array<f64: 2.500000e-01>}>
// GENERIC: "fkl.composite"(%m, %c, %k)
