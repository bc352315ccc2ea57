"""The write ops that end a chain: fkl.write, fkl.split, fkl.tsplit, fkl.split_write."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntegerType, StringAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, operand_def, opt_prop_def, prop_def, traits_def
from xdsl.utils.exceptions import VerifyException

from fklir.dialects.fkl.abstract_ops import fkl_op
from fklir.dialects.fkl.checks import int32
from fklir.dialects.fkl.syntax import InputType, IntList, StringLiteral
from fklir.dialects.fkl.traits import Memory
from fklir.dialects.fkl.types import ImageType
from fklir.limits import check_index


class _WriteLikeOp(IRDLOperation):
    """Shared shape of the write ops: `fkl.<op> %v, "dst" : T`.

    `planes [i, j]` writes the value's planes to planes i, j of `dest` (several chains sharing
    one output: the frontend's per-ROI and per-image chains, and divergent batches).
    """

    traits = traits_def(Memory())

    input = operand_def(ImageType)
    dest = prop_def(StringAttr)
    planes = opt_prop_def(DenseArrayBase[IntegerType])

    custom_directives = (StringLiteral, IntList, InputType)
    assembly_format = (
        "$input `,` custom<StringLiteral>($dest) (`planes` custom<IntList>($planes)^)? "
        "custom<InputType>(type($input)) attr-dict"
    )

    def __init__(self, input: SSAValue, dest: str, planes: Sequence[int] | None = None):
        properties: dict[str, Attribute] = {"dest": StringAttr(dest)}
        if planes is not None:
            properties["planes"] = DenseArrayBase.from_list(i64, list(planes))
        super().__init__(operands=[input], properties=properties)

    @property
    def plane_list(self) -> list[int] | None:
        return None if self.planes is None else [int(v) for v in self.planes.get_values()]

    def verify_(self) -> None:
        if not self.dest.data:
            raise VerifyException(f"'{self.name}' needs a non-empty destination name")
        planes = self.plane_list
        if planes is not None and (not planes or min(planes) < 0 or len(set(planes)) != len(planes)):
            raise VerifyException(f"'{self.name}' planes must be distinct indices >= 0, got {planes}")
        for plane in planes or ():
            int32(check_index, f"'{self.name}' planes", "plane", plane)


@fkl_op
class WriteOp(_WriteLikeOp):
    """TensorWrite: writes packed pixels to the buffer `dest` ((H, W[, C]) or (B, H, W[, C])).

    `fkl.write %v, "dst" : !fkl.image<?x?x3xui8>`
    """

    name = "fkl.write"


@fkl_op
class SplitOp(_WriteLikeOp):
    """TensorSplit: writes packed pixels as planar [B][C][H][W] to the buffer `dest`.

    `fkl.split %v, "dst" : !fkl.image<?x?x3xf32, planes 64>`
    """

    name = "fkl.split"


@fkl_op
class TSplitOp(_WriteLikeOp):
    """TensorTSplit: writes packed pixels as [C][B][H][W] to the buffer `dest` (channel-major).

    `fkl.tsplit %v, "dst" : !fkl.image<?x?x3xf32, planes 8>`
    """

    name = "fkl.tsplit"


@fkl_op
class SplitWriteOp(_WriteLikeOp):
    """SplitWrite: channel c goes to its own buffer, the c-th of the table `dest` ((B, H, W) each).

    `fkl.split_write %v, "dst" : !fkl.image<?x?x3xui8>`
    """

    name = "fkl.split_write"


WRITE_OPS: tuple[type[_WriteLikeOp], ...] = (WriteOp, SplitOp, TSplitOp, SplitWriteOp)
