// fkl/fkl.h — the whole fklir op library in one include.
//
//   core.h      FKL_HD, element typedefs, Rect, f16/bf16 conversions, Limits<T>
//   arith.h     Add Sub Mul Div Max Min Equal IsEven StaticLoop
//   cast.h      Cast<To> SaturateCast<To> Saturate SaturateFloat
//   math.h      Abs Sqrt Exp Log Pow
//   geometry.h  resize_scale linear_tap nearest_index resize_content_box BorderReader Warping Deinterlace
//               Flip Rotate
//   memory.h    PackedImage PackedOutput PlanarImage PlanarOutput ReadSet Vec16 load16 store16
//
// kernel.h adds color.h (ColorConversion, Gray, OpaqueAlpha) and vector.h (VectorAnd VectorReduce
// Discard AddLast VectorReorder VectorReorderRT MxVFloat3) for the generated kernels.
#pragma once

#include "core.h"
#include "arith.h"
#include "cast.h"
#include "math.h"
#include "geometry.h"
#include "memory.h"
