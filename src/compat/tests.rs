//! Table-driven tests of the rules.
