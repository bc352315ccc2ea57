// RUN: not fklir-opt %s -p fkl-default-pipeline -t cpp 2>&1 | filecheck %s

// fkl-batch-divergent refuses to put chains that read different buffers ("src" and "other") into
// one kernel: a divergent kernel has one source, so the error names both.

%a0 = fkl.read "src" : !fkl.image<?x?x1xf32>
%a1 = fkl.add %a0, 1.0 : !fkl.image<?x?x1xf32>
fkl.write %a1, "dst" planes [0] : !fkl.image<?x?x1xf32>
%b0 = fkl.read "other" : !fkl.image<?x?x1xf32>
%b1 = fkl.mul %b0, 2.0 : !fkl.image<?x?x1xf32>
fkl.write %b1, "dst" planes [1] : !fkl.image<?x?x1xf32>

// CHECK-NOT:  Traceback
// CHECK:      error: {{.*}}other
// CHECK-NOT:  Traceback
