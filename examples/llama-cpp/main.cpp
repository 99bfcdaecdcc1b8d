// hetreward-llama: pessimistic Best-of-N inside a llama.cpp program, on the command line or
// behind an OpenAI-compatible HTTP server.
//
//   hetreward-llama --generator G.gguf --embedder E.gguf --model M.hrm [--projection P]
//                   [-n 4] [--max-tokens 64] [--seed 42] [--json OUT.json] "prompt"
//   hetreward-llama ... --serve [--host 127.0.0.1] [--port 8080] [--max-n 16]
//
// The projection defaults to the model path with ".hrm" replaced by ".projection.safetensors"
// (the companion file examples/real-data writes).
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "httplib.h"
#include "nlohmann/json.hpp"
#include "pbon.hpp"

using json = nlohmann::json;

namespace {

struct Args {
    std::string generator, embedder, model, projection, prompt, json_out, host = "127.0.0.1";
    std::string served_name = "hetreward-pbon";
    int port = 8080, max_n = 16;
    bool serve = false;
    pbon::Options opt;
};

[[noreturn]] void usage(const std::string &why) {
    std::fprintf(stderr,
                 "%s\nusage: hetreward-llama --generator G.gguf --embedder E.gguf --model M.hrm "
                 "[--projection P] [-n N] [--max-tokens T] [--seed S] [--temperature X] "
                 "[--json OUT] \"prompt\"\n       hetreward-llama ... --serve [--host H] [--port P] "
                 "[--max-n N] [--name MODEL_NAME]\n",
                 why.c_str());
    std::exit(2);
}

int to_int(const std::string &flag, const std::string &v) {
    try {
        size_t used = 0;
        int x = std::stoi(v, &used);
        if (used != v.size()) throw std::invalid_argument(v);
        return x;
    } catch (const std::exception &) {
        usage(flag + ": not an integer: " + v);
    }
}

Args parse(int argc, char **argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string f = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) usage(f + " needs a value");
            return argv[++i];
        };
        if (f == "--generator") a.generator = next();
        else if (f == "--embedder") a.embedder = next();
        else if (f == "--model") a.model = next();
        else if (f == "--projection") a.projection = next();
        else if (f == "-n") a.opt.n = to_int(f, next());
        else if (f == "--max-tokens") a.opt.max_tokens = to_int(f, next());
        else if (f == "--seed") a.opt.seed = (unsigned)to_int(f, next());
        else if (f == "--temperature") a.opt.temperature = std::stof(next());
        else if (f == "--json") a.json_out = next();
        else if (f == "--serve") a.serve = true;
        else if (f == "--host") a.host = next();
        else if (f == "--port") a.port = to_int(f, next());
        else if (f == "--max-n") a.max_n = to_int(f, next());
        else if (f == "--name") a.served_name = next();
        else if (!f.empty() && f[0] == '-') usage("unknown option " + f);
        else if (a.prompt.empty()) a.prompt = f;
        else usage("more than one prompt given");
    }
    if (a.generator.empty() || a.embedder.empty() || a.model.empty()) {
        usage("--generator, --embedder and --model are required");
    }
    if (a.projection.empty()) {
        std::string m = a.model;
        if (m.size() > 4 && m.compare(m.size() - 4, 4, ".hrm") == 0) m.resize(m.size() - 4);
        a.projection = m + ".projection.safetensors";
    }
    if (!a.serve && a.prompt.empty()) usage("no prompt given");
    if (!a.serve) a.max_n = std::max(a.max_n, a.opt.n);
    return a;
}

json result_json(const pbon::Result &r) {
    json c = json::array();
    for (auto &x : r.candidates) {
        c.push_back({{"text", x.text}, {"finish_reason", x.finish_reason}, {"tokens", x.tokens},
                     {"reward", x.figures.reward.reward}, {"se", x.figures.reward.se},
                     {"lower", x.figures.reward.lower}, {"upper", x.figures.reward.upper},
                     {"embedding", x.embedding}, {"features", x.features}});
    }
    return {{"candidates", c}, {"pbon", r.pbon}, {"bon", r.bon},
            {"seconds", {{"generation", r.t_generate}, {"embedding", r.t_embed}, {"selection", r.t_select}}}};
}

