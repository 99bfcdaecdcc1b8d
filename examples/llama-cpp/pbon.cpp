#include "pbon.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

#include "llama.h"
#include "nlohmann/json.hpp"

namespace pbon {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// The MiniLM pipeline truncates at 256 tokens, [CLS] and [SEP] included (examples/real-data,
// realdata/embed.py MAX_TOKENS).
constexpr int kEmbedMaxTokens = 256;

std::vector<llama_token> tokenize(const llama_vocab *vocab, const std::string &text, bool add_special,
                                  bool parse_special) {
    int n = -llama_tokenize(vocab, text.data(), (int32_t)text.size(), nullptr, 0, add_special, parse_special);
    std::vector<llama_token> out(n);
    if (llama_tokenize(vocab, text.data(), (int32_t)text.size(), out.data(), n, add_special, parse_special) != n) {
        throw std::runtime_error("llama_tokenize failed");
    }
    return out;
}

std::string piece(const llama_vocab *vocab, llama_token t) {
    char buf[256];
    int n = llama_token_to_piece(vocab, t, buf, sizeof buf, 0, false);
    if (n < 0) throw std::runtime_error("llama_token_to_piece: piece longer than 256 bytes");
    return std::string(buf, n);
}

void check(hetreward_status s, const char *what) {
    if (s != HETREWARD_OK) {
        throw std::runtime_error(std::string(what) + ": " + hetreward_status_name(s) + ": " +
                                 hetreward_last_error_message());
    }
}

}  // namespace

std::string valid_utf8(const std::string &s) {
    static const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
    std::string out;
    out.reserve(s.size());
    const size_t n = s.size();
    for (size_t i = 0; i < n;) {
        const auto c = (unsigned char)s[i];
        if (c < 0x80) {
            out += (char)c;
            ++i;
            continue;
        }
        // The well-formed sequences (Unicode, Table 3-7): the lead byte fixes the length and
        // the range of the second byte; later bytes are 80..BF.
        int len = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;  // no overlong forms
            if (c == 0xED) hi = 0x9F;  // no surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;  // no overlong forms
            if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
        }
        if (len == 0) {  // 80..C1, F5..FF: never a lead byte
            out += kReplacement;
            ++i;
            continue;
        }
        size_t j = i + 1;
        for (int k = 1; k < len && j < n; ++k, ++j) {
            const auto d = (unsigned char)s[j];
            if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF)) break;
        }
        if (j - i == (size_t)len) {
            out.append(s, i, len);
        } else {
            out += kReplacement;  // the maximal subpart s[i, j): one U+FFFD
        }
        i = j;
    }
    return out;
}

Projection Projection::load(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error(path + ": cannot open the projection file");
    uint64_t header_len = 0;
    unsigned char le[8];
    if (!f.read(reinterpret_cast<char *>(le), 8)) throw std::runtime_error(path + ": truncated");
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | le[i];
    if (header_len > (1u << 20)) throw std::runtime_error(path + ": header too long");
    std::string header(header_len, '\0');
    if (!f.read(&header[0], (std::streamsize)header_len)) throw std::runtime_error(path + ": truncated header");
    std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    auto h = nlohmann::json::parse(header);
    Projection p;
    auto meta = h.value("__metadata__", nlohmann::json::object());
    if (meta.value("format", "") != "hetreward-projection-1") {
        throw std::runtime_error(path + ": not a hetreward-projection-1 file");
    }
    p.text_template = meta.value("text", "");
    p.embedding_model = meta.value("embedding_model", "");
    auto tensor = [&](const char *name, std::vector<size_t> &shape) {
        if (!h.contains(name)) throw std::runtime_error(path + ": no tensor '" + name + "'");
        auto t = h[name];
        if (t["dtype"] != "F64") throw std::runtime_error(path + ": tensor '" + name + "' is not F64");
        shape = t["shape"].get<std::vector<size_t>>();
        size_t b = t["data_offsets"][0], e = t["data_offsets"][1];
        size_t count = 1;
        for (size_t s : shape) count *= s;
        if (e > data.size() || e - b != count * 8) throw std::runtime_error(path + ": tensor '" + name + "' out of range");
        std::vector<double> v(count);
        std::memcpy(v.data(), data.data() + b, count * 8);  // little-endian host (x86-64, arm64)
        return v;
    };
    std::vector<size_t> sm, sc;
    p.mean = tensor("mean", sm);
    p.components = tensor("components", sc);
    if (sm.size() != 1 || sc.size() != 2 || sc[1] != sm[0]) {
        throw std::runtime_error(path + ": mean (D) and components (k, D) do not match");
    }
    p.dim_in = sm[0];
    p.dim_out = sc[0];
    if (p.text_template.find("{question}") == std::string::npos ||
        p.text_template.find("{answer}") == std::string::npos) {
        throw std::runtime_error(path + ": metadata 'text' lacks {question} or {answer}");
    }
    return p;
}

