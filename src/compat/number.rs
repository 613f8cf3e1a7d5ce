//! Exact decimals for JSON numbers: `0.01` is one hundredth, not the nearest binary
//! float, so `multipleOf` 0.01 → 0.001 loosens and 10 → 5 loosens without rounding.

use serde_json::Number;
use std::cmp::Ordering;

/// `digits × 10^exp`, `digits` without leading or trailing zeros (zero is `digits` empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Dec {
    neg: bool,
    digits: String,
    exp: i64,
}

impl Dec {
    /// The decimal a JSON number's text stands for (serde_json prints the shortest text
    /// that reads back as the same value, so `0.01` stays `0.01`).
    pub(crate) fn of(n: &Number) -> Dec {
        Dec::parse(&n.to_string()).unwrap_or(Dec { neg: false, digits: String::new(), exp: 0 })
    }

    fn parse(s: &str) -> Option<Dec> {
        let (neg, s) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let (mant, exp) = match s.find(['e', 'E']) {
            Some(i) => (&s[..i], s[i + 1..].parse::<i64>().ok()?),
            None => (s, 0),
        };
        let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
        if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let all = format!("{int}{frac}");
        let exp = exp.checked_sub(i64::try_from(frac.len()).ok()?)?;
        let lead = all.trim_start_matches('0');
        let trimmed = lead.trim_end_matches('0');
        let exp = exp + i64::try_from(lead.len() - trimmed.len()).ok()?;
        if trimmed.is_empty() {
            return Some(Dec { neg: false, digits: String::new(), exp: 0 });
        }
        Some(Dec { neg, digits: trimmed.to_string(), exp })
    }

    fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Compares magnitudes.
    fn cmp_abs(&self, other: &Dec) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        // The position of the leading digit decides, then the digits themselves.
        let lead = |d: &Dec| d.digits.len() as i64 + d.exp;
        lead(self).cmp(&lead(other)).then_with(|| {
            let n = self.digits.len().max(other.digits.len());
            let pad = |s: &str| format!("{s:0<n$}");
            pad(&self.digits).cmp(&pad(&other.digits))
        })
    }

    /// Whether `self` is a whole multiple of `other` (both positive); `None` when the
    /// numbers are too far apart in scale to decide cheaply.
    pub(crate) fn is_multiple_of(&self, other: &Dec) -> Option<bool> {
        if other.is_zero() {
            return None;
        }
        if self.is_zero() {
            return Some(true);
        }
        let e = self.exp.min(other.exp);
        let scaled = |d: &Dec| -> Option<u128> {
            let base: u128 = d.digits.parse().ok()?;
            let shift = u32::try_from(d.exp - e).ok()?;
            base.checked_mul(10u128.checked_pow(shift)?)
        };
        Some(scaled(self)? % scaled(other)? == 0)
    }
}

impl Ord for Dec {
    fn cmp(&self, other: &Dec) -> Ordering {
        let neg = |d: &Dec| d.neg && !d.is_zero();
        match (neg(self), neg(other)) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_abs(other),
            (true, true) => other.cmp_abs(self),
        }
    }
}

impl PartialOrd for Dec {
    fn partial_cmp(&self, other: &Dec) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for Dec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_zero() {
            return f.write_str("0");
        }
        let sign = if self.neg { "-" } else { "" };
        if self.exp >= 0 && self.exp <= 20 {
            let zeros = "0".repeat(usize::try_from(self.exp).unwrap_or(0));
            return write!(f, "{sign}{}{zeros}", self.digits);
        }
        let len = self.digits.len() as i64;
        if self.exp < 0 && -self.exp <= 20 + len {
            let point = len + self.exp;
            if point > 0 {
                let p = usize::try_from(point).unwrap_or(0);
                return write!(f, "{sign}{}.{}", &self.digits[..p], &self.digits[p..]);
            }
            let zeros = "0".repeat(usize::try_from(-point).unwrap_or(0));
            return write!(f, "{sign}0.{zeros}{}", self.digits);
        }
        write!(f, "{sign}{}e{}", self.digits, self.exp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Dec {
        Dec::of(&serde_json::from_str::<Number>(s).unwrap())
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(d("1.0"), d("1"));
        assert_eq!(d("100"), d("1e2"));
        assert!(d("0.01") > d("0.001"));
        assert!(d("-1") < d("0"));
        assert!(d("-2") < d("-1"));
        assert!(d("10") > d("9.99"));
        assert_eq!(d("0.01").is_multiple_of(&d("0.001")), Some(true));
        assert_eq!(d("0.001").is_multiple_of(&d("0.01")), Some(false));
        assert_eq!(d("10").is_multiple_of(&d("5")), Some(true));
        assert_eq!(d("10").is_multiple_of(&d("3")), Some(false));
        assert_eq!(d("1e300").is_multiple_of(&d("1e-300")), None);
        assert_eq!(d("0.1").to_string(), "0.1");
        assert_eq!(d("120").to_string(), "120");
        assert_eq!(d("-0.005").to_string(), "-0.005");
        assert_eq!(d("18446744073709551615").to_string(), "18446744073709551615");
    }
}
