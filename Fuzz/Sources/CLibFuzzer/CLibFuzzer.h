// libFuzzer's entry for a program with a main of its own: runs the fuzzer as its command
// line says, with `test_one_input` as the target, and returns the exit status.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*test_one_input)(const uint8_t *data, size_t size));
