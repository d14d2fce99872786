# Every dependency is found with find_package; scripts/setup.sh installs them (Debian packages).
find_package(CUDAToolkit 12.0 REQUIRED)
# The toolkit's half and bfloat16 headers, which NVRTC of CUDA 13 lacks: embedded into tune and passed
# to NVRTC by name (with_cuda_headers).
set(TUNE_CUDA_FP_HEADERS "")
foreach(h cuda_fp16.h cuda_fp16.hpp cuda_bf16.h cuda_bf16.hpp)
  find_file(TUNE_CUDA_HEADER_${h} ${h} PATHS ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH REQUIRED)
  list(APPEND TUNE_CUDA_FP_HEADERS ${TUNE_CUDA_HEADER_${h}})
endforeach()
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(muparser REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)  # results of record are kept as .json.gz; the readers take them as they are
# --search model's surrogate (gradient-boosted trees): Debian's libxgboost-dev. Its CMake package
# also names the xgboost command-line program, which that package does not ship, so find_package
# fails; the library and header are found directly.
find_library(TUNE_XGBOOST_LIBRARY NAMES xgboost REQUIRED)
find_path(TUNE_XGBOOST_INCLUDE_DIR NAMES xgboost/c_api.h REQUIRED)
add_library(tune_xgboost SHARED IMPORTED)
set_target_properties(tune_xgboost PROPERTIES IMPORTED_LOCATION "${TUNE_XGBOOST_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${TUNE_XGBOOST_INCLUDE_DIR}")
add_library(xgboost::xgboost ALIAS tune_xgboost)
if(TUNE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
# tune report and its test run report/report.py with a Python that has matplotlib: Debian's
# python3-matplotlib installs into /usr/bin/python3 (a python3 earlier on PATH may lack it).
set(TUNE_PYTHON /usr/bin/python3 CACHE FILEPATH "Python 3 with matplotlib, for tune report")
