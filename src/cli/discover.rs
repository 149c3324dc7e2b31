//! `mcpprobe discover` and `mcpprobe scan --discover` as the CLI hosts them: the folders of
//! this environment ([`Places`]), the listing, and the set's scan with its report.

use crate::cli::scan::{request_for, show_progress, with_scanner};
use crate::cli::{
    DiffFormat, DiscoverArgs, PlacesArgs, ScanArgs, emit, print_out, settings, usage_error,
};
use crate::discover::scan::DiscoverOptions;
use crate::discover::{Discovery, Places, Platform};
use crate::engine::{BaselineRequest, Target};
use crate::net::redact::Secrets;
use crate::util::escape::escape;

/// The folders of this process's environment; `Err` is a usage error.
fn places(args: &PlacesArgs) -> Result<Places, String> {
    let platform = match args.test_platform.as_deref() {
        None => Platform::current(),
        Some(p) => p
            .parse()
            .map_err(|_| format!("--test-platform {p:?}: linux, macos or windows"))?,
    };
    let project = if args.no_project {
        None
    } else {
        match &args.project {
            Some(p) => Some(std::path::absolute(p).unwrap_or_else(|_| p.clone())),
            None => std::env::current_dir().ok(),
        }
    };
    Ok(Places::from_env(platform, |n| std::env::var_os(n), project))
}

fn find(args: &PlacesArgs) -> Result<(Discovery, Places), String> {
    let places = places(args)?;
    for f in &args.client_config {
        if !f.is_file() {
            return Err(format!("--client-config {}: no such file", f.display()));
        }
    }
    Ok((
        crate::discover::discover(&places, &args.client_config),
        places,
    ))
}

/// `mcpprobe discover`: exit 0 when the files were read, 1 when a file holds a secret
/// inline, 3 when a file could not be read.
pub fn list(args: &DiscoverArgs) -> i32 {
    let found = match find(&args.places) {
        Ok((d, _)) => d,
        Err(e) => return usage_error(e),
    };
    let listing = found.listing();
    // Values are never in the listing; this is the last net, as for a report.
    let sources: Vec<crate::engine::SecretSource> = found
        .servers
        .iter()
        .flat_map(|s| s.secret_sources())
        .collect();
    let secrets = Secrets::from_sources(&sources);
    let code = if listing.configs.iter().any(|c| c.error.is_some()) {
        crate::exit::ExitCode::Incomplete.code()
    } else if listing.findings.is_empty() {
        0
    } else {
        crate::exit::ExitCode::Findings.code()
    };
    let text = match args.format {
        DiffFormat::Json => match serde_json::to_string_pretty(&listing) {
            Ok(t) => t + "\n",
            Err(e) => return usage_error(format!("cannot write the listing: {e}")),
        },
        DiffFormat::Terminal => terminal(&listing),
    };
    print_out(&secrets.redact(&text));
    code
}

