// fkl/fkl.h — the whole fklir op library in one include.
//
//   core.h      FKL_HD, element typedefs, Rect, f16/bf16 conversions, Limits<T>
//   arith.h     Add Sub Mul Div Max Min IsEven
//   cast.h      Cast<To> SaturateCast<To> Saturate SaturateFloat
//   geometry.h  linear_tap nearest_index border_* helpers
//   memory.h    PackedImage PackedOutput PlanarImage PlanarOutput Vec16 load16 store16
#pragma once

#include "core.h"
#include "arith.h"
#include "cast.h"
#include "geometry.h"
#include "memory.h"
