# Installs this build into a scratch prefix, builds examples/template-backend
# against it with find_package(FHElium), and runs the installed conformance
# suite on the resulting plugin.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/template-backend -B ${WORK_DIR}/build
     -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build -j2)
step(${prefix}/bin/fhelium-conformance --backend
     ${WORK_DIR}/build/lib/fhelium/plugins/libfhelium-backend-template.so --log-n 11 12)
