//! A markdown skill (SPEC-0023): its sections, tier requirement, Tool Discovery list and
//! scope rules. (Being written.)
