// The tuned contact kernels, instantiated ahead of time by nvcc from kernel_templates/contact/contact.cuh.
#include "contact/contact.cuh"
#define TUNE_TUNED_KERNELS
#include "contact_tuned.hpp"

#include "bench.hpp"

void tune_bench::register_contact() {
  namespace t = tune_tuned::contact;
  register_problem("contact", t::kEntries, t::kWinnerKernels, t::kBaselineKernels);
}
