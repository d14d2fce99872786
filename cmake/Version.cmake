# The tool version and the git commit it was built from, refreshed on every build (the file is
# rewritten only when the commit changes, so nothing rebuilds needlessly).
set(TUNE_VERSION_CPP ${PROJECT_BINARY_DIR}/generated/version.cpp)
add_custom_target(tune_version_info
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUTPUT=${TUNE_VERSION_CPP}
          -DVERSION=${PROJECT_VERSION} -P ${PROJECT_SOURCE_DIR}/cmake/version_info.cmake
  BYPRODUCTS ${TUNE_VERSION_CPP}
  COMMENT "Recording the git commit"
  VERBATIM)