std::vector<float> Projection::apply(const std::vector<float> &e) const {
    if (e.size() != dim_in) throw std::runtime_error("embedding dimension differs from the projection's");
    std::vector<float> out(dim_out);
    for (size_t k = 0; k < dim_out; ++k) {
        double s = 0;
        for (size_t j = 0; j < dim_in; ++j) s += ((double)e[j] - mean[j]) * components[k * dim_in + j];
        out[k] = (float)s;
    }
    return out;
}

std::string Projection::text(const std::string &question, const std::string &answer) const {
    std::string out;
    for (size_t i = 0; i < text_template.size();) {
        if (text_template.compare(i, 10, "{question}") == 0) {
            out += question;
            i += 10;
        } else if (text_template.compare(i, 8, "{answer}") == 0) {
            out += answer;
            i += 8;
        } else {
            out += text_template[i++];
        }
    }
    return out;
}

namespace {
void quiet_log(ggml_log_level level, const char *text, void *) {
    if (level >= GGML_LOG_LEVEL_WARN && std::getenv("HETREWARD_LLAMA_QUIET") == nullptr) std::fputs(text, stderr);
}
}  // namespace

Engine::Engine(const std::string &generator_gguf, const std::string &embedder_gguf,
               const std::string &model_path, const std::string &projection_path, int max_n)
    : max_n_(max_n) {
    if (std::getenv("HETREWARD_LLAMA_VERBOSE") == nullptr) llama_log_set(quiet_log, nullptr);
    llama_backend_init();
    proj_ = Projection::load(projection_path);
    check(hetreward_model_load(model_path.c_str(), &reward_), "hetreward_model_load");
    if (hetreward_model_d1(reward_) != proj_.dim_out) {
        throw std::runtime_error(model_path + ": d1 differs from the projection's dim_out (" +
                                 projection_path + ")");
    }
    auto mp = llama_model_default_params();
    // No repacked weight buffers: with a native build on a CPU reporting AMX, ggml's AMX
    // matmul crashed here (a VM without AMX tile permission); the plain CPU kernels are exact
    // and fast enough for these small models.
    mp.use_extra_bufts = false;
    gen_model_ = llama_model_load_from_file(generator_gguf.c_str(), mp);
    if (!gen_model_) throw std::runtime_error(generator_gguf + ": llama.cpp cannot load it");
    emb_model_ = llama_model_load_from_file(embedder_gguf.c_str(), mp);
    if (!emb_model_) throw std::runtime_error(embedder_gguf + ": llama.cpp cannot load it");
    if ((size_t)llama_model_n_embd(emb_model_) != proj_.dim_in) {
        throw std::runtime_error(embedder_gguf + ": embedding size differs from the projection's dim_in");
    }
    auto cp = llama_context_default_params();
    cp.n_ctx = 2048 * 2;
    cp.n_batch = 2048;
    cp.n_seq_max = max_n;
    cp.kv_unified = true;  // the N sequences share the prompt's cells (llama.cpp's batched example)
    gen_ctx_ = llama_init_from_model(gen_model_, cp);
    if (!gen_ctx_) throw std::runtime_error("llama_init_from_model failed for the generator");
    auto ep = llama_context_default_params();
    ep.embeddings = true;
    ep.pooling_type = LLAMA_POOLING_TYPE_MEAN;
    ep.n_ctx = 512;
    ep.n_batch = ep.n_ubatch = 512;
    emb_ctx_ = llama_init_from_model(emb_model_, ep);
    if (!emb_ctx_) throw std::runtime_error("llama_init_from_model failed for the embedder");
}

