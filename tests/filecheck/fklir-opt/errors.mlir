// How fklir-opt reports bad input: `FILE:LINE:COL: error: message` on stderr, exit code 1, never a
// Python traceback. The file has three chunks; without --verify-diagnostics fklir-opt stops at the
// first chunk that fails, so each RUN line reaches a different error:
//   chunk 1 (valid ops, but a dead end) -> a pass error under -p fkl-validate-chain;
//   chunk 2 (0.5 on a ui8 chain)        -> a verifier error when chunk 1 is not checked by a pass;
//   chunk 3 (a missing `]`)             -> a parse error when nothing is verified.
// `sh -c '...; echo "exit code $?"'` pins the exit status itself (lit's `not` accepts any failure).

// RUN: sh -c 'fklir-opt %s --split-input-file -p fkl-validate-chain; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=PASS
// RUN: sh -c 'fklir-opt %s --split-input-file; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=VERIFY
// RUN: sh -c 'fklir-opt %s --split-input-file --disable-verify; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=PARSE
// RUN: not fklir-opt --split-input-file < %s 2>&1 | filecheck %s --check-prefix=STDIN
// RUN: sh -c 'fklir-opt %s -p fkl-no-such-pass; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=NOPASS
// RUN: not fklir-opt %s -p fkl-infer-types{bogus=1} 2>&1 | filecheck %s --check-prefix=BADOPT
// RUN: not fklir-opt %S/no-such-file.mlir 2>&1 | filecheck %s --check-prefix=NOFILE

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
  %1 = fkl.mul %0, 2.0 : !fkl.image<?x?x3xf32>
fkl.write %0, "a" : !fkl.image<?x?x3xf32>
// (the read forks: a graph, whose fkl.mul reaches no write)

// The pass names the op that breaks the rule, at its own line and column (the `%1` line above).
// PASS-NOT:  Traceback
// PASS:      errors.mlir:[[# @LINE - 6]]:3: error: 'fkl.mul' result is never used: every value of a graph must reach a write
// PASS-NOT:  Traceback
// PASS:      exit code 1

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xui8>

    %1 = fkl.mul %0, 0.5 : !fkl.image<?x?x3xui8>
fkl.write %1, "dst" : !fkl.image<?x?x3xui8>

// The verifier names chunk 2's op at its file-absolute line and column. (Chunk 1 is printed on
// stdout; its order against stderr is not fixed, so it is not checked here.)
// VERIFY-NOT:  Traceback
// VERIFY:      errors.mlir:[[# @LINE - 6]]:5: error: 'fkl.mul' value 0.5 is not representable in the chain's element type uint8; Cast to float first
// VERIFY-NOT:  Traceback
// VERIFY:      exit code 1

// Standard input: the same error, named `stdin`.
// STDIN-NOT:   Traceback
// STDIN:       stdin:[[# @LINE - 12]]:5: error: 'fkl.mul' value 0.5 is not representable
// STDIN-NOT:   Traceback

// -----

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.mul %0, [1.0, 2.0 : !fkl.image<?x?x3xf32>

// The parser points at the token it could not take: the `:` after `2.0`.
// PARSE-NOT:   Traceback
// PARSE:       errors.mlir:[[# @LINE - 4]]:28: error: Expected ']'
// PARSE-NEXT:  %1 = fkl.mul %0, [1.0, 2.0 : !fkl.image<?x?x3xf32>
// PARSE-NEXT:  {{^                           \^$}}
// PARSE-NOT:   Traceback
// PARSE:       exit code 1

// An unknown pass name or option, and a missing file, are one-line errors.
// NOPASS-NOT:  Traceback
// NOPASS:      fklir-opt: error: Unrecognized passes: ['fkl-no-such-pass']
// NOPASS-NOT:  Traceback
// NOPASS:      exit code 1
// BADOPT-NOT:  Traceback
// BADOPT:      fklir-opt: error: {{.*}}bogus
// BADOPT-NOT:  Traceback
// NOFILE-NOT:  Traceback
// NOFILE:      fklir-opt: error: {{.*}}no-such-file.mlir
// NOFILE-NOT:  Traceback
