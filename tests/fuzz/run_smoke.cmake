# Runs a libFuzzer binary for a bounded time (SECONDS, at most RUNS inputs) on a fresh copy of
# CORPUS under WORK, so the committed corpus is never written to. Crash reproducers go to
# WORK/artifacts; the test fails if the fuzzer finds anything.
foreach(v FUZZER CORPUS WORK SECONDS RUNS)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "run_smoke.cmake: ${v} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
file(GLOB seeds "${CORPUS}/*")
if(NOT seeds)
  message(FATAL_ERROR "run_smoke.cmake: no seeds in ${CORPUS}")
endif()
file(COPY ${seeds} DESTINATION "${WORK}/corpus")
set(args -max_total_time=${SECONDS} -runs=${RUNS} -timeout=10 -rss_limit_mb=2048
    -max_len=8192 -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/)
if(DICT)
  list(APPEND args -dict=${DICT})
endif()
execute_process(COMMAND "${FUZZER}" ${args} "${WORK}/corpus"
  WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzzer exited with ${rc}; reproducers in ${WORK}/artifacts")
endif()
