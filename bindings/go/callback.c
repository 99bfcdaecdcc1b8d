// The C side of the progress callback: a trampoline with the exact hetreward_progress_callback
// signature that forwards to the exported Go function, and a setter that stores the fitter's
// cgo.Handle (an integer) in the params' void * user_data without a Go-side pointer cast.
#include "_cgo_export.h"

static int hetreward_go_trampoline(const hetreward_progress *progress, void *user_data) {
    return hetrewardGoProgress((hetreward_progress *)progress, (uintptr_t)user_data);
}

void hetreward_go_set_progress(hetreward_fit_params *params, uintptr_t handle) {
    params->progress = hetreward_go_trampoline;
    params->progress_user_data = (void *)handle;
}
