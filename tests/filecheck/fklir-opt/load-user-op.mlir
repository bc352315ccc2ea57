// User ops (fkl.op): `--load FILE.py` runs the file that declares them, so that fklir-opt knows their C++
// (the IR names each body by its hash). The ops round-trip with or without it; emitting C++ needs it.

// RUN: fklir-opt %s --load %S/../Inputs/user_ops.py | fklir-opt | filecheck %s
// RUN: fklir-opt %s --load %S/../Inputs/user_ops.py --print-op-generic | fklir-opt | filecheck %s
// RUN: fklir-opt %s --load %S/../Inputs/user_ops.py -p fkl-default-pipeline | filecheck %s --check-prefix=HOIST
// RUN: fklir-opt %s --load %S/../Inputs/user_ops.py -p fkl-default-pipeline -t cpp | filecheck %s --check-prefix=CPP
// RUN: sh -c 'fklir-opt %s -p fkl-default-pipeline -t cpp; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=UNLOADED
// RUN: sh -c 'fklir-opt %s --load %S/../Inputs/missing.py; echo "exit code $?"' 2>&1 | filecheck %s --check-prefix=MISSING

%0 = fkl.read "src" : !fkl.image<?x?x3xf32>
%1 = fkl.user "Gamma" %0, 2.2 params(gamma: f32) inputs [f32] out same hash "49617da415bd7200044d3ce69f9a87a7451165eb73fd9bfb21fecb1e693daeb3" : !fkl.image<?x?x3xf32>
%2 = fkl.user_pixel "Luma" %1 params() inputs [f32] out same channels 1 hash "af66445b9483cf02cd5ae4c55ad4715bf792040d449c56d694729135b1ff54c7" : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x1xf32>
fkl.write %2, "dst" : !fkl.image<?x?x1xf32>

// CHECK:      %1 = fkl.user "Gamma" %0, 2.2 params(gamma: f32) inputs [f32] out same hash "49617da4{{[0-9a-f]+}}" : !fkl.image<?x?x3xf32>
// CHECK-NEXT: %2 = fkl.user_pixel "Luma" %1 params() inputs [f32] out same channels 1 hash "af66445b{{[0-9a-f]+}}" : !fkl.image<?x?x3xf32> -> !fkl.image<?x?x1xf32>

// HOIST:      fkl.kernel @k0 params !fkl.params<user1: f64 x 1> values {user1 = [2.2]}
// HOIST:      fkl.user "Gamma" %0, param "user1" params(gamma: f32)

// CPP:        // fkl.op Gamma (hash 49617da415bd7200)
// CPP-NEXT:   #line 6 "{{.*}}user_ops.py"
// CPP-NEXT:   struct Gamma {
// CPP-NEXT:   static FKL_HD float exec(float x, float gamma) { return powf(x, gamma); }
// CPP-NEXT:   };
// CPP-NEXT:   // fkl.op Luma (hash af66445b9483cf02)
// CPP-NEXT:   #line 11 "{{.*}}user_ops.py"
// CPP:        };
// CPP-NEXT:   #line 16 "<fklir kernel>"
// CPP:        v1[c] = Gamma::exec(v0[c], fkl::Cast<fkl::f32>::exec(p.user1[0]));
// CPP:        Luma::exec<3, 1>(v1, v2);

// UNLOADED:   load-user-op.mlir:{{[0-9]+}}:1: error: 'fkl.user' Gamma: no fkl.op declares hash 49617da415bd7200... in this process (run the Python file that declares it first; fklir-opt: --load FILE.py)
// UNLOADED:   exit code 1

// MISSING:    fklir-opt: error: --load {{.*}}missing.py: FileNotFoundError
// MISSING:    exit code 1
