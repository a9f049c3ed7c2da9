//! The response fields: `RateLimit-Policy`, `RateLimit` (draft-ietf-httpapi-ratelimit-headers,
//! structured fields of RFC 9651) and `Retry-After` (RFC 9110, delay in seconds).
//!
//! Every time is in whole seconds rounded up, so a client that waits what it is told never
//! comes back before the limiter would admit it.

use std::fmt::{self, Write as _};
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use slidelimit::{Limit, Status, WindowStatuses};

/// The `RateLimit` field: the service limit left to the request's key.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

/// The `RateLimit-Policy` field: the quota policy the key is held to.
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");

/// The largest Integer a structured field can carry (RFC 9651: at most 15 decimal digits);
/// larger values are sent as this.
pub(crate) const SF_INTEGER_MAX: u64 = 999_999_999_999_999;

/// The name a layer's policy goes by in both fields, validated as a structured-field String.
///
/// ```
/// use slidelimit_tower::PolicyName;
/// assert_eq!(PolicyName::new("per-ip")?.as_str(), "per-ip");
/// assert!(PolicyName::new("tab\there").is_err(), "only printable ASCII");
/// # Ok::<(), slidelimit_tower::PolicyNameError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyName {
    name: String,
    /// The name as a structured-field String: quoted, `"` and `\` escaped.
    quoted: String,
}

impl PolicyName {
    /// A policy name: any printable ASCII (space to `~`), as structured-field Strings allow.
    /// Quotes and backslashes are escaped when it is sent.
    ///
    /// # Errors
    /// [`PolicyNameError`] for a character outside printable ASCII (control characters and
    /// non-ASCII text cannot be carried by a structured-field String).
    pub fn new(name: impl Into<String>) -> Result<Self, PolicyNameError> {
        let name = name.into();
        if let Some(position) = name.bytes().position(|b| !(0x20..=0x7e).contains(&b)) {
            return Err(PolicyNameError { position });
        }
        let mut quoted = String::with_capacity(name.len() + 2);
        quoted.push('"');
        for c in name.chars() {
            if c == '"' || c == '\\' {
                quoted.push('\\');
            }
            quoted.push(c);
        }
        quoted.push('"');
        Ok(Self { name, quoted })
    }

    /// The name as given.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.name
    }
}

impl Default for PolicyName {
    /// `"default"`.
    fn default() -> Self {
        Self {
            name: "default".to_owned(),
            quoted: "\"default\"".to_owned(),
        }
    }
}

/// A policy name held a character that a structured-field String cannot carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyNameError {
    /// The byte offset of the first such character.
    pub position: usize,
}

impl fmt::Display for PolicyNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "policy name has a character outside printable ASCII at byte {}",
            self.position
        )
    }
}

impl std::error::Error for PolicyNameError {}

/// `ticks` of length `tick` in whole seconds, rounded up; saturates at `u64::MAX`.
pub(crate) fn secs_ceil(ticks: u64, tick: Duration) -> u64 {
    let Some(nanos) = u128::from(ticks).checked_mul(tick.as_nanos()) else {
        return u64::MAX;
    };
    u64::try_from(nanos.div_ceil(1_000_000_000)).unwrap_or(u64::MAX)
}

/// `Retry-After` for a wait of `wait`: whole seconds rounded up, at least 1 (a 503 whose
/// limiter could not decide; the 429's comes with the rate-limit fields).
pub(crate) fn retry_after_value(wait: Duration) -> HeaderValue {
    HeaderValue::from(secs_ceil(1, wait).max(1))
}

/// A value for a structured-field Integer: capped at [`SF_INTEGER_MAX`].
fn sf_integer(value: u64) -> u64 {
    value.min(SF_INTEGER_MAX)
}

/// The fields one decision answers with, rendered once and copied onto the response.
#[derive(Clone, Debug)]
pub(crate) struct RateLimitHeaders {
    policy: HeaderValue,
    ratelimit: HeaderValue,
    /// Only on refusals.
    retry_after: Option<HeaderValue>,
}

