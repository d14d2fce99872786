// The tuned contact kernels, instantiated ahead of time by nvcc from kernel_templates/contact/contact.cuh.
#include "contact/contact.cuh"
#define TUNE_TUNED_KERNELS
#include "contact_tuned.hpp"
#define TUNE_BENCH_FINALIST_KERNELS
#include "contact_nvrtc.hpp"

#include "bench.hpp"

void tune_bench::register_contact() {
  namespace t = tune_tuned::contact;
  namespace r = tune_bench_nvrtc::contact;
  register_problem("contact", t::kEntries, t::kWinnerKernels, t::kBaselineKernels, r::kSources, r::kRecords);
  register_interleave("contact", t::kEntries, r::kRecords, r::kNvccKernels, r::kNvccKernelCount, r::kSources);
}
