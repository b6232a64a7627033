# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Builds probe TARGET in BUILD_DIR; EXPECT=fail: the build must fail for a header that
# its layer cannot see; EXPECT=build: it must succeed.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(EXPECT STREQUAL "fail")
  if(rc EQUAL 0)
    message(FATAL_ERROR "${TARGET} compiled: a layer sees headers above it")
  endif()
  if(NOT out MATCHES "No such file or directory")
    message(FATAL_ERROR "${TARGET} failed for another reason than a missing header:\n${out}")
  endif()
  string(REGEX MATCH "[^\n]*No such file or directory" why "${out}")
  message(STATUS "refused as it should be: ${why}")
else()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "control probe ${TARGET} did not build:\n${out}")
  endif()
endif()
