"""The `fkl` dialect: chains of image operations that fuse into one kernel.

A chain as the frontend emits it (result types start unknown; `fkl-infer-types` fills them in):

```mlir
%img = fkl.read "src" : !fkl.image<?x?x3xui8>
%roi = fkl.crop %img, rects [[30, 12, 60, 40], [40, 12, 60, 40]]
    : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 2>
%rs  = fkl.resize %roi, size [16, 16], linear
    : !fkl.image<?x?x3xui8, planes 2> -> !fkl.image<?x?x3xf32, planes 2>
%m   = fkl.mul %rs, 2.0 : !fkl.image<?x?x3xf32, planes 2>
%u8  = fkl.saturate_cast %m to ui8 : !fkl.image<?x?x3xf32, planes 2> -> !fkl.image<?x?x3xui8, planes 2>
fkl.write %u8, "dst" : !fkl.image<?x?x3xui8, planes 2>
```

After the default pipeline the chain sits in one `fkl.kernel` per launch, and every value has moved
into the kernel's parameter block (the IR without `values` is the structural cache key):

```mlir
fkl.kernel @k0 params !fkl.params<crop1: rect x 2, resize2: i32 x 2, mul3: f32 x 3>
    values {crop1 = array<i64: ...>, resize2 = array<i64: 16, 16>, mul3 = array<f64: 2.0, 2.0, 2.0>} {
  %img = fkl.read "src" : !fkl.image<?x?x3xui8>
  %roi = fkl.crop %img, param "crop1" : ...
  ...
}
```

Element types: ui8, i8 (signed), ui16, i16, i32, ui32, f16, bf16, f32, f64 and i1 (bool).
`none` as element type and `?` as channel count mean "not inferred yet".

The dialect is split by kind, each module importing only those before it: `types` (element types,
`!fkl.image`, `!fkl.params`), `syntax` (the parsing and printing the ops share), `checks` (shared
verifier rules), `fields` (values and their parameter slots), `abstract_ops` (the op families, `@fkl_op`
and `@math_op`), `ops_write`, `ops_geometry` (the read and the geometry folded into it), `ops_compute`,
`ops_math` (the element-wise math ops), `ops_word` (the ops that take one word), `ops_join` (the ops that
join a DAG's branches), `ops_user` (fkl.op's user ops and their declarations), `kernel` (fkl.kernel and its
slot rules). This package re-exports their public names and defines the dialect from every op they
declare (FKL_OPS).
"""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation
from xdsl.traits import OpTrait

