# Install rules for files that name the install prefix (ldpb.pc, the systemd unit). The prefix is
# only known at install time (`cmake --install BUILD --prefix DIR` overrides CMAKE_INSTALL_PREFIX),
# so such a file is configured twice: at configure time with the @VAR@s of the calling scope,
# keeping @LDPB_PREFIX@ and @LDPB_FULL_BINDIR@, and at install time with those two.
#
#   ldpb_install_configured(TEMPLATE file DESTINATION dir RENAME name [REPLACE from to ...])
#
# DESTINATION is relative to the prefix (or absolute); REPLACE substitutes literal text of the
# template first (e.g. a path written for /usr/local in a user-facing file). At install time
# DESTDIR is honoured and the file is listed in install_manifest.txt like any installed file.
# This file is also what the install(CODE) includes at install time (LDPB_INSTALL_TIME set).

if(LDPB_INSTALL_TIME)
  if(IS_ABSOLUTE "${_ldpb_dest}")
    set(_ldpb_dir "${_ldpb_dest}")
  else()
    set(_ldpb_dir "${CMAKE_INSTALL_PREFIX}/${_ldpb_dest}")
  endif()
  set(LDPB_PREFIX "${CMAKE_INSTALL_PREFIX}")
  if(IS_ABSOLUTE "${_ldpb_bindir}")
    set(LDPB_FULL_BINDIR "${_ldpb_bindir}")
  else()
    set(LDPB_FULL_BINDIR "${CMAKE_INSTALL_PREFIX}/${_ldpb_bindir}")
  endif()
  set(_ldpb_path "$ENV{DESTDIR}${_ldpb_dir}/${_ldpb_name}")
  file(READ "${_ldpb_in}" _ldpb_text)
  message(STATUS "Installing: ${_ldpb_path}")
  file(CONFIGURE OUTPUT "${_ldpb_path}" CONTENT "${_ldpb_text}" @ONLY)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${_ldpb_path}")
  return()
endif()

function(ldpb_install_configured)
  cmake_parse_arguments(A "" "TEMPLATE;DESTINATION;RENAME" "REPLACE" ${ARGN})
  if(NOT A_TEMPLATE OR NOT A_DESTINATION OR NOT A_RENAME)
    message(FATAL_ERROR "ldpb_install_configured: TEMPLATE, DESTINATION and RENAME are required")
  endif()
  file(READ ${A_TEMPLATE} text)
  list(LENGTH A_REPLACE n)
  math(EXPR odd "${n} % 2")
  if(odd)
    message(FATAL_ERROR "ldpb_install_configured: REPLACE takes pairs (from to)")
  endif()
  while(A_REPLACE)
    list(POP_FRONT A_REPLACE from to)
    string(FIND "${text}" "${from}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "ldpb_install_configured: '${from}' is not in ${A_TEMPLATE}")
    endif()
    string(REPLACE "${from}" "${to}" text "${text}")
  endwhile()
  set(LDPB_PREFIX "@LDPB_PREFIX@")
  set(LDPB_FULL_BINDIR "@LDPB_FULL_BINDIR@")
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${A_RENAME}.install-template)
  file(CONFIGURE OUTPUT ${out} CONTENT "${text}" @ONLY)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${A_TEMPLATE})
  install(CODE "set(LDPB_INSTALL_TIME 1)
set(_ldpb_in \"${out}\")
set(_ldpb_dest \"${A_DESTINATION}\")
set(_ldpb_name \"${A_RENAME}\")
set(_ldpb_bindir \"${CMAKE_INSTALL_BINDIR}\")
include(\"${CMAKE_CURRENT_FUNCTION_LIST_FILE}\")
set(LDPB_INSTALL_TIME 0)")
endfunction()
