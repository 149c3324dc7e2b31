//! ACT-04: SQL injection through query-like parameters.
//!
//! Metadata: `checks/active/ACT-04.toml`. Only AND-style probes (SPEC §13), never `OR`, stacked
//! or `UNION` queries, never a heavy function as a delay:
//! - **Boolean pairs.** For each query-like parameter, a baseline call with a benign value, a
//!   lone quote after it (a syntax error whose message often names the database), then twice a
//!   pair that appends a true and a false `AND` condition (`v' AND '7'='7` / `v' AND '7'='8`,
//!   fresh numbers each time). An injectable parameter answers the true condition exactly as the
//!   baseline and the false one differently, both times; a safe one answers both like any other
//!   unknown value.
//! - **Sleep probes**, for a parameter whose baseline and conditions all answered alike (a blind
//!   tool whose answer does not depend on the rows): the dialect's sleep inside an
//!   `AND` condition, with the timing canary of [`crate::active::canary::TIMING`] (a zero-delay
//!   control, then 2, 1, 2, 1 s). PostgreSQL (`pg_sleep` in a sub-select) and MySQL/MariaDB
//!   (`SLEEP`) have one usable in an expression; SQLite has none and SQL Server's `WAITFOR` needs
//!   a stacked query, so those get the pairs only. The dialect comes from the lone quote's error;
//!   when no error names one, both forms are tried (one form per call), budget permitting. The
//!   sleep sits in a scalar subquery that names no column (`(SELECT SLEEP(n))`, `(SELECT 1 FROM
//!   pg_sleep(n))`), evaluated once, never per row; a scan asks for at most
//!   [`MAX_SLEEP_SECONDS`] of sleep in all.
//! - **A quote that breaks the query.** The lone quote's answer carries a database's syntax
//!   error and the balanced forms answer without one: the value reaches SQL (medium confidence).
//!
//! The baseline value is mcpprobe's own constant, never the schema's `examples` or `default`.

use serde_json::Value;

use crate::active::canary::{Product, TIMING, timing_verdict};
use crate::active::{ActiveCheck, Answer, Callable, MadeCall, PlannedCall, benign_arguments};
use crate::checks::{Check, Outcome, finding};

pub struct Act04;

pub static CHECK: Act04 = Act04;

/// Parameter-name words that say it goes into a query.
const QUERY_WORDS: [&str; 12] = [
    "sql", "query", "q", "search", "filter", "where", "name", "id", "key", "term", "customer",
    "user",
];

/// The first round's calls per parameter: baseline, lone quote, true, false, true, false.
const FIRST_ROUND: usize = 6;

/// Room kept for the sleep probes of one parameter in two dialects.
const SLEEP_ROOM: usize = 2 * TIMING.len();

impl Check for Act04 {
    fn id(&self) -> &'static str {
        "ACT-04"
    }

    fn active(&self) -> Option<&'static dyn ActiveCheck> {
        Some(&CHECK)
    }
}

/// What the answers say about the database behind a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Sqlite,
    Postgres,
    Mysql,
    SqlServer,
    Oracle,
    Unknown,
}

impl Dialect {
    /// From the texts of a parameter's answers (the lone quote's error, above all): the first
    /// database an error message names.
    fn of(texts: &[String]) -> Dialect {
        const SIGNS: [(&str, Dialect); 16] = [
            ("sqlite", Dialect::Sqlite),
            ("unrecognized token", Dialect::Sqlite),
            ("postgres", Dialect::Postgres),
            ("syntax error at or near", Dialect::Postgres),
            ("unterminated quoted string", Dialect::Postgres),
            ("psycopg", Dialect::Postgres),
            ("pg::", Dialect::Postgres),
            ("mysql", Dialect::Mysql),
            ("mariadb", Dialect::Mysql),
            ("error in your sql syntax", Dialect::Mysql),
            ("sql server", Dialect::SqlServer),
            ("unclosed quotation mark", Dialect::SqlServer),
            ("incorrect syntax near", Dialect::SqlServer),
            ("ora-0", Dialect::Oracle),
            ("ora-1", Dialect::Oracle),
            ("quoted string not properly terminated", Dialect::Oracle),
        ];
        for t in texts {
            let t = t.to_ascii_lowercase();
            if let Some((_, d)) = SIGNS.iter().find(|(s, _)| t.contains(s)) {
                return *d;
            }
        }
        Dialect::Unknown
    }

