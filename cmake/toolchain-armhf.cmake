# 32-bit ARM Linux, hard float (armhf: ARMv7-A, VFPv3-D16, Thumb-2), Debian's
# gcc-arm-linux-gnueabihf; tests run under qemu-arm.
#   cmake -S . -B build/armhf -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake -DLDPB_CLIENT_ONLY=ON
set(CMAKE_SYSTEM_PROCESSOR arm)
set(LDPB_CROSS_TRIPLET arm-linux-gnueabihf)
set(LDPB_QEMU qemu-arm)
include(${CMAKE_CURRENT_LIST_DIR}/ldpb_cross_linux.cmake)
