// RUN: fklir-opt %s --split-input-file -p fkl-backward-fusion,fkl-cse | filecheck %s

// Two branches of one DAG read "in1" through the same resize and cast it alike: one read, one cast.
%x = fkl.read "src" : !fkl.image<?x?x3xui8>
%xf = fkl.cast %x to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
%a = fkl.read "in1" : !fkl.image<?x?x3xui8>
%r = fkl.resize %a, size [4, 4], nearest : !fkl.image<?x?x3xui8>
%b = fkl.cast %r to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
%c = fkl.join add %xf, %b : !fkl.image<?x?x3xf32>
%d = fkl.read "in1" : !fkl.image<?x?x3xui8>
%r2 = fkl.resize %d, size [4, 4], nearest : !fkl.image<?x?x3xui8>
%e = fkl.cast %r2 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
%f = fkl.join mul %c, %e : !fkl.image<?x?x3xf32>
fkl.write %f, "out0" : !fkl.image<?x?x3xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %x = fkl.read "src" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    %xf = fkl.cast %x to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %a = fkl.read "in1" : !fkl.image<?x?x3xui8> sample {
// CHECK:         %b = fkl.cast %a to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %c = fkl.join add %xf, %b : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %f = fkl.join mul %c, %b : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    fkl.write %f, "out0" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:  }

// -----

// Other geometry (another size), another buffer or another cast: nothing merges.
%x = fkl.read "src" : !fkl.image<?x?x1xf32>
%a = fkl.read "in1" : !fkl.image<?x?x1xf32>
%r = fkl.resize %a, size [4, 4], nearest : !fkl.image<?x?x1xf32>
%c = fkl.join add %x, %r : !fkl.image<?x?x1xf32>
%d = fkl.read "in1" : !fkl.image<?x?x1xf32>
%r2 = fkl.resize %d, size [4, 5], nearest : !fkl.image<?x?x1xf32>
%e = fkl.join sub %c, %r2 : !fkl.image<?x?x1xf32>
%g = fkl.read "in2" : !fkl.image<?x?x1xf32>
%h = fkl.join max %e, %g : !fkl.image<?x?x1xf32>
fkl.write %h, "out0" : !fkl.image<?x?x1xf32>

// CHECK-LABEL: builtin.module {
// CHECK-COUNT-3: fkl.read "in
// CHECK-NOT:     fkl.read

// -----

// The same read in two separate chains (as a divergent batch has them) stays two reads: merging would join
// the chains into one graph.
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.mul %0, 2.0 : !fkl.image<?x?x3xf32>
fkl.write %1, "dst" planes [0] : !fkl.image<?x?x3xf32>
%2 = fkl.read "src" : !fkl.image<?x?x3xf32>
%3 = fkl.add %2, 1.0 : !fkl.image<?x?x3xf32>
fkl.write %3, "dst" planes [1] : !fkl.image<?x?x3xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %0 = fkl.read "src" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %1 = fkl.mul %0, 2.0 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    fkl.write %1, "dst" planes [0] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %2 = fkl.read "src" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %3 = fkl.add %2, 1.0 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    fkl.write %3, "dst" planes [1] : !fkl.image<?x?x3xf32>
// CHECK-NEXT:  }
