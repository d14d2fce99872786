# ctest -R bench_builds: configure and build bench/ as its own project (cmake -P script).
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
          -DCMAKE_CUDA_COMPILER=${NVCC} -DTUNE_EXE=${TUNE_EXE}
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
