# ctest -R bench_builds: configure and build bench/ as its own project against the installed tune
# in PREFIX (cmake -P script).
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
          -DCMAKE_CUDA_COMPILER=${NVCC} -DCMAKE_PREFIX_PATH=${PREFIX}
          -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  RESULT_VARIABLE configured)
if(NOT configured EQUAL 0)
  message(FATAL_ERROR "bench: configure failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY} -j2 RESULT_VARIABLE built)
if(NOT built EQUAL 0)
  message(FATAL_ERROR "bench: build failed")
endif()
if(NOT EXISTS ${BINARY}/tune_bench)
  message(FATAL_ERROR "bench: no tune_bench binary")
endif()
