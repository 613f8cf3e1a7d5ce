//! The integration tests: one binary, driving the real `clawc` executable.

mod access;
mod bad_input;
mod check;
mod determinism;
mod golden;
mod harness;
mod images;
mod robustness;
mod schemas;
mod write;
