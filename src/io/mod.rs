//! Files (docs/contract.md §6): tables of named numeric columns from CSV or safetensors, the training-data
//! reader built on them, and the versioned model file.
//!
//! Every input is opened by one rule (`input_file`: regular files only, never waiting) and every
//! error names the file, the tensor or column and, where there is one, the row.

pub mod atomic;
pub(crate) mod csv_table;
pub(crate) mod file_kind;
mod ids;
pub(crate) mod input_file;
pub mod model_file;
pub(crate) mod safetensors_table;
pub mod scoring;
pub mod training;
