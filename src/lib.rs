pub mod diag;
pub mod sourcemap;
pub mod yaml;
pub mod pod;
pub mod describe;
pub mod source;
