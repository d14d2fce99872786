# ctest package.ConsumerBuilds: tests/consumer configured and built against the installed prefix
# alone (CMAKE_PREFIX_PATH; no package registry), then run.
#   cmake -DSOURCE=tests/consumer -DDIR=<test dir> -DGENERATOR=... -DCXX=... -P consumer.cmake
set(build ${DIR}/consumer_build)
file(REMOVE_RECURSE ${build})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${build} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
          -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${DIR}/prefix -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  RESULT_VARIABLE configured)
if(NOT configured EQUAL 0)
  message(FATAL_ERROR "consumer: configure against ${DIR}/prefix failed")
endif()
file(STRINGS ${build}/CMakeCache.txt found REGEX "^tune_DIR:")
if(NOT found STREQUAL "tune_DIR:PATH=${DIR}/prefix/lib/cmake/tune")
  message(FATAL_ERROR "consumer: found the package elsewhere (${found})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${build} RESULT_VARIABLE built)
if(NOT built EQUAL 0)
  message(FATAL_ERROR "consumer: build failed")
endif()
execute_process(COMMAND ${build}/consumer RESULT_VARIABLE ran)
if(NOT ran EQUAL 0)
  message(FATAL_ERROR "consumer: select() at run time gave the wrong entry (exit ${ran})")
endif()
