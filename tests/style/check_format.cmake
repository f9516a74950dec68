# Runs clang-format --dry-run -Werror over every first-party C file.
file(GLOB_RECURSE files
  ${SRC}/common/*.c ${SRC}/common/*.h ${SRC}/client/*.c ${SRC}/client/*.h
  ${SRC}/aggregator/*.c ${SRC}/aggregator/*.h ${SRC}/tools/*.c ${SRC}/tools/*.h
  ${SRC}/tests/*.c ${SRC}/tests/*.h ${SRC}/bench/*.c ${SRC}/bench/*.h ${SRC}/docs/*.c
  ${SRC}/examples/*.c)
execute_process(COMMAND ${CLANG_FORMAT} --style=file --dry-run -Werror ${files}
  WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clang-format: files above differ from .clang-format (run scripts/format.sh)")
endif()
list(LENGTH files n)
message(STATUS "clang-format: ${n} files conform")
