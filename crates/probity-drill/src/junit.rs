//! The verdicts as JUnit XML, the format CI systems (GitLab, Jenkins, GitHub test reporters)
//! show as test results: one test case per target, a failure for each one missed.
//!
//! The document is flat — one `<testsuite>` of `<testcase>`s — so it is written here directly,
//! with the five XML entities escaped, rather than through an XML library.

use crate::targets::Verdict;
use std::fmt::Write as _;

/// Escapes text for an XML attribute or element.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 cannot carry at all.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The JUnit document for `verdicts`, from a run that took `elapsed_s` seconds.
pub fn render(verdicts: &[Verdict], elapsed_s: f64) -> String {
    let failures = verdicts.iter().filter(|verdict| !verdict.passed).count();
    let mut out = String::new();
    let _ = writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        out,
        r#"<testsuites name="probity drill" tests="{}" failures="{failures}" time="{elapsed_s:.3}">"#,
        verdicts.len()
    );
    let _ = writeln!(
        out,
        r#"  <testsuite name="probity drill" tests="{}" failures="{failures}" errors="0" time="{elapsed_s:.3}">"#,
        verdicts.len()
    );
    for verdict in verdicts {
        let _ = write!(
            out,
            r#"    <testcase classname="probity drill.{}" name="{}">"#,
            escape(verdict.drill),
            escape(&verdict.target)
        );
        if !verdict.passed {
            let _ = write!(
                out,
                r#"<failure message="{}">measured {}</failure>"#,
                escape(&format!(
                    "missed: {} (measured {})",
                    verdict.target, verdict.measured
                )),
                escape(&verdict.measured)
            );
        }
        let _ = writeln!(
            out,
            "<system-out>measured {}</system-out></testcase>",
            escape(&verdict.measured)
        );
    }
    let _ = writeln!(out, "  </testsuite>");
    let _ = writeln!(out, "</testsuites>");
    out
}

/// The JUnit document for a run that could not be carried out: one test case in error.
pub fn render_error(message: &str, elapsed_s: f64) -> String {
    format!(
        concat!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
            "<testsuites name=\"probity drill\" tests=\"1\" failures=\"0\" errors=\"1\" time=\"{elapsed:.3}\">\n",
            "  <testsuite name=\"probity drill\" tests=\"1\" failures=\"0\" errors=\"1\" time=\"{elapsed:.3}\">\n",
            "    <testcase classname=\"probity drill\" name=\"run\"><error message=\"{message}\"></error></testcase>\n",
            "  </testsuite>\n",
            "</testsuites>\n"
        ),
        elapsed = elapsed_s,
        message = escape(message)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_test_case_per_target_and_a_failure_for_each_miss() {
        let verdicts = vec![
            Verdict {
                drill: "pool",
                target: "out of rotation ≤ 1s".into(),
                measured: "0.62s".into(),
                passed: true,
            },
            Verdict {
                drill: "busy",
                target: "failed requests <direct> & \"all\" ≤ 0".into(),
                measured: "3".into(),
                passed: false,
            },
        ];
        let xml = render(&verdicts, 12.5);
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
        assert!(xml.contains(
            r#"<testsuite name="probity drill" tests="2" failures="1" errors="0" time="12.500">"#
        ));
        assert!(xml.contains(
            r#"<testcase classname="probity drill.pool" name="out of rotation ≤ 1s"><system-out>measured 0.62s</system-out></testcase>"#
        ));
        assert!(xml.contains(
            r#"name="failed requests &lt;direct&gt; &amp; &quot;all&quot; ≤ 0"><failure message="missed: failed requests &lt;direct&gt; &amp; &quot;all&quot; ≤ 0 (measured 3)">measured 3</failure>"#
        ), "{xml}");
        assert_eq!(xml.matches("<failure").count(), 1);
        assert_eq!(escape("a\u{1}b'"), "a\u{FFFD}b&apos;");

        let xml = render_error("HAProxy not found at `x` & <y>", 0.5);
        assert!(xml.contains(r#"errors="1""#));
        assert!(
            xml.contains(r#"<error message="HAProxy not found at `x` &amp; &lt;y&gt;">"#),
            "{xml}"
        );
    }
}
