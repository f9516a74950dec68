# Shared part of the Linux cross toolchain files (toolchain-aarch64.cmake, toolchain-armhf.cmake):
# Debian's cross gcc for LDPB_CROSS_TRIPLET, the target's libsodium, libprotobuf-c, nanomsg and
# cmocka from the sysroot /opt/ldpb-cross/TRIPLET that scripts/deps-arm.sh unpacks (it says why
# not multiarch), and qemu-user as the emulator CTest runs the target's programs with. The host's
# protoc-c generates the protobuf-c code (its output is architecture independent).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${LDPB_CROSS_TRIPLET}-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE ${LDPB_CROSS_TRIPLET})

if(DEFINED ENV{LDPB_CROSS_ROOT})
  set(LDPB_CROSS_SYSROOT $ENV{LDPB_CROSS_ROOT}/${LDPB_CROSS_TRIPLET})
else()
  set(LDPB_CROSS_SYSROOT /opt/ldpb-cross/${LDPB_CROSS_TRIPLET})
endif()

# pkg-config sees the target's modules only, never the host's.
# The libraries are linked by full path, so the build tree's RUNPATH names the sysroot and the
# programs find them under qemu as they are.
set(ENV{PKG_CONFIG_LIBDIR} "${LDPB_CROSS_SYSROOT}/usr/lib/${LDPB_CROSS_TRIPLET}/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
unset(ENV{PKG_CONFIG_SYSROOT_DIR})

# Programs (protoc-c) from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# The loader and libc of the cross toolchain (libc6-*-cross): QEMU_LD_PREFIX's directory.
set(CMAKE_CROSSCOMPILING_EMULATOR ${LDPB_QEMU} -L /usr/${LDPB_CROSS_TRIPLET})