int run_once(pbon::Engine &engine, const Args &a) {
    std::string prompt = engine.chat_prompt({{"user", a.prompt}});
    auto r = engine.run(prompt, a.prompt, a.opt);
    for (size_t i = 0; i < r.candidates.size(); ++i) {
        auto &c = r.candidates[i];
        std::printf("--- candidate %zu%s%s  reward %.4f  se %.4f  lower %.4f  (%d tokens, %s)\n%s\n", i,
                    i == r.pbon ? "  [pBoN]" : "", i == r.bon ? "  [BoN]" : "", c.figures.reward.reward,
                    c.figures.reward.se, c.figures.reward.lower, c.tokens, c.finish_reason.c_str(),
                    c.text.c_str());
    }
    std::printf("pBoN pick: %zu   BoN pick: %zu\n", r.pbon, r.bon);
    std::printf("time: generation %.3f s, embedding %.3f s, selection %.6f s (N = %d)\n", r.t_generate,
                r.t_embed, r.t_select, a.opt.n);
    if (!a.json_out.empty()) {
        json j = result_json(r);
        j["prompt"] = a.prompt;
        std::ofstream(a.json_out) << j.dump();
    }
    return 0;
}

// ---- the OpenAI-compatible server ----

struct HttpError : std::runtime_error {
    int status;
    std::string param;
    HttpError(int s, const std::string &m, std::string p = "") : std::runtime_error(m), status(s), param(std::move(p)) {}
};

void send_error(httplib::Response &res, int status, const std::string &msg, const std::string &param) {
    json e = {{"error", {{"message", msg}, {"type", status == 404 ? "not_found_error" : "invalid_request_error"},
                         {"param", param.empty() ? json() : json(param)}, {"code", json()}}}};
    res.status = status;
    res.set_content(e.dump(), "application/json");
}

int int_field(const json &body, const char *name, int def, int lo, int hi) {
    if (!body.contains(name) || body[name].is_null()) return def;
    const json &v = body[name];
    if (!v.is_number_integer()) throw HttpError(400, std::string(name) + " must be an integer", name);
    long long x = v.get<long long>();
    if (x < lo || x > hi) {
        throw HttpError(400, std::string(name) + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) +
                                 ", got " + std::to_string(x), name);
    }
    return (int)x;
}

double num_field(const json &body, const char *name, double def, double lo, double hi) {
    if (!body.contains(name) || body[name].is_null()) return def;
    if (!body[name].is_number()) throw HttpError(400, std::string(name) + " must be a number", name);
    double x = body[name].get<double>();
    if (!(x >= lo && x <= hi)) {
        throw HttpError(400, std::string(name) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", name);
    }
    return x;
}

// The fields both endpoints share: model, n, best_of, max_tokens, temperature, top_p, seed.
pbon::Options request_options(const json &body, const Args &a, int &n_out, int max_n) {
    if (!body.is_object()) throw HttpError(400, "the request body must be a JSON object", "");
    if (!body.contains("model") || !body["model"].is_string()) throw HttpError(400, "model is required", "model");
    if (body["model"] != a.served_name) {
        throw HttpError(404, "The model '" + body["model"].get<std::string>() + "' does not exist; this server serves '" +
                                 a.served_name + "'", "model");
    }
    if (body.contains("stream") && body["stream"].is_boolean() && body["stream"].get<bool>()) {
        throw HttpError(400, "stream is not supported", "stream");
    }
    pbon::Options o = a.opt;
    int n = int_field(body, "n", 1, 1, max_n);
    int best_of = int_field(body, "best_of", n, 1, max_n);
    if (n > best_of) throw HttpError(400, "n (" + std::to_string(n) + ") must be <= best_of (" + std::to_string(best_of) + ")", "n");
    o.n = best_of;
    o.max_tokens = int_field(body, "max_tokens", a.opt.max_tokens, 1, 512);
    o.temperature = (float)num_field(body, "temperature", a.opt.temperature, 1e-3, 2.0);
    o.top_p = (float)num_field(body, "top_p", a.opt.top_p, 1e-6, 1.0);
    o.seed = (unsigned)int_field(body, "seed", (int)a.opt.seed, 0, 2147483647);
    n_out = n;
    return o;
}

// The n best candidates by the pBoN objective, the pBoN pick first.
std::vector<size_t> ranked(const pbon::Result &r, int n) {
    std::vector<size_t> idx(r.candidates.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](size_t x, size_t y) {
        if (x == r.pbon || y == r.pbon) return x == r.pbon && y != r.pbon;
        return r.candidates[x].figures.score > r.candidates[y].figures.score;
    });
    idx.resize(n);
    return idx;
}

json usage_json(const pbon::Result &r) {
    int completion = 0;
    for (auto &c : r.candidates) completion += c.tokens;
    return {{"prompt_tokens", r.prompt_tokens}, {"completion_tokens", completion},
            {"total_tokens", r.prompt_tokens + completion}};
}

