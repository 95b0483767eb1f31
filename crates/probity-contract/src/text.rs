//! Text that came from input or the network, made safe to print.
//!
//! Every probity tool prints names it did not choose: an object name from a manifest, a service
//! or fault name from a drill file, a reason a dependency answered with. Printed raw, a crafted
//! one (`"web\e]0;PWNED\a\e[2J"`) retitles the terminal, clears the screen or reorders the
//! line with a bidirectional override. [`escape_control`] writes such characters out instead;
//! [`escape_markup`] makes the same text safe inside HTML or XML. An error that crossed the
//! network is read through its whole source chain: [`error_chain`] flattens it into one line.

use std::borrow::Cow;
use std::error::Error;
use std::fmt::Write as _;

/// Whether `c` is written out by [`escape_control`]: a control character (C0, DEL, C1) or a
/// bidirectional embedding, override or isolate.
pub(crate) fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every control character written out (`\n`, `\u{1b}`, …), and the bidirectional
/// overrides too: a name that came from input is shown, never obeyed by the terminal.
/// Borrowed when there is nothing to escape.
///
/// ```
/// use probity_contract::text::escape_control;
///
/// assert_eq!(escape_control("checkout-1"), "checkout-1");
/// assert_eq!(escape_control("web\u{1b}]0;PWNED\u{7}"), "web\\u{1b}]0;PWNED\\u{7}");
/// assert_eq!(escape_control("a\nb\tc"), "a\\nb\\tc");
/// ```
pub fn escape_control(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\t' => escaped.push_str("\\t"),
            c if needs_escape(c) => {
                let _ = write!(escaped, "\\u{{{:x}}}", u32::from(c));
            }
            c => escaped.push(c),
        }
    }
    Cow::Owned(escaped)
}

/// `text` made safe inside an XML or HTML document, as element text or a quoted attribute:
/// `&`, `<`, `>`, `"` and `'` written as entities, and every control character but tab and the
/// line ends replaced by `U+FFFD`: XML 1.0 cannot carry them at all
/// (<https://www.w3.org/TR/xml/#charsets>), and a page shows them rather than obeys them.
/// Borrowed when there is nothing to escape.
///
/// ```
/// use probity_contract::text::escape_markup;
///
/// assert_eq!(escape_markup("checkout-1"), "checkout-1");
/// assert_eq!(escape_markup(r#"<a href="x">&'"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
/// assert_eq!(escape_markup("red\u{1b}[31m\n"), "red\u{fffd}[31m\n");
/// ```
pub fn escape_markup(text: &str) -> Cow<'_, str> {
    if !text.contains(['&', '<', '>', '"', '\'']) && !text.chars().any(is_unprintable_in_markup) {
        return Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c if is_unprintable_in_markup(c) => escaped.push('\u{fffd}'),
            c => escaped.push(c),
        }
    }
    Cow::Owned(escaped)
}

/// A control character other than tab, line feed and carriage return.
fn is_unprintable_in_markup(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

/// An error's message followed by its sources' (`outer: cause: root`), each source skipped when
/// the text so far already says it: many clients repeat their cause in their own message.
///
/// ```
/// use probity_contract::text::error_chain;
/// use std::io;
///
/// let root = io::Error::new(io::ErrorKind::ConnectionRefused, "connection refused");
/// let outer = io::Error::other(root);
/// assert_eq!(error_chain(&outer), "connection refused"); // io::Error repeats its cause
///
/// #[derive(Debug)]
/// struct Dial(io::Error);
/// impl std::fmt::Display for Dial {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("dial db:5432")
///     }
/// }
/// impl std::error::Error for Dial {
///     fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
///         Some(&self.0)
///     }
/// }
/// let dial = Dial(io::Error::new(io::ErrorKind::ConnectionRefused, "connection refused"));
/// assert_eq!(error_chain(&dial), "dial db:5432: connection refused");
/// ```
pub fn error_chain(error: &(dyn Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_and_bidi_overrides_are_written_out() {
        assert!(matches!(escape_control("plain"), Cow::Borrowed("plain")));
        assert_eq!(
            escape_control("x\u{1b}[2J\u{9b}y\u{202e}z\u{7f}"),
            "x\\u{1b}[2J\\u{9b}y\\u{202e}z\\u{7f}"
        );
        assert_eq!(escape_control("é ✓ 日本"), "é ✓ 日本");
    }

    #[test]
    fn markup_characters_become_entities() {
        assert!(matches!(escape_markup("db outage ✓"), Cow::Borrowed(_)));
        assert_eq!(
            escape_markup("<script>alert(\"x\")</script> & 'q'"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;"
        );
        assert_eq!(
            escape_markup("a\u{1b}[31m\u{0}\u{7f}\u{9b}\tb\r\n"),
            "a\u{fffd}[31m\u{fffd}\u{fffd}\u{fffd}\tb\r\n"
        );
    }
}
