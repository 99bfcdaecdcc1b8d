//! Files: training data (CSV, safetensors), scoring inputs and the model file (SPEC §6).
