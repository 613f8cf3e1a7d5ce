//! SPEC-0023 tool resolution at compile time: a skill's Tool Discovery candidates against
//! an agent's tool inventory. (Being written.)
