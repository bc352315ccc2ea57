// RUN: FKL_ROUNDTRIP

// Values the custom syntax spells itself: nan, inf, ninf, and integers of more than 6 digits (the
// extremes of i32 and ui32) print as exact literals and read back unchanged.

%f = fkl.read "f" : !fkl.image<?x?x3xf32>
%special = fkl.mul %f, [nan, inf, ninf] : !fkl.image<?x?x3xf32>
%nan = fkl.max %f, nan : !fkl.image<?x?x3xf32>
%ninf = fkl.min %f, [ninf, -1.0e+308, 5.0e-324] : !fkl.image<?x?x3xf32>
%i = fkl.read "i" : !fkl.image<?x?x2xi32>
%i32 = fkl.sub %i, [-2147483648, 2147483647] : !fkl.image<?x?x2xi32>
%u = fkl.read "u" : !fkl.image<?x?x1xui32>
%u32 = fkl.add %u, 4294967295 : !fkl.image<?x?x1xui32>
%seven = fkl.add %u, 1234567 : !fkl.image<?x?x1xui32>

// CHECK:      %special = fkl.mul %f, [nan, inf, ninf] : !fkl.image<?x?x3xf32>
// CHECK-NEXT: %nan = fkl.max %f, nan : !fkl.image<?x?x3xf32>
// CHECK-NEXT: %ninf = fkl.min %f, [ninf, -1.0e+308, 5.0e-324] : !fkl.image<?x?x3xf32>
// CHECK:      %i32 = fkl.sub %i, [-2147483648.0, 2147483647.0] : !fkl.image<?x?x2xi32>
// CHECK:      %u32 = fkl.add %u, 4294967295.0 : !fkl.image<?x?x1xui32>
// CHECK-NEXT: %seven = fkl.add %u, 1234567.0 : !fkl.image<?x?x1xui32>
