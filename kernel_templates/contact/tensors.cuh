#pragma once
// The contact kernel's tensors, as contact_kernel hands them to its mapping.

namespace tune_kernels {
namespace contact {
// The kernel's tensors, in launch order (problem.json "args"), elements of T.
template <class T>
struct Tensors {
  const T *pair_repr, *ln_w, *ln_b, *w0, *b0, *w2, *b2, *w4, *b4;
  T* out;
};
}  // namespace contact
}  // namespace tune_kernels
