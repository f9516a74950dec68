/* The libFuzzer entry point every fuzz target defines; replay_main.c drives it from files. */
#ifndef LDPB_FUZZ_TARGET_H
#define LDPB_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
