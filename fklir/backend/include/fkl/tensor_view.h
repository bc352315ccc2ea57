// fkl/tensor_view.h — a tensor as an fkl.jit kernel receives it (passed by value).
//
// fklir fills one TensorView per tensor argument from the caller's array (numpy, torch, CuPy,
// DeviceBuffer): the data pointer, the rank and, per dimension, the extent and the stride. Strides
// count elements, not bytes, so that `ptr<T>()[i * strides[0] + j * strides[1]]` indexes any view.
// The layout is fixed: the Python side (fklir/jit/tensors.py) builds the same struct with ctypes.
#pragma once

#include "core.h"

namespace fkl {

// The largest rank a TensorView holds (the arrays are fixed so that the struct is passed by value).
constexpr int kMaxTensorDims = 8;

struct TensorView {
    void* data;
    int ndim;
    i64 shape[kMaxTensorDims];
    i64 strides[kMaxTensorDims];  // in elements

    template <class T>
    FKL_HD T* ptr() const {
        return static_cast<T*>(data);
    }
};

}  // namespace fkl
