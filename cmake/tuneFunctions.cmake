# tune_add_tuned_header(<target> RESULTS <file>... [PROBLEM <name>] [OUTPUT <path>] [CONFIG <problem.json>]
#                       [ALLOW_SYNTHETIC])
#
# Merges results files written by tune (one problem; any GPUs and shapes) into one tuned header at
# build time with `tune header`, re-run when a results file or tune changes, and gives <target>
# the header's folder and tune::kernels (the kernel templates) as include directories:
#   #include "contact/contact.cuh"   // the template, before the header for kWinnerKernels
#   #include "contact_tuned.hpp"     // tune_tuned::contact::select(arch, shape), ...
#   RESULTS          results JSON files (relative to the current source directory)
#   PROBLEM          the problem's name; default: read from the first results file (a .json.gz one
#                    by the installed tune, `tune results --json`)
#   OUTPUT           the header; default: <current binary dir>/tune_tuned/<problem>_tuned.hpp
#   CONFIG           the problem.json to take the search space from (tune header --config); default:
#                    the problem found by name (built-in, $TUNE_PROBLEM_PATH) or where the run found it
#   ALLOW_SYNTHETIC  pass --allow-synthetic: accept results that no real GPU measured (test fixtures)
# Works with the installed package (find_package(tune)) and inside tune's own build (bench/).
# The problem of a compressed results file (.json.gz, as files of record are kept), read by the
# installed tune itself (`tune results --json`): CMake cannot read gzip.
function(_tune_problem_of_compressed target file out)
  if(TARGET tune::tune)
    get_target_property(imported tune::tune IMPORTED)
  endif()
  if(NOT imported)
    message(FATAL_ERROR "tune_add_tuned_header(${target}): ${file} is compressed and no installed tune can read it "
                        "at configure time; name the problem with PROBLEM")
  endif()
  get_target_property(tune_exe tune::tune LOCATION)
  execute_process(COMMAND ${tune_exe} results --json ${file} OUTPUT_VARIABLE answer ERROR_VARIABLE why
                  RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    string(STRIP "${why}" why)
    message(FATAL_ERROR "tune_add_tuned_header(${target}): ${why}")
  endif()
  string(JSON problem ERROR_VARIABLE json_error GET "${answer}" records 0 run problem)
  if(json_error)
    message(FATAL_ERROR "tune_add_tuned_header(${target}): no problem name in ${file}; name it with PROBLEM")
  endif()
  set(${out} ${problem} PARENT_SCOPE)
endfunction()

function(tune_add_tuned_header target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "ALLOW_SYNTHETIC" "PROBLEM;OUTPUT;CONFIG" "RESULTS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tune_add_tuned_header: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "tune_add_tuned_header: no target named '${target}'")
  endif()
  if(NOT ARG_RESULTS)
    message(FATAL_ERROR "tune_add_tuned_header(${target}): give RESULTS, the results JSON files to merge")
  endif()
  set(results)
  foreach(file IN LISTS ARG_RESULTS)
    cmake_path(ABSOLUTE_PATH file BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} NORMALIZE)
    # A folder of results is a path tune header cannot read; the head check below would ask for PROBLEM.
    if(IS_DIRECTORY ${file})
      message(FATAL_ERROR "tune_add_tuned_header(${target}): ${file} is a folder; RESULTS takes results files "
                          "(file(GLOB ... ${file}/*.json.gz) lists a folder's)")
    endif()
    list(APPEND results ${file})
  endforeach()

  set(problem ${ARG_PROBLEM})
  if(NOT problem)
    # tune writes "problem" among the first keys (ordered JSON), so the file's head is enough.
    list(GET results 0 first)
    if(NOT EXISTS ${first})
      message(FATAL_ERROR "tune_add_tuned_header(${target}): ${first} does not exist; name the problem with PROBLEM")
    endif()
    if(first MATCHES "\\.gz$")
      _tune_problem_of_compressed(${target} ${first} problem)
    else()
      file(READ ${first} head LIMIT 4096)
      if(NOT head MATCHES "\"problem\": *\"([A-Za-z0-9_.-]+)\"")
        message(FATAL_ERROR "tune_add_tuned_header(${target}): no problem name in the head of ${first}; name it with PROBLEM")
      endif()
      set(problem ${CMAKE_MATCH_1})
    endif()
  endif()

  set(output ${ARG_OUTPUT})
  if(NOT output)
    set(output ${CMAKE_CURRENT_BINARY_DIR}/tune_tuned/${problem}_tuned.hpp)
  endif()
  cmake_path(ABSOLUTE_PATH output BASE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR} NORMALIZE)
  cmake_path(GET output PARENT_PATH output_dir)
  cmake_path(GET output FILENAME output_name)

  set(options)
  if(ARG_CONFIG)
    cmake_path(ABSOLUTE_PATH ARG_CONFIG BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} NORMALIZE)
    list(APPEND options --config ${ARG_CONFIG})
  endif()
  if(ARG_ALLOW_SYNTHETIC)
    list(APPEND options --allow-synthetic)
  endif()

  # One rule per header: a second target may share it, given the same inputs.
  get_property(known DIRECTORY PROPERTY TUNE_TUNED_HEADER_RULES)
  string(SHA1 inputs "${results}|${options}")
  set(rule "${output}|${inputs}")
  if(NOT rule IN_LIST known)
    foreach(other IN LISTS known)
      if(other MATCHES "^([^|]*)\\|" AND CMAKE_MATCH_1 STREQUAL output)
        message(FATAL_ERROR "tune_add_tuned_header(${target}): ${output} is already made from other results or options")
      endif()
    endforeach()
    set_property(DIRECTORY APPEND PROPERTY TUNE_TUNED_HEADER_RULES "${rule}")
    list(LENGTH results count)
    add_custom_command(
      OUTPUT ${output}
      COMMAND tune::tune header ${results} -o ${output} ${options}
      DEPENDS ${results} ${ARG_CONFIG} tune::tune
      COMMENT "tune header: ${output_name} from ${count} results file(s)"
      VERBATIM)
  endif()
  target_sources(${target} PRIVATE ${output})
  target_include_directories(${target} PRIVATE ${output_dir})
  target_link_libraries(${target} PRIVATE tune::kernels)
endfunction()
