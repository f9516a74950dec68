# 64-bit ARM Linux (arm64), Debian's gcc-aarch64-linux-gnu; tests run under qemu-aarch64.
#   cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake -DLDPB_CLIENT_ONLY=ON
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(LDPB_CROSS_TRIPLET aarch64-linux-gnu)
set(LDPB_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/ldpb_cross_linux.cmake)
