# Installs this build into a scratch prefix, moves the prefix, and checks that
# the installed `fhelium` still finds its cpu plugin inside the moved tree
# (relative to the program, not a path fixed when the build was configured)
# and runs its demo on it.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install failed (${rc}): ${err}")
endif()
file(RENAME ${WORK_DIR}/prefix ${WORK_DIR}/moved)
set(moved ${WORK_DIR}/moved)
execute_process(COMMAND ${moved}/bin/fhelium backends RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${out}" "${moved}/lib/fhelium/plugins/libfhelium-backend-cpu.so" at)
if(NOT rc EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "the moved install's fhelium did not list its own cpu plugin (rc ${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${moved}/bin/fhelium demo --backend ${moved}/lib/fhelium/plugins/libfhelium-backend-cpu.so
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the moved install's demo failed (rc ${rc}):\n${out}\n${err}")
endif()
message(STATUS "${out}")