from fklir.dialects.color_codes import COLOR_CODES as COLOR_CODES
from fklir.dialects.color_codes import ColorCode as ColorCode
from fklir.dialects.constants import ASPECT_RATIOS as ASPECT_RATIOS
from fklir.dialects.constants import BORDER_MODES as BORDER_MODES
from fklir.dialects.constants import DEINTERLACE_MODES as DEINTERLACE_MODES
from fklir.dialects.constants import FLIP_MODES as FLIP_MODES
from fklir.dialects.constants import INTERPOLATIONS as INTERPOLATIONS
from fklir.dialects.constants import JOIN_KINDS as JOIN_KINDS
from fklir.dialects.constants import REDUCTIONS as REDUCTIONS
from fklir.dialects.constants import ROTATIONS as ROTATIONS
from fklir.dialects.constants import WARP_KINDS as WARP_KINDS
from fklir.dialects.constants import invert_warp_matrix as invert_warp_matrix
from fklir.dialects.fkl.abstract_ops import FKL_OPS as FKL_OPS
from fklir.dialects.fkl.abstract_ops import MATH_OPS as MATH_OPS
from fklir.dialects.fkl.abstract_ops import BinaryValueOp as BinaryValueOp
from fklir.dialects.fkl.abstract_ops import CastLikeOp as CastLikeOp
from fklir.dialects.fkl.abstract_ops import MathUnaryOp as MathUnaryOp
from fklir.dialects.fkl.abstract_ops import MathValueOp as MathValueOp
from fklir.dialects.fkl.abstract_ops import TypeRuleOp as TypeRuleOp
from fklir.dialects.fkl.abstract_ops import UnaryOp as UnaryOp
from fklir.dialects.fkl.abstract_ops import WordOp as WordOp
from fklir.dialects.fkl.abstract_ops import fkl_op as fkl_op
from fklir.dialects.fkl.abstract_ops import math_op as math_op
from fklir.dialects.fkl.checks import check_no_integer_division_by_zero as check_no_integer_division_by_zero
from fklir.dialects.fkl.checks import check_values_fit_chain as check_values_fit_chain
from fklir.dialects.fkl.checks import check_values_representable as check_values_representable
from fklir.dialects.fkl.fields import field_slot as field_slot
from fklir.dialects.fkl.fields import field_values as field_values
from fklir.dialects.fkl.fields import is_per_plane as is_per_plane
from fklir.dialects.fkl.fields import slot_property as slot_property
from fklir.dialects.fkl.fields import value_fields as value_fields
from fklir.dialects.fkl.kernel import KernelOp as KernelOp
from fklir.dialects.fkl.kernel import chains_in as chains_in
from fklir.dialects.fkl.kernel import check_chain_link as check_chain_link
from fklir.dialects.fkl.kernel import check_dag_link as check_dag_link
from fklir.dialects.fkl.kernel import graphs_in as graphs_in
from fklir.dialects.fkl.kernel import is_dag as is_dag
from fklir.dialects.fkl.kernel import param_slot as param_slot
from fklir.dialects.fkl.ops_compute import LOOP_BODIES as LOOP_BODIES
from fklir.dialects.fkl.ops_compute import AddLastOp as AddLastOp
from fklir.dialects.fkl.ops_compute import AddOp as AddOp
from fklir.dialects.fkl.ops_compute import CastOp as CastOp
from fklir.dialects.fkl.ops_compute import DiscardOp as DiscardOp
from fklir.dialects.fkl.ops_compute import DivOp as DivOp
from fklir.dialects.fkl.ops_compute import EqualOp as EqualOp
from fklir.dialects.fkl.ops_compute import IsEvenOp as IsEvenOp
from fklir.dialects.fkl.ops_compute import MaxOp as MaxOp
from fklir.dialects.fkl.ops_compute import MinOp as MinOp
from fklir.dialects.fkl.ops_compute import MulOp as MulOp
from fklir.dialects.fkl.ops_compute import MxVFloat3Op as MxVFloat3Op
from fklir.dialects.fkl.ops_compute import SaturateCastOp as SaturateCastOp
from fklir.dialects.fkl.ops_compute import SaturateFloatOp as SaturateFloatOp
from fklir.dialects.fkl.ops_compute import SaturateOp as SaturateOp
from fklir.dialects.fkl.ops_compute import StaticLoopOp as StaticLoopOp
from fklir.dialects.fkl.ops_compute import SubOp as SubOp
from fklir.dialects.fkl.ops_compute import VectorAndOp as VectorAndOp
from fklir.dialects.fkl.ops_compute import VectorReorderOp as VectorReorderOp
from fklir.dialects.fkl.ops_compute import VectorReorderRTOp as VectorReorderRTOp
from fklir.dialects.fkl.ops_geometry import BorderOp as BorderOp
from fklir.dialects.fkl.ops_geometry import CropOp as CropOp
from fklir.dialects.fkl.ops_geometry import ReadOp as ReadOp
from fklir.dialects.fkl.ops_geometry import ReadSetOp as ReadSetOp
from fklir.dialects.fkl.ops_geometry import ResizeOp as ResizeOp
from fklir.dialects.fkl.ops_geometry import WarpOp as WarpOp
from fklir.dialects.fkl.ops_geometry import YieldOp as YieldOp
from fklir.dialects.fkl.ops_join import BlendOp as BlendOp
from fklir.dialects.fkl.ops_join import CompositeOp as CompositeOp
from fklir.dialects.fkl.ops_join import JoinOp as JoinOp

