/* Built by scripts/ci.d/30-c-abi.sh with only `pkg-config --cflags --libs hetreward`. */
#include <hetreward.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    hetreward_fitter *fitter = NULL;
    if (strcmp(hetreward_version(), HETREWARD_VERSION) != 0) return 1;
    if (hetreward_fitter_new(NULL, &fitter) != HETREWARD_OK) return 1;
    hetreward_fitter_free(fitter);
    printf("pkg-config consumer: hetreward %s\n", hetreward_version());
    return 0;
}
