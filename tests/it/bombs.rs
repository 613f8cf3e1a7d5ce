//! (filled in by the hostile-input work, issue 8)