    fn name(self) -> &'static str {
        match self {
            Dialect::Sqlite => "SQLite",
            Dialect::Postgres => "PostgreSQL",
            Dialect::Mysql => "MySQL",
            Dialect::SqlServer => "SQL Server",
            Dialect::Oracle => "Oracle",
            Dialect::Unknown => "an unknown database",
        }
    }

    /// The sleep forms to try: those with a sleep usable inside an `AND` condition.
    fn sleeps(self) -> &'static [Sleep] {
        match self {
            Dialect::Postgres => &[Sleep::Postgres],
            Dialect::Mysql => &[Sleep::Mysql],
            Dialect::Unknown => &[Sleep::Postgres, Sleep::Mysql],
            Dialect::Sqlite | Dialect::SqlServer | Dialect::Oracle => &[],
        }
    }
}

/// A sleep inside an `AND` condition, its quotes balanced around the baseline value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sleep {
    Postgres,
    Mysql,
}

impl Sleep {
    const ALL: [Sleep; 2] = [Sleep::Postgres, Sleep::Mysql];

    fn tag(self) -> &'static str {
        match self {
            Sleep::Postgres => "pg",
            Sleep::Mysql => "mysql",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Sleep::Postgres => "PostgreSQL pg_sleep",
            Sleep::Mysql => "MySQL SLEEP",
        }
    }

    /// `v' AND <sleep n> AND 'k'='k`, the sleep in a scalar subquery that names no column of
    /// the query, so the database evaluates it once, not once per row.
    fn payload(self, value: &str, seconds: u64, k: u32) -> String {
        match self {
            Sleep::Postgres => {
                format!("{value}' AND 1=(SELECT 1 FROM pg_sleep({seconds})) AND '{k}'='{k}")
            }
            Sleep::Mysql => format!("{value}' AND (SELECT SLEEP({seconds}))=0 AND '{k}'='{k}"),
        }
    }
}

/// The baseline value of every parameter: mcpprobe's own constant, never a value the server
/// chose (its `examples` or `default`).
const BASELINE: &str = crate::active::NEUTRAL_TEXT;

/// The most seconds of sleep one scan may ask a database for, over every parameter and
/// dialect.
pub const MAX_SLEEP_SECONDS: u64 = 30;

/// A call's tag: its role, then the parameter's name (which may hold spaces), e.g.
/// `true name`, `sleep mysql 2 name`.
fn role(c: &MadeCall) -> (&str, &str) {
    c.planned
        .tag
        .split_once(' ')
        .unwrap_or((&c.planned.tag, ""))
}

/// The parameter a call tested: the last part of its tag.
fn param_of(c: &MadeCall) -> &str {
    let (r, rest) = role(c);
    if r == "sleep" {
        rest.splitn(3, ' ').nth(2).unwrap_or_default()
    } else {
        rest
    }
}

/// The answer of a call when it is a usable result (not `isError`, which proves nothing).
fn usable(c: &MadeCall) -> Option<String> {
    match &c.answer {
        Answer::Result(r) if r.get("isError") != Some(&Value::Bool(true)) => Some(c.result_text()),
        _ => None,
    }
}

/// Every text a call came back with, errors included (for the dialect).
fn any_text(c: &MadeCall) -> String {
    match &c.answer {
        Answer::Result(_) => c.result_text(),
        Answer::Error { message, .. } => message.clone(),
        Answer::Failed(_) => String::new(),
    }
}

/// One parameter's calls, in the order they were made.
struct Group<'c> {
    tool: &'c str,
    pointer: Option<&'c str>,
    param: &'c str,
    calls: Vec<&'c MadeCall>,
}

