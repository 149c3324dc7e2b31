//! Status badges (SPEC §8): the colour of a target's latest result, as a shields.io-style flat
//! SVG or as the JSON of shields.io's endpoint badges.
//!
//! The rules, in order:
//! - no report: lightgrey "unknown"; a refused or incomplete run: lightgrey "refused" /
//!   "incomplete";
//! - a complete report without a counting finding of low or above (info and suppressed or
//!   known findings aside): brightgreen "clean";
//! - otherwise the worst counting severity decides (critical red, high orange, medium yellow,
//!   low yellowgreen) and the message counts it ("2 high"), unless the last clean scan (never
//!   clean: the first run; a lone report: its `started_at`) is more than
//!   [`STALE_AFTER_DAYS`] days old: then lightgrey "stale".
//!
//! Pure: the clock comes in as `now`. Every text that reaches the SVG is shown with its
//! invisible and control characters made visible (`[U+200B]`) and is XML-escaped by the
//! renderer, so no label or message can inject markup.

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

use crate::finding::Severity;
use crate::model::{Report, RunOutcome};
use crate::util::escape::escape_trimmed;

/// The badge's label.
pub const LABEL: &str = "mcpprobe";

/// Days without a clean scan after which a badge with findings turns grey.
pub const STALE_AFTER_DAYS: i64 = 30;

/// The longest label or message a badge shows (longer ones end with an ellipsis).
pub const MAX_TEXT: usize = 80;

/// A badge's colours: shields.io's named colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum BadgeColor {
    BrightGreen,
    Green,
    YellowGreen,
    Yellow,
    Orange,
    Red,
    LightGrey,
}

impl BadgeColor {
    /// The name shields.io knows it by (`brightgreen`).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The hex value shields.io draws it with.
    pub fn hex(self) -> &'static str {
        match self {
            BadgeColor::BrightGreen => "#4c1",
            BadgeColor::Green => "#97ca00",
            BadgeColor::YellowGreen => "#a4a61d",
            BadgeColor::Yellow => "#dfb317",
            BadgeColor::Orange => "#fe7d37",
            BadgeColor::Red => "#e05d44",
            BadgeColor::LightGrey => "#9f9f9f",
        }
    }

    /// The colour of a worst severity (info is never worst: it is no problem).
    pub fn of_severity(s: Severity) -> BadgeColor {
        match s {
            Severity::Critical => BadgeColor::Red,
            Severity::High => BadgeColor::Orange,
            Severity::Medium => BadgeColor::Yellow,
            Severity::Low => BadgeColor::YellowGreen,
            Severity::Info => BadgeColor::BrightGreen,
        }
    }
}

/// A status badge: label, message and colour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Badge {
    pub label: String,
    pub message: String,
    pub color: BadgeColor,
}

impl Badge {
    fn grey(message: &str) -> Badge {
        Badge {
            label: LABEL.into(),
            message: message.into(),
            color: BadgeColor::LightGrey,
        }
    }
}