fn terminal(l: &crate::discover::Listing) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if l.configs.is_empty() {
        let _ = writeln!(
            out,
            "no MCP client files found ({} documented locations searched)",
            l.absent
        );
    }
    for c in &l.configs {
        let what = match &c.error {
            Some(e) => format!("not read: {}", escape(e)),
            None => format!("{} servers", c.servers),
        };
        let _ = writeln!(out, "{} {}: {what}", c.client.as_str(), escape(&c.path));
        for p in &c.problems {
            let _ = writeln!(out, "  entry not read: {}", escape(p));
        }
        for s in l.servers.iter().filter(|s| s.file == c.path) {
            let how = match (&s.command, &s.url) {
                (Some(cmd), _) => cmd.join(" "),
                (None, Some(u)) => u.clone(),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  {} [{}]{} {}",
                escape(&s.name),
                s.kind,
                if s.disabled { " (disabled)" } else { "" },
                escape(&how)
            );
            if !s.env.is_empty() {
                let _ = writeln!(out, "    env: {}", escape(&s.env.join(", ")));
            }
            if !s.headers.is_empty() {
                let _ = writeln!(out, "    headers: {}", escape(&s.headers.join(", ")));
            }
            let refs: Vec<&str> = s.references.iter().map(|r| r.name.as_str()).collect();
            if !refs.is_empty() {
                let _ = writeln!(out, "    references: {}", escape(&refs.join(", ")));
            }
            for secret in &s.inline_secrets {
                let _ = writeln!(
                    out,
                    "    SECRET written inline: {} at {} ({})",
                    escape(&secret.key),
                    escape(&secret.pointer),
                    escape(&secret.why)
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "{} servers in {} files; {} secrets written inline",
        l.servers.len(),
        l.configs.len(),
        l.findings.len()
    );
    out
}

/// The value a secret source holds (a URL's whole text).
fn secret_value(s: &crate::engine::SecretSource) -> Option<String> {
    use crate::engine::SecretSource as S;
    match s {
        S::Token(v) | S::Other(v) | S::Url(v) => Some(v.clone()),
        S::Header { value, .. } | S::Env { value, .. } => Some(value.clone()),
    }
}

/// `mcpprobe scan --discover`.
pub fn scan_discovered(args: &ScanArgs) -> i32 {
    if args.active {
        return usage_error(
            "--active is not offered with --discover: scan one server at a time for active checks",
        );
    }
    if !args.headers.is_empty() {
        // A header names one server's credentials; sent to every discovered server it would
        // leak to all of them. A remote server's headers come from its client file.
        return usage_error(
            "--header is not offered with --discover: a remote server's headers come from its client file (allowed with --env)",
        );
    }
    let (loaded, review) = match settings::load_reviewed(&args.config) {
        Ok(l) => l,
        Err(e) => return usage_error(e),
    };
    let (found, places) = match find(&args.places) {
        Ok(d) => d,
        Err(e) => return usage_error(e),
    };
    // The per-server request; its target is replaced for each server.
    let placeholder = Target::stdio(&["mcpprobe-discovered-server".to_string()]);
    let flagged = crate::cli::scan::flag_secrets_sources(args);
    let opts = placeholder
        .and_then(|t| request_for(args, &loaded, t))
        .and_then(|template| {
            DiscoverOptions::new(
                template,
                args.env.clone(),
                |n| std::env::var(n).ok(),
                places.project,
            )
        });
    let mut opts = match opts {
        Ok(o) => o,
        Err(e) => return usage_error(Secrets::from_sources(&flagged).redact(&e.to_string())),
    };
    opts.dry_run = args.dry_run;
    opts.trust_project = args.trust_project;
    opts.baseline = args.baseline.clone().map(|path| BaselineRequest {
        path,
        update: args.update_baseline,
    });
    // Every secret the files write, the flags and the allowed variables hold: never printed.
    let mut sources = flagged;
    sources.extend(opts.secret_sources(&found));
    opts.template.secrets.extend(sources.iter().cloned());
    // The judge's environment leaves out every secret of the run: the allowed variables' values
    // and what the files write (the placeholder target had none of them).
    let values: Vec<String> = sources.iter().filter_map(secret_value).collect();
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    let secrets = Secrets::from_sources(&sources);
    match args.judge.config(&refs) {
        Ok(judge) => opts.template.judge = judge,
        Err(e) => return usage_error(secrets.redact(&e.to_string())),
    }
    show_progress(secrets.clone());
    let report = with_scanner(
        args.resolver.as_deref(),
        crate::cli::scan::rate(args, &loaded),
        |scanner, cancel| {
            Box::pin(async move {
                crate::discover::scan::scan_discovered(&scanner, &found, &opts, cancel)
                    .await
                    .map_err(|e| e.to_string())
            })
        },
    );
    match report {
        Ok(mut report) => {
            // The last net: nothing a file wrote as a secret reaches any output.
            report.redact(|s| secrets.redact(s));
            crate::cli::scan::say_outcome(&report);
            review.apply(&mut report, chrono::Utc::now().date_naive());
            report.apply_policy(loaded.policy(&args.output));
            let artifact = settings::artifact(
                &[
                    args.output.sarif_artifact.as_deref(),
                    loaded.path.as_deref(),
                    args.baseline.as_deref(),
                ],
                &report.target,
            );
            emit(&report, &args.output, artifact)
        }
        Err(e) => usage_error(secrets.redact(&e)),
    }
}
