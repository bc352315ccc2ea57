// XFAIL: *
// RUN: not fklir-opt %s -p fkl-default-pipeline -t cpp 2>&1 | filecheck %s

// KNOWN BUG (reported to the lead; remove the XFAIL line once fixed): fkl-batch-divergent puts
// chains that read DIFFERENT buffers ("src" and "other") into one kernel, and the emitter's
// _check_divergent only rejects pointer tables, so both chains' stage0 read `p.h.src`: chain 1
// silently reads "src" instead of "other". Expected: an error naming the buffers (from the pass or
// the emitter), exit 1 -- or a header with one source per chain.

%a0 = fkl.read "src" : !fkl.image<?x?x1xf32>
%a1 = fkl.add %a0, 1.0 : !fkl.image<?x?x1xf32>
fkl.write %a1, "dst" planes [0] : !fkl.image<?x?x1xf32>
%b0 = fkl.read "other" : !fkl.image<?x?x1xf32>
%b1 = fkl.mul %b0, 2.0 : !fkl.image<?x?x1xf32>
fkl.write %b1, "dst" planes [1] : !fkl.image<?x?x1xf32>

// CHECK-NOT:  Traceback
// CHECK:      error: {{.*}}other
// CHECK-NOT:  Traceback
