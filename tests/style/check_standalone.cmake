# The repository stands alone: no file may cite the planning notes that were kept outside it while
# it was built (a design note, an algorithm spec, a conventions note, and the folder that held
# them), since a reader of the repository cannot open them. Cite the paper (authors, year, section)
# or docs/ instead; derivations the code relies on are in docs/derivations.md.
#
#   cmake -DSRC=<source dir> -P check_standalone.cmake
#
# Files: what git tracks plus untracked files that are not ignored (so a new file is checked before
# its first commit); without git, every file outside .git and build*. results/ is exempt: it holds
# generated output of past runs, kept as it was produced. The pattern is written with bracket
# expressions so that this file does not match it.
cmake_minimum_required(VERSION 3.21)
set(pattern "(design|algorithms|conventions)[.]md|[.][.]/shared|shared[/]spec")

find_program(GIT git)
set(files "")
if(GIT)
  execute_process(COMMAND ${GIT} -C ${SRC} ls-files -co --exclude-standard
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_QUIET)
  if(rc EQUAL 0)
    string(REPLACE "\n" ";" files "${out}")
  endif()
endif()
if(NOT files)
  file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE ${SRC} ${SRC}/*)
  list(FILTER files EXCLUDE REGEX "^(\\.git|build)")
endif()
list(FILTER files EXCLUDE REGEX "^results/")

set(n 0)
set(bad "")
foreach(f IN LISTS files)
  if(f STREQUAL "" OR NOT EXISTS ${SRC}/${f} OR IS_DIRECTORY ${SRC}/${f})
    continue()
  endif()
  math(EXPR n "${n} + 1")
  file(STRINGS ${SRC}/${f} hits REGEX "${pattern}")
  foreach(h IN LISTS hits)
    string(APPEND bad "  ${f}: ${h}\n")
  endforeach()
endforeach()
if(n EQUAL 0)
  message(FATAL_ERROR "standalone: no files found under ${SRC}")
endif()
if(bad)
  message(FATAL_ERROR "standalone: these lines cite notes that are not in the repository; cite "
                      "the paper or docs/ instead:\n${bad}")
endif()
message(STATUS "standalone: ${n} files checked, none cites a note outside the repository")
