//! probity: health checks that tell the truth.

pub mod contract;
pub mod policy;

pub use contract::Contract;
pub use policy::Tier;
