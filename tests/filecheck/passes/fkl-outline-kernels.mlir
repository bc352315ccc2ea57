// RUN: fklir-opt %s --split-input-file -p fkl-outline-kernels | filecheck %s

// Two chains become @k0 and @k1, in chain order, each with an empty parameter block; the ops keep
// their inline values (hoisting is a separate pass).
%a0 = fkl.read "a" : !fkl.image<?x?x3xui8>
%a1 = fkl.add %a0, 1 : !fkl.image<?x?x3xui8>
fkl.write %a1, "a_out" : !fkl.image<?x?x3xui8>
%b0 = fkl.read "b" : !fkl.image<?x?x1xf32>
%b1 = fkl.crop %b0, rects [[0, 0, 2, 2]] : !fkl.image<?x?x1xf32>
fkl.split %b1, "b_out" : !fkl.image<?x?x1xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<> {
// CHECK-NEXT:      %a0 = fkl.read "a" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      %a1 = fkl.add %a0, 1.0 : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      fkl.write %a1, "a_out" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    }
// CHECK-NEXT:    fkl.kernel @k1 params !fkl.params<> {
// CHECK-NEXT:      %b0 = fkl.read "b" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      %b1 = fkl.crop %b0, rects {{\[}}[0, 0, 2, 2]] : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      fkl.split %b1, "b_out" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// -----

// Interleaved chains: each kernel takes exactly the ops of its own chain, and sits where its chain
// ended.
%a0 = fkl.read "a" : !fkl.image<?x?x3xf32>
%b0 = fkl.read "b" : !fkl.image<?x?x3xf32>
%a1 = fkl.mul %a0, 2.0 : !fkl.image<?x?x3xf32>
%b1 = fkl.sub %b0, 3.0 : !fkl.image<?x?x3xf32>
fkl.write %b1, "b_out" : !fkl.image<?x?x3xf32>
fkl.write %a1, "a_out" : !fkl.image<?x?x3xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k1 params !fkl.params<> {
// CHECK-NEXT:      %b0 = fkl.read "b" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:      %b1 = fkl.sub %b0, 3.0 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:      fkl.write %b1, "b_out" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<> {
// CHECK-NEXT:      %a0 = fkl.read "a" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:      %a1 = fkl.mul %a0, 2.0 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:      fkl.write %a1, "a_out" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// -----

// Numbering continues after the kernels that already exist; existing kernels are left alone.
fkl.kernel @k0 params !fkl.params<> {
  %0 = fkl.read "x" : !fkl.image<?x?x3xui8>
  fkl.write %0, "y" : !fkl.image<?x?x3xui8>
}
%a0 = fkl.read "a" : !fkl.image<?x?x3xui8>
fkl.write %a0, "a_out" : !fkl.image<?x?x3xui8>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<> {
// CHECK-NEXT:      %0 = fkl.read "x" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      fkl.write %0, "y" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    }
// CHECK-NEXT:    fkl.kernel @k1 params !fkl.params<> {
// CHECK-NEXT:      %a0 = fkl.read "a" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      fkl.write %a0, "a_out" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// -----

// No chain: nothing to outline.
fkl.kernel @only params !fkl.params<> {
  %0 = fkl.read "x" : !fkl.image<?x?x3xui8>
  fkl.write %0, "y" : !fkl.image<?x?x3xui8>
}

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @only params !fkl.params<> {
// CHECK-NEXT:      %0 = fkl.read "x" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      fkl.write %0, "y" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NOT:   fkl.kernel

// -----

// A DAG is one kernel: its reads, joins and writes, in block order.
%0 = fkl.read "src" : !fkl.image<?x?x1xf32>
%1 = fkl.read "in1" : !fkl.image<?x?x1xf32>
%2 = fkl.join add %0, %1 : !fkl.image<?x?x1xf32>
fkl.write %2, "out0" : !fkl.image<?x?x1xf32>
fkl.write %0, "out1" : !fkl.image<?x?x1xf32>
%3 = fkl.read "b" : !fkl.image<?x?x1xf32>
fkl.write %3, "b_out" : !fkl.image<?x?x1xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k0 params !fkl.params<> {
// CHECK-NEXT:      %0 = fkl.read "src" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      %1 = fkl.read "in1" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      %2 = fkl.join add %0, %1 : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      fkl.write %2, "out0" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      fkl.write %0, "out1" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    fkl.kernel @k1 params !fkl.params<> {
// CHECK-NEXT:      %{{.*}} = fkl.read "b" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:      fkl.write %{{.*}}, "b_out" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