Engine::~Engine() {
    if (gen_ctx_) llama_free(gen_ctx_);
    if (emb_ctx_) llama_free(emb_ctx_);
    if (gen_model_) llama_model_free(gen_model_);
    if (emb_model_) llama_model_free(emb_model_);
    hetreward_model_free(reward_);
    llama_backend_free();
}

std::string Engine::chat_prompt(const std::vector<std::pair<std::string, std::string>> &messages) const {
    const char *tmpl = llama_model_chat_template(gen_model_, nullptr);
    if (!tmpl) throw std::runtime_error("the generator GGUF has no chat template");
    std::vector<llama_chat_message> msgs;
    for (auto &m : messages) msgs.push_back({m.first.c_str(), m.second.c_str()});
    std::vector<char> buf(1024);
    int n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), true, buf.data(), (int32_t)buf.size());
    if (n > (int)buf.size()) {
        buf.resize(n);
        n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), true, buf.data(), (int32_t)buf.size());
    }
    if (n < 0) throw std::runtime_error("llama_chat_apply_template failed");
    return std::string(buf.data(), n);
}

std::vector<std::string> Engine::generate(const std::string &prompt, const Options &opt,
                                          std::vector<std::string> &finish, std::vector<int> &ntok,
                                          int &prompt_tokens) {
    const llama_vocab *vocab = llama_model_get_vocab(gen_model_);
    auto toks = tokenize(vocab, prompt, true, true);
    const int n = opt.n;
    prompt_tokens = (int)toks.size();
    if ((int)toks.size() + opt.max_tokens * n > (int)llama_n_ctx(gen_ctx_) ||
        (int)toks.size() > (int)llama_n_batch(gen_ctx_)) {
        throw std::invalid_argument("prompt tokens + n * max_tokens exceed the context (" +
                                    std::to_string(llama_n_ctx(gen_ctx_)) + ")");
    }
    llama_memory_clear(llama_get_memory(gen_ctx_), true);
    // The prompt once, in every sequence (llama.cpp's batched example): one decode, N forks.
    llama_batch batch = llama_batch_init(std::max<int>((int)toks.size(), n), 0, n);
    struct Guard {
        llama_batch &b;
        std::vector<llama_sampler *> s;
        ~Guard() {
            llama_batch_free(b);
            for (auto *x : s) llama_sampler_free(x);
        }
    } guard{batch, {}};
    for (size_t i = 0; i < toks.size(); ++i) {
        batch.token[i] = toks[i];
        batch.pos[i] = (llama_pos)i;
        batch.n_seq_id[i] = n;
        for (int s = 0; s < n; ++s) batch.seq_id[i][s] = s;
        batch.logits[i] = i + 1 == toks.size();
    }
    batch.n_tokens = (int32_t)toks.size();
    if (llama_decode(gen_ctx_, batch) != 0) throw std::runtime_error("llama_decode failed on the prompt");
    for (int s = 0; s < n; ++s) {
        auto *chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
        if (opt.temperature == 0) {  // greedy, as OpenAI's temperature = 0
            llama_sampler_chain_add(chain, llama_sampler_init_greedy());
        } else {
            llama_sampler_chain_add(chain, llama_sampler_init_top_k(40));
            llama_sampler_chain_add(chain, llama_sampler_init_top_p(opt.top_p, 1));
            llama_sampler_chain_add(chain, llama_sampler_init_temp(opt.temperature));
            llama_sampler_chain_add(chain, llama_sampler_init_dist(opt.seed + (uint32_t)s));
        }
        guard.s.push_back(chain);
    }
    std::vector<std::string> out(n);
    finish.assign(n, "length");
    ntok.assign(n, 0);
    std::vector<int> logit_idx(n, batch.n_tokens - 1);
    int pos = batch.n_tokens;
    for (int step = 0; step < opt.max_tokens; ++step) {
        batch.n_tokens = 0;
        for (int s = 0; s < n; ++s) {
            if (logit_idx[s] < 0) continue;
            llama_token t = llama_sampler_sample(guard.s[s], gen_ctx_, logit_idx[s]);
            if (llama_vocab_is_eog(vocab, t)) {
                finish[s] = "stop";
                logit_idx[s] = -1;
                continue;
            }
            out[s] += piece(vocab, t);
            ntok[s]++;
            if (step + 1 == opt.max_tokens) continue;
            int j = batch.n_tokens++;
            batch.token[j] = t;
            batch.pos[j] = pos;
            batch.n_seq_id[j] = 1;
            batch.seq_id[j][0] = s;
            batch.logits[j] = true;
            logit_idx[s] = j;
        }
        if (batch.n_tokens == 0) break;
        ++pos;
        if (llama_decode(gen_ctx_, batch) != 0) throw std::runtime_error("llama_decode failed");
    }
    return out;
}