impl<'c> Group<'c> {
    fn by_role(&self, r: &str) -> Vec<&'c MadeCall> {
        self.calls
            .iter()
            .copied()
            .filter(|c| role(c).0 == r)
            .collect()
    }

    /// The boolean pairs' verdict.
    fn pairs(&self) -> Pairs {
        let base = self.by_role("base");
        let trues = self.by_role("true");
        let falses = self.by_role("false");
        let (Some(b), [t1, t2], [f1, f2]) = (base.first(), trues.as_slice(), falses.as_slice())
        else {
            return Pairs::Unanswered;
        };
        let (Some(b), Some(t1), Some(t2), Some(f1), Some(f2)) =
            (usable(b), usable(t1), usable(t2), usable(f1), usable(f2))
        else {
            return Pairs::Unanswered;
        };
        if t1 == b && t2 == b && f1 == b && f2 == b {
            return Pairs::Alike;
        }
        // The baseline must say something for the pair to be able to differ from it.
        if !b.trim().is_empty() && t1 == b && t2 == b && f1 != b && f2 != b {
            return Pairs::Proven;
        }
        Pairs::NoEffect
    }

    /// The lone quote broke the query and nothing else did: its answer carries a database's
    /// syntax error, while the baseline and the four conditions (the same value with its quotes
    /// balanced) all answered without one. Reflection cannot fake it: the error is the
    /// database's, and it comes only where the quotes do not balance.
    fn quote_broke_it(&self) -> Option<Dialect> {
        let quote = self.by_role("quote");
        let q = quote.first()?;
        let q_text = any_text(q);
        let dialect = Dialect::of(std::slice::from_ref(&q_text));
        if dialect == Dialect::Unknown && !q_text.to_ascii_lowercase().contains("syntax error") {
            return None;
        }
        let balanced: Vec<&MadeCall> = ["base", "true", "false"]
            .iter()
            .flat_map(|r| self.by_role(r))
            .collect();
        if balanced.len() < 5 {
            return None;
        }
        let clean = balanced.iter().all(|c| {
            let text = any_text(c);
            !matches!(c.answer, Answer::Failed(_))
                && Dialect::of(std::slice::from_ref(&text)) == Dialect::Unknown
                && !text.to_ascii_lowercase().contains("syntax error")
        });
        clean.then_some(dialect)
    }

    fn dialect(&self) -> Dialect {
        let texts: Vec<String> = self
            .calls
            .iter()
            .filter(|c| role(c).0 != "sleep")
            .map(|c| any_text(c))
            .collect();
        Dialect::of(&texts)
    }
}

/// What the boolean pairs of one parameter came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pairs {
    /// The true conditions answered as the baseline, the false ones differently, twice.
    Proven,
    /// Every call answered alike: the pairs could not differ (a blind tool, or no row matched).
    Alike,
    /// Every call answered, not in the injectable pattern.
    NoEffect,
    /// Some call got no usable result.
    Unanswered,
}

/// `calls` grouped by tool and parameter, in the order of their first call.
fn groups(calls: &[MadeCall]) -> Vec<Group<'_>> {
    let mut out: Vec<Group<'_>> = Vec::new();
    for c in calls {
        let tool = c.planned.tool.as_str();
        let param = param_of(c);
        match out.iter_mut().find(|g| g.tool == tool && g.param == param) {
            Some(g) => g.calls.push(c),
            None => out.push(Group {
                tool,
                pointer: c.planned.pointer.as_deref(),
                param,
                calls: vec![c],
            }),
        }
    }
    out
}

