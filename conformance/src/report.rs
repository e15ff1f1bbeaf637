//! Results, their JSON form, the pretty lines and the per-group summary table.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Skip,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseResult {
    pub id: String,
    pub group: String,
    pub profile: String,
    pub spec: String,
    pub status: Status,
    /// Failure message or skip reason; empty on pass.
    pub message: String,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub pass: usize,
    pub fail: usize,
    pub skip: usize,
    pub total: usize,
}

impl Counts {
    fn add(&mut self, status: Status) {
        match status {
            Status::Pass => self.pass += 1,
            Status::Fail => self.fail += 1,
            Status::Skip => self.skip += 1,
        }
        self.total += 1;
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    /// Sorted by id.
    pub cases: Vec<CaseResult>,
    pub groups: BTreeMap<String, Counts>,
    pub totals: Counts,
}

impl Report {
    pub fn new(mut cases: Vec<CaseResult>) -> Report {
        cases.sort_by(|a, b| a.id.cmp(&b.id));
        let mut groups: BTreeMap<String, Counts> = BTreeMap::new();
        let mut totals = Counts::default();
        for c in &cases {
            groups.entry(c.group.clone()).or_default().add(c.status);
            totals.add(c.status);
        }
        Report {
            cases,
            groups,
            totals,
        }
    }

    pub fn get(&self, id: &str) -> Option<&CaseResult> {
        self.cases.iter().find(|c| c.id == id)
    }

    pub fn has_failures(&self) -> bool {
        self.totals.fail > 0
    }

    /// The line CI parses: `N passed, N failed, N skipped`.
    pub fn final_line(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.totals.pass, self.totals.fail, self.totals.skip
        )
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// `group  pass  fail  skip  total`, one line per group by name, then `total`.
    pub fn summary_text(&self) -> String {
        let mut rows: Vec<(String, Counts)> =
            self.groups.iter().map(|(g, c)| (g.clone(), *c)).collect();
        rows.push(("total".to_string(), self.totals));
        let name_w = rows.iter().map(|(g, _)| g.len()).max().unwrap_or(0).max(5);
        let heads = ["pass", "fail", "skip", "total"];
        let num_w: Vec<usize> = heads
            .iter()
            .enumerate()
            .map(|(i, h)| {
                rows.iter()
                    .map(|(_, c)| [c.pass, c.fail, c.skip, c.total][i].to_string().len())
                    .max()
                    .unwrap_or(0)
                    .max(h.len())
            })
            .collect();
        let mut out = format!("{:<name_w$}", "group");
        for (h, w) in heads.iter().zip(&num_w) {
            out.push_str(&format!("  {h:>w$}"));
        }
        out = out.trim_end().to_string();
        out.push('\n');
        for (g, c) in rows {
            let mut line = format!("{g:<name_w$}");
            for (n, w) in [c.pass, c.fail, c.skip, c.total].iter().zip(&num_w) {
                line.push_str(&format!("  {n:>w$}"));
            }
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

/// One pretty line, with the message indented below when there is one.
pub fn pretty_line(r: &CaseResult, width: usize) -> String {
    let head = format!("{}  {}  ", r.status.label(), r.id);
    let room = width.saturating_sub(head.chars().count()).max(20);
    let spec: String = if r.spec.chars().count() > room {
        let cut: String = r.spec.chars().take(room.saturating_sub(3)).collect();
        format!("{cut}...")
    } else {
        r.spec.clone()
    };
    let mut out = format!("{head}{spec}").trim_end().to_string();
    if !r.message.is_empty() {
        let prefix = if r.status == Status::Skip {
            "skipped: "
        } else {
            ""
        };
        for (i, l) in r.message.lines().enumerate() {
            out.push_str("\n      ");
            if i == 0 {
                out.push_str(prefix);
            }
            out.push_str(l);
        }
    }
    out
}

/// Terminal width from `COLUMNS`, else 100.
pub fn output_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|w| *w >= 40)
        .unwrap_or(100)
}

/// Compares the summary table with `path`, or rewrites it when `update`.
pub fn check_summary(report: &Report, path: &Path, update: bool) -> anyhow::Result<()> {
    let actual = report.summary_text();
    if update {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(path, &actual).with_context(|| format!("writing {}", path.display()))?;
        return Ok(());
    }
    let stored = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => bail!(
            "cannot read the summary file {} ({e}); the actual summary is:\n{actual}",
            path.display()
        ),
    };
    if stored.trim_end() != actual.trim_end() {
        bail!(
            "the per-group summary differs from {} (- stored, + actual):\n{}",
            path.display(),
            crate::redact::line_diff(&stored, &actual)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, status: Status) -> CaseResult {
        CaseResult {
            id: id.to_string(),
            group: id.split('/').next().unwrap_or_default().to_string(),
            profile: "default".to_string(),
            spec: "A spec sentence.".to_string(),
            status,
            message: String::new(),
            duration_ms: 1,
        }
    }

    #[test]
    fn summary_table_is_aligned_and_sorted() {
        let r = Report::new(vec![
            result("zeta/a/001", Status::Pass),
            result("core/a/001", Status::Fail),
            result("core/a/002", Status::Skip),
            result("openai_compat/a/001", Status::Pass),
        ]);
        assert_eq!(
            r.summary_text(),
            "group          pass  fail  skip  total\n\
             core              0     1     1      2\n\
             openai_compat     1     0     0      1\n\
             zeta              1     0     0      1\n\
             total             2     1     1      4\n"
        );
        assert_eq!(r.final_line(), "2 passed, 1 failed, 1 skipped");
        assert_eq!(r.cases[0].id, "core/a/001");
    }

    #[test]
    fn long_specs_are_cut() {
        let mut r = result("core/a/001", Status::Fail);
        r.spec = "x".repeat(300);
        r.message = "boom\nsecond".to_string();
        let line = pretty_line(&r, 100);
        let first = line.lines().next().unwrap_or_default();
        assert_eq!(first.chars().count(), 100);
        assert!(line.ends_with("\n      boom\n      second"));
    }
}
