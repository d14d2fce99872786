#pragma once
// The emulated contact kernels (contact_kernels.cpp), for contact_emu_test.cpp.
#include <string>
#include <vector>

namespace tune::emu {

// Runs the kernel registered under `name_expression` (tune's lowering of a configuration) with
// grid x block threads; args are the nine parameter buffers in the kernel's order, elements of its
// T (float or bfloat16 bits). smem_after gets the emulated shared memory past smem_floats (the
// launch's dynamic size), for an overflow check. False when no kernel of that name is registered.
bool run_contact(const std::string& name_expression, unsigned grid, unsigned block, const void* const* args, void* out,
                 std::vector<float>& smem_after, std::size_t smem_floats);
// The dynamic shared memory the registered kernel expects (its SmemLayout::kBytes); -1 when none.
int contact_smem_bytes(const std::string& name_expression);
std::vector<std::string> contact_kernel_names();

}  // namespace tune::emu
