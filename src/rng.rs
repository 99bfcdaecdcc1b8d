//! The seeded random stream every random draw of the crate starts from: the estimator's
//! random starts, the resamples' streams and the data generators of [`crate::sim`].

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A seeded random stream that is identical on every platform.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}
