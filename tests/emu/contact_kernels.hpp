#pragma once
// The emulated contact kernels (contact_kernels.cpp), for contact_emu_test.cpp.
#include <string>
#include <vector>

namespace tune::emu {

// Runs the kernel registered under `name_expression` (tune's lowering of a configuration) with
// grid x block threads; args are the nine parameter buffers in the kernel's order. smem_after gets
// the emulated shared memory past smem_floats (the launch's dynamic size), for an overflow check.
// False when no kernel of that name is registered.
bool run_contact(const std::string& name_expression, unsigned grid, unsigned block, const float* const* args,
                 float* out, std::vector<float>& smem_after, std::size_t smem_floats);
std::vector<std::string> contact_kernel_names();

}  // namespace tune::emu
