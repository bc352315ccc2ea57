// `-t cpp` / `-t cuda` on IR the emitter cannot take: a one-line error that says which pass is
// missing, exit code 1, no traceback. As in errors.mlir, fklir-opt stops at the first failing
// chunk, so each pipeline below reaches a different chunk.

// RUN: sh -c 'fklir-opt %s --split-input-file -t cpp; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=NOKERNEL
// RUN: sh -c 'fklir-opt %s --split-input-file -p fkl-outline-kernels -t cuda; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=INLINE
// RUN: sh -c 'fklir-opt %s --split-input-file -p fkl-outline-kernels,fkl-hoist-params -t cpp; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=UNTYPED
// RUN: sh -c 'fklir-opt %s --split-input-file -p fkl-infer-types,fkl-outline-kernels,fkl-hoist-params -t cpp; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=NOWRITE

// Chunk 1: a typed chain with an inline value.
%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.add %0, 1.0 : !fkl.image<?x?x3xf32>
fkl.write %1, "dst" : !fkl.image<?x?x3xf32>

// NOKERNEL-NOT: Traceback
// NOKERNEL:     error: no fkl.kernel to emit: run fkl-default-pipeline first
// NOKERNEL-NOT: Traceback
// NOKERNEL:     exit code 1

// INLINE-NOT:   Traceback
// INLINE:       error: 'fkl.add' still has an inline value: run fkl-hoist-params before emission
// INLINE-NOT:   Traceback
// INLINE:       exit code 1

// -----

// Chunk 2: result types never inferred.
%0 = fkl.read "src" : !fkl.image<?x?x3xui8>
%1 = fkl.cast %0 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x?xnone>
fkl.write %1, "dst" : !fkl.image<?x?x?xnone>

// Chunk 1 emits fine (it precedes the error), chunk 2 does not.
// UNTYPED:      // ---- fkl.kernel @k0 (target cpp) ----
// UNTYPED-NOT:  Traceback
// UNTYPED:      error: {{.*}}run fkl-infer-types first
// UNTYPED-NOT:  Traceback
// UNTYPED:      exit code 1

// -----

// Chunk 3: a kernel that does not end in a write (fkl-validate-chain was not run).
fkl.kernel @k0 params !fkl.params<> {
  %0 = fkl.read "src" : !fkl.image<?x?x3xui8>
  %1 = fkl.cast %0 to f32 : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>
}

// NOWRITE-NOT:  Traceback
// NOWRITE:      error: 'fkl.cast' result is never written: a chain must end with fkl.write or fkl.split
// NOWRITE-NOT:  Traceback
// NOWRITE:      exit code 1
