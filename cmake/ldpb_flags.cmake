# Warning and sanitizer flags live in INTERFACE targets that each of our targets links PRIVATE,
# so nothing leaks into consumers and no global flag variable is edited.

add_library(ldpb_warnings INTERFACE)
target_compile_options(ldpb_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wformat=2 -Wundef -Wswitch-enum -Wvla)
if(LDPB_WERROR)
  target_compile_options(ldpb_warnings INTERFACE -Werror)
endif()

add_library(ldpb_sanitize INTERFACE)
if(LDPB_SANITIZE)
  target_compile_options(ldpb_sanitize INTERFACE
    -fsanitize=${LDPB_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(ldpb_sanitize INTERFACE -fsanitize=${LDPB_SANITIZE})
endif()

# Every first-party target calls this: C11 without extensions, our warnings, our sanitizers.
function(ldpb_target_defaults tgt)
  set_target_properties(${tgt} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_link_libraries(${tgt} PRIVATE ldpb_warnings ldpb_sanitize)
  # 64-bit file offsets and time_t on 32-bit targets too (armhf): without them readdir fails
  # with EOVERFLOW on a file system with 64-bit directory offsets, and time_t ends in 2038. No
  # effect on 64-bit targets; the public headers use neither type.
  target_compile_definitions(${tgt} PRIVATE _POSIX_C_SOURCE=200809L _DEFAULT_SOURCE
    _FILE_OFFSET_BITS=64 _TIME_BITS=64)
endfunction()
