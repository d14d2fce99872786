# ctest -R fuzz.SanitizedReaders (label slow: only with TUNE_SLOW_TESTS=1, else it skips): builds tune_fuzz_tests (the library and fuzz_test.cpp) with TUNE_SANITIZE=ON in its own build
# folder (Debug: quick to compile) and runs the readers' property tests (Fuzz.*) under ASan and
# UBSan, 20 % of their cases (about 15x slower there; the unsanitized Fuzz.* of the unit tier run them all). Warnings are not errors in that build: GCC 12
# reports false maybe-uninitialized warnings inside std::regex with the sanitizers.
if(NOT "$ENV{TUNE_SLOW_TESTS}" STREQUAL "1")
  message("SKIPPED: fuzz.SanitizedReaders is in the slow tier (a sanitized sub-build, 8 to 10 minutes on 2 cores); "
          "run it with TUNE_SLOW_TESTS=1 ctest --test-dir build -L slow (.ci/run does)")
  return()
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Debug -DTUNE_SANITIZE=ON -DTUNE_WARNINGS_AS_ERRORS=OFF
          -DTUNE_BUILD_BENCH=OFF
  RESULT_VARIABLE configured)
if(NOT configured EQUAL 0)
  message(FATAL_ERROR "sanitized build: configure failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY} --target tune_fuzz_tests -j2 RESULT_VARIABLE built)
if(NOT built EQUAL 0)
  message(FATAL_ERROR "sanitized build: build failed")
endif()
set(ENV{ASAN_OPTIONS} "detect_leaks=1:abort_on_error=1")
set(ENV{UBSAN_OPTIONS} "print_stacktrace=1:halt_on_error=1")
set(ENV{TUNE_FUZZ_PERCENT} 20)
execute_process(COMMAND ${BINARY}/tests/tune_fuzz_tests RESULT_VARIABLE ran)
if(NOT ran EQUAL 0)
  message(FATAL_ERROR "the property tests failed or a sanitizer reported (exit ${ran})")
endif()
