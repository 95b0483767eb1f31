//! The verdicts as JUnit XML, the format CI systems (GitLab, Jenkins, GitHub test reporters)
//! show as test results: one test case per target, a failure for each one missed.
//!
//! The documents are flat — `<testsuite>`s of `<testcase>`s — so they are written directly, with
//! the five XML entities escaped, rather than through an XML library. The report's own document
//! is [`crate::engine::report::FileReport::to_junit`]; a run that could not be carried out is
//! [`render_error`].

use probity_contract::text::escape_control;

/// Escapes text for an XML attribute or element. Control characters, which XML 1.0 cannot carry
/// at all, are written out as the terminal report writes them (`\u{1b}`).
pub fn escape(text: &str) -> String {
    let text = escape_control(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
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
    fn a_run_that_could_not_be_carried_out_is_one_test_case_in_error() {
        let xml = render_error("HAProxy not found at `x` & <y>", 0.5);
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
        assert!(xml.contains(r#"errors="1""#));
        assert!(
            xml.contains(r#"<error message="HAProxy not found at `x` &amp; &lt;y&gt;">"#),
            "{xml}"
        );
    }

    #[test]
    fn escapes_entities_and_writes_control_characters_out() {
        assert_eq!(escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
        let escaped = escape("x\u{1b}[2Jy");
        assert!(!escaped.contains('\u{1b}'), "{escaped}");
        assert!(
            escaped.starts_with('x') && escaped.ends_with("[2Jy"),
            "{escaped}"
        );
    }
}
