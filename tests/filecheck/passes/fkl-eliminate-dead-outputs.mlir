// RUN: fklir-opt %s --split-input-file -p 'fkl-eliminate-dead-outputs{outputs=out0}' | filecheck %s
// RUN: fklir-opt %s --split-input-file -p 'fkl-eliminate-dead-outputs{outputs="out0,out1"}' | filecheck %s --check-prefix=BOTH
// RUN: fklir-opt %s --split-input-file -p fkl-eliminate-dead-outputs | filecheck %s --check-prefix=NONE

// Output 0 dropped: its join and the branch that fed only it go too; the graph becomes a chain.
%a = fkl.read "src" : !fkl.image<?x?x3xf32>
%b = fkl.read "in1" : !fkl.image<?x?x3xf32>
%r = fkl.resize %b, size [4, 4], nearest : !fkl.image<?x?x3xf32>
%d = fkl.join absdiff %a, %r : !fkl.image<?x?x3xf32>
fkl.write %d, "out0" : !fkl.image<?x?x3xf32>
%n = fkl.mul %a, 2.0 : !fkl.image<?x?x3xf32>
fkl.write %n, "out1" : !fkl.image<?x?x3xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %a = fkl.read "src" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    %n = fkl.mul %a, 2.0 : !fkl.image<?x?x3xf32>
// CHECK-NEXT:    fkl.write %n, "out1" : !fkl.image<?x?x3xf32>
// CHECK-NEXT:  }

// BOTH-LABEL: builtin.module {
// BOTH-NEXT:  }

// NONE-LABEL: builtin.module {
// NONE-COUNT-2: fkl.write

// -----

// A value another rewrite left without a use (%x) is dead with or without names.
%a = fkl.read "src" : !fkl.image<?x?x1xf32>
%x = fkl.add %a, 1.0 : !fkl.image<?x?x1xf32>
%y = fkl.sub %a, 1.0 : !fkl.image<?x?x1xf32>
fkl.write %y, "out1" : !fkl.image<?x?x1xf32>

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    %a = fkl.read "src" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    %y = fkl.sub %a, 1.0 : !fkl.image<?x?x1xf32>
// CHECK-NEXT:    fkl.write %y, "out1" : !fkl.image<?x?x1xf32>
// CHECK-NEXT:  }

// BOTH-LABEL: builtin.module {
// BOTH-NEXT:  }

// NONE-LABEL: builtin.module {
// NONE-NOT:      fkl.add
// NONE:          fkl.sub