json figures_json(const pbon::Candidate &c) {
    return {{"reward", c.figures.reward.reward}, {"se", c.figures.reward.se}, {"lower", c.figures.reward.lower},
            {"upper", c.figures.reward.upper}};
}

void handle(httplib::Response &res, const std::function<json()> &body) {
    try {
        res.set_content(body().dump(), "application/json");
    } catch (const HttpError &e) {
        send_error(res, e.status, e.what(), e.param);
    } catch (const json::exception &e) {
        send_error(res, 400, std::string("malformed request: ") + e.what(), "");
    } catch (const std::invalid_argument &e) {
        send_error(res, 400, e.what(), "");
    } catch (const std::exception &e) {
        send_error(res, 500, e.what(), "");
    }
}

int serve(pbon::Engine &engine, const Args &a) {
    httplib::Server srv;
    std::mutex mu;  // one llama context: one request at a time
    long long counter = 0;
    srv.Get("/health", [](const httplib::Request &, httplib::Response &res) {
        res.set_content("{\"status\":\"ok\"}", "application/json");
    });
    srv.Get("/v1/models", [&](const httplib::Request &, httplib::Response &res) {
        json m = {{"object", "list"}, {"data", {{{"id", a.served_name}, {"object", "model"}, {"owned_by", "hetreward"}}}}};
        res.set_content(m.dump(), "application/json");
    });
    srv.Post("/v1/completions", [&](const httplib::Request &req, httplib::Response &res) {
        handle(res, [&]() -> json {
            json body = json::parse(req.body);
            int n = 1;
            auto o = request_options(body, a, n, engine.max_n());
            if (!body.contains("prompt") || !body["prompt"].is_string()) {
                throw HttpError(400, "prompt must be a string", "prompt");
            }
            std::string q = body["prompt"];
            std::lock_guard<std::mutex> lock(mu);
            auto r = engine.run(engine.chat_prompt({{"user", q}}), q, o);
            json choices = json::array();
            int k = 0;
            for (size_t i : ranked(r, n)) {
                json c = {{"text", r.candidates[i].text}, {"index", k++}, {"logprobs", nullptr},
                          {"finish_reason", r.candidates[i].finish_reason}};
                c.update(figures_json(r.candidates[i]));
                choices.push_back(c);
            }
            return {{"id", "cmpl-" + std::to_string(++counter)}, {"object", "text_completion"},
                    {"created", (long long)std::time(nullptr)}, {"model", a.served_name}, {"choices", choices},
                    {"usage", usage_json(r)}};
        });
    });
    srv.Post("/v1/chat/completions", [&](const httplib::Request &req, httplib::Response &res) {
        handle(res, [&]() -> json {
            json body = json::parse(req.body);
            int n = 1;
            auto o = request_options(body, a, n, engine.max_n());
            if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
                throw HttpError(400, "messages must be a non-empty array", "messages");
            }
            std::vector<std::pair<std::string, std::string>> msgs;
            std::string question;
            for (auto &m : body["messages"]) {
                if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
                    !m["content"].is_string()) {
                    throw HttpError(400, "each message needs a string role and a string content", "messages");
                }
                msgs.emplace_back(m["role"], m["content"]);
                if (m["role"] == "user") question = m["content"];
            }
            std::lock_guard<std::mutex> lock(mu);
            auto r = engine.run(engine.chat_prompt(msgs), question, o);
            json choices = json::array();
            int k = 0;
            for (size_t i : ranked(r, n)) {
                json c = {{"index", k++}, {"message", {{"role", "assistant"}, {"content", r.candidates[i].text}}},
                          {"logprobs", nullptr}, {"finish_reason", r.candidates[i].finish_reason}};
                c.update(figures_json(r.candidates[i]));
                choices.push_back(c);
            }
            return {{"id", "chatcmpl-" + std::to_string(++counter)}, {"object", "chat.completion"},
                    {"created", (long long)std::time(nullptr)}, {"model", a.served_name}, {"choices", choices},
                    {"usage", usage_json(r)}};
        });
    });
    std::fprintf(stderr, "serving %s on http://%s:%d (POST /v1/completions, /v1/chat/completions)\n",
                 a.served_name.c_str(), a.host.c_str(), a.port);
    if (!srv.listen(a.host, a.port)) {
        std::fprintf(stderr, "cannot listen on %s:%d\n", a.host.c_str(), a.port);
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Args a = parse(argc, argv);
    try {
        pbon::Engine engine(a.generator, a.embedder, a.model, a.projection, a.max_n);
        return a.serve ? serve(engine, a) : run_once(engine, a);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "hetreward-llama: %s\n", e.what());
        return 1;
    }
}
