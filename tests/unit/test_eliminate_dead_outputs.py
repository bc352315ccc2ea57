"""fkl-eliminate-dead-outputs keeps what the kept outputs compute: the reference interpreter gives the same
kept outputs before and after it (on random images of an odd size), and nothing for the dropped one."""

from __future__ import annotations

import numpy as np
from xdsl.parser import Parser

from fklir.frontend.lowering import make_context
from fklir.interpreters.fkl import run_module
from fklir.passes.eliminate_dead_outputs import EliminateDeadOutputsPass

GRAPH = """
%a = fkl.read "src" : !fkl.image<?x?x3xf32>
%b = fkl.read "in1" : !fkl.image<?x?x3xf32>
%r = fkl.resize %b, size [9, 7], nearest : !fkl.image<?x?x3xf32>
%d = fkl.join absdiff %a, %r : !fkl.image<?x?x3xf32>
fkl.write %d, "out0" : !fkl.image<?x?x3xf32>
%m = fkl.mul %a, 2.0 : !fkl.image<?x?x3xf32>
%s = fkl.join sub %m, %d : !fkl.image<?x?x3xf32>
fkl.write %s, "out1" : !fkl.image<?x?x3xf32>
%t = fkl.threshold %m, 100.0 : !fkl.image<?x?x3xf32>
fkl.write %t, "out2" : !fkl.image<?x?x3xf32>
"""


def _module():
    return Parser(make_context(), GRAPH).parse_module()


def test_the_kept_outputs_are_computed_as_before() -> None:
    rng = np.random.default_rng(5)
    inputs = {
        "src": (rng.random((7, 9, 3)) * 200).astype(np.float32),
        "in1": (rng.random((13, 11, 3)) * 200).astype(np.float32),
    }
    before = run_module(_module(), inputs)
    module = _module()
    EliminateDeadOutputsPass(outputs="out0").apply(make_context(), module)
    after = run_module(module, inputs)
    assert sorted(after) == ["out1", "out2"]
    for name in after:
        np.testing.assert_array_equal(after[name], before[name])
    dropped = _module()
    EliminateDeadOutputsPass(outputs="out0,out1").apply(make_context(), dropped)
    text = str(dropped)
    assert 'fkl.read "in1"' not in text and "fkl.join" not in text  # the branch went with the outputs it fed
    np.testing.assert_array_equal(run_module(dropped, inputs)["out2"], before["out2"])
