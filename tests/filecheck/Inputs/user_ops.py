"""User ops for tests/filecheck/fklir-opt/load-user-op.mlir (`fklir-opt --load`): the IR there names them
by the hash of these bodies, so an edit here must update the hashes there."""

import fklir as fkl

GAMMA = """struct Gamma {
    static FKL_HD float exec(float x, float gamma) { return powf(x, gamma); }
};
"""

LUMA = """struct Luma {
    template <int C, int M>
    static FKL_HD void exec(const float* in, float* out) { out[0] = 0.299f * in[0] + 0.587f * in[1] + 0.114f * in[2]; }
};
"""

Gamma = fkl.op("Gamma", body=GAMMA, params={"gamma": "float32"}, inputs=("float32",))
Luma = fkl.op("Luma", body=LUMA, pixel=True, channels=1)

if __name__ == "__main__":
    print(Gamma.SPEC.digest, Luma.SPEC.digest)