impl RateLimitHeaders {
    /// The fields for a decision on a key held to `limit`, whose window holds `status` just
    /// after the decision (`admitted` or refused), with ticks of length `tick`.
    ///
    /// - `RateLimit-Policy: "name";q=<max_requests>;w=<window seconds, rounded up>`.
    /// - `RateLimit: "name";r=<remaining>;t=<seconds>`: `t` is the wait until one more request
    ///   would be admitted, rounded up and at least 1, sent when no quota is left (`r=0`) and
    ///   on every refusal. With quota left, the next unit the sliding window frees is when its
    ///   oldest hit leaves it, a time `status` does not report; `t` is optional in the draft,
    ///   so it is left out rather than guessed.
    /// - `Retry-After: <t>` on refusals: the same whole seconds as `t`, so it never points
    ///   before the reset (the draft's requirement) and never before the limiter would admit.
    pub(crate) fn new(
        policy_name: &PolicyName,
        limit: Limit,
        status: Status,
        admitted: bool,
        tick: Duration,
    ) -> Self {
        // An exhausted key (or a refusal) waits at least one second: retry_after_ticks is
        // above zero then, and rounding up keeps any positive wait at 1 s or more. The floor
        // only matters after a refusal whose blocking hit left the window before `status`
        // looked, where "retry now" would invite a tight retry loop.
        let reset_secs = (!admitted || status.remaining == 0)
            .then(|| secs_ceil(status.retry_after_ticks, tick).max(1));
        let window_secs = secs_ceil(limit.window_ticks(), tick).max(1);

        let mut policy = String::with_capacity(policy_name.quoted.len() + 32);
        policy_item(&mut policy, &policy_name.quoted, limit, window_secs);
        let mut ratelimit = String::with_capacity(policy_name.quoted.len() + 32);
        ratelimit_item(
            &mut ratelimit,
            &policy_name.quoted,
            status.remaining,
            reset_secs,
        );

        Self {
            policy: header_value(policy),
            ratelimit: header_value(ratelimit),
            retry_after: if admitted {
                None
            } else {
                reset_secs.map(HeaderValue::from)
            },
        }
    }

    /// The fields for a decision on a key held to a limit of several windows, one list item
    /// per window in both fields (the draft lets a field list several policies), narrowest
    /// first: `"name-<w>s";q=<N>;w=<w>` and `"name-<w>s";r=<remaining>[;t=<seconds>]`, where
    /// `<w>` is the window in whole seconds rounded up (the items are named `name-1`,
    /// `name-2`, ... instead if two windows round to the same second). An item carries `t`
    /// when its window has nothing left, and on a refusal the binding window's item always
    /// does. `Retry-After` on refusals is the longest wait of all windows (when every window
    /// has room again), as [`WindowStatuses::tightest`] reports it.
    pub(crate) fn layered(
        policy_name: &PolicyName,
        limit: Limit,
        statuses: &WindowStatuses,
        admitted: bool,
        tick: Duration,
    ) -> Self {
        let windows: Vec<(Limit, Status)> = limit.windows().zip(statuses.iter()).collect();
        let window_secs: Vec<u64> = windows
            .iter()
            .map(|(window, _)| secs_ceil(window.window_ticks(), tick).max(1))
            .collect();
        let distinct = window_secs.windows(2).all(|pair| pair[0] != pair[1]);
        let name = |index: usize| {
            // The policy name's quotes stay outside the suffix: `"api-60s"`.
            let bare = &policy_name.quoted[..policy_name.quoted.len() - 1];
            if distinct {
                format!("{bare}-{}s\"", window_secs[index])
            } else {
                format!("{bare}-{}\"", index + 1)
            }
        };
        let tightest = statuses.tightest();
        let binding = statuses.binding();
        let mut policy = String::new();
        let mut ratelimit = String::new();
        for (index, (window, status)) in windows.iter().enumerate() {
            if index > 0 {
                policy.push_str(", ");
                ratelimit.push_str(", ");
            }
            let item = name(index);
            policy_item(&mut policy, &item, *window, window_secs[index]);
            let reset = (status.remaining == 0 || (!admitted && index == binding))
                .then(|| secs_ceil(status.retry_after_ticks, tick).max(1));
            ratelimit_item(&mut ratelimit, &item, status.remaining, reset);
        }
        let retry_after = (!admitted)
            .then(|| HeaderValue::from(secs_ceil(tightest.retry_after_ticks, tick).max(1)));
        Self {
            policy: header_value(policy),
            ratelimit: header_value(ratelimit),
            retry_after,
        }
    }

    /// Adds the fields to `headers`. The two list fields are appended, so a response that
    /// already reports another policy (a second layer with its own name) keeps it: the draft
    /// lets a list span several field lines.
    pub(crate) fn apply(self, headers: &mut HeaderMap) {
        headers.append(RATELIMIT_POLICY, self.policy);
        headers.append(RATELIMIT, self.ratelimit);
        if let Some(retry_after) = self.retry_after {
            headers.insert(RETRY_AFTER, retry_after);
        }
    }
}

