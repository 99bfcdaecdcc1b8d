/* test_version: the header's version macros agree with each other, with hetreward_version()
 * and with Cargo.toml's version (passed by CMake as HETREWARD_EXPECTED_VERSION). */
#include "common.h"

#ifndef HETREWARD_EXPECTED_VERSION
#error "HETREWARD_EXPECTED_VERSION must be defined (from Cargo.toml)"
#endif

#define STR2(x) #x
#define STR(x) STR2(x)

int main(void) {
    char from_macros[64];
    snprintf(from_macros, sizeof from_macros, "%d.%d.%d", HETREWARD_VERSION_MAJOR,
             HETREWARD_VERSION_MINOR, HETREWARD_VERSION_PATCH);
    CHECK(strcmp(from_macros, HETREWARD_VERSION) == 0);
    CHECK(strcmp(STR(HETREWARD_VERSION_MAJOR) "." STR(HETREWARD_VERSION_MINOR) "." STR(
                     HETREWARD_VERSION_PATCH),
                 HETREWARD_VERSION) == 0);
    CHECK(strcmp(hetreward_version(), HETREWARD_VERSION) == 0);
    CHECK(strcmp(HETREWARD_VERSION, HETREWARD_EXPECTED_VERSION) == 0);
    printf("test_version: ok (%s)\n", hetreward_version());
    return 0;
}
