"""fkl/join.h's Composite on unsigned 8- and 16-bit images through a uint8 mask (integer arithmetic) against
SPEC §8's formula in numpy float64, round(a m + b (1 - m)) with m = mask / 255: every uint8 (a, b, mask), and
uint16 values at the edges and at random; the generic float64 template must agree with it on the same inputs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

INCLUDE_DIR = Path(__file__).resolve().parents[2] / "fklir" / "backend" / "include"

PROGRAM = r"""
#include <cstdio>
#include <vector>
#include "fkl/join.h"

// argv[1] "u8": every (a, b, m), then the float64 template's results; "u16": (a, b, m) triples from stdin.
int main(int argc, char** argv) {
    if (argv[1][1] == '8') {
        std::vector<fkl::u8> integer(1 << 24), generic(1 << 24);
        for (int m = 0; m < 256; ++m)
            for (int a = 0; a < 256; ++a)
                for (int b = 0; b < 256; ++b) {
                    const int i = (m << 16) | (a << 8) | b;
                    integer[i] = fkl::Composite::exec((fkl::u8)a, (fkl::u8)b, (fkl::u8)m);
                    generic[i] = fkl::Composite::exec<fkl::u8, fkl::u8>((fkl::u8)a, (fkl::u8)b, (fkl::u8)m);
                }
        fwrite(integer.data(), 1, integer.size(), stdout);
        fwrite(generic.data(), 1, generic.size(), stdout);
        return 0;
    }
    fkl::u16 t[3];
    while (fread(t, sizeof t, 1, stdin) == 1) {
        const fkl::u16 r[2] = {fkl::Composite::exec(t[0], t[1], (fkl::u8)t[2]),
                               fkl::Composite::exec<fkl::u16, fkl::u8>(t[0], t[1], (fkl::u8)t[2])};
        fwrite(r, sizeof r, 1, stdout);
    }
    return argc > 2;
}
"""


def _formula(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> np.ndarray:
    m = mask.astype(np.float64) / 255.0
    return np.rint(a.astype(np.float64) * m + b.astype(np.float64) * (1.0 - m))


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("g++") is None:
        pytest.skip("g++ is not on PATH")
    folder = tmp_path_factory.mktemp("join")
    (folder / "composite.cpp").write_text(PROGRAM)
    binary = folder / "composite"
    command = ["g++", "-std=c++17", "-O2", "-ffp-contract=off", "-Wall", "-Werror", f"-I{INCLUDE_DIR}"]
    subprocess.run([*command, str(folder / "composite.cpp"), "-o", str(binary)], check=True)
    return binary


def test_uint8_composite_is_the_float64_formula_on_every_input(program: Path) -> None:
    raw = subprocess.run([str(program), "u8"], capture_output=True, check=True).stdout
    integer, generic = np.frombuffer(raw, np.uint8).reshape(2, 256, 256, 256)  # [m, a, b]
    grid = np.arange(256)
    for mask in range(256):
        expected = _formula(grid[:, None], grid[None, :], np.full((1, 1), mask))
        assert np.array_equal(integer[mask], expected), f"mask {mask}"
        assert np.array_equal(generic[mask], expected), f"mask {mask} (float64 template)"


def test_uint16_composite_is_the_float64_formula_at_edges_and_at_random(program: Path) -> None:
    edges = np.array([0, 1, 2, 127, 128, 254, 255, 256, 257, 32767, 32768, 65279, 65280, 65534, 65535])
    a, b, m = (axis.ravel() for axis in np.meshgrid(edges, edges, np.arange(256), indexing="ij"))
    rng = np.random.default_rng(29)
    a = np.concatenate([a, rng.integers(0, 65536, 1 << 20)])
    b = np.concatenate([b, rng.integers(0, 65536, 1 << 20)])
    m = np.concatenate([m, rng.integers(0, 256, 1 << 20)])
    triples = np.stack([a, b, m], axis=1).astype(np.uint16)
    raw = subprocess.run([str(program), "u16"], input=triples.tobytes(), capture_output=True, check=True).stdout
    integer, generic = np.frombuffer(raw, np.uint16).reshape(-1, 2).T
    expected = _formula(a, b, m)
    assert np.array_equal(integer, expected)
    assert np.array_equal(generic, expected)