/// One `RateLimit-Policy` item: `<name>;q=<max_requests>;w=<window seconds>`.
fn policy_item(out: &mut String, quoted_name: &str, window: Limit, window_secs: u64) {
    out.push_str(quoted_name);
    // Writing to a String cannot fail.
    let _ = write!(
        out,
        ";q={};w={}",
        sf_integer(window.max_requests()),
        sf_integer(window_secs)
    );
}

/// One `RateLimit` item: `<name>;r=<remaining>`, with `;t=<seconds>` when a reset is sent.
fn ratelimit_item(out: &mut String, quoted_name: &str, remaining: u64, reset_secs: Option<u64>) {
    out.push_str(quoted_name);
    // Writing to a String cannot fail.
    let _ = write!(out, ";r={}", sf_integer(remaining));
    if let Some(reset) = reset_secs {
        let _ = write!(out, ";t={}", sf_integer(reset));
    }
}

/// A header value from text built of printable ASCII only (a validated [`PolicyName`], digits
/// and `";=`), which `HeaderValue` always accepts.
fn header_value(text: String) -> HeaderValue {
    HeaderValue::try_from(text).unwrap_or_else(|_| {
        unreachable!("printable ASCII is a valid header value");
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: Duration = Duration::from_nanos(1);
    const SEC: u64 = 1_000_000_000;

    fn status(count: u64, remaining: u64, retry_after_ticks: u64) -> Status {
        Status {
            count,
            remaining,
            retry_after_ticks,
        }
    }

    fn fields(headers: &RateLimitHeaders) -> (&str, &str, Option<&str>) {
        (
            headers.policy.to_str().unwrap(),
            headers.ratelimit.to_str().unwrap(),
            headers.retry_after.as_ref().map(|v| v.to_str().unwrap()),
        )
    }

    #[test]
    fn a_layered_limit_sends_one_item_per_window() {
        let limit = Limit::new(10, 1)
            .unwrap()
            .and(Limit::new(600, 3_600).unwrap())
            .unwrap();
        let statuses = WindowStatuses::from_windows([status(10, 0, 1), status(10, 590, 0)]);
        let h = RateLimitHeaders::layered(
            &PolicyName::new("api").unwrap(),
            limit,
            &statuses,
            false,
            Duration::from_secs(1),
        );
        assert_eq!(
            fields(&h),
            (
                "\"api-1s\";q=10;w=1, \"api-3600s\";q=600;w=3600",
                "\"api-1s\";r=0;t=1, \"api-3600s\";r=590",
                Some("1")
            )
        );
        // The hour binds: its wait is the one to report.
        let statuses = WindowStatuses::from_windows([status(2, 8, 0), status(600, 0, 1_200)]);
        let h = RateLimitHeaders::layered(
            &PolicyName::default(),
            limit,
            &statuses,
            false,
            Duration::from_secs(1),
        );
        assert_eq!(
            fields(&h).1,
            "\"default-1s\";r=8, \"default-3600s\";r=0;t=1200"
        );
        assert_eq!(fields(&h).2, Some("1200"));
        // Windows that round to the same second are numbered instead.
        let close = Limit::new(1, 100)
            .unwrap()
            .and(Limit::new(3, 900).unwrap())
            .unwrap();
        let statuses = WindowStatuses::from_windows([status(0, 1, 0), status(0, 3, 0)]);
        let h = RateLimitHeaders::layered(
            &PolicyName::default(),
            close,
            &statuses,
            true,
            Duration::from_millis(1),
        );
        assert_eq!(
            fields(&h),
            (
                "\"default-1\";q=1;w=1, \"default-2\";q=3;w=1",
                "\"default-1\";r=1, \"default-2\";r=3",
                None
            )
        );
    }

    #[test]
    fn seconds_round_up() {
        assert_eq!(secs_ceil(0, NS), 0);
        assert_eq!(
            secs_ceil(1, NS),
            1,
            "a nanosecond is a whole second to wait"
        );
        assert_eq!(secs_ceil(SEC, NS), 1);
        assert_eq!(secs_ceil(SEC + 1, NS), 2);
        assert_eq!(secs_ceil(59 * SEC + 999_999_999, NS), 60);
        assert_eq!(secs_ceil(1_500, Duration::from_millis(1)), 2);
        assert_eq!(secs_ceil(7, Duration::from_secs(1)), 7);
        assert_eq!(secs_ceil(u64::MAX, NS), u64::MAX.div_ceil(SEC));
        assert_eq!(secs_ceil(u64::MAX, Duration::from_secs(1)), u64::MAX);
        assert_eq!(
            secs_ceil(u64::MAX, Duration::MAX),
            u64::MAX,
            "overflow saturates"
        );
    }

    #[test]
    fn admitted_with_quota_left_has_no_reset() {
        let limit = Limit::new(100, 60 * SEC).unwrap();
        let h = RateLimitHeaders::new(&PolicyName::default(), limit, status(1, 99, 0), true, NS);
        assert_eq!(
            fields(&h),
            ("\"default\";q=100;w=60", "\"default\";r=99", None)
        );
    }

    #[test]
    fn admitted_last_unit_reports_reset_rounded_up() {
        let limit = Limit::new(3, 10 * SEC).unwrap();
        let h = RateLimitHeaders::new(
            &PolicyName::new("api").unwrap(),
            limit,
            status(3, 0, 9 * SEC + 1),
            true,
            NS,
        );
        assert_eq!(fields(&h), ("\"api\";q=3;w=10", "\"api\";r=0;t=10", None));
    }

    #[test]
    fn refusal_has_retry_after_equal_to_reset() {
        let limit = Limit::new(2, 90).unwrap();
        let h = RateLimitHeaders::new(
            &PolicyName::default(),
            limit,
            status(2, 0, 31),
            false,
            Duration::from_secs(1),
        );
        assert_eq!(
            fields(&h),
            ("\"default\";q=2;w=90", "\"default\";r=0;t=31", Some("31"))
        );
    }

    #[test]
    fn refusal_waits_at_least_one_second() {
        let limit = Limit::new(2, 10 * SEC).unwrap();
        // The blocking hit left the window between the decision and the status read.
        let h = RateLimitHeaders::new(&PolicyName::default(), limit, status(1, 1, 0), false, NS);
        assert_eq!(fields(&h).1, "\"default\";r=1;t=1");
        assert_eq!(fields(&h).2, Some("1"));
    }

    #[test]
    fn window_rounds_up_and_is_never_zero() {
        // 1.5 s window: w=2. A sub-second window: w=1 (the draft wants a non-zero Integer).
        let h = RateLimitHeaders::new(
            &PolicyName::default(),
            Limit::new(5, 1_500_000_000).unwrap(),
            status(0, 5, 0),
            true,
            NS,
        );
        assert_eq!(fields(&h).0, "\"default\";q=5;w=2");
        let h = RateLimitHeaders::new(
            &PolicyName::default(),
            Limit::new(5, 1).unwrap(),
            status(0, 5, 0),
            true,
            NS,
        );
        assert_eq!(fields(&h).0, "\"default\";q=5;w=1");
    }

    #[test]
    fn huge_values_are_capped_to_fifteen_digits() {
        let h = RateLimitHeaders::new(
            &PolicyName::default(),
            Limit::new(1, u64::MAX).unwrap(),
            status(1, 0, u64::MAX - 5),
            false,
            Duration::from_secs(1),
        );
        assert_eq!(
            fields(&h),
            (
                "\"default\";q=1;w=999999999999999",
                "\"default\";r=0;t=999999999999999",
                // Retry-After is not a structured field: delay-seconds has no digit limit.
                Some("18446744073709551610")
            )
        );
    }

    #[test]
    fn policy_names_are_structured_field_strings() {
        let name = PolicyName::new(r#"a "quoted" \ name"#).unwrap();
        assert_eq!(name.quoted, r#""a \"quoted\" \\ name""#);
        assert_eq!(name.as_str(), r#"a "quoted" \ name"#);
        assert_eq!(PolicyName::new(""), Ok(PolicyName::new("").unwrap()));
        assert_eq!(PolicyName::new("").unwrap().quoted, "\"\"");
        assert_eq!(
            PolicyName::new("caf\u{e9}"),
            Err(PolicyNameError { position: 3 })
        );
        assert_eq!(
            PolicyName::new("a\nb"),
            Err(PolicyNameError { position: 1 })
        );
        assert_eq!(PolicyName::default(), PolicyName::new("default").unwrap());
    }

    #[test]
    fn apply_appends_list_fields_beside_another_policy() {
        let mut headers = HeaderMap::new();
        headers.insert(RATELIMIT, HeaderValue::from_static("\"other\";r=4"));
        RateLimitHeaders::new(
            &PolicyName::default(),
            Limit::new(10, 10).unwrap(),
            status(10, 0, 3),
            false,
            Duration::from_secs(1),
        )
        .apply(&mut headers);
        let lines: Vec<_> = headers.get_all(RATELIMIT).iter().collect();
        assert_eq!(lines, ["\"other\";r=4", "\"default\";r=0;t=3"]);
        assert_eq!(headers[RETRY_AFTER], "3");
        assert_eq!(headers[RATELIMIT_POLICY], "\"default\";q=10;w=10");
    }
}