impl ActiveCheck for Act04 {
    fn plan(
        &self,
        tools: &[Callable<'_>],
        budget: usize,
        _env: &crate::active::StageEnv,
    ) -> Vec<PlannedCall> {
        // Room is kept for one parameter's sleep probes (they follow from these answers).
        let first = budget.saturating_sub(SLEEP_ROOM).max(FIRST_ROUND);
        let mut out = Vec::new();
        for t in tools {
            for (param, pointer) in crate::active::params_named(t, &QUERY_WORDS) {
                if out.len() + FIRST_ROUND > first.min(budget) {
                    return out;
                }
                let v = BASELINE.to_string();
                let mut push = |value: String, role: &str, what: String| {
                    out.push(PlannedCall {
                        kind: crate::active::CallKind::Tool,
                        tool: t.name.to_string(),
                        arguments: benign_arguments(t.tool, &[(&param, Value::String(value))]),
                        canary: None,
                        purpose: format!("`{param}`: {what}"),
                        pointer: Some(pointer.clone()),
                        tag: format!("{role} {param}"),
                    });
                };
                push(v.clone(), "base", "baseline".into());
                push(
                    format!("{v}'"),
                    "quote",
                    "a lone quote (its error may name the database)".into(),
                );
                for _ in 0..2 {
                    let n = Product::random().a;
                    push(
                        format!("{v}' AND '{n}'='{n}"),
                        "true",
                        "a true AND condition".into(),
                    );
                    push(
                        format!("{v}' AND '{n}'='{}", n + 1),
                        "false",
                        "a false AND condition".into(),
                    );
                }
            }
        }
        out
    }

    /// Sleep probes for each parameter whose pairs all answered alike (a blind tool), in the
    /// dialects its answers allow.
    fn follow_up(
        &self,
        made: &[MadeCall],
        budget: usize,
        _env: &crate::active::StageEnv,
    ) -> Vec<PlannedCall> {
        let mut out = Vec::new();
        let mut asked: u64 = 0;
        let per_sequence: u64 = TIMING.iter().sum();
        for g in groups(made) {
            // Only where the pairs could not differ: a true and a false condition that answer
            // alike but unlike the baseline already say the value is taken as a literal; a
            // quote that broke the query already proved the injection.
            if g.pairs() != Pairs::Alike || g.quote_broke_it().is_some() {
                continue;
            }
            let Some(base) = g.by_role("base").first().copied() else {
                continue;
            };
            let value = base
                .planned
                .arguments
                .get(g.param)
                .and_then(Value::as_str)
                .unwrap_or("a")
                .to_string();
            for sleep in g.dialect().sleeps() {
                if out.len() + TIMING.len() > budget || asked + per_sequence > MAX_SLEEP_SECONDS {
                    return out;
                }
                asked += per_sequence;
                let k = Product::random().a;
                for seconds in TIMING {
                    let mut arguments = base.planned.arguments.clone();
                    if let Some(o) = arguments.as_object_mut() {
                        o.insert(
                            g.param.to_string(),
                            Value::String(sleep.payload(&value, seconds, k)),
                        );
                    }
                    out.push(PlannedCall {
                        kind: crate::active::CallKind::Tool,
                        tool: g.tool.to_string(),
                        arguments,
                        canary: None,
                        purpose: format!("`{}`: {} {seconds} s", g.param, sleep.name()),
                        pointer: base.planned.pointer.clone(),
                        tag: format!("sleep {} {seconds} {}", sleep.tag(), g.param),
                    });
                }
            }
        }
        out
    }

    fn follow_up_note(&self) -> Option<&'static str> {
        Some(
            "then, for each parameter whose baseline and conditions all answer alike (a blind tool), 5 sleep calls per dialect its answers allow (PostgreSQL pg_sleep, MySQL SLEEP; both when no error names one)",
        )
    }

