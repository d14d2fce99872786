# ctest package.ConsumerBuilds: tests/consumer configured and built against the installed prefix
# alone (CMAKE_PREFIX_PATH; no package registry), then run; a project that gives RESULTS a folder is
# refused at configure time.
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

# A folder given as RESULTS is refused at configure time in one line that says so (it was "no problem
# name in the head of <folder>; name it with PROBLEM", which does not help).
set(refuse ${DIR}/consumer_refuse)
file(REMOVE_RECURSE ${refuse})
file(WRITE ${refuse}/src/CMakeLists.txt "cmake_minimum_required(VERSION 3.25)\nproject(refuse LANGUAGES NONE)\n"
           "find_package(tune 0.1 REQUIRED)\nadd_custom_target(app)\n"
           "tune_add_tuned_header(app RESULTS ${SOURCE}/../fixtures/merge/contact)\n")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${refuse}/src -B ${refuse}/build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${DIR}/prefix
                        -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
                RESULT_VARIABLE refused OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \n]+" " " said "${err}")
string(FIND "${said}" "merge/contact is a folder; RESULTS takes results files" at)
if(refused EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "consumer: RESULTS naming a folder was not refused as one (exit ${refused}):\n${err}")
endif()