# Every @math_op class, by name: a new element-wise math op is its class in ops_math and nothing here.
from fklir.dialects.fkl.ops_math import *  # noqa: F403
from fklir.dialects.fkl.ops_user import DECLARATIONS as DECLARATIONS
from fklir.dialects.fkl.ops_user import USER_OPS as USER_OPS
from fklir.dialects.fkl.ops_user import UserDeclaration as UserDeclaration
from fklir.dialects.fkl.ops_user import UserOp as UserOp
from fklir.dialects.fkl.ops_user import UserOpBase as UserOpBase
from fklir.dialects.fkl.ops_user import UserPixelOp as UserPixelOp
from fklir.dialects.fkl.ops_user import declare_user_op as declare_user_op
from fklir.dialects.fkl.ops_user import user_declaration as user_declaration
from fklir.dialects.fkl.ops_word import ColorConversionOp as ColorConversionOp
from fklir.dialects.fkl.ops_word import DeinterlaceOp as DeinterlaceOp
from fklir.dialects.fkl.ops_word import FlipOp as FlipOp
from fklir.dialects.fkl.ops_word import RotateOp as RotateOp
from fklir.dialects.fkl.ops_word import VectorReduceOp as VectorReduceOp
from fklir.dialects.fkl.ops_write import WRITE_OPS as WRITE_OPS
from fklir.dialects.fkl.ops_write import SplitOp as SplitOp
from fklir.dialects.fkl.ops_write import SplitWriteOp as SplitWriteOp
from fklir.dialects.fkl.ops_write import TSplitOp as TSplitOp
from fklir.dialects.fkl.ops_write import WriteOp as WriteOp
from fklir.dialects.fkl.traits import ChannelWise as ChannelWise
from fklir.dialects.fkl.traits import Geometry as Geometry
from fklir.dialects.fkl.traits import Join as Join
from fklir.dialects.fkl.traits import Memory as Memory
from fklir.dialects.fkl.traits import PixelWise as PixelWise
from fklir.dialects.fkl.types import DYNAMIC as DYNAMIC
from fklir.dialects.fkl.types import ELEMENT_TYPES as ELEMENT_TYPES
from fklir.dialects.fkl.types import MAX_SLOT_COUNT as MAX_SLOT_COUNT
from fklir.dialects.fkl.types import PARAM_KINDS as PARAM_KINDS
from fklir.dialects.fkl.types import PLANE_MAP_SLOT as PLANE_MAP_SLOT
from fklir.dialects.fkl.types import ImageType as ImageType
from fklir.dialects.fkl.types import ParamsType as ParamsType
from fklir.dialects.fkl.types import dtype_name as dtype_name
from fklir.dialects.fkl.types import element_type as element_type
from fklir.dialects.fkl.types import is_float_name as is_float_name
from fklir.dialects.fkl.types import reshaped as reshaped

# Every op the modules above define: @fkl_op, @math_op and the records' classes.
FKL = Dialect("fkl", [*FKL_OPS], [ImageType, ParamsType])


def ops_with(trait: type[OpTrait]) -> tuple[type[IRDLOperation], ...]:
    """The dialect's ops that declare `trait`, in declaration order."""
    return tuple(op for op in FKL.operations if issubclass(op, IRDLOperation) and op.has_trait(trait))


# The categories, read from each op's declared trait (isinstance-ready tuples for passes and registries).
CHANNELWISE_OPS = ops_with(ChannelWise)  # a chain of these runs on flat element runs
PIXEL_OPS = ops_with(PixelWise)  # a chain with one of these computes per pixel
COMPUTE_OPS = CHANNELWISE_OPS + PIXEL_OPS
GEOMETRY_OPS = ops_with(Geometry)  # these fold into the read
JOIN_OPS = ops_with(Join)  # these join a DAG's branches
# Every op that can sit in a read ... write chain.
CHAIN_OPS: tuple[type[IRDLOperation], ...] = (ReadOp, *GEOMETRY_OPS, *COMPUTE_OPS, *JOIN_OPS, *WRITE_OPS)