std::vector<float> Engine::embed(const std::string &text) {
    const llama_vocab *vocab = llama_model_get_vocab(emb_model_);
    auto toks = tokenize(vocab, text, true, false);
    if ((int)toks.size() > kEmbedMaxTokens) {  // as the HF tokenizer: keep [SEP] last
        llama_token sep = toks.back();
        toks.resize(kEmbedMaxTokens);
        toks.back() = sep;
    }
    llama_memory_clear(llama_get_memory(emb_ctx_), true);
    llama_batch batch = llama_batch_init((int32_t)toks.size(), 0, 1);
    for (size_t i = 0; i < toks.size(); ++i) {
        batch.token[i] = toks[i];
        batch.pos[i] = (llama_pos)i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = true;
    }
    batch.n_tokens = (int32_t)toks.size();
    int rc = llama_decode(emb_ctx_, batch);
    llama_batch_free(batch);
    if (rc != 0) throw std::runtime_error("llama_decode failed on the embedder");
    const float *e = llama_get_embeddings_seq(emb_ctx_, 0);
    if (!e) throw std::runtime_error("no pooled embedding (is the GGUF's pooling MEAN?)");
    std::vector<float> v(e, e + llama_model_n_embd(emb_model_));
    double norm = 0;
    for (float x : v) norm += (double)x * x;
    norm = std::sqrt(norm);
    for (float &x : v) x = (float)(x / norm);
    return v;
}

Result Engine::run(const std::string &prompt, const std::string &question, const Options &opt) {
    if (opt.n < 1 || opt.n > max_n_) {
        throw std::invalid_argument("n must be in 1.." + std::to_string(max_n_));
    }
    if (opt.max_tokens < 1) throw std::invalid_argument("max_tokens must be >= 1");
    if (!(opt.temperature >= 0 && opt.temperature <= 2) || !(opt.top_p > 0 && opt.top_p <= 1)) {
        throw std::invalid_argument("temperature must be in [0, 2] and top_p in (0, 1]");
    }
    Result r;
    Options o = opt;
    if (o.seed == kRandomSeed) {
        std::random_device rd;
        do o.seed = (uint32_t)rd(); while (o.seed == kRandomSeed);
    }
    r.seed = o.seed;
    auto t0 = clock_type::now();
    std::vector<std::string> finish;
    std::vector<int> ntok;
    auto texts = generate(prompt, o, finish, ntok, r.prompt_tokens);
    r.t_generate = seconds_since(t0);
    t0 = clock_type::now();
    r.candidates.resize(texts.size());
    std::vector<float> phi;
    for (size_t i = 0; i < texts.size(); ++i) {
        auto &c = r.candidates[i];
        c.text = valid_utf8(texts[i]);  // a token cap may have cut a multi-byte character
        c.finish_reason = finish[i];
        c.tokens = ntok[i];
        c.embedding = embed(proj_.text(question, c.text));
        c.features = proj_.apply(c.embedding);
        phi.insert(phi.end(), c.features.begin(), c.features.end());
    }
    r.t_embed = seconds_since(t0);
    t0 = clock_type::now();
    std::vector<hetreward_candidate> figs(texts.size());
    check(hetreward_model_select(reward_, phi.data(), texts.size(), proj_.dim_out, nullptr, opt.alpha,
                                 HETREWARD_POLICY_PBON, &r.pbon, figs.data()),
          "hetreward_model_select (pBoN)");
    check(hetreward_model_select(reward_, phi.data(), texts.size(), proj_.dim_out, nullptr, opt.alpha,
                                 HETREWARD_POLICY_BON, &r.bon, nullptr),
          "hetreward_model_select (BoN)");
    r.t_select = seconds_since(t0);
    for (size_t i = 0; i < texts.size(); ++i) r.candidates[i].figures = figs[i];
    return r;
}

}  // namespace pbon
