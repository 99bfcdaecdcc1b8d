// Best-of-N inside a llama.cpp program: generate N answers with libllama, embed them with a
// MiniLM GGUF in a second context, map the embeddings to the reward model's features with the
// projection stored beside the model, and choose by pessimistic Best-of-N through libhetreward.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "hetreward.h"

struct llama_model;
struct llama_context;

namespace pbon {

// The feature map a model was fitted on (examples/real-data writes it beside the model as
// MODEL.projection.safetensors; docs/model-format.md, "Companion: feature projection"):
// features = (embedding - mean) . components^T, and the text embedded for an answer.
struct Projection {
    std::vector<double> mean;        // dim_in
    std::vector<double> components;  // dim_out x dim_in, row-major
    size_t dim_in = 0, dim_out = 0;
    std::string text_template;       // "{question}...{answer}"
    std::string embedding_model;

    static Projection load(const std::string &path);  // throws std::runtime_error naming path
    std::vector<float> apply(const std::vector<float> &embedding) const;
    std::string text(const std::string &question, const std::string &answer) const;
};

struct Options {
    int n = 4;                // candidates
    int max_tokens = 64;      // per answer
    float temperature = 0.8f;
    float top_p = 0.95f;
    unsigned seed = 42;
    double alpha = 0.05;      // pBoN's lower bound is the (1 - alpha) CI's
};

struct Candidate {
    std::string text;
    std::string finish_reason;  // "stop" or "length"
    int tokens = 0;
    std::vector<float> embedding;  // unit norm
    std::vector<float> features;   // projection.apply(embedding)
    hetreward_candidate figures{};
};

struct Result {
    std::vector<Candidate> candidates;
    size_t pbon = 0, bon = 0;
    double t_generate = 0, t_embed = 0, t_select = 0;  // seconds
    int prompt_tokens = 0;
};

// Owns the two llama.cpp models and contexts and the reward model. Not thread-safe: one
// request at a time (the server serialises).
class Engine {
public:
    Engine(const std::string &generator_gguf, const std::string &embedder_gguf,
           const std::string &model_path, const std::string &projection_path, int max_n);
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // The generator's chat template applied to the messages (role, content), ending with the
    // assistant's turn.
    std::string chat_prompt(const std::vector<std::pair<std::string, std::string>> &messages) const;
    // N answers to `prompt` (already templated), embedded and selected. Throws
    // std::invalid_argument for a bad option, std::runtime_error for an engine failure.
    Result run(const std::string &prompt, const std::string &question, const Options &opt);
    std::vector<float> embed(const std::string &text);
    int max_n() const { return max_n_; }

private:
    std::vector<std::string> generate(const std::string &prompt, const Options &opt,
                                      std::vector<std::string> &finish, std::vector<int> &ntok,
                                      int &prompt_tokens);
    llama_model *gen_model_ = nullptr, *emb_model_ = nullptr;
    llama_context *gen_ctx_ = nullptr, *emb_ctx_ = nullptr;
    hetreward_model *reward_ = nullptr;
    Projection proj_;
    int max_n_;
};

}  // namespace pbon
