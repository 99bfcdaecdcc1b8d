// test_header: hetreward.h compiles as C++ (-std=c++11 -Wall -Wextra -Wpedantic -Werror), its
// types have the layout a C caller sees, and the functions link and run from C++.
#include "hetreward.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(sizeof(hetreward_status) == 4, "hetreward_status is a uint32_t");
static_assert(std::is_standard_layout<hetreward_fit_params>::value, "C layout");
static_assert(std::is_standard_layout<hetreward_reward>::value, "C layout");
static_assert(sizeof(hetreward_reward) == 4 * sizeof(double), "four doubles, no padding");
static_assert(sizeof(hetreward_candidate) == 6 * sizeof(double), "six doubles, no padding");
static_assert(HETREWARD_OK == 0, "OK is 0");

#define EXPECT(cond)                                                   \
    do {                                                               \
        if (!(cond)) {                                                 \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                  \
        }                                                              \
    } while (0)

int main() {
    EXPECT(std::strcmp(hetreward_version(), HETREWARD_VERSION) == 0);
    hetreward_fit_params p = hetreward_fit_default_params();
    EXPECT(p.struct_size == sizeof(hetreward_fit_params));
    hetreward_fitter *fitter = nullptr;
    EXPECT(hetreward_fitter_new(&p, &fitter) == HETREWARD_OK);
    hetreward_model *model = nullptr;
    EXPECT(hetreward_fitter_fit(fitter, nullptr, &model) == HETREWARD_NULL_POINTER);
    EXPECT(std::strstr(hetreward_last_error_message(), "dataset") != nullptr);
    EXPECT(model == nullptr);
    hetreward_fitter_free(fitter);
    EXPECT(std::strcmp(hetreward_status_name(HETREWARD_CANCELLED), "HETREWARD_CANCELLED") == 0);
    std::printf("test_header (C++): ok\n");
    return 0;
}