/// The badge of a target's latest report (see the module documentation for the rules).
///
/// `last_clean` is when the target last had a clean complete run, `first_run` when it first
/// ran (both from the daemon's store; `None` for a lone report, whose `started_at` is used).
pub fn of_report(
    report: Option<&Report>,
    last_clean: Option<DateTime<Utc>>,
    first_run: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Badge {
    let worst = report.and_then(|r| {
        r.counting()
            .map(|f| f.severity)
            .filter(|s| *s > Severity::Info)
            .max()
            .map(|w| (w, r.counting().filter(|f| f.severity == w).count()))
    });
    of_outcome(
        report.map(|r| r.outcome),
        worst,
        report.and_then(|r| r.started_at),
        last_clean,
        first_run,
        now,
    )
}

/// [`of_report`] from what a run summary keeps: its outcome, its worst counting severity
/// above info with how many findings have it, and when it started.
pub fn of_outcome(
    outcome: Option<RunOutcome>,
    worst: Option<(Severity, usize)>,
    started_at: Option<DateTime<Utc>>,
    last_clean: Option<DateTime<Utc>>,
    first_run: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Badge {
    match outcome {
        None => return Badge::grey("unknown"),
        Some(RunOutcome::Refused) => return Badge::grey("refused"),
        Some(RunOutcome::Incomplete) => return Badge::grey("incomplete"),
        Some(RunOutcome::Complete) => {}
    }
    let Some((worst, n)) = worst else {
        return Badge {
            label: LABEL.into(),
            message: "clean".into(),
            color: BadgeColor::BrightGreen,
        };
    };
    let since = last_clean.or(first_run).or(started_at);
    if since.is_some_and(|t| now - t > Duration::days(STALE_AFTER_DAYS)) {
        return Badge::grey("stale");
    }
    Badge {
        label: LABEL.into(),
        message: format!("{n} {worst}"),
        color: BadgeColor::of_severity(worst),
    }
}

/// A label or message as a badge shows it: invisible and control characters made visible,
/// characters XML cannot hold at all (U+FFFE, U+FFFF) likewise, at most [`MAX_TEXT`] long.
/// Markup characters stay: the SVG renderer escapes them after measuring the text.
pub fn display_text(s: &str) -> String {
    let shown = escape_trimmed(s, MAX_TEXT);
    if shown.contains(['\u{FFFE}', '\u{FFFF}']) {
        shown
            .replace('\u{FFFE}', "[U+FFFE]")
            .replace('\u{FFFF}', "[U+FFFF]")
    } else {
        shown
    }
}

/// The badge as a flat shields.io-style SVG (byte-identical to shields.io's for the same
/// text), every text XML-escaped.
pub fn svg(b: &Badge) -> String {
    let label = display_text(&b.label);
    let message = display_text(&b.message);
    shields::render_badge_svg(&shields::BadgeParams {
        style: shields::BadgeStyle::Flat,
        label: Some(&label),
        message: Some(&message),
        label_color: None,
        message_color: Some(b.color.hex()),
        link: None,
        extra_link: None,
        logo: None,
        logo_color: None,
    })
}

/// The badge as shields.io's endpoint schema:
/// `{"schemaVersion": 1, "label": …, "message": …, "color": …}`.
pub fn endpoint_json(b: &Badge) -> Value {
    json!({
        "schemaVersion": 1,
        "label": display_text(&b.label),
        "message": display_text(&b.message),
        "color": b.color.name(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Confidence, Evidence, Finding, Location, Suppressed};
    use crate::model::Policy;
    use chrono::TimeZone;

    #[test]
    fn colour_names_are_shields_names() {
        for (c, name) in [
            (BadgeColor::BrightGreen, "brightgreen"),
            (BadgeColor::Green, "green"),
            (BadgeColor::YellowGreen, "yellowgreen"),
            (BadgeColor::Yellow, "yellow"),
            (BadgeColor::Orange, "orange"),
            (BadgeColor::Red, "red"),
            (BadgeColor::LightGrey, "lightgrey"),
        ] {
            assert_eq!(c.name(), name);
        }
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 12, 0, 0)
            .single()
            .expect("a date")
    }

    fn days_ago(d: i64) -> Option<DateTime<Utc>> {
        Some(now() - Duration::days(d))
    }

    fn finding(severity: Severity) -> Finding {
        Finding {
            check: "META-02".into(),
            rule: Some("P2".into()),
            subcode: None,
            title: "t".into(),
            message: None,
            severity,
            confidence: Confidence::High,
            location: Location::default(),
            evidence: Evidence::default(),
            references: vec![],
            fix: "f".into(),
            fingerprint: String::new(),
            suppressed: None,
            default_severity: None,
            new: None,
        }
    }

    fn report(severities: &[Severity]) -> Report {
        let mut r = Report::new("t", Policy::default());
        r.findings = severities.iter().map(|s| finding(*s)).collect();
        r
    }

    fn of(r: &Report) -> Badge {
        of_report(Some(r), None, None, now())
    }

    #[test]
    fn no_report_is_unknown_grey() {
        let b = of_report(None, None, None, now());
        assert_eq!(
            (b.message.as_str(), b.color),
            ("unknown", BadgeColor::LightGrey)
        );
        assert_eq!(b.label, "mcpprobe");
    }

    #[test]
    fn refused_and_incomplete_are_grey() {
        let mut r = report(&[Severity::Critical]);
        r.outcome = RunOutcome::Refused;
        assert_eq!(of(&r), Badge::grey("refused"));
        r.outcome = RunOutcome::Incomplete;
        assert_eq!(of(&r), Badge::grey("incomplete"));
    }

    #[test]
    fn clean_is_brightgreen_and_info_is_ignored() {
        for r in [report(&[]), report(&[Severity::Info, Severity::Info])] {
            let b = of(&r);
            assert_eq!(
                (b.message.as_str(), b.color),
                ("clean", BadgeColor::BrightGreen)
            );
        }
    }

    #[test]
    fn worst_severity_sets_colour_and_counts() {
        let cases = [
            (vec![Severity::Low], "1 low", BadgeColor::YellowGreen),
            (
                vec![Severity::Low, Severity::Medium, Severity::Medium],
                "2 medium",
                BadgeColor::Yellow,
            ),
            (
                vec![Severity::High, Severity::High, Severity::Low],
                "2 high",
                BadgeColor::Orange,
            ),
            (
                vec![Severity::Critical, Severity::High, Severity::Info],
                "1 critical",
                BadgeColor::Red,
            ),
        ];
        for (sev, message, color) in cases {
            let b = of(&report(&sev));
            assert_eq!((b.message.as_str(), b.color), (message, color), "{sev:?}");
        }
    }

    #[test]
    fn suppressed_and_known_findings_do_not_count() {
        let mut r = report(&[Severity::Critical, Severity::High, Severity::Low]);
        r.findings[0].suppressed = Some(Suppressed {
            reason: "accepted".into(),
            until: None,
        });
        r.findings[1].new = Some(false);
        assert_eq!(of(&r).message, "1 low");
        r.findings[2].suppressed = r.findings[0].suppressed.clone();
        assert_eq!(of(&r).color, BadgeColor::BrightGreen);
    }

    #[test]
    fn thirty_days_without_a_clean_scan_is_stale() {
        let r = report(&[Severity::High]);
        let at = |last_clean, first| of_report(Some(&r), last_clean, first, now());
        // The last clean scan decides, then the first run.
        assert_eq!(at(days_ago(29), days_ago(100)).color, BadgeColor::Orange);
        assert_eq!(at(days_ago(30), None).color, BadgeColor::Orange);
        assert_eq!(at(days_ago(31), days_ago(1)), Badge::grey("stale"));
        assert_eq!(at(None, days_ago(31)), Badge::grey("stale"));
        assert_eq!(at(None, days_ago(3)).color, BadgeColor::Orange);
        // Nothing known about time: not stale.
        assert_eq!(at(None, None).color, BadgeColor::Orange);
        // A lone report: its own start.
        let mut lone = r.clone();
        lone.started_at = days_ago(45);
        assert_eq!(of(&lone), Badge::grey("stale"));
        lone.started_at = days_ago(2);
        assert_eq!(of(&lone).message, "1 high");
        // A clean report is never stale.
        let clean = report(&[]);
        assert_eq!(
            of_report(Some(&clean), days_ago(400), days_ago(400), now()).message,
            "clean"
        );
    }

    #[test]
    fn colours_are_shields_hex_values() {
        assert_eq!(BadgeColor::BrightGreen.hex(), "#4c1");
        assert_eq!(BadgeColor::LightGrey.hex(), "#9f9f9f");
        let s = svg(&of(&report(&[Severity::Critical])));
        assert!(s.contains("#e05d44"), "{s}");
        assert!(s.contains("1 critical"), "{s}");
    }

    #[test]
    fn hostile_text_stays_text() {
        let b = Badge {
            label: "<script>alert(\"x\")</script>&'".into(),
            message: "a\u{1b}[31m\u{200B}\u{FFFF}</text><script>".into(),
            color: BadgeColor::Red,
        };
        let s = svg(&b);
        assert!(!s.contains("<script"), "{s}");
        assert!(s.contains("&lt;script&gt;"), "{s}");
        assert!(s.contains("[U+001B]") && s.contains("[U+200B]") && s.contains("[U+FFFF]"));
        assert!(!s.contains('\u{1b}'));
        let j = endpoint_json(&b);
        assert_eq!(j["schemaVersion"], 1);
        assert_eq!(j["color"], "red");
        assert!(
            j["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("a[U+001B]"))
        );
    }
}
