# cmake --install: the tune binary and everything it reads at run time, laid out so that the
# installed tune finds it relative to itself (tuner/src/core/layout.hpp), and a CMake package for
# downstream builds. The layout is fixed (not GNUInstallDirs'): bin/tune reads ../share/tune.
#   bin/tune
#   share/tune/configs/<problem>/           the built-in problem folders (problem.json, reference.py, golden/)
#   share/tune/kernel_templates/<problem>/  their kernel templates: tune::kernels' include directory
#   share/tune/report/                      report.py (tune report), summary.py, torch_baseline.py, torch_timing.py,
#                                           results.py, floors.py, pytorch.py
#   share/tune/python/                      dtypes.py (the one Python dtype table), tune_bin.py (finds tune),
#                                           tune_problem.py (tune problem show/draw: what torch_baseline.py reads)
#   share/tune/examples/                    a problem kept in one folder, as a user would
#   lib/cmake/tune/                         tuneConfig.cmake: tune::tune, tune::kernels, tune_add_tuned_header()
include(CMakePackageConfigHelpers)

set(TUNE_INSTALL_DATADIR share/tune)
set(TUNE_INSTALL_CMAKEDIR lib/cmake/tune)

# The kernel templates, for a build that compiles the tuned instantiations with nvcc:
# #include "contact/contact.cuh". The same files tune compiled and measured. kernel_templates/common
# is a directory of its own: the templates include its helpers as "tune_common.cuh", the name NVRTC
# knows them by (the problems' include_dirs).
add_library(tune_kernels INTERFACE)
target_include_directories(tune_kernels INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/kernel_templates>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/kernel_templates/common>
  $<INSTALL_INTERFACE:${TUNE_INSTALL_DATADIR}/kernel_templates>
  $<INSTALL_INTERFACE:${TUNE_INSTALL_DATADIR}/kernel_templates/common>)
# nvcc's device front end (cicc) keeps shared-memory addresses 32-bit by default (--sharedmem32=1);
# NVRTC, which tune compiles and times with, keeps them 64-bit and has no option to do otherwise
# (13.0). So nvcc builds the templates as NVRTC does: the same machine code as tune measured, every
# entry of record (tools/compare_builds.py; docs/shipping.md, "nvcc against NVRTC"). nvcc 13.0
# checked; an older nvcc is left as it is.
# (tests/nvrtc/build_parity_test.cpp builds with TUNE_KERNELS_NVCC_OPTIONS too.)
set(TUNE_KERNELS_NVCC_OPTIONS -Xcicc=--sharedmem32=0)
target_compile_options(tune_kernels INTERFACE
  $<$<AND:$<COMPILE_LANG_AND_ID:CUDA,NVIDIA>,$<VERSION_GREATER_EQUAL:$<CUDA_COMPILER_VERSION>,13.0>>:${TUNE_KERNELS_NVCC_OPTIONS}>)
set_target_properties(tune_kernels PROPERTIES EXPORT_NAME kernels)
add_library(tune::kernels ALIAS tune_kernels)
# The names a downstream build uses, the same in this tree (bench/) as from the installed package.
add_executable(tune::tune ALIAS tune)
include(tuneFunctions)

install(TARGETS tune tune_kernels EXPORT tuneTargets RUNTIME DESTINATION bin)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs ${PROJECT_SOURCE_DIR}/kernel_templates DESTINATION ${TUNE_INSTALL_DATADIR}
        PATTERN "README.md" EXCLUDE)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/report/report.py ${PROJECT_SOURCE_DIR}/report/summary.py
                 ${PROJECT_SOURCE_DIR}/report/torch_baseline.py
        DESTINATION ${TUNE_INSTALL_DATADIR}/report)
# The report scripts' modules: the reader (results through tune results --json, <prefix>/bin/tune; torch
# baselines and peaks), the analysis, the charts and the torch timing method.
install(FILES ${PROJECT_SOURCE_DIR}/report/results.py ${PROJECT_SOURCE_DIR}/report/floors.py ${PROJECT_SOURCE_DIR}/report/pytorch.py
              ${PROJECT_SOURCE_DIR}/report/torch_timing.py ${PROJECT_SOURCE_DIR}/report/analysis.py ${PROJECT_SOURCE_DIR}/report/charts.py
        DESTINATION ${TUNE_INSTALL_DATADIR}/report)
# The golden cases' maker the docs name (docs/adding-a-problem.md), beside python/ whose modules it imports.
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/make_goldens.py DESTINATION ${TUNE_INSTALL_DATADIR}/scripts)
# The Slurm submitter the docs name (docs/cli.md): submit.sh finds <prefix>/bin/tune from there.
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/slurm/submit.sh ${PROJECT_SOURCE_DIR}/scripts/slurm/tune_array.sbatch
                 ${PROJECT_SOURCE_DIR}/scripts/slurm/tune_merge.sbatch
        DESTINATION ${TUNE_INSTALL_DATADIR}/scripts/slurm)
install(FILES ${PROJECT_SOURCE_DIR}/tuner/python/dtypes.py ${PROJECT_SOURCE_DIR}/tuner/python/tune_bin.py
              ${PROJECT_SOURCE_DIR}/tuner/python/tune_problem.py
        DESTINATION ${TUNE_INSTALL_DATADIR}/python)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${TUNE_INSTALL_DATADIR}/examples)

install(EXPORT tuneTargets NAMESPACE tune:: DESTINATION ${TUNE_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tuneConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/tuneConfig.cmake
  INSTALL_DESTINATION ${TUNE_INSTALL_CMAKEDIR}
  PATH_VARS TUNE_INSTALL_DATADIR)
# 0.x: a minor version may change the results schema or the header's interface.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/tuneConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/tuneConfig.cmake ${PROJECT_BINARY_DIR}/package/tuneConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/tuneFunctions.cmake
        DESTINATION ${TUNE_INSTALL_CMAKEDIR})
