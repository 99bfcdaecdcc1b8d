// A C++ consumer of the installed hetreward package: fits a small model from arrays, scores
// answers and picks the best of N pessimistically, with RAII handles around the C API.
#include <hetreward.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct DatasetFree {
    void operator()(hetreward_dataset *p) const { hetreward_dataset_free(p); }
};
struct FitterFree {
    void operator()(hetreward_fitter *p) const { hetreward_fitter_free(p); }
};
struct ModelFree {
    void operator()(hetreward_model *p) const { hetreward_model_free(p); }
};
using Dataset = std::unique_ptr<hetreward_dataset, DatasetFree>;
using Fitter = std::unique_ptr<hetreward_fitter, FitterFree>;
using Model = std::unique_ptr<hetreward_model, ModelFree>;

void check(hetreward_status status, const char *what) {
    if (status != HETREWARD_OK)
        throw std::runtime_error(std::string(what) + ": " + hetreward_status_name(status) + ": " +
                                 hetreward_last_error_message());
}

double uniform(unsigned long long &state) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) / 9007199254740992.0;
}

int run() {
    const size_t n = 500, d1 = 3, d2 = 1;
    const double theta_true[3] = {1.0, -1.0, 0.5}, gamma_true = 0.6;
    std::vector<double> z(n * d1), psi0(n, 1.0), psi(n), y(n);
    unsigned long long s = 2024;
    for (size_t i = 0; i < n; i++) {
        double t = 0.0;
        for (size_t j = 0; j < d1; j++) {
            z[i * d1 + j] = 4.0 * uniform(s) - 2.0;
            t += theta_true[j] * z[i * d1 + j];
        }
        psi[i] = static_cast<double>(i % 2);
        const double sigma = psi0[i] + gamma_true * psi[i];
        y[i] = uniform(s) < 1.0 / (1.0 + std::exp(-sigma * t)) ? 1.0 : 0.0;
    }

    hetreward_dataset *raw_data = nullptr;
    check(hetreward_dataset_new(n, d1, d2, z.data(), psi0.data(), psi.data(), y.data(), nullptr,
                                &raw_data),
          "dataset");
    Dataset data(raw_data);

    hetreward_fit_params params = hetreward_fit_default_params();
    params.threads = 1;
    hetreward_fitter *raw_fitter = nullptr;
    check(hetreward_fitter_new(&params, &raw_fitter), "fitter");
    Fitter fitter(raw_fitter);
    hetreward_model *raw_model = nullptr;
    check(hetreward_fitter_fit(fitter.get(), data.get(), &raw_model), "fit");
    Model model(raw_model);

    hetreward_fit_report report;
    check(hetreward_model_report(model.get(), &report), "report");
    std::vector<double> theta(d1);
    check(hetreward_model_theta(model.get(), theta.data(), d1), "theta");

    // Four candidate answers' embeddings (float, row-major), as an inference engine has them.
    const std::vector<float> phi = {0.9f, -0.8f, 0.1f,  0.2f, 0.1f, 0.0f,
                                    1.5f, -1.4f, 0.9f,  -0.5f, 0.6f, 0.2f};
    const size_t m = phi.size() / d1;
    std::vector<hetreward_reward> rewards(m);
    check(hetreward_model_score(model.get(), phi.data(), m, d1, 0.05, rewards.data()), "score");
    for (size_t k = 0; k < m; k++) {
        double r = 0.0;
        for (size_t j = 0; j < d1; j++) r += theta[j] * phi[k * d1 + j];
        if (std::fabs(r - rewards[k].reward) > 1e-12 || !(rewards[k].se > 0.0)) return 1;
    }
    size_t best = m;
    std::vector<hetreward_candidate> candidates(m);
    check(hetreward_model_select(model.get(), phi.data(), m, d1, nullptr, 0.05,
                                 HETREWARD_POLICY_PBON, &best, candidates.data()),
          "select");
    for (size_t k = 0; k < m; k++)
        if (candidates[k].score > candidates[best].score) return 1;

    std::printf("hetreward %s: converged=%d after %zu iterations, theta = (%.3f, %.3f, %.3f), "
                "pBoN picks candidate %zu (lower bound %.3f)\n",
                hetreward_version(), report.converged ? 1 : 0, report.iterations, theta[0],
                theta[1], theta[2], best, candidates[best].reward.lower);
    return report.converged ? 0 : 1;
}

}  // namespace

int main() {
    try {
        return run();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "consumer: %s\n", e.what());
        return 1;
    }
}
