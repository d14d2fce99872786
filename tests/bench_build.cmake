# ctest -R bench_builds: configure and build bench/ as its own project against the installed tune
# in PREFIX (cmake -P script).
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
          -DCMAKE_CUDA_COMPILER=${NVCC} -DCMAKE_PREFIX_PATH=${PREFIX}
          -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
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
# tune::kernels hands nvcc NVRTC's 64-bit shared-memory addresses (cmake/Package.cmake), so the
# bench's nvcc build of every entry is the machine code tune measured.
file(READ ${BINARY}/compile_commands.json commands)
string(JSON count LENGTH "${commands}")
math(EXPR last "${count} - 1")
set(checked 0)
foreach(i RANGE ${last})
  string(JSON file GET "${commands}" ${i} file)
  string(JSON command GET "${commands}" ${i} command)
  if(NOT file MATCHES "/(contact|scene_graph)\\.cu$")
    continue()
  endif()
  if(NOT command MATCHES "-Xcicc=--sharedmem32=0")
    message(FATAL_ERROR "bench: ${file} is compiled without tune::kernels' -Xcicc=--sharedmem32=0: ${command}")
  endif()
  math(EXPR checked "${checked} + 1")
endforeach()
if(NOT checked EQUAL 2)
  message(FATAL_ERROR "bench: compile_commands.json has ${checked} of contact.cu and scene_graph.cu")
endif()
