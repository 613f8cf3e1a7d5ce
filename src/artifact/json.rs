//! JSON bytes exactly as Go's `json.MarshalIndent(v, "", "  ")` writes them, plus the
//! trailing newline Clawdapus adds: struct fields in declaration order (serde derive),
//! map keys sorted (`serde_json::Map` is a BTreeMap), `<`, `>`, `&`, U+2028 and U+2029
//! escaped, and every number formatted as Go formats a float64.

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter, PrettyFormatter};
use std::io::{self, Write};

/// Serializes `value` as Go would, with a trailing newline.
pub(crate) fn to_go_json<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_go_json(&mut out, value).expect("serializing in-memory values to a Vec cannot fail");
    out.push(b'\n');
    out
}

/// [`to_go_json`] into one shared buffer of its exact length, rendered twice (once to count
/// its bytes): for a file that grows with the pod (`report.json` lists every agent id), a
/// buffer grown by doubling and then copied into an `Arc` held about twice its size at a
/// compile's peak.
pub(crate) fn to_go_json_shared<T: Serialize + ?Sized>(value: &T) -> std::sync::Arc<[u8]> {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(1);
    if write_go_json(&mut count, value).is_ok() {
        let mut shared: std::sync::Arc<[u8]> = std::iter::repeat_n(0, count.0).collect();
        let filled = std::sync::Arc::get_mut(&mut shared)
            .is_some_and(|mut w| write_go_json(&mut w, value).is_ok() && w.write_all(b"\n").is_ok() && w.is_empty());
        if filled {
            return shared;
        }
    }
    to_go_json(value).into()
}

/// Whether `s` is written as it is between quotes: it has no byte that serde_json or Go
/// escapes (a superset of them: control bytes, `"`, `\\`, `<`, `>`, `&`, and 0xE2, the
/// lead byte of U+2028 and U+2029).
fn is_plain(s: &str) -> bool {
    !s.bytes().any(|b| b < 0x20 || matches!(b, b'"' | b'\\' | b'<' | b'>' | b'&' | 0xE2))
}

/// How many bytes [`to_go_json`] writes for the string `s`, less the newline (without
/// rendering it when it is plain).
pub(crate) fn go_json_str_len(s: &str) -> usize {
    if is_plain(s) { s.len() + 2 } else { to_go_json(s).len() - 1 }
}

/// Writes the string `s` as [`to_go_json`] does, less the newline.
pub(crate) fn write_go_json_str(w: &mut impl Write, s: &str) -> io::Result<()> {
    if is_plain(s) {
        w.write_all(b"\"")?;
        w.write_all(s.as_bytes())?;
        w.write_all(b"\"")
    } else {
        let rendered = to_go_json(s);
        w.write_all(&rendered[..rendered.len() - 1])
    }
}

/// [`to_go_json`] written into `out` as it is rendered.
pub(crate) fn write_go_json_line<W: Write, T: Serialize + ?Sized>(mut out: W, value: &T) -> io::Result<()> {
    write_go_json(&mut out, value)?;
    out.write_all(b"\n")
}

fn write_go_json<W: Write, T: Serialize + ?Sized>(out: W, value: &T) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::with_formatter(out, GoFormatter(PrettyFormatter::with_indent(b"  "))))
}

struct GoFormatter(PrettyFormatter<'static>);

/// Go's float64 text: shortest round-trip digits; exponent form outside [1e-6, 1e21).
fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    } else {
        format!("{f}")
    }
}

const EXACT: u64 = 1 << 53;