    fn judge(&self, calls: &[MadeCall], _env: &crate::active::StageEnv) -> Outcome {
        let mut out = Vec::new();
        for g in groups(calls) {
            let located = |mut f: crate::finding::FindingBuilder| {
                f = f.tool(g.tool.to_string());
                if let Some(p) = g.pointer {
                    f = f.pointer(p.to_string());
                }
                f
            };
            let pairs = g.pairs();
            if pairs != Pairs::Proven
                && let Some(dialect) = g.quote_broke_it()
            {
                let mut f = located(finding(&CHECK, None))
                    .subcode("quote")
                    .confidence(crate::finding::Confidence::Medium)
                    .message(format!(
                        "`{}`: a lone quote after the baseline value got {} syntax error, and the same value with its quotes balanced (the baseline, and a true and a false AND condition twice) answered without one: the value is spliced into SQL",
                        g.param,
                        match dialect {
                            Dialect::Unknown => "a database's".to_string(),
                            d => format!("a {}", d.name()),
                        }
                    ));
                for c in g.calls.iter().filter(|c| role(c).0 != "sleep") {
                    f = f.exchange(c.exchange.clone());
                }
                out.push(f.build());
                continue;
            }
            if pairs == Pairs::Proven {
                let mut f = located(finding(&CHECK, None)).message(format!(
                    "`{}`: a true AND condition appended to the baseline value answered exactly as the baseline, a false one differently, twice: the value is spliced into SQL",
                    g.param
                ));
                for c in g.calls.iter().filter(|c| role(c).0 != "sleep") {
                    f = f.exchange(c.exchange.clone());
                }
                out.push(f.build());
                continue;
            }
            // The sleep probes, dialect by dialect.
            let mut tried = Vec::new();
            let mut proven = false;
            for sleep in Sleep::ALL {
                let timed: Vec<&MadeCall> = g
                    .by_role("sleep")
                    .into_iter()
                    .filter(|c| param_of(c) == g.param)
                    .filter(|c| c.planned.tag.split(' ').nth(1) == Some(sleep.tag()))
                    .collect();
                if timed.is_empty() {
                    continue;
                }
                // A call that got no answer says nothing about how long a sleep took.
                let pairs: Vec<(u64, f64)> = timed
                    .iter()
                    .filter(|c| !matches!(c.answer, Answer::Failed(_)))
                    .filter_map(|c| {
                        let d = c.planned.tag.split(' ').nth(2)?.parse().ok()?;
                        Some((d, c.elapsed.as_secs_f64()))
                    })
                    .collect();
                if pairs.len() < TIMING.len() {
                    tried.push(format!("{}: not every call answered", sleep.name()));
                    continue;
                }
                let t = timing_verdict(&pairs);
                if !t.confirmed {
                    tried.push(format!("{}: {}", sleep.name(), t.note));
                    continue;
                }
                proven = true;
                let mut f = located(finding(&CHECK, None))
                    .subcode("sleep")
                    .message(format!(
                        "`{}`: a {} appended to the baseline value as an AND condition delayed each answer by the time asked, and its zero-delay control was fast ({}): the value is spliced into SQL (the answers themselves did not differ)",
                        g.param,
                        sleep.name(),
                        t.note
                    ));
                for c in &timed {
                    f = f.exchange(c.exchange.clone());
                }
                out.push(f.build());
            }
            if proven || pairs != Pairs::Alike {
                continue;
            }
            // The pairs could not differ, and nothing else answered the question.
            if tried.is_empty() {
                let dialect = g.dialect();
                let why = if dialect.sleeps().is_empty() {
                    format!("{} has no sleep usable in an AND condition", dialect.name())
                } else {
                    format!(
                        "the check's calls or the scan's {MAX_SLEEP_SECONDS} s of sleep were spent on other parameters"
                    )
                };
                let mut f = located(finding(&CHECK, None))
                    .subcode("pairs/indeterminate")
                    .severity(crate::finding::Severity::Info)
                    .confidence(crate::finding::Confidence::Low)
                    .message(format!(
                        "indeterminate: `{}`: the baseline (mcpprobe's own value, never one the server chose) and both conditions answered alike, so the pairs could not differ, no error showed the quotes reaching SQL, and {why}",
                        g.param
                    ));
                if let Some(b) = g.by_role("base").first() {
                    f = f.exchange(b.exchange.clone());
                }
                out.push(f.build());
            }
        }
        Outcome::Ran(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dialect_comes_from_an_error_that_names_it() {
        let d = |t: &str| Dialect::of(&[String::new(), t.to_string()]);
        assert_eq!(
            d("query failed: unrecognized token: \"'a''\""),
            Dialect::Sqlite
        );
        assert_eq!(
            d("ERROR: unterminated quoted string at or near \"'a'\""),
            Dialect::Postgres
        );
        assert_eq!(
            d("You have an error in your SQL syntax; check the manual"),
            Dialect::Mysql
        );
        assert_eq!(
            d("Unclosed quotation mark after the character string"),
            Dialect::SqlServer
        );
        assert_eq!(
            d("ORA-01756: quoted string not properly terminated"),
            Dialect::Oracle
        );
        assert_eq!(d("no such customer"), Dialect::Unknown);
        assert!(Dialect::Sqlite.sleeps().is_empty());
        assert_eq!(Dialect::Unknown.sleeps().len(), 2);
    }

    #[test]
    fn sleep_payloads_keep_their_quotes_balanced_and_never_use_or_stacking_or_union() {
        for sleep in Sleep::ALL {
            let p = sleep.payload("Ada", 2, 1234);
            // Inside `name = '<p>'`, the quotes pair up.
            assert_eq!(format!("'{p}'").matches('\'').count() % 2, 0, "{p}");
            let upper = p.to_ascii_uppercase();
            for banned in [" OR ", ";", "UNION", "--"] {
                assert!(!upper.contains(banned), "{p}");
            }
            assert!(p.contains(" AND "), "{p}");
        }
    }
}
