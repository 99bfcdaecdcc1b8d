// hetreward-llama: pessimistic Best-of-N inside a llama.cpp program — the in-process C++
// reference for calling hetreward_model_select on a program's own embeddings.
//
//   hetreward-llama --generator G.gguf --embedder E.gguf --model M.hrm [--projection P]
//                   [-n 4] [--max-tokens 64] [--seed S] [--temperature T] [--top-p P]
//                   [--json OUT.json] "prompt"
//
// The projection defaults to the model path with ".hrm" replaced by ".projection.safetensors"
// (the companion file examples/real-data writes). Without --seed a random seed is drawn and
// printed. Serving many clients over HTTP is the gateway's job (`hetreward serve`,
// docs/serve.md), in front of any OpenAI-compatible server.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "nlohmann/json.hpp"
#include "pbon.hpp"

using json = nlohmann::json;

namespace {

struct Args {
    std::string generator, embedder, model, projection, prompt, json_out;
    pbon::Options opt;
};

[[noreturn]] void usage(const std::string &why, int code = 2) {
    std::fprintf(code == 0 ? stdout : stderr,
                 "%s%susage: hetreward-llama --generator G.gguf --embedder E.gguf --model M.hrm "
                 "[--projection P] [-n N] [--max-tokens T] [--seed S] [--temperature X] [--top-p P] "
                 "[--json OUT] \"prompt\"\n"
                 "(an OpenAI-compatible server with pBoN is the gateway: `hetreward serve`, docs/serve.md)\n",
                 why.c_str(), why.empty() ? "" : "\n");
    std::exit(code);
}

long long to_integer(const std::string &flag, const std::string &v, long long lo, long long hi) {
    try {
        size_t used = 0;
        long long x = std::stoll(v, &used);
        if (used != v.size() || x < lo || x > hi) throw std::out_of_range(v);
        return x;
    } catch (const std::exception &) {
        usage(flag + ": not an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ": " + v);
    }
}

float to_number(const std::string &flag, const std::string &v, double lo, double hi) {
    try {
        size_t used = 0;
        double x = std::stod(v, &used);
        if (used != v.size() || !(x >= lo && x <= hi)) throw std::out_of_range(v);
        return (float)x;
    } catch (const std::exception &) {
        usage(flag + ": not a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]: " + v);
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
        if (f == "-h" || f == "--help") usage("", 0);
        else if (f == "--generator") a.generator = next();
        else if (f == "--embedder") a.embedder = next();
        else if (f == "--model") a.model = next();
        else if (f == "--projection") a.projection = next();
        else if (f == "-n") a.opt.n = (int)to_integer(f, next(), 1, 64);
        else if (f == "--max-tokens") a.opt.max_tokens = (int)to_integer(f, next(), 1, 2048);
        else if (f == "--seed") a.opt.seed = (uint32_t)to_integer(f, next(), 0, pbon::kRandomSeed - 1LL);
        else if (f == "--temperature") a.opt.temperature = to_number(f, next(), 0.0, 2.0);
        else if (f == "--top-p") a.opt.top_p = to_number(f, next(), 1e-6, 1.0);
        else if (f == "--json") a.json_out = next();
        else if (f == "--serve") usage("--serve is gone: run the gateway, `hetreward serve` (docs/serve.md)");
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
    if (a.prompt.empty()) usage("no prompt given");
    // The prompt is printed and written as JSON: make it valid UTF-8 first (as the answers).
    a.prompt = pbon::valid_utf8(a.prompt);
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
    return {{"candidates", c}, {"pbon", r.pbon}, {"bon", r.bon}, {"seed", r.seed},
            {"seconds", {{"generation", r.t_generate}, {"embedding", r.t_embed}, {"selection", r.t_select}}}};
}

// Writes `text` to `path` whole or not at all: a temporary file beside it, renamed over it once
// every byte is written. Throws std::runtime_error naming the path.
void write_file_atomically(const std::string &path, const std::string &text) {
    const std::string tmp = path + ".tmp." + std::to_string((long)getpid());
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) throw std::runtime_error(tmp + ": cannot open for writing: " + std::strerror(errno));
        f.write(text.data(), (std::streamsize)text.size());
        f.close();
        if (!f) {
            std::remove(tmp.c_str());
            throw std::runtime_error(tmp + ": write failed");
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot rename the written file into place: " + std::strerror(e));
    }
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
    std::printf("seed: %u%s\n", r.seed,
                a.opt.seed == pbon::kRandomSeed ? " (drawn at random; --seed repeats this run)" : "");
    std::printf("time: generation %.3f s, embedding %.3f s, selection %.6f s (N = %d)\n", r.t_generate,
                r.t_embed, r.t_select, a.opt.n);
    if (!a.json_out.empty()) {
        json j = result_json(r);
        j["prompt"] = a.prompt;
        // Every string is valid UTF-8 already (valid_utf8); `replace` keeps dump() from throwing
        // should one ever not be, so a run never ends without its file.
        write_file_atomically(a.json_out, j.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Args a = parse(argc, argv);
    try {
        pbon::Engine engine(a.generator, a.embedder, a.model, a.projection, a.opt.n);
        return run_once(engine, a);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "hetreward-llama: %s\n", e.what());
        return 1;
    }
}
