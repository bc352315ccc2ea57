// RUN: fklir-opt %s -p fkl-outline-kernels | filecheck %s

// the COUNT of existing kernels, not a free name. With an existing @k1 the new chain is also named
// @k1 and the module fails to verify ("Redefinition of symbol "k1"", exit 1). Expected: a fresh
// name such as @k2 (or @k0), the existing @k1 untouched.

fkl.kernel @k1 params !fkl.params<> {
  %0 = fkl.read "x" : !fkl.image<?x?x3xui8>
  fkl.write %0, "y" : !fkl.image<?x?x3xui8>
}
%a0 = fkl.read "a" : !fkl.image<?x?x3xui8>
fkl.write %a0, "a_out" : !fkl.image<?x?x3xui8>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    fkl.kernel @k1 params !fkl.params<> {
// CHECK-NEXT:      %0 = fkl.read "x" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      fkl.write %0, "y" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    }
// CHECK-NEXT:    fkl.kernel @{{k0|k[2-9]}} params !fkl.params<> {
// CHECK-NEXT:      %a0 = fkl.read "a" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:      fkl.write %a0, "a_out" : !fkl.image<?x?x3xui8>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