impl Formatter for GoFormatter {
    fn write_i64<W: ?Sized + Write>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        if v.unsigned_abs() <= EXACT { write!(w, "{v}") } else { w.write_all(go_float(v as f64).as_bytes()) }
    }
    fn write_u64<W: ?Sized + Write>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        if v <= EXACT { write!(w, "{v}") } else { w.write_all(go_float(v as f64).as_bytes()) }
    }
    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        w.write_all(go_float(v).as_bytes())
    }
    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
        // serde_json hands over runs it needs not escape; most hold nothing Go escapes
        // either. Scanning bytes, not decoded chars: U+2028 and U+2029 are the only
        // characters escaped that start with 0xE2.
        let bytes = fragment.as_bytes();
        let (mut start, mut at) = (0, 0);
        while let Some(found) = bytes[at..].iter().position(|b| matches!(b, b'<' | b'>' | b'&' | 0xE2)) {
            let i = at + found;
            let (esc, len): (&[u8], usize) = match bytes[i..] {
                [b'<', ..] => (b"\\u003c", 1),
                [b'>', ..] => (b"\\u003e", 1),
                [b'&', ..] => (b"\\u0026", 1),
                [0xE2, 0x80, 0xA8, ..] => (b"\\u2028", 3),
                [0xE2, 0x80, 0xA9, ..] => (b"\\u2029", 3),
                _ => {
                    at = i + 1;
                    continue;
                }
            };
            w.write_all(&bytes[start..i])?;
            w.write_all(esc)?;
            start = i + len;
            at = start;
        }
        w.write_all(&bytes[start..])
    }
    fn write_char_escape<W: ?Sized + Write>(&mut self, w: &mut W, e: CharEscape) -> io::Result<()> {
        self.0.write_char_escape(w, e)
    }
    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_string_is_written_and_counted_as_serde_writes_it() {
        for s in ["", "context/a-1/tools.json", "<&>", "\u{2028}\u{2029}\u{2026}", "\"\\\n\u{1}\u{7f}", "é€😀", "a\u{e2}b"] {
            let mut written = Vec::new();
            write_go_json_str(&mut written, s).unwrap();
            assert_eq!([&written[..], b"\n"].concat(), to_go_json(s), "{s:?}");
            assert_eq!(go_json_str_len(s), written.len(), "{s:?}");
        }
    }

    /// Rendered into a buffer of its exact length, a value is the same bytes.
    #[test]
    fn a_shared_rendering_is_the_same_bytes() {
        let many: serde_json::Map<String, serde_json::Value> =
            (0..2000).map(|i| (format!("agent-{i}"), json!("svc <&>\u{2028}"))).collect();
        for v in [json!(null), json!({}), json!({"a": [1, 2.5, "é\u{1}"], "b": {"c": []}}), serde_json::Value::Object(many)] {
            assert_eq!(&to_go_json_shared(&v)[..], &to_go_json(&v)[..]);
        }
    }

    #[test]
    fn matches_go_marshal_indent() {
        let v = json!({"b": [1, 2.5, 1e21, 1.5e-7, 0.000001, 9007199254740993u64, -0.0], "a": "<x & y>\u{2028}\n\u{1}", "c": {}, "d": []});
        let got = String::from_utf8(to_go_json(&v)).unwrap();
        let want = "{\n  \"a\": \"\\u003cx \\u0026 y\\u003e\\u2028\\n\\u0001\",\n  \"b\": [\n    1,\n    2.5,\n    1e+21,\n    1.5e-7,\n    0.000001,\n    9007199254740992,\n    -0\n  ],\n  \"c\": {},\n  \"d\": []\n}\n";
        assert_eq!(got, want);
    }

    #[test]
    fn escapes_only_what_go_escapes_among_multibyte_text() {
        // U+2026, U+20AC and U+2027 share the lead byte 0xE2 (and U+2027 the next) with
        // the two separators Go escapes; they are written as they are.
        let v = json!("\u{2026}\u{2029}\u{20ac}<\u{2027}\u{2028}&\u{e2}>");
        let got = String::from_utf8(to_go_json(&v)).unwrap();
        assert_eq!(got, "\"\u{2026}\\u2029\u{20ac}\\u003c\u{2027}\\u2028\\u0026\u{e2}\\u003e\"\n");
    }
}
