# ctest package.Install: cmake --install of this build into a fresh prefix, which is then moved, so
# that nothing installed can depend on where it was installed.
#   cmake -DBUILD=<build dir> -DDIR=<test dir> -P install.cmake   ->  DIR/prefix
file(REMOVE_RECURSE ${DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${DIR}/staging
                RESULT_VARIABLE installed OUTPUT_QUIET)
if(NOT installed EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD} failed (exit ${installed})")
endif()
file(RENAME ${DIR}/staging ${DIR}/prefix)
foreach(file bin/tune lib/cmake/tune/tuneConfig.cmake lib/cmake/tune/tuneConfigVersion.cmake lib/cmake/tune/tuneTargets.cmake
             lib/cmake/tune/tuneFunctions.cmake share/tune/configs/contact/problem.json
             share/tune/kernel_templates/contact/contact.cuh share/tune/kernel_templates/contact/strategies/mma.cuh
             share/tune/kernel_templates/common/tune_common.cuh share/tune/report/report.py
             share/tune/report/torch_baseline.py share/tune/report/torch_timing.py
             share/tune/python/tune_problem.py share/tune/scripts/make_goldens.py
             share/tune/scripts/slurm/submit.sh share/tune/scripts/slurm/tune_array.sbatch)
  if(NOT EXISTS ${DIR}/prefix/${file})
    message(FATAL_ERROR "the install has no ${file}")
  endif()
endforeach()
